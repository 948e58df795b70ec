//! Pages oldest first (`ORDER BY id ASC`, asked by the custom scan): the
//! walk of `walk.rs` and the rare paths of `rare.rs` read the other way.
//! The window is `[floor, upper)` in one range: ids that are not ULIDs
//! (below them, or at or after '8') come where the index has them, so no
//! part of it is read apart from the rest.
//!
//! - The direct scan of the pagination index reads entries upward from the
//!   window's floor (or from above the last page's last id), bloom-tested
//!   in the index, candidates checked exactly: the same chunks and the same
//!   decision to leave (`alerts_core::walk::leave_walk`).
//! - Leaving, the rest of the page comes from GIN's entries read in place
//!   when they list few rows (`rare::small_gin`), else the tenant-keys
//!   index, oldest weeks first (each range bounded by ids, checked
//!   exactly), else one GIN statement ordered by `id ASC`, else the walk
//!   to the window's end.
//! - Where the direct scan cannot read the table (row-level security,
//!   column grants, which the executor must apply), one statement the
//!   planner plans answers the page, with every check in it.
//!
//! Not here: the session's memory of rare filters (`routes.rs`) serves
//! newest-first pages only; an oldest-first page always walks a first
//! chunk.

use alerts_core::keys::{clause_keys, week_floor};
use alerts_core::walk::{first_chunk, leave_walk, next_chunk};
use alerts_core::weeks::WeekRanges;
use pgrx::pg_sys::Datum;

use super::call::{Ascending, Call};
use super::page::Page;
use super::scan::IndexWalk;
use super::spi::text_of;
use super::statements::{Statements, Stmt};
use super::trace::{self, Route};
use super::walker::{Bitmap, Walk};

/// A range's lower bound: ids above it, or at it too when not strict.
type Lower = (Datum, bool);

fn ascending(call: &Call) -> Ascending {
    call.ascending.expect("an oldest-first call")
}

/// The window's lower bound: above the last page's last id, else from the
/// floor.
fn window_lower(call: &Call) -> Lower {
    match ascending(call).after {
        Some(after) => (after, true),
        None => (call.floor, false),
    }
}

/// Fills `page` with the call's matches, oldest first, through the direct
/// scan `walker`.
///
/// # Safety
/// SPI must be connected; the call's datums are live; `walker` was begun
/// for this call.
pub unsafe fn fill(st: &mut Statements, call: &Call, walker: &mut IndexWalk, page: &mut Page) {
    if call.compiled.matches_nothing() {
        return;
    }
    let mut chunk = first_chunk(page.size());
    let mut collected: i64 = 0;
    // SAFETY: as the caller's.
    unsafe {
        loop {
            let want = page.want;
            let walked = walker.chunk(page, Some(chunk));
            trace::walked(walked.entries);
            if page.is_full() || walked.end {
                return;
            }
            if let Some(weeks) = leave_walk(call.paths, walked.hits, chunk, walked.span_ms, want) {
                trace::left_walk(collected + walked.hits, walked.entries);
                let lower = walker
                    .cursor()
                    .map_or_else(|| window_lower(call), |c| (c, true));
                rest_of_page(st, call, walker, lower, page, weeks);
                return;
            }
            collected += walked.hits;
            if !call.paths.any() {
                let walked = walker.chunk(page, None);
                trace::walked(walked.entries);
                return;
            }
            chunk = next_chunk(page.want, chunk, walked.hits);
        }
    }
}

/// The rest of the page above `lower`, where the walk stands, by the
/// cheapest rare path; `weeks` is the first range the keys path reads.
unsafe fn rest_of_page(
    st: &mut Statements,
    call: &Call,
    walker: &mut IndexWalk,
    lower: Lower,
    page: &mut Page,
    weeks: u64,
) {
    // SAFETY: as fill's.
    unsafe {
        let window = (lower, ascending(call).upper);
        if super::rare::small_gin(call, walker, page, window) {
            return;
        }
        if call.paths.keys && by_keys(st, call, walker, lower, page, weeks) {
            trace::rare_path(true);
            return;
        }
        super::rare::gin_or_walk(call, walker, page, window, |path, want| {
            call.execute_nullable(
                st.plan(Stmt::GinOldest),
                &[
                    Some(call.org),
                    Some(lower.0),
                    Some(Datum::from(lower.1)),
                    Some(call.filter),
                    Some(want),
                    Some(path),
                    ascending(call).upper,
                ],
            )
        });
    }
}

/// The rest of the page through the tenant-keys index, oldest weeks first:
/// `first_weeks` weeks, then twice as many each time, until the page is
/// full or the window's newest entry is read. Each range is bounded by ids
/// (each row belongs to exactly one range; ids without a week are found by
/// their own keys in whichever range holds them) and checked exactly.
/// False, having read nothing, when the window's newest entry gives no
/// week (an id that is not a ULID, in another collation than `C`:
/// `Call::week_bound`).
unsafe fn by_keys(
    st: &mut Statements,
    call: &Call,
    walker: &mut IndexWalk,
    mut lower: Lower,
    page: &mut Page,
    first_weeks: u64,
) -> bool {
    let upper = ascending(call).upper;
    // SAFETY: as fill's.
    unsafe {
        // The weeks between the oldest and the newest entry left in the
        // window (one index descent each).
        let Some(first) = walker.edge(lower, upper, true) else {
            return true; // nothing left in the window
        };
        let Some(last) = walker.edge(lower, upper, false) else {
            return true;
        };
        // The greatest week at or below an id: the first range starts at
        // the oldest entry's (or at the first week, when its id does not
        // tell), and no entry lies between `lower` and it. The last ends
        // at the newest entry's: without it the weeks have no end.
        let Some(hi) = call.week_bound(&last) else {
            return false;
        };
        let lo = call.week_bound(&first).flatten().unwrap_or(0);
        let hi = hi.unwrap_or(0).max(lo);
        let tenant = crate::datum::varlena_bytes(call.org).to_vec();
        let mut ranges = WeekRanges::new(lo, hi, first_weeks, false);
        while let Some((start, end)) = ranges.next_range() {
            // the last range reaches the window's own end; the others end
            // where the next week starts
            let range_upper = if end == hi {
                upper
            } else {
                Some(text_of(&week_floor(end + 1)))
            };
            let arrays: Vec<Datum> = call
                .compiled
                .clauses
                .iter()
                .map(|c| crate::keys::int8_array(&clause_keys(&tenant, start, end, c)))
                .collect();
            if !walker.read_bitmap(Bitmap::Keys(&arrays), lower, range_upper, page) {
                // The keys index could not answer the range exactly (a
                // lossy bitmap): the planner's statement reads it.
                by_statement(st, call, lower, range_upper, page);
            }
            if page.is_full() {
                return true;
            }
            lower = (text_of(&week_floor(end + 1)), false);
            if ranges.far() {
                // Far from the window's end: skip the weeks without a row,
                // to the week of the next entry (one index descent), when
                // its id tells.
                let Some(next) = walker.edge(lower, upper, true) else {
                    return true;
                };
                if let Some(week) = call.week_bound(&next) {
                    ranges.skip_to(week.unwrap_or(end + 1));
                }
            }
        }
        true
    }
}

/// The page in one statement the planner plans, every check in it: for
/// tables the direct scan cannot read as the role would (row-level
/// security, column grants).
///
/// # Safety
/// SPI must be connected; the call's datums are live.
pub unsafe fn planned(st: &mut Statements, call: &Call, page: &mut Page) {
    if call.compiled.matches_nothing() {
        return;
    }
    trace::page_starts(Route::Planned);
    // SAFETY: as the caller's.
    unsafe { by_statement(st, call, window_lower(call), ascending(call).upper, page) };
}

/// The rows of the range above `lower` and below `upper` (when there is
/// one), oldest first, by the planner's statement.
///
/// # Safety
/// As [`planned`].
unsafe fn by_statement(
    st: &mut Statements,
    call: &Call,
    lower: Lower,
    upper: Option<Datum>,
    page: &mut Page,
) {
    // SAFETY: as the caller's.
    unsafe {
        page.add(call.execute_nullable(
            st.plan(Stmt::OldestPage),
            &[
                Some(call.org),
                Some(lower.0),
                Some(Datum::from(lower.1)),
                Some(call.filter),
                Some(Datum::from(page.want)),
                upper,
            ],
        ));
    }
}
