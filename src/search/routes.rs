//! The session's route memory: (tenant, filter, column filter) triples a
//! walk found rare, and when. For [`TTL`] their calls go to the rare path
//! without walking first, until an answer costs more than a rare filter's
//! should (`alerts_core::walk::forget_route`). Only ever a shortcut to an
//! exact path whatever the window, so a stale entry costs time, never rows.
//! `alerts.search_shortcuts = off` turns it off.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use alerts_core::walk::{forget_route, RareCost};

use pgrx::pg_sys::Datum;

/// How long a (tenant, filter) a walk found rare goes straight to the rare
/// path.
const TTL: Duration = Duration::from_secs(10);
/// Bound on the pairs remembered per table and session (cleared when full).
const MAX: usize = 10_000;

/// The key of a (tenant, filter, column filter): their raw bytes.
pub type Key = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

#[derive(Default)]
pub struct Routes {
    /// When the pair was found rare, and the weeks the keys path reads first.
    found: HashMap<Key, (Instant, u64)>,
}

impl Routes {
    /// The key of this call's pair, when shortcuts are on.
    ///
    /// # Safety
    /// `org`, `filter` and `columns` must be live varlena datums.
    pub unsafe fn key(org: Datum, filter: Datum, columns: Option<Datum>) -> Option<Key> {
        crate::settings::SEARCH_SHORTCUTS.get().then(|| {
            // SAFETY: as the caller's.
            unsafe {
                (
                    crate::datum::varlena_bytes(org).to_vec(),
                    crate::datum::varlena_bytes(filter).to_vec(),
                    columns.map(|c| crate::datum::varlena_bytes(c).to_vec()),
                )
            }
        })
    }

    /// The first weeks to read, if the pair was found rare less than
    /// [`TTL`] ago.
    pub fn fresh(&self, key: &Key) -> Option<u64> {
        self.found
            .get(key)
            .filter(|(t, _)| t.elapsed() < TTL)
            .map(|&(_, weeks)| weeks)
    }

    pub fn remember(&mut self, key: Key, weeks: u64) {
        if self.found.len() >= MAX {
            self.found.clear();
        }
        self.found.insert(key, (Instant::now(), weeks));
    }

    /// A shortcut's answer cost `cost`: one too costly for a rare filter
    /// forgets the pair, and the next call walks first again.
    pub fn answered(&mut self, key: &Key, cost: RareCost) {
        if forget_route(cost) {
            self.found.remove(key);
        }
    }
}
