//! The session's route memory for one table: (tenant, filter, column
//! filter) triples a walk found rare go straight to the rare path for
//! [`TTL`], and a rare path's answer that cost too much sends its calls
//! back to the walk for as long (`alerts_core::routes`, the state machine,
//! given the time here). Only ever a choice between exact paths whatever
//! the window, so a stale entry costs time, never rows.
//! `alerts.search_shortcuts = off` turns it off.

use std::time::{Duration, Instant};

use alerts_core::routes::RouteMemory;
use alerts_core::walk::RareCost;

use pgrx::pg_sys::{self, Datum, Oid};

/// How long a (tenant, filter) a walk found rare goes straight to the rare
/// path, and how long a rare path's costly answer is kept.
const TTL: Duration = Duration::from_secs(10);
/// Bound on the pairs remembered per table and session (cleared when full).
const MAX: usize = 10_000;

/// The key of a (tenant, filter, column filter): the role the search
/// reads as, then their raw bytes. Per role: one role's searches must not
/// show another what it searched (a pooler's `SET ROLE` shares a backend
/// between roles, and the route is visible in `EXPLAIN ANALYZE`).
pub type Key = (Oid, Vec<u8>, Vec<u8>, Option<Vec<u8>>);

pub struct Routes {
    memory: RouteMemory<Key>,
}

impl Default for Routes {
    fn default() -> Routes {
        Routes {
            memory: RouteMemory::new(TTL, MAX),
        }
    }
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
                    pg_sys::GetUserId(),
                    crate::datum::varlena_bytes(org).to_vec(),
                    crate::datum::varlena_bytes(filter).to_vec(),
                    columns.map(|c| crate::datum::varlena_bytes(c).to_vec()),
                )
            }
        })
    }

    /// The first weeks to read, if the pair was found rare lately.
    pub fn fresh(&self, key: &Key) -> Option<u64> {
        self.memory.fresh(key, Instant::now())
    }

    /// The heap rows a rare path's answer for the pair cost, if too many
    /// lately.
    pub fn costly(&self, key: &Key) -> Option<u64> {
        self.memory.costly(key, Instant::now())
    }

    /// The pair found rare (unless a rare path's answer was costly lately).
    pub fn remember(&mut self, key: Key, weeks: u64) {
        self.memory.remember(key, weeks, Instant::now());
    }

    /// A rare path's answer for the pair cost `cost`.
    pub fn answered(&mut self, key: Key, cost: RareCost) {
        self.memory.answered(key, cost, Instant::now());
    }
}
