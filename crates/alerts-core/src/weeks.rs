//! The ranges of weeks the tenant-keys path reads, one statement (or one
//! bitmap scan) each, newest first for a page and oldest first for an
//! oldest-first page: the same sequence both ways, pure, so each direction
//! is unit-tested here without a database.

/// Most weeks one tenant-keys statement looks up (keys per value).
pub const MAX_WEEKS: u64 = 256;

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

/// The ranges of weeks the tenant-keys path reads, one statement (or one
/// bitmap scan) each: from one end of the window's weeks `lo..=hi` to the
/// other, newest first or oldest first, the first range `first_weeks`
/// long and each next one twice as long ([`next_span`]). Between two
/// ranges the caller may look up the next entry of the index and
/// [`WeekRanges::skip_to`] its week, when the weeks left are far more than
/// the next range ([`WeekRanges::far`]): weeks without a row cost nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeekRanges {
    lo: u64,
    hi: u64,
    span: u64,
    newest_first: bool,
    done: bool,
}

impl WeekRanges {
    /// The ranges over `lo..=hi` (empty when `lo > hi`).
    pub fn new(lo: u64, hi: u64, first_weeks: u64, newest_first: bool) -> WeekRanges {
        WeekRanges {
            lo,
            hi,
            span: first_weeks.max(1),
            newest_first,
            done: lo > hi,
        }
    }

    /// The next range, `(first week, last week)`, or None when the window's
    /// weeks are all read.
    pub fn next_range(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        let (lo, hi, span) = (self.lo, self.hi, self.span);
        let range = if self.newest_first {
            (range_start(lo, hi, span), hi)
        } else {
            (lo, if hi - lo < span { hi } else { lo + span - 1 })
        };
        if (self.newest_first && range.0 == lo) || (!self.newest_first && range.1 == hi) {
            self.done = true;
        } else if self.newest_first {
            self.hi = range.0 - 1;
        } else {
            self.lo = range.1 + 1;
        }
        self.span = next_span(span);
        Some(range)
    }

    /// Whether the weeks left reach further than the next range: then
    /// skipping to the next entry's week may save empty ranges.
    pub fn far(&self) -> bool {
        !self.done && self.hi - self.lo >= self.span
    }

    /// The weeks left start at `week` (newest first: at most; oldest
    /// first: at least), kept within the window: the week of the next
    /// entry, none being between.
    pub fn skip_to(&mut self, week: u64) {
        if self.newest_first {
            self.hi = self.hi.min(week).max(self.lo);
        } else {
            self.lo = week.clamp(self.lo, self.hi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::FIRST_WEEKS;

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

    fn all(mut r: WeekRanges) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| r.next_range()).collect()
    }

    #[test]
    fn week_ranges_both_ways() {
        // newest first: 6, 12, 24... weeks, the last range reaching lo
        assert_eq!(
            all(WeekRanges::new(100, 140, FIRST_WEEKS, true)),
            [(135, 140), (123, 134), (100, 122)]
        );
        // oldest first: the same lengths from the other end
        assert_eq!(
            all(WeekRanges::new(100, 140, FIRST_WEEKS, false)),
            [(100, 105), (106, 117), (118, 140)]
        );
        assert_eq!(all(WeekRanges::new(5, 5, 6, true)), [(5, 5)]);
        assert_eq!(all(WeekRanges::new(5, 5, 6, false)), [(5, 5)]);
        assert!(all(WeekRanges::new(6, 5, 6, true)).is_empty());
        for newest_first in [true, false] {
            for (lo, hi, first) in [(0u64, 2000u64, 6u64), (7, 9, 1), (0, 0, 0), (3, 700, 256)] {
                let mut weeks: Vec<u64> = all(WeekRanges::new(lo, hi, first, newest_first))
                    .into_iter()
                    .flat_map(|(a, b)| a..=b)
                    .collect();
                weeks.sort_unstable();
                assert_eq!(
                    weeks,
                    (lo..=hi).collect::<Vec<_>>(),
                    "{lo} {hi} {newest_first}"
                );
            }
        }
    }

    #[test]
    fn week_ranges_skip_empty_weeks() {
        // newest first: after the first range, the next entry is in week 10
        let mut r = WeekRanges::new(0, 1000, FIRST_WEEKS, true);
        assert_eq!(r.next_range(), Some((995, 1000)));
        assert!(r.far());
        r.skip_to(10);
        assert_eq!(r.next_range(), Some((0, 10)));
        assert_eq!(r.next_range(), None);
        // oldest first: the next entry is in week 990
        let mut r = WeekRanges::new(0, 1000, FIRST_WEEKS, false);
        assert_eq!(r.next_range(), Some((0, 5)));
        r.skip_to(990);
        assert_eq!(r.next_range(), Some((990, 1000)));
        assert!(!r.far());
        assert_eq!(r.next_range(), None);
        // skipping stays inside the window
        let mut r = WeekRanges::new(50, 1000, FIRST_WEEKS, false);
        r.next_range();
        r.skip_to(2000);
        assert_eq!(r.next_range(), Some((1000, 1000)));
    }
}
