//! The page walk: the window newest first along the pagination index in
//! growing chunks, bloom-tested from the index, candidates rechecked from the
//! heap. After each chunk that leaves the page short the walk may leave for a
//! rare path (`alerts_core::walk::leave_walk`: the keys index's cost model,
//! or fewer than one match in 200 entries for GIN); matches often come in
//! bursts (many recent, then none), so the decision is taken chunk by chunk.
//! Every choice is a pure function of `alerts_core::walk`; this file only
//! runs statements and keeps the page.

use alerts_core::walk::{first_chunk, leave_walk, next_chunk, remember_after_window, FIRST_WEEKS};
use pgrx::pg_sys::Datum;

use super::routes::{Key, Routes};
use super::spi::{execute, rows, Page};
use super::statements::Statements;
use super::{probe, rare, Call};

/// Fills `page` with the call's matches, newest first.
///
/// # Safety
/// SPI must be connected; the call's datums are live.
pub unsafe fn fill(st: &mut Statements, routes: &mut Routes, call: &Call, page: &mut Page) {
    // SAFETY: as the caller's.
    unsafe {
        if call.compiled.matches_nothing() {
            return; // a key with no accepted values: no row matches
        }
        if call.first_page {
            // Ids at or after '8' (not ULIDs: other schemes, lowercase
            // hex...) come first in the index; usually there are none and
            // this costs one index descent.
            page.add(execute(
                st.above,
                &[call.org, call.floor, call.filter, Datum::from(page.want)],
            ));
            if page.is_full() {
                return;
            }
        }
        let route = if call.paths.any() {
            Routes::key(call.org, call.filter)
        } else {
            None
        };
        if let Some(key) = &route {
            if let Some(weeks) = routes.fresh(key) {
                // Walked recently and found rare: straight to the rare path.
                let started = std::time::Instant::now();
                rare::rest_of_page(st, call, call.before, page, weeks);
                routes.answered(key, started.elapsed());
                return;
            }
        }
        chunks(st, routes, route, call, page);
    }
}

/// The chunked walk from the call's cursor down.
unsafe fn chunks(
    st: &mut Statements,
    routes: &mut Routes,
    route: Option<Key>,
    call: &Call,
    page: &mut Page,
) {
    let mut cursor = call.before;
    let mut chunk = first_chunk(page.size());
    let mut first = true;
    let mut collected: i64 = 0;
    // SAFETY: SPI is connected by the caller; datums are live.
    unsafe {
        loop {
            let want = page.want;
            probe::reset();
            let walked = execute(
                st.walk,
                &[
                    call.org,
                    call.floor,
                    cursor,
                    call.filter,
                    Datum::from(want),
                    Datum::from(chunk),
                ],
            );
            let hits = rows(walked);
            if hits >= want {
                page.add(walked);
                return;
            }
            let entries = probe::entries();
            if entries < chunk {
                // The walk reached the end of the window: that's all. If the
                // rare path would have been cheaper, the next calls take it.
                if collected == 0 && remember_after_window(call.paths, hits, entries) {
                    if let Some(key) = route {
                        routes.remember(key, FIRST_WEEKS);
                    }
                }
                page.add(walked);
                return;
            }
            let frontier = if entries == chunk {
                probe::smallest_id()
            } else {
                match st.frontier(call.org, call.floor, cursor, chunk) {
                    Some(d) => d,
                    None => {
                        page.add(walked);
                        return;
                    }
                }
            };
            if let Some(weeks) = leave_walk(call.paths, hits, chunk, probe::span_ms(), want) {
                // The rare path answers the rest of the page below the
                // cursor (it finds again what this chunk found).
                if first {
                    if let Some(key) = route {
                        routes.remember(key, weeks);
                    }
                }
                rare::rest_of_page(st, call, cursor, page, weeks);
                return;
            }
            collected += page.add(walked);
            if !call.paths.any() {
                // Nothing to leave for: walk the rest without a chunk bound.
                page.add(execute(
                    st.rest,
                    &[
                        call.org,
                        call.floor,
                        frontier,
                        call.filter,
                        Datum::from(page.want),
                    ],
                ));
                return;
            }
            chunk = next_chunk(page.want, chunk, hits);
            cursor = frontier;
            first = false;
        }
    }
}
