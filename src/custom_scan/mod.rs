//! Plain SQL gets the search: a custom scan for
//! `WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC
//! LIMIT 50`, the query apps already send, run by the same walk and routes
//! as `alerts_search`.
//!
//! - `quals.rs`: which quals of the scan a search can use;
//! - `path.rs`: the planner hook offering the path, its cost, and the plan;
//! - `shape.rs`: what a plan carries, shared by the planner and the executor;
//! - `exec/`: the executor node, returning the search's pages row by row;
//! - this file: the method tables, the plan, and EXPLAIN.
//!
//! Active once the library is loaded (`shared_preload_libraries`, or
//! `session_preload_libraries` for a database), while `alerts.custom_scan`
//! is on.

mod exec;
mod path;
mod quals;
mod shape;

use pgrx::pg_sys;

/// The methods of the path, the plan and the executor node. Postgres keeps
/// pointers to them; they are never written after load.
static mut PATH_METHODS: pg_sys::CustomPathMethods = pg_sys::CustomPathMethods {
    CustomName: NAME.as_ptr(),
    PlanCustomPath: Some(plan),
    ReparameterizeCustomPathByChild: None,
};
static mut SCAN_METHODS: pg_sys::CustomScanMethods = pg_sys::CustomScanMethods {
    CustomName: NAME.as_ptr(),
    CreateCustomScanState: Some(exec::create_state),
};
static mut EXEC_METHODS: pg_sys::CustomExecMethods = pg_sys::CustomExecMethods {
    CustomName: NAME.as_ptr(),
    BeginCustomScan: Some(exec::begin),
    ExecCustomScan: Some(exec::exec),
    EndCustomScan: Some(exec::end),
    ReScanCustomScan: Some(exec::rescan),
    MarkPosCustomScan: None,
    RestrPosCustomScan: None,
    EstimateDSMCustomScan: None,
    InitializeDSMCustomScan: None,
    ReInitializeDSMCustomScan: None,
    InitializeWorkerCustomScan: None,
    ShutdownCustomScan: None,
    ExplainCustomScan: Some(explain),
};

/// The node's name in plans: `Custom Scan (AlertsSearch)`.
const NAME: &std::ffi::CStr = c"AlertsSearch";

/// Installs the planner hook and registers the plan's methods by name.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn init() {
    // SAFETY: at load, single-threaded; the table is static.
    unsafe {
        pg_sys::RegisterCustomScanMethods(&raw const SCAN_METHODS);
        path::install();
    }
}

/// `PlanCustomPath`: the plan of our path. Every qual stays with the
/// executor but the tenant's equality and the `id` bounds the search's
/// window keeps exactly; the search's values travel in `custom_exprs`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan(
    _root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    clauses: *mut pg_sys::List,
    _custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: planner nodes; the plan is built in the planner's memory.
    unsafe {
        let private = (*best_path).custom_private;
        let exprs = pg_sys::list_nth(private, 0) as *mut pg_sys::List;
        let ints = pg_sys::list_nth(private, 1) as *mut pg_sys::List;
        let cscan =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()) as *mut pg_sys::CustomScan;
        (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
        (*cscan).scan.plan.targetlist = tlist;
        // every qual but those the search holds exactly (quals.rs)
        let guaranteed = pg_sys::list_nth(private, 2) as *mut pg_sys::List;
        let mut qual: *mut pg_sys::List = std::ptr::null_mut();
        for i in 0..pg_sys::list_length(clauses) {
            let rinfo = pg_sys::list_nth(clauses, i) as *mut pg_sys::RestrictInfo;
            if !(*rinfo).pseudoconstant && !pg_sys::list_member_ptr(guaranteed, rinfo.cast()) {
                qual = pg_sys::lappend(qual, (*rinfo).clause.cast());
            }
        }
        (*cscan).scan.plan.qual = qual;
        (*cscan).scan.scanrelid = (*rel).relid;
        (*cscan).flags = (*best_path).flags;
        (*cscan).custom_exprs = pg_sys::copyObjectImpl(exprs.cast()).cast();
        (*cscan).custom_private = pg_sys::copyObjectImpl(ints.cast()).cast();
        (*cscan).methods = &raw const SCAN_METHODS;
        cscan.cast()
    }
}

/// `ExplainCustomScan`: how pages are found; with ANALYZE, what the
/// searches did.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn explain(
    node: *mut pg_sys::CustomScanState,
    _ancestors: *mut pg_sys::List,
    es: *mut pg_sys::ExplainState,
) {
    // SAFETY: the node is ours and begun; strings are copied by EXPLAIN.
    unsafe {
        let run = exec::run_of(node);
        let text = |label: &std::ffi::CStr, value: &str| {
            let v = std::ffi::CString::new(value).expect("no NUL");
            pg_sys::ExplainPropertyText(label.as_ptr(), v.as_ptr(), es);
        };
        let int = |label: &std::ffi::CStr, value: u64| {
            pg_sys::ExplainPropertyInteger(label.as_ptr(), std::ptr::null(), value as i64, es);
        };
        text(
            c"Route",
            "chosen per page from the filter: walk of the pagination index, then tenant keys or GIN when rare",
        );
        let first = if run.shape.count {
            "LIMIT + OFFSET rows".to_string()
        } else {
            "50 rows".to_string()
        };
        text(c"First Page", &first);
        if run.shape.ascending {
            text(c"Order", "oldest first (id ascending)");
        }
        if !run.shape.columns.is_empty() {
            let names: Vec<String> = run
                .shape
                .columns
                .iter()
                .map(|&(attno, _)| crate::columns::name_of(exec::attribute_of(run, attno)))
                .collect();
            text(c"Columns Tested In Search", &names.join(", "));
        }
        if !run.shape.ids_unique {
            text(
                c"Ids Unique",
                "no (rows sharing a page's last id are read whole)",
            );
        }
        if (*es).analyze {
            let t = &run.trace;
            int(c"Pages", run.pages);
            let routes: Vec<String> = crate::search::trace::Route::ALL
                .iter()
                .zip(t.pages)
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| format!("{} x{n}", r.label()))
                .collect();
            if !routes.is_empty() {
                text(c"Routes Taken", &routes.join(", "));
            }
            if let Some((hits, entries)) = t.left_after {
                text(
                    c"Left The Walk",
                    &format!("after {hits} matches in {entries} entries (rare: the cheaper path answers the rest)"),
                );
            }
            int(c"Index Entries Walked", t.entries);
            int(c"Rows Rechecked", t.candidates);
            int(c"Bloom False Positives", t.candidates - t.matches);
        }
    }
}
