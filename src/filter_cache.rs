//! Compile a filter once per call site, not once per row.
//!
//! The compiled filter lives in `flinfo->fn_extra`, allocated in
//! `fn_mcxt` with a reset callback that drops it, so it lasts as long as the
//! query's expression state and never leaks Rust heap. Each call compares the
//! filter's raw jsonb bytes with the cached ones (a memcmp of a few dozen
//! bytes, no allocation) and recompiles only when the filter changes, which is
//! what happens when the filter comes from a column instead of a constant.

use alerts_core::Filter;
use pgrx::pg_sys::{self, Datum};
use pgrx::PgMemoryContexts;

use crate::datum::{jsonb_value, varlena_bytes, OrRaise};

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
        let filter = Filter::compile(&jsonb_value(d)).or_raise();
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
