//! The rare paths: the rest of a page below a cursor when the filter is too
//! rare for the walk. First a GIN index on the attributes read in place
//! when its entries list few rows, then the tenant-keys index (newest
//! weeks first), else one jsonpath scan of GIN, else (neither index) the
//! walk without a chunk bound.

use alerts_core::keys::{clause_keys, week_floor, week_of_id, NO_WEEK, WEEK_MS};
use alerts_core::walk::FIRST_WEEKS;
use alerts_core::weeks::WeekRanges;
use pgrx::pg_sys::Datum;

use super::call::Call;
use super::page::Page;
use super::spi::text_of;
use super::statements::{Statements, Stmt};
use super::trace;
use super::walker::{Bitmap, Walk};

/// Rows of other tenants (or outside the window) GIN's entries may list
/// beyond what the page wants, for GIN to be read before the tenant keys:
/// each costs a heap fetch (about half a microsecond), the keys' extra
/// descents about four.
const SMALL_GIN_EXTRA: usize = 16;

/// Fills the rest of the page below `cursor` by the cheapest rare path the
/// table offers; `weeks` is the first range the keys path reads. `walker`
/// stands at `cursor`: it finds the window's ends for the keys path, and
/// walks the rest when no index answers.
///
/// # Safety
/// SPI must be connected; the call's datums are live.
pub unsafe fn rest_of_page(
    st: &mut Statements,
    call: &Call,
    walker: &mut dyn Walk,
    cursor: Datum,
    page: &mut Page,
    weeks: u64,
) {
    // SAFETY: as the caller's.
    unsafe {
        let window = ((call.floor, false), Some(cursor));
        if small_gin(call, walker, page, window) {
            return;
        }
        if call.paths.keys && by_keys(st, call, walker, cursor, page, weeks) {
            trace::rare_path(true);
            return;
        }
        gin_or_walk(call, walker, page, window, |path, want| {
            call.execute(
                st.plan(Stmt::Gin),
                &[call.org, call.floor, cursor, call.filter, want, path],
            )
        });
    }
}

/// The rest of a page from GIN's entries read in place, when the table
/// has both GIN and the tenant keys and the entries of one of the filter's
/// clauses list few rows in the whole relation (a month's leaf, a shard):
/// one descent a key, where the keys take one a week. Over `window` (as
/// [`gin_or_walk`]'s); false, having added nothing, when they list more
/// (then the keys answer).
///
/// # Safety
/// As [`rest_of_page`].
pub unsafe fn small_gin(
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    (lower, upper): ((Datum, bool), Option<Datum>),
) -> bool {
    if !call.paths.keys {
        return false;
    }
    let at_most = page.rare_want().max(0) as usize + SMALL_GIN_EXTRA;
    // SAFETY: as the caller's.
    unsafe { gin_listing_few(call, walker, page, (lower, upper), at_most) }
}

/// The rest of a page over `window` (as [`gin_or_walk`]'s) from GIN's
/// entries read in place, when those of one of the filter's clauses list
/// at most `at_most` rows in the whole relation; false, having added
/// nothing, when they list more (or the table has no GIN, or the walker
/// does not read in place).
///
/// # Safety
/// As [`rest_of_page`].
pub unsafe fn gin_listing_few(
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    (lower, upper): ((Datum, bool), Option<Datum>),
    at_most: usize,
) -> bool {
    if !call.paths.gin {
        return false;
    }
    let paths: Vec<Datum> = call
        .compiled
        .gin_clause_jsonpaths()
        .iter()
        .map(crate::datum::jsonpath_datum_kept)
        .collect();
    // SAFETY: as the caller's.
    let read = !paths.is_empty()
        && unsafe { walker.bitmap_range(Bitmap::SmallGin(&paths, at_most), lower, upper, page) };
    if read {
        trace::rare_path(false);
    }
    read
}

/// The rows of `window` read in place from GIN alone, when it answers:
/// its small entries where the table also has the tenant keys (else the
/// keys answer), its whole bitmap where it has not. False, having added
/// nothing, when it does not answer (then the caller walks).
///
/// # Safety
/// As [`rest_of_page`].
pub unsafe fn gin_in_place(
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    window: ((Datum, bool), Option<Datum>),
) -> bool {
    // SAFETY: as the caller's.
    unsafe {
        if call.paths.keys {
            small_gin(call, walker, page, window)
        } else {
            gin_bitmap(call, walker, page, window)
        }
    }
}

/// The rows of `window` from the GIN index's bitmap for the filter's
/// jsonpath, read in place by the walker; false, having added nothing,
/// when the table has no such index, the filter no jsonpath, or the
/// walker cannot read it (a lossy bitmap).
///
/// # Safety
/// As [`rest_of_page`].
unsafe fn gin_bitmap(
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    (lower, upper): ((Datum, bool), Option<Datum>),
) -> bool {
    let Some(path) = call.jsonpath.as_ref().filter(|_| call.paths.gin) else {
        return false;
    };
    let path = crate::datum::jsonpath_datum_kept(path);
    // SAFETY: as the caller's.
    let read = unsafe { walker.bitmap_range(Bitmap::Gin(path), lower, upper, page) };
    if read {
        trace::rare_path(false);
    }
    read
}

/// The rest of a page without the keys index, when the table has a GIN
/// index and the filter a jsonpath: the index read directly by the walker
/// where it can, else one GIN statement (`gin`, given the filter's
/// jsonpath and the rows wanted), both over `window` (above its lower
/// bound, or at it when not strict; below its upper bound when there is
/// one). Else the rest of the walk from where the walker stands.
///
/// # Safety
/// As [`rest_of_page`].
pub unsafe fn gin_or_walk(
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    (lower, upper): ((Datum, bool), Option<Datum>),
    gin: impl FnOnce(Datum, Datum) -> *mut pgrx::pg_sys::SPITupleTable,
) {
    // SAFETY: as the caller's.
    unsafe {
        match &call.jsonpath {
            Some(path) if call.paths.gin => {
                if !gin_bitmap(call, walker, page, (lower, upper)) {
                    trace::rare_path(false);
                    let path = crate::datum::jsonpath_datum_kept(path);
                    page.add_rare(gin(path, Datum::from(page.rare_want())));
                }
            }
            _ => {
                let walked = walker.chunk(page, None);
                trace::walked(walked.entries);
            }
        }
    }
}

/// The rest of a page through the tenant-keys index, newest weeks first:
/// `first_weeks` weeks, then twice as many each time, until the page is
/// full or the window's oldest week is read. Every range is bounded by ids
/// (each row belongs to exactly one range) and checked exactly. Returns
/// false, having written nothing, when the window's ends are not ULIDs (no
/// weeks to walk; in another collation than `C`, see `Call::week_bound`).
unsafe fn by_keys(
    st: &mut Statements,
    call: &Call,
    walker: &mut dyn Walk,
    cursor: Datum,
    page: &mut Page,
    first_weeks: u64,
) -> bool {
    // SAFETY: SPI is connected by the caller; datums are live.
    unsafe {
        // The window's weeks: from the cursor's (or the tenant's newest
        // entry's, on a first page) down to the floor's (or the tenant's
        // oldest entry's, when the window reaches further back than a first
        // range; an unbounded window starts in 1970).
        let floor_bytes = crate::datum::varlena_bytes(call.floor).to_vec();
        let mut lo = week_of_id(&floor_bytes);
        if lo == NO_WEEK {
            return false;
        }
        let mut hi = week_of_id(crate::datum::varlena_bytes(cursor));
        let this_week = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            / WEEK_MS;
        if hi == NO_WEEK || hi.saturating_sub(lo) >= FIRST_WEEKS || hi > this_week {
            // A cursor that is not a ULID ('8' on a first page), a long
            // window, or one in the future (a partition's upper bound):
            // bound it by the tenant's newest entry below the cursor, one
            // lookup (weeks after it have no row).
            let Some(newest) = walker.end_id(cursor, true) else {
                return true; // nothing in the window below the cursor
            };
            match call.week_bound(&newest) {
                Some(week) => hi = hi.min(week.unwrap_or(lo)),
                None if hi == NO_WEEK => return false,
                None => {}
            }
        }
        if hi.saturating_sub(lo) >= FIRST_WEEKS {
            // Still long: bound its old end by the tenant's oldest entry too
            // (an unbounded window starts in 1970).
            let Some(oldest) = walker.end_id(cursor, false) else {
                return true;
            };
            lo = lo.max(week_of_id(&oldest));
            if lo == NO_WEEK {
                return false;
            }
        }
        if lo > hi {
            return true; // the window is empty below the cursor
        }
        let tenant = crate::datum::varlena_bytes(call.org).to_vec();
        let mut upper = cursor;
        let mut ranges = WeekRanges::new(lo, hi, first_weeks, true);
        while let Some((start, end)) = ranges.next_range() {
            let bound = week_floor(start);
            let range_floor = if start == lo || floor_bytes.as_slice() > bound.as_slice() {
                call.floor
            } else {
                text_of(&bound)
            };
            let arrays: Vec<Datum> = call
                .compiled
                .clauses
                .iter()
                .map(|c| crate::keys::int8_array(&clause_keys(&tenant, start, end, c)))
                .collect();
            if !walker.bitmap_range(
                Bitmap::Keys(&arrays),
                (range_floor, false),
                Some(upper),
                page,
            ) {
                let plan = st.plan(Stmt::Keys(arrays.len()));
                let mut args = vec![
                    call.org,
                    range_floor,
                    upper,
                    call.filter,
                    Datum::from(page.rare_want()),
                ];
                args.extend(arrays);
                page.add_rare(call.execute(plan, &args));
            }
            if page.is_full() {
                return true;
            }
            upper = text_of(&bound);
            if ranges.far() {
                // Far from the window's end: skip the weeks without a row.
                // The newest entry below `upper` bounds the next range (one
                // index descent), also when it is not a ULID. Without this a
                // cursor far in the future ('ZZZ...') above a lowercase
                // ULID looked up a million empty weeks, 256 at a time (3 s).
                let Some(newest) = walker.end_id(upper, true) else {
                    return true; // nothing left in the window
                };
                if let Some(week) = call.week_bound(&newest) {
                    ranges.skip_to(week.unwrap_or(lo));
                }
            }
        }
        true
    }
}
