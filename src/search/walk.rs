//! The page walk: the window newest first along the pagination index in
//! growing chunks, bloom-tested from the index, candidates checked exactly
//! from the heap. After each chunk that leaves the page short the walk may
//! leave for a rare path (`alerts_core::walk::leave_walk`: the keys index's
//! cost model, or fewer than one match in 200 entries for GIN); matches
//! often come in bursts (many recent, then none), so the decision is taken
//! chunk by chunk. Every choice is a pure function of `alerts_core::walk`;
//! this file only runs the chunks and keeps the page.
//!
//! Two walkers read the chunks, with the same answers: one direct scan of
//! the pagination index (`scan/`: plain tables, Citus shards, and each
//! leaf of a partitioned table, `leaves.rs`), and the prepared statements
//! of `statements.rs` (views, and tables read under row-level security or
//! column grants).

use alerts_core::ulid;
use alerts_core::walk::{
    first_chunk, gin_rows_cheaper, leave_despite_cost, leave_walk, next_chunk,
    remember_after_window, RareCost, FIRST_WEEKS,
};
use pgrx::pg_sys::{self, Datum};

use super::call::Call;
use super::page::Page;
use super::routes::{Key, Routes};
use super::spi::first_id;
use super::statements::{Statements, Stmt};
use super::trace::{self, Route};
use super::walker::{Bitmap, Walk, Walked};
use super::{probe, rare};

/// Fills `page` with the call's matches, newest first.
///
/// # Safety
/// SPI must be connected; the call's datums are live.
pub unsafe fn fill(
    st: &mut Statements,
    routes: &mut Routes,
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
) {
    // SAFETY: as the caller's.
    unsafe {
        if call.compiled.matches_nothing() {
            return; // a key with no accepted values: no row matches
        }
        let (route, fresh) = remembered(routes, call);
        if let (true, Some(key), Some(_)) = (call.first_page, &route, fresh) {
            // Remembered rare on a first page: GIN's entries read in place,
            // when they list few rows, answer the whole window above the
            // floor at once, the ids at or after '8' with the rest (their
            // range has no upper bound), without the descent that reads
            // those ids apart.
            let (answered, cost) =
                timed(|| rare::small_gin(call, walker, page, ((call.floor, false), None)));
            if answered {
                trace::page_starts(Route::RememberedGin);
                routes.answered(key.clone(), cost);
                return;
            }
        }
        if call.first_page && (fresh.is_some() || !walker.reads_above_first()) {
            // Ids at or after '8' (not ULIDs: other schemes, lowercase
            // hex...) come first in the index; usually there are none and
            // this costs one index descent.
            walker.above(page);
            if page.is_full() {
                return;
            }
        }
        if let (Some(key), Some(weeks)) = (route.clone(), fresh) {
            // Walked recently and found rare: straight to the rare path.
            trace::page_starts(Route::RememberedKeys);
            rest_of_page(st, routes, key, call, walker, call.before, page, weeks);
            return;
        }
        chunks(st, routes, route, call, walker, page);
    }
}

/// The call's pair in the route memory (when shortcuts are on and the
/// table offers a rare path), and the weeks to read first when the session
/// found it rare lately.
///
/// # Safety
/// The call's datums are live.
pub unsafe fn remembered(routes: &Routes, call: &Call) -> (Option<Key>, Option<u64>) {
    let route = if call.paths.any() {
        // SAFETY: as the caller's.
        unsafe { Routes::key(call.org, call.filter, call.columns) }
    } else {
        None
    };
    // What a walk found rare was a window of ULIDs: the ids below the ULID
    // range, which the custom scan reads as a window of their own (usually
    // none: one descent), are walked; a rare path there would read the
    // whole GIN bitmap again for nothing.
    // SAFETY: as the caller's.
    let ulids = unsafe { crate::datum::varlena_bytes(call.before) } > &ulid::floor(0)[..];
    let fresh = route
        .as_ref()
        .filter(|_| ulids)
        .and_then(|key| routes.fresh(key));
    (route, fresh)
}

/// A rare path's answer and what it cost (the trace's counters and the
/// clock around it), for the route memory.
pub fn timed<R>(answer: impl FnOnce() -> R) -> (R, RareCost) {
    let (before, started) = (trace::now(), std::time::Instant::now());
    let answered = answer();
    let after = trace::now();
    let cost = RareCost {
        fetched: after.fetched.wrapping_sub(before.fetched),
        statements: after.statements != before.statements,
        micros: started.elapsed().as_micros() as u64,
    };
    (answered, cost)
}

/// The rare path for the rest of the page below `cursor`
/// (`rare::rest_of_page`), its cost told to the route memory.
///
/// # Safety
/// As [`fill`].
#[allow(clippy::too_many_arguments)]
unsafe fn rest_of_page(
    st: &mut Statements,
    routes: &mut Routes,
    key: Key,
    call: &Call,
    walker: &mut dyn Walk,
    cursor: Datum,
    page: &mut Page,
    weeks: u64,
) {
    // SAFETY: as the caller's.
    let ((), cost) = timed(|| unsafe { rare::rest_of_page(st, call, walker, cursor, page, weeks) });
    routes.answered(key, cost);
}

/// The chunked walk from the call's cursor down.
unsafe fn chunks(
    st: &mut Statements,
    routes: &mut Routes,
    route: Option<Key>,
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
) {
    let mut chunk = first_chunk(page.size());
    let mut first = true;
    let mut collected: i64 = 0;
    let mut entries: i64 = 0;
    // a rare path's answer for the pair cost too much lately: leave for
    // one only once the walk has cost as much
    let costly = route.as_ref().and_then(|key| routes.costly(key));
    // SAFETY: as the caller's.
    unsafe {
        loop {
            let want = page.want;
            let walked = walker.chunk(page, Some(chunk));
            trace::walked(walked.entries);
            entries = entries.saturating_add(walked.entries);
            if page.is_full() {
                return;
            }
            if walked.end {
                // The walk reached the end of the window: that's all. If the
                // rare path would have been cheaper, the next calls take it.
                let in_place = walker.reads_bitmaps();
                if collected == 0
                    && remember_after_window(call.paths, walked.hits, entries, in_place)
                {
                    if let Some(key) = route {
                        routes.remember(key, FIRST_WEEKS);
                    }
                }
                return;
            }
            let leave =
                leave_walk(call.paths, walked.hits, chunk, walked.span_ms, want).filter(|_| {
                    costly.is_none_or(|rows| {
                        leave_despite_cost(entries, rows, walker.reads_bitmaps())
                    })
                });
            if let Some(weeks) = leave {
                // The rare path answers the rest of the page below where the
                // walk stopped.
                trace::left_walk(collected + walked.hits, walked.entries);
                let cursor = walker.cursor().unwrap_or(call.before);
                match route {
                    Some(key) => {
                        if first {
                            routes.remember(key.clone(), weeks);
                        }
                        rest_of_page(st, routes, key, call, walker, cursor, page, weeks);
                    }
                    None => rare::rest_of_page(st, call, walker, cursor, page, weeks),
                }
                return;
            }
            if first
                && call.paths.gin
                && walker.reads_bitmaps()
                && gin_instead(routes, &route, call, walker, page, (&walked, chunk))
            {
                return;
            }
            collected += walked.hits;
            if !call.paths.any() {
                // Nothing to leave for: walk the rest without a chunk bound.
                let walked = walker.chunk(page, None);
                trace::walked(walked.entries);
                return;
            }
            chunk = next_chunk(page.want, chunk, walked.hits);
            first = false;
        }
    }
}

/// After the first chunk (`walked`, of `chunk` entries) left the page
/// short: the rest of it from GIN's entries read in place below the walk,
/// when they list fewer rows than the walk left would cost in entries
/// (`gin_rows_cheaper`: one descent a key, and nothing read when they list
/// more). Then the pair goes straight to the rare path for a while, as
/// when the walk leaves by its rate.
///
/// # Safety
/// As [`fill`]; the walker reads in place.
unsafe fn gin_instead(
    routes: &mut Routes,
    route: &Option<Key>,
    call: &Call,
    walker: &mut dyn Walk,
    page: &mut Page,
    (walked, chunk): (&Walked, i64),
) -> bool {
    let Some(at_most) = gin_rows_cheaper(walked.hits, chunk, page.want) else {
        return false;
    };
    // SAFETY: as the caller's.
    let (answered, cost) = timed(|| unsafe {
        let cursor = walker.cursor().unwrap_or(call.before);
        let window = ((call.floor, false), Some(cursor));
        rare::gin_listing_few(call, walker, page, window, at_most)
    });
    if !answered {
        return false;
    }
    trace::left_walk(walked.hits, walked.entries);
    if let Some(key) = route.clone() {
        routes.remember(key.clone(), FIRST_WEEKS);
        routes.answered(key, cost);
    }
    true
}

/// The walker of prepared statements: each chunk one statement from the
/// cursor down, its entries counted by `alerts_search_probe`.
pub struct StatementWalk<'s> {
    above: pg_sys::SPIPlanPtr,
    walk: pg_sys::SPIPlanPtr,
    rest: pg_sys::SPIPlanPtr,
    newest: pg_sys::SPIPlanPtr,
    oldest: pg_sys::SPIPlanPtr,
    call: &'s Call<'s>,
    cursor: Option<Datum>,
}

impl<'s> StatementWalk<'s> {
    /// The walker of `st`'s statements, prepared now where not yet.
    ///
    /// # Safety
    /// Inside a search (`spi::in_search`).
    pub unsafe fn new(st: &mut Statements, call: &'s Call<'s>) -> StatementWalk<'s> {
        // SAFETY: as the caller's.
        let mut plan = |which| unsafe { st.plan(which) };
        StatementWalk {
            above: plan(Stmt::Above),
            walk: plan(Stmt::Walk),
            rest: plan(Stmt::Rest),
            newest: plan(Stmt::Newest),
            oldest: plan(Stmt::Oldest),
            call,
            cursor: None,
        }
    }
}

impl Walk for StatementWalk<'_> {
    unsafe fn above(&mut self, page: &mut Page) {
        let c = self.call;
        // SAFETY: as the trait's.
        unsafe {
            page.add(c.execute(
                self.above,
                &[c.org, c.floor, c.filter, Datum::from(page.want)],
            ));
        }
    }

    unsafe fn chunk(&mut self, page: &mut Page, entries: Option<i64>) -> Walked {
        let c = self.call;
        let cursor = self.cursor.unwrap_or(c.before);
        // SAFETY: as the trait's.
        unsafe {
            let Some(chunk) = entries else {
                let hits = page.add(c.execute(
                    self.rest,
                    &[c.org, c.floor, cursor, c.filter, Datum::from(page.want)],
                ));
                return Walked {
                    hits,
                    end: true,
                    ..Walked::default()
                };
            };
            probe::reset();
            let tt = c.execute(
                self.walk,
                &[
                    c.org,
                    c.floor,
                    cursor,
                    c.filter,
                    Datum::from(page.want),
                    Datum::from(chunk),
                ],
            );
            let hits = page.add(tt);
            // the probe runs on the chunk's entries only: at least `chunk`
            // of them (the last id read whole) unless the window ended
            let read = probe::entries();
            let walked = Walked {
                entries: read,
                hits,
                span_ms: probe::span_ms(),
                end: read < chunk,
            };
            if !page.is_full() && !walked.end {
                self.cursor = Some(probe::smallest_id());
            }
            walked
        }
    }

    unsafe fn cursor(&self) -> Option<Datum> {
        self.cursor
    }

    unsafe fn bitmap_range(
        &mut self,
        _: Bitmap,
        _: (Datum, bool),
        _: Option<Datum>,
        _: &mut Page,
    ) -> bool {
        false
    }

    unsafe fn end_id(&mut self, upper: Datum, newest: bool) -> Option<Vec<u8>> {
        let c = self.call;
        let plan = if newest { self.newest } else { self.oldest };
        // SAFETY: as the trait's.
        unsafe { first_id(plan, &[c.org, c.floor, upper]) }
    }
}
