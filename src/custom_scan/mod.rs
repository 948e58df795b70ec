//! Plain SQL gets the search: a custom scan for
//! `WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC
//! LIMIT 50`, the query apps already send, run by the same walk and routes
//! as `alerts_search`.
//!
//! - `path.rs`: the planner hook offering the path, and its cost;
//! - `one_rel.rs`: a partitioned table's page planned as one relation,
//!   without planning its partitions;
//! - `plan.rs`: the plan made of it (with the method tables);
//! - `quals.rs`: which quals of the scan a search can use;
//! - `table.rs`: what the planner learns of the scanned table;
//! - `facts.rs`: what of it the catalogs say, kept per relcache epoch;
//! - `shape.rs`: what a plan carries, shared by the planner and the executor;
//! - `exec/`: the executor node, returning the search's pages row by row,
//!   and EXPLAIN (with its method table);
//! - this file: loading.
//!
//! Active once the library is loaded (`shared_preload_libraries`, or
//! `session_preload_libraries` for a database), while `alerts.custom_scan`
//! is on.

mod exec;
mod facts;
mod one_rel;
mod path;
mod plan;
mod quals;
mod shape;
mod table;
mod window;

/// Installs the planner hook and registers the plan's methods by name.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn init() {
    // SAFETY: at load, single-threaded.
    unsafe {
        path::install();
        one_rel::install();
    }
}
