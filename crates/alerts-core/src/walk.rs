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
/// Most weeks one tenant-keys statement looks up (keys per value).
pub const MAX_WEEKS: u64 = 256;
/// A walk that read a whole window must have read at least this many
/// entries (without the keys index) to send the next calls to GIN.
pub const ROUTE_MIN_ENTRIES: i64 = 300;

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
/// otherwise when the window was long and the filter rare in it.
pub fn remember_after_window(paths: RarePaths, hits: i64, entries: i64) -> bool {
    if paths.keys {
        keys_cheaper_than_walked(hits, entries)
    } else {
        entries >= ROUTE_MIN_ENTRIES && hits * RARE < entries
    }
}

/// The next range of weeks the keys path reads, newest first, between the
/// window's oldest week `lo` and `hi` (inclusive), `span` weeks long: its
/// first week.
pub fn range_start(lo: u64, hi: u64, span: u64) -> u64 {
    if hi - lo < span {
        lo
    } else {
        hi + 1 - span
    }
}

/// The span of the range after one of `span` weeks: twice as long, at most
/// [`MAX_WEEKS`].
pub fn next_span(span: u64) -> u64 {
    span.saturating_mul(2).min(MAX_WEEKS)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(remember_after_window(KEYS, 8, 834));
        assert!(!remember_after_window(KEYS, 410, 834));
        assert!(remember_after_window(GIN, 1, 400));
        assert!(!remember_after_window(GIN, 1, 299)); // too short to tell
        assert!(!remember_after_window(GIN, 2, 400));
    }

    #[test]
    fn week_ranges_cover_the_window_once() {
        let (lo, mut hi, mut span) = (100u64, 140u64, FIRST_WEEKS);
        let mut seen = Vec::new();
        loop {
            let start = range_start(lo, hi, span);
            seen.extend(start..=hi);
            if start == lo {
                break;
            }
            hi = start - 1;
            span = next_span(span);
        }
        seen.sort_unstable();
        assert_eq!(seen, (100..=140).collect::<Vec<_>>());
        assert_eq!(next_span(MAX_WEEKS), MAX_WEEKS);
        assert_eq!(range_start(5, 5, 6), 5);
    }
}
