//! The decisions of `alerts_search`'s page walk, as pure functions: how many
//! index entries a chunk reads, when the walk leaves for a rare path (the
//! tenant-keys index or GIN), and when a finished walk should send the next
//! calls for the same tenant and filter straight to the rare path.
//!
//! The extension's `src/search/walk.rs` runs the statements; every choice it
//! makes between them is one of these functions, so each is unit-tested here
//! without a database.

use crate::keys::{keys_cheaper, keys_cheaper_than_walked};

/// With GIN as the only rare path: the walk leaves when a chunk held fewer
/// than one match in this many entries.
pub const RARE: i64 = 200;
/// Weeks of the first range the tenant-keys path reads (a 30-day window in
/// one statement), doubled for each next range.
pub const FIRST_WEEKS: u64 = 6;
/// A walk that read a whole window must have read at least this many
/// entries (without the keys index) to send the next calls to GIN's
/// statement.
pub const ROUTE_MIN_ENTRIES: i64 = 300;
/// The same where GIN is read in place (no statement): about 10 µs of
/// walk, against about 5 µs for a leaf's GIN bitmap with nothing in it
/// (a month's leaf, 273 entries walked: 27-31 µs, GIN read in place
/// 21-22 µs with the walker's own start; EXPLAIN ANALYZE).
pub const ROUTE_MIN_ENTRIES_IN_PLACE: i64 = 100;

/// Which rare paths the table offers for this filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RarePaths {
    /// The tenant-keys index exists and the filter has keys to look up.
    pub keys: bool,
    /// A GIN index on the attributes exists and the filter has a jsonpath.
    pub gin: bool,
}

impl RarePaths {
    /// Whether there is any path to leave the walk for.
    pub fn any(self) -> bool {
        self.keys || self.gin
    }
}

/// Index entries of the first chunk: enough that a filter matching one row
/// in 20 fills the page, and at least 1000 (500 classified the 1M-alert
/// tenant's 1% value as rare: GIN, 35 ms against 7).
pub fn first_chunk(page_size: i64) -> i64 {
    (20 * page_size).max(1000)
}

/// The chunk after one of `chunk` entries that held `hits` matches, with
/// `remaining` rows of the page still to find: enough at that rate for the
/// rest of the page with half as much again to spare (so a second chunk
/// usually fills it), and at least twice the last one.
pub fn next_chunk(remaining: i64, chunk: i64, hits: i64) -> i64 {
    let needed = remaining.saturating_mul(chunk) / hits.max(1);
    (needed.saturating_mul(3) / 2).max(chunk.saturating_mul(2))
}

/// After a full chunk of `chunk` entries over `span_ms` of ULID time (None
/// when its ends are not ULIDs) held `hits` matches, with `want` rows still
/// to find: leave the walk? Some(weeks) is the first range of weeks the
/// keys path should read (GIN ignores it). With the tenant-keys index, when
/// its estimated cost for the rest of the page is below the walk's
/// ([`keys_cheaper`]); with GIN alone, whose cost follows the whole table,
/// or when the keys model has no span, when the chunk held fewer than one
/// match in [`RARE`] entries.
pub fn leave_walk(
    paths: RarePaths,
    hits: i64,
    chunk: i64,
    span_ms: Option<u64>,
    want: i64,
) -> Option<u64> {
    let by_cost = if paths.keys {
        span_ms.and_then(|span| keys_cheaper(hits, chunk, span, want, FIRST_WEEKS))
    } else {
        None
    };
    by_cost.or_else(|| (paths.any() && hits * RARE < chunk).then_some(FIRST_WEEKS))
}

/// A walk read the whole window (`entries` entries, `hits` matches): would
/// the rare path have been cheaper, so that the next calls for this tenant
/// and filter should take it? With the keys index, by its cost model;
/// otherwise when the window was long and the filter rare in it (shorter
/// windows count where GIN is read `in_place`).
pub fn remember_after_window(paths: RarePaths, hits: i64, entries: i64, in_place: bool) -> bool {
    let min = if in_place {
        ROUTE_MIN_ENTRIES_IN_PLACE
    } else {
        ROUTE_MIN_ENTRIES
    };
    if paths.keys {
        keys_cheaper_than_walked(hits, entries)
    } else {
        entries >= min && hits * RARE < entries
    }
}

/// A remembered route whose readers fetched more heap rows than this for
/// one page (any tenant's, as a bitmap gives them) ends: the filter may no
/// longer be rare for the tenant. About 5 ms of fetches and exact checks.
pub const FORGET_ROWS: u64 = 5_000;
/// The same for an answer that ran statements, whose rows read are not
/// counted: its time.
pub const FORGET_MICROS: u64 = 5_000;

/// What a remembered route's answer cost: the heap rows its in-place
/// readers fetched, whether any statement answered part of it, and its
/// time in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RareCost {
    pub fetched: u64,
    pub statements: bool,
    pub micros: u64,
}

impl RareCost {
    /// The answer's cost in heap rows: those fetched, and where statements
    /// answered (their rows not counted) one a microsecond.
    pub fn rows(self) -> u64 {
        if self.statements {
            self.fetched.max(self.micros)
        } else {
            self.fetched
        }
    }
}

/// A heap row a rare path fetches and checks (or a microsecond of its
/// statements) costs about as much as this many index entries walked in
/// place (about 1 µs against 0.1 µs)...
pub const ENTRIES_PER_ROW: u64 = 10;
/// ... and as this many walked by statements (0.6 µs an entry).
pub const STATEMENT_ENTRIES_PER_ROW: u64 = 2;

/// After the first chunk of `chunk` entries held `hits` matches and left
/// the page `want` rows short (and the walk did not leave by
/// [`leave_walk`]): the most rows GIN's entries may list for reading them
/// in place (a heap fetch and exact check each, [`ENTRIES_PER_ROW`]
/// entries' worth) to cost less than walking on at the chunk's rate (no
/// hits counts as half a hit). GIN's cost follows how many rows of the
/// relation hold the value, not the tenant's share of them: a value that
/// is one in a hundred of the tenant's rows and in no other tenant's is
/// few in a month's leaf (70 rows, against 6,000 entries walked).
pub fn gin_rows_cheaper(hits: i64, chunk: i64, want: i64) -> Option<usize> {
    if chunk <= 0 || want <= 0 {
        return None;
    }
    let rate = (hits as f64).max(0.5) / chunk as f64;
    let rows = want as f64 / rate / ENTRIES_PER_ROW as f64;
    (rows >= 1.0).then_some(rows as usize)
}

/// A rare path that answered this tenant and filter lately cost `rows`
/// ([`forget_route`] said too much): the walk leaves for it again only
/// once it has read `walked` entries that cost as much (`in_place`: read
/// by the direct scan, else by statements). Without this, a value rare
/// for the tenant but common in the table (GIN reads every tenant's rows)
/// sent every other call to GIN: the walk found it rare, GIN's answer
/// forgot the route, the next walk found it rare again.
pub fn leave_despite_cost(walked: i64, rows: u64, in_place: bool) -> bool {
    let per_row = if in_place {
        ENTRIES_PER_ROW
    } else {
        STATEMENT_ENTRIES_PER_ROW
    };
    walked.max(0) as u64 >= rows.saturating_mul(per_row)
}

/// Whether a remembered route's answer says the next calls should walk
/// first again. By the rows it fetched, a count the same whatever the
/// machine's load (a backend waiting for the CPU is not a filter grown
/// frequent); by time only where statements answered and there is no
/// count.
pub fn forget_route(cost: RareCost) -> bool {
    cost.fetched > FORGET_ROWS || (cost.statements && cost.micros > FORGET_MICROS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gin_is_read_when_its_rows_cost_less_than_the_walk_left() {
        // one match in 125 entries, 42 rows short: 5,250 entries to walk,
        // as much as 525 rows fetched
        assert_eq!(gin_rows_cheaper(8, 1000, 42), Some(525));
        // no hits counts as half a hit
        assert_eq!(gin_rows_cheaper(0, 1000, 50), Some(10_000));
        // dense: the walk left is short, at most a few rows
        assert_eq!(gin_rows_cheaper(500, 1000, 5), Some(1));
        assert_eq!(gin_rows_cheaper(900, 1000, 1), None);
        assert_eq!(gin_rows_cheaper(8, 1000, 0), None);
        assert_eq!(gin_rows_cheaper(8, 0, 10), None);
    }

    #[test]
    fn a_route_is_forgotten_by_rows_read_in_place_by_time_only_for_statements() {
        let cost = |fetched, statements, micros| RareCost {
            fetched,
            statements,
            micros,
        };
        // in place: a slow answer that read few rows was the machine's load
        assert!(!forget_route(cost(120, false, 60_000)));
        assert!(!forget_route(cost(FORGET_ROWS, false, 0)));
        assert!(forget_route(cost(FORGET_ROWS + 1, false, 0)));
        // statements: their time decides, their rows cannot be counted
        assert!(!forget_route(cost(0, true, FORGET_MICROS)));
        assert!(forget_route(cost(0, true, FORGET_MICROS + 1)));
        assert!(forget_route(cost(FORGET_ROWS + 1, true, 10)));
    }

    const KEYS: RarePaths = RarePaths {
        keys: true,
        gin: false,
    };
    const GIN: RarePaths = RarePaths {
        keys: false,
        gin: true,
    };
    const NONE: RarePaths = RarePaths {
        keys: false,
        gin: false,
    };

    #[test]
    fn a_costly_rare_path_is_left_for_again_only_after_as_costly_a_walk() {
        let cost = |fetched, statements, micros| RareCost {
            fetched,
            statements,
            micros,
        };
        assert_eq!(cost(6000, false, 90_000).rows(), 6000);
        assert_eq!(cost(0, true, 7000).rows(), 7000);
        assert_eq!(cost(9000, true, 7000).rows(), 9000);
        assert!(!leave_despite_cost(1000, 6000, true));
        assert!(!leave_despite_cost(59_999, 6000, true));
        assert!(leave_despite_cost(60_000, 6000, true));
        // statements walk dearer entries: fewer of them cost as much
        assert!(!leave_despite_cost(11_999, 6000, false));
        assert!(leave_despite_cost(12_000, 6000, false));
        assert!(leave_despite_cost(i64::MAX, u64::MAX / 20, true));
        assert!(!leave_despite_cost(i64::MAX, u64::MAX, true)); // saturates
        assert!(!leave_despite_cost(-1, 1, false));
    }

    #[test]
    fn chunks_grow_with_the_rate() {
        assert_eq!(first_chunk(50), 1000);
        assert_eq!(first_chunk(500), 10_000);
        // 10 of 1000 entries, 40 still wanted: 4000 needed, 6000 read.
        assert_eq!(next_chunk(40, 1000, 10), 6000);
        // Plenty of hits: at least twice the last chunk.
        assert_eq!(next_chunk(1, 1000, 900), 2000);
        // No hits counts as one; no overflow on huge chunks.
        assert_eq!(next_chunk(50, 1000, 0), 75_000);
        assert_eq!(next_chunk(i64::MAX, i64::MAX, 1), i64::MAX);
    }

    #[test]
    fn leaving_the_walk() {
        let hour = 3_600_000;
        // GIN only: below 1 in 200.
        assert_eq!(leave_walk(GIN, 4, 1000, Some(hour), 50), Some(FIRST_WEEKS));
        assert_eq!(leave_walk(GIN, 5, 1000, Some(hour), 50), None);
        // Nothing to leave for.
        assert_eq!(leave_walk(NONE, 0, 1000, Some(hour), 50), None);
        // Keys: by the cost model (1% over 9 hours: one week of keys).
        assert_eq!(leave_walk(KEYS, 10, 1000, Some(9 * hour), 50), Some(1));
        assert_eq!(leave_walk(KEYS, 40, 1000, Some(9 * hour), 50), None);
        // Keys without a span (ids that are not ULIDs): the rate rule.
        assert_eq!(leave_walk(KEYS, 0, 1000, None, 50), Some(FIRST_WEEKS));
        assert_eq!(leave_walk(KEYS, 10, 1000, None, 50), None);
    }

    #[test]
    fn remembering_a_whole_window() {
        for in_place in [false, true] {
            assert!(remember_after_window(KEYS, 8, 834, in_place));
            assert!(!remember_after_window(KEYS, 410, 834, in_place));
            assert!(remember_after_window(GIN, 1, 400, in_place));
            assert!(!remember_after_window(GIN, 2, 400, in_place));
        }
        // too short to tell, for GIN's statement; not for GIN read in place
        assert!(!remember_after_window(GIN, 0, 299, false));
        assert!(remember_after_window(GIN, 0, 273, true));
        assert!(!remember_after_window(GIN, 0, 99, true));
        assert!(!remember_after_window(GIN, 1, 199, true));
    }
}
