//! `alerts_search_probe(id text, bitmap bit, filter jsonb) RETURNS boolean`:
//! the walk's per-entry bloom test, which also counts the entries it is
//! called for and keeps the smallest and largest id, so that a chunk of the
//! walk tells where it stopped and how much ULID time it covered without a
//! second walk (a `row_number()` window cost 0.4 us per entry, as much as the
//! walk itself). A NULL bitmap (a row not yet backfilled) is a candidate:
//! the exact test decides. Internal to `alerts_search`; calling it elsewhere
//! only changes counters that every walk resets.

use std::cell::{Cell, RefCell};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};

crate::datum::finfo_v1!(pg_finfo_alerts_search_probe);

/// What the probe saw since [`reset`]: entries, smallest and largest id
/// (a slot of the backend's state).
#[derive(Default)]
struct Seen {
    count: Cell<i64>,
    min: RefCell<Vec<u8>>,
    max: RefCell<Vec<u8>>,
}

fn seen() -> &'static Seen {
    crate::backend::slot()
}

/// Forgets what the probe saw (before each chunk).
pub fn reset() {
    let s = seen();
    s.count.set(0);
    s.min.borrow_mut().clear();
    s.max.borrow_mut().clear();
}

/// Entries the probe was called for since [`reset`].
pub fn entries() -> i64 {
    seen().count.get()
}

/// The smallest id the probe saw, as a `text` datum (empty if none).
pub fn smallest_id() -> Datum {
    super::spi::text_of(&seen().min.borrow())
}

/// Milliseconds between the newest and the oldest entry the probe saw, when
/// both are ULIDs.
pub fn span_ms() -> Option<u64> {
    let t = |v: &RefCell<Vec<u8>>| alerts_core::keys::time_of_id(&v.borrow());
    let hi = t(&seen().max)?;
    let lo = t(&seen().min)?;
    Some(hi.saturating_sub(lo).max(1))
}

fn keep_if(cell: &RefCell<Vec<u8>>, id: &[u8], better: impl Fn(&[u8], &[u8]) -> bool) {
    let mut m = cell.borrow_mut();
    if m.is_empty() || better(id, m.as_slice()) {
        m.clear();
        m.extend_from_slice(id);
    }
}

/// # Safety
/// Called by Postgres through the V1 convention (not STRICT: NULL bitmaps
/// are counted too).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_search_probe(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_search_probe");
    let arg = |n: usize| unsafe { pgrx::fcinfo::pg_getarg_datum(fcinfo, n) };
    let s = seen();
    s.count.set(s.count.get() + 1);
    if let Some(id) = arg(0) {
        // SAFETY: a non-null text datum.
        let id = unsafe { crate::datum::varlena_bytes(id) };
        keep_if(&s.min, id, |a, b| a < b);
        keep_if(&s.max, id, |a, b| a > b);
    }
    let Some(filter) = arg(2) else {
        // SAFETY: returning SQL NULL from a V1 function.
        unsafe { (*fcinfo).isnull = true };
        return Datum::from(0usize);
    };
    match arg(1) {
        // SAFETY: non-null (bit, jsonb) arguments; the compiled filter lives
        // in fn_extra.
        Some(bm) => unsafe {
            Datum::from(
                crate::filter_cache::compiled(fcinfo, filter)
                    .bloom_match_bytes(crate::datum::bitmap_arg(bm)),
            )
        },
        None => Datum::from(true),
    }
}
