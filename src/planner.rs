//! Planner support for the filter tests: selectivity estimates.
//!
//! Without them Postgres guesses 1/3 for each boolean function, so with a
//! generic plan (prepared statements with parameters) the query of the README
//! is estimated at a few dozen rows, the `LIMIT 50` cannot stop early, and a
//! Bitmap Heap Scan + Sort wins on paper. The bloom test is a pre-check whose
//! real selectivity is that of the exact test, so it reports 1.0; the exact
//! test reports 0.5, the midpoint of "unknown". Both estimates keep the
//! planner on the newest-first walk of the pagination index, the plan this
//! extension is built for (tested with `EXPLAIN` in `tests/sql/query.sql`).

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum};

crate::datum::finfo_v1!(pg_finfo_alerts_match_support);

/// Selectivity reported for `alerts_bloom_match` and `alerts_attrs_match`.
fn selectivity_of(funcname: &str) -> Option<f64> {
    match funcname {
        "alerts_bloom_match" => Some(1.0),
        "alerts_attrs_match" => Some(0.5),
        _ => None,
    }
}

/// `alerts_match_support(internal) RETURNS internal`.
///
/// # Safety
/// Called by the planner with a `SupportRequest*` node as the only argument.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_match_support(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_match_support");
    // SAFETY: the planner passes a Node pointer; we only act on the node type
    // we know and return NULL (no help) for every other request.
    unsafe {
        let node = crate::datum::arg(fcinfo, 0).cast_mut_ptr::<pg_sys::Node>();
        if !node.is_null() && (*node).type_ == pg_sys::NodeTag::T_SupportRequestSelectivity {
            let req = node as *mut pg_sys::SupportRequestSelectivity;
            let name = pg_sys::get_func_name((*req).funcid);
            if !name.is_null() {
                let sel = selectivity_of(&std::ffi::CStr::from_ptr(name).to_string_lossy());
                pg_sys::pfree(name as *mut std::ffi::c_void);
                if let Some(s) = sel {
                    (*req).selectivity = s;
                    return Datum::from(node);
                }
            }
        }
        Datum::from(0usize)
    }
}
