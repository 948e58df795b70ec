//! Compile a filter once per call site, not once per row.
//!
//! The compiled filter lives in `flinfo->fn_extra`, allocated in
//! `fn_mcxt` with a reset callback that drops it, so it lasts as long as the
//! query's expression state and never leaks Rust heap. Each call compares the
//! filter's raw jsonb bytes with the cached ones (a memcmp of a few dozen
//! bytes, no allocation) and recompiles only when the filter changes, which is
//! what happens when the filter comes from a column instead of a constant.
//!
//! `fn_extra` lasts one execution: a prepared statement run again starts
//! with an empty one. The session also keeps the filters it compiled last
//! (up to [`SESSION_KEPT`], by their bytes), so that the same filter
//! sent again is cloned, not parsed and compiled again.

use std::cell::RefCell;
use std::collections::HashMap;

use alerts_core::Filter;
use pgrx::pg_sys::{self, Datum};
use pgrx::PgMemoryContexts;

use crate::datum::{jsonb_value, varlena_bytes, OrRaise};

/// Values the session keeps per map; a map is cleared when full.
const SESSION_KEPT: usize = 256;

/// What the session keeps made from jsonb arguments, by their bytes.
pub type SessionMap<T> = RefCell<HashMap<Vec<u8>, T>>;

/// The value `map` keeps for bytes `raw`, else the one `make` returns,
/// kept (a `make` that raises keeps nothing).
pub fn session_kept<T: Clone>(map: &SessionMap<T>, raw: &[u8], make: impl FnOnce() -> T) -> T {
    if let Some(v) = map.borrow().get(raw).cloned() {
        return v;
    }
    let made = make();
    let mut m = map.borrow_mut();
    if m.len() >= SESSION_KEPT {
        m.clear();
    }
    m.insert(raw.to_vec(), made.clone());
    made
}

/// The session's compiled filters (a slot of the backend's state).
#[derive(Default)]
struct Filters(SessionMap<Filter>);

/// The filter of raw jsonb bytes `raw` (datum `d`), from the session's
/// filters or compiled (and kept).
///
/// # Safety
/// `d` is a non-null jsonb datum whose bytes are `raw`.
unsafe fn session_compiled(raw: &[u8], d: Datum) -> Filter {
    session_kept(&crate::backend::slot::<Filters>().0, raw, || {
        // SAFETY: as the caller's.
        Filter::compile(&unsafe { jsonb_value(d) }).or_raise()
    })
}

/// The filter of jsonb datum `d`, from the session's filters or compiled
/// (the custom scan's, once per execution).
///
/// # Safety
/// `d` is a non-null jsonb datum.
pub unsafe fn session_filter(d: Datum) -> Filter {
    // SAFETY: as the caller's.
    unsafe { session_compiled(varlena_bytes(d), d) }
}

/// What a call site keeps in `flinfo->fn_extra`: the value there when
/// `current` says it still holds, else the one `build` makes, which
/// replaces it. Allocated in `fn_mcxt` with a reset callback that drops it,
/// so it lasts as long as the query's expression state and never leaks Rust
/// heap. Every call site stores one type only.
///
/// # Safety
/// `flinfo` is the live call's, and its `fn_extra` is null or a `T` stored
/// by this function. The reference is valid until `fn_mcxt` is reset.
pub unsafe fn call_site<'a, T>(
    flinfo: *mut pg_sys::FmgrInfo,
    current: impl FnOnce(&T) -> bool,
    build: impl FnOnce() -> T,
) -> &'a T {
    // SAFETY: as the caller's; fn_mcxt outlives the call.
    unsafe {
        let cached = (*flinfo).fn_extra as *mut T;
        if !cached.is_null() && current(&*cached) {
            return &*cached;
        }
        let fresh = build();
        if cached.is_null() {
            let p = PgMemoryContexts::For((*flinfo).fn_mcxt).leak_and_drop_on_delete(fresh);
            (*flinfo).fn_extra = p as *mut std::ffi::c_void;
            &*p
        } else {
            *cached = fresh;
            &*cached
        }
    }
}

struct Cached {
    raw: Vec<u8>,
    filter: Filter,
}

/// The compiled form of the `jsonb` filter datum `d` for this call site.
///
/// # Safety
/// `fcinfo` must be the live call's and `d` a non-null `jsonb` datum. The
/// returned reference is valid until the function's memory context is reset,
/// which outlives the call.
pub unsafe fn compiled<'a>(fcinfo: pg_sys::FunctionCallInfo, d: Datum) -> &'a Filter {
    // SAFETY: flinfo belongs to the live call, whose fn_extra only this
    // function fills.
    unsafe {
        let raw = varlena_bytes(d);
        let cached: &Cached = call_site(
            (*fcinfo).flinfo,
            |c: &Cached| c.raw == raw,
            || Cached {
                raw: raw.to_vec(),
                filter: session_compiled(raw, d),
            },
        );
        &cached.filter
    }
}
