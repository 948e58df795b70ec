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
//! (up to [`SESSION_FILTERS`], by their bytes), so that the same filter
//! sent again is cloned, not parsed and compiled again.

use std::cell::RefCell;
use std::collections::HashMap;

use alerts_core::Filter;
use pgrx::pg_sys::{self, Datum};
use pgrx::PgMemoryContexts;

use crate::datum::{jsonb_value, varlena_bytes, OrRaise};

/// Filters the session keeps compiled; the map is cleared when full.
const SESSION_FILTERS: usize = 256;

thread_local! {
    static SESSION: RefCell<HashMap<Vec<u8>, Filter>> = RefCell::new(HashMap::new());
}

/// The filter of raw jsonb bytes `raw` (datum `d`), from the session's
/// filters or compiled (and kept).
///
/// # Safety
/// `d` is a non-null jsonb datum whose bytes are `raw`.
unsafe fn session_compiled(raw: &[u8], d: Datum) -> Filter {
    if let Some(f) = SESSION.with(|s| s.borrow().get(raw).cloned()) {
        return f;
    }
    // SAFETY: as the caller's. A filter that does not compile raises here
    // and is not kept.
    let filter = Filter::compile(&unsafe { jsonb_value(d) }).or_raise();
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() >= SESSION_FILTERS {
            s.clear();
        }
        s.insert(raw.to_vec(), filter.clone());
    });
    filter
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
    // SAFETY: flinfo belongs to the live call; fn_extra is either null or the
    // `Cached` we stored there, allocated in fn_mcxt which outlives this call.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let raw = varlena_bytes(d);
        let cached = (*flinfo).fn_extra as *mut Cached;
        if !cached.is_null() && (*cached).raw == raw {
            return &(*cached).filter;
        }
        let filter = session_compiled(raw, d);
        if cached.is_null() {
            let p = PgMemoryContexts::For((*flinfo).fn_mcxt).leak_and_drop_on_delete(Cached {
                raw: raw.to_vec(),
                filter,
            });
            (*flinfo).fn_extra = p as *mut std::ffi::c_void;
            &(*p).filter
        } else {
            (*cached).raw = raw.to_vec();
            (*cached).filter = filter;
            &(*cached).filter
        }
    }
}
