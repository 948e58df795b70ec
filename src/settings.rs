//! The extension's settings (`alerts.*`), defined when the library is
//! loaded and read by the code they steer.

use std::ffi::CStr;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `alerts.search_shortcuts` (default on): whether `alerts_search` sends a
/// (tenant, filter) that a walk of this session found rare straight to GIN
/// for the next 10 seconds. Off: every call walks first (the cold path; the
/// benchmark measures both).
pub static SEARCH_SHORTCUTS: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `alerts.search_direct_scan` (default on): whether `alerts_search` walks
/// a plain table's pagination index directly (`search/scan/`) rather than
/// through prepared statements. Off: the statement walk everywhere (same
/// rows; kept as a way back and to test one walker against the other).
pub static SEARCH_DIRECT_SCAN: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `alerts.custom_scan` (default on): whether the planner is offered the
/// custom scan for plain SQL (`attribute_values @> ... ORDER BY id DESC`).
/// Off: plain SQL gets Postgres' own plans.
pub static CUSTOM_SCAN: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `alerts.custom_scan_partitioned` (default on): whether a partitioned
/// table is offered one node that searches it whole, as `alerts_search`
/// does (partitions by `id` ranges walked in turn, others merged). Off: a
/// node per partition under Postgres' ordered `Append` or `Merge Append`.
pub static CUSTOM_SCAN_PARTITIONED: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `alerts.custom_scan_one_rel` (default on): whether a page query of a
/// partitioned table the node can search whole is planned as one relation,
/// its partitions not planned (`custom_scan/one_rel.rs`). Off: Postgres
/// plans every partition the window does not prune while planning, and the
/// node competes with their plans on cost.
pub static CUSTOM_SCAN_ONE_REL: GucSetting<bool> = GucSetting::<bool>::new(true);

/// Defines the settings and reserves the `alerts.` prefix.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn define() {
    let bools: [(&CStr, &CStr, &CStr, &'static GucSetting<bool>); 5] = [
        (
            c"alerts.search_shortcuts",
            c"Lets alerts_search send a tenant and filter its walk found rare straight to GIN for 10 seconds.",
            c"Only ever a shortcut to the exact GIN path: turning it off changes timings, never rows.",
            &SEARCH_SHORTCUTS,
        ),
        (
            c"alerts.search_direct_scan",
            c"Lets alerts_search walk a plain table's pagination index directly instead of through prepared statements.",
            c"Both walks return the same rows; off is the statement walk everywhere.",
            &SEARCH_DIRECT_SCAN,
        ),
        (
            c"alerts.custom_scan",
            c"Offers the planner a search for plain SQL: organisation_id = ... AND attribute_values @> ... ORDER BY id DESC.",
            c"Only another plan for the same query: off leaves plain SQL to Postgres' own plans. Active once the library is loaded (shared_preload_libraries or session_preload_libraries).",
            &CUSTOM_SCAN,
        ),
        (
            c"alerts.custom_scan_partitioned",
            c"Offers one node that searches a partitioned table whole.",
            c"Off: a node for each partition, under Postgres' ordered Append or Merge Append. Both plans return the same rows.",
            &CUSTOM_SCAN_PARTITIONED,
        ),
        (
            c"alerts.custom_scan_one_rel",
            c"Plans a page query of a partitioned table the custom scan searches whole as one relation, without planning its partitions.",
            c"Off: Postgres plans each partition first and the node competes with their plans on cost. Both return the same rows.",
            &CUSTOM_SCAN_ONE_REL,
        ),
    ];
    for (name, short, long, setting) in bools {
        GucRegistry::define_bool_guc(
            name,
            short,
            long,
            setting,
            GucContext::Userset,
            GucFlags::default(),
        );
    }
    // SAFETY: a static NUL-terminated prefix.
    unsafe { pgrx::pg_sys::MarkGUCPrefixReserved(c"alerts".as_ptr()) };
}
