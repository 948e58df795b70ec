//! The route memory of a session, as a pure state machine: (tenant,
//! filter) pairs a walk found rare, sent straight to the rare path for a
//! while, and rare paths' answers that cost too much, which send those
//! calls back to the walk for as long (`walk::forget_route`,
//! `walk::leave_despite_cost`). The extension keeps one per table and
//! session (`src/search/routes.rs`) and gives it the time; only ever a
//! choice between exact paths, so a stale entry costs time, never rows.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use crate::walk::{forget_route, RareCost};

/// What the memory knows of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// A walk found it rare: the weeks the keys path reads first.
    Rare(u64),
    /// A rare path's answer cost this many heap rows, too many.
    Costly(u64),
}

/// Pairs remembered for `ttl`, at most `max` of them (cleared when full).
pub struct RouteMemory<K> {
    found: HashMap<K, (Instant, Found)>,
    ttl: Duration,
    max: usize,
}

impl<K: Hash + Eq> RouteMemory<K> {
    pub fn new(ttl: Duration, max: usize) -> RouteMemory<K> {
        RouteMemory {
            found: HashMap::new(),
            ttl,
            max: max.max(1),
        }
    }

    fn get(&self, key: &K, now: Instant) -> Option<Found> {
        self.found
            .get(key)
            .filter(|(t, _)| now.saturating_duration_since(*t) < self.ttl)
            .map(|&(_, found)| found)
    }

    fn insert(&mut self, key: K, now: Instant, found: Found) {
        if self.found.len() >= self.max {
            self.found.clear();
        }
        self.found.insert(key, (now, found));
    }

    /// The first weeks to read, if the pair was found rare less than the
    /// memory's time ago.
    pub fn fresh(&self, key: &K, now: Instant) -> Option<u64> {
        match self.get(key, now)? {
            Found::Rare(weeks) => Some(weeks),
            Found::Costly(_) => None,
        }
    }

    /// The heap rows a rare path's answer for the pair cost, if that was
    /// too many less than the memory's time ago.
    pub fn costly(&self, key: &K, now: Instant) -> Option<u64> {
        match self.get(key, now)? {
            Found::Costly(rows) => Some(rows),
            Found::Rare(_) => None,
        }
    }

    /// The pair found rare, unless a rare path's answer for it was costly
    /// lately.
    pub fn remember(&mut self, key: K, weeks: u64, now: Instant) {
        if self.costly(&key, now).is_none() {
            self.insert(key, now, Found::Rare(weeks));
        }
    }

    /// A rare path's answer for the pair cost `cost`: one too costly for
    /// a rare filter is kept in place of the route, so the next calls
    /// walk first; one that was not ends a costly one kept before (a cold
    /// cache, a lock waited for: the path is cheap again).
    pub fn answered(&mut self, key: K, cost: RareCost, now: Instant) {
        if forget_route(cost) {
            self.insert(key, now, Found::Costly(cost.rows()));
        } else if self.costly(&key, now).is_some() {
            self.found.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::FORGET_ROWS;

    fn cost(fetched: u64) -> RareCost {
        RareCost {
            fetched,
            statements: false,
            micros: 0,
        }
    }

    #[test]
    fn a_rare_pair_is_remembered_for_its_time() {
        let t0 = Instant::now();
        let mut m = RouteMemory::new(Duration::from_secs(10), 100);
        m.remember("a", 6, t0);
        assert_eq!(m.fresh(&"a", t0 + Duration::from_secs(9)), Some(6));
        assert_eq!(m.fresh(&"a", t0 + Duration::from_secs(10)), None);
        assert_eq!(m.fresh(&"b", t0), None);
        // a cheap answer keeps the route
        m.answered("a", cost(100), t0);
        assert_eq!(m.fresh(&"a", t0), Some(6));
    }

    #[test]
    fn a_costly_answer_replaces_the_route_and_blocks_it() {
        let t0 = Instant::now();
        let mut m = RouteMemory::new(Duration::from_secs(10), 100);
        m.remember("a", 6, t0);
        m.answered("a", cost(FORGET_ROWS + 1), t0);
        assert_eq!(m.fresh(&"a", t0), None);
        assert_eq!(m.costly(&"a", t0), Some(FORGET_ROWS + 1));
        // the next walk finding it rare does not send it back
        m.remember("a", 6, t0);
        assert_eq!(m.fresh(&"a", t0), None);
        // after its time, it may
        let later = t0 + Duration::from_secs(11);
        assert_eq!(m.costly(&"a", later), None);
        m.remember("a", 3, later);
        assert_eq!(m.fresh(&"a", later), Some(3));
    }

    #[test]
    fn a_cheap_answer_ends_a_costly_one() {
        let t0 = Instant::now();
        let mut m = RouteMemory::new(Duration::from_secs(10), 100);
        m.answered("a", cost(FORGET_ROWS * 3), t0);
        assert!(m.costly(&"a", t0).is_some());
        m.answered("a", cost(20), t0);
        assert_eq!(m.costly(&"a", t0), None);
        m.remember("a", 6, t0);
        assert_eq!(m.fresh(&"a", t0), Some(6));
    }

    #[test]
    fn the_memory_is_bounded() {
        let t0 = Instant::now();
        let mut m = RouteMemory::new(Duration::from_secs(10), 2);
        m.remember(1, 6, t0);
        m.remember(2, 6, t0);
        m.remember(3, 6, t0); // full: cleared first
        assert_eq!(m.fresh(&1, t0), None);
        assert_eq!(m.fresh(&3, t0), Some(6));
    }
}
