//! The session's route memory: (tenant, filter, column filter) triples a
//! walk found rare, and when. For [`TTL`] their calls go to the rare path
//! without walking first, until an answer costs more than a rare filter's
//! should (`alerts_core::walk::forget_route`). Such an answer is kept
//! instead, for as long: the walks of those calls leave for a rare path
//! only once they have cost as much (`leave_despite_cost`). Only ever a
//! choice between exact paths whatever the window, so a stale entry costs
//! time, never rows. `alerts.search_shortcuts = off` turns it off.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use alerts_core::walk::{forget_route, RareCost};

use pgrx::pg_sys::Datum;

/// How long a (tenant, filter) a walk found rare goes straight to the rare
/// path, and how long a rare path's costly answer is kept.
const TTL: Duration = Duration::from_secs(10);
/// Bound on the pairs remembered per table and session (cleared when full).
const MAX: usize = 10_000;

/// The key of a (tenant, filter, column filter): their raw bytes.
pub type Key = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

/// What the session knows of a pair.
#[derive(Clone, Copy)]
enum Found {
    /// A walk found it rare: the weeks the keys path reads first.
    Rare(u64),
    /// A rare path's answer cost this many heap rows, too many.
    Costly(u64),
}

#[derive(Default)]
pub struct Routes {
    found: HashMap<Key, (Instant, Found)>,
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

    fn get(&self, key: &Key) -> Option<Found> {
        self.found
            .get(key)
            .filter(|(t, _)| t.elapsed() < TTL)
            .map(|&(_, found)| found)
    }

    /// The first weeks to read, if the pair was found rare less than
    /// [`TTL`] ago.
    pub fn fresh(&self, key: &Key) -> Option<u64> {
        match self.get(key)? {
            Found::Rare(weeks) => Some(weeks),
            Found::Costly(_) => None,
        }
    }

    /// The heap rows a rare path's answer for the pair cost, if that was
    /// too many less than [`TTL`] ago.
    pub fn costly(&self, key: &Key) -> Option<u64> {
        match self.get(key)? {
            Found::Costly(rows) => Some(rows),
            Found::Rare(_) => None,
        }
    }

    /// The pair found rare, unless a rare path's answer for it was costly
    /// lately.
    pub fn remember(&mut self, key: Key, weeks: u64) {
        if self.costly(&key).is_some() {
            return;
        }
        if self.found.len() >= MAX {
            self.found.clear();
        }
        self.found.insert(key, (Instant::now(), Found::Rare(weeks)));
    }

    /// A rare path's answer for the pair cost `cost`: one too costly for a
    /// rare filter is kept in place of the route, and the next calls walk
    /// first again.
    pub fn answered(&mut self, key: Key, cost: RareCost) {
        if forget_route(cost) {
            if self.found.len() >= MAX {
                self.found.clear();
            }
            self.found
                .insert(key, (Instant::now(), Found::Costly(cost.rows())));
        }
    }
}
