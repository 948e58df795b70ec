//! A query that is only an `alerts_search` call on a Citus distributed
//! table, planned where the tenant's shard is not (the coordinator), is
//! planned as the routed statement the call would send: the page's own
//! SQL (`search::planned_sql`) with the call's arguments in it, which
//! Citus routes as it routes plain SQL, under `Custom Scan
//! (AlertsRouted)`, which hands its rows on as the call's (`node.rs`).
//!
//! Why: run as a function, the call costs the coordinator a function scan,
//! a statement run inside it and its parameters sent as values, about 25
//! µs more than the same page as plain SQL (`perf` on the coordinator),
//! which is most of what a page with nothing to find costs there.
//!
//! Only a call whose rows are the same either way is planned so
//! (`call.rs`): constant arguments the function takes, a window from a
//! constant or from now's time, no column filter, no row security policy
//! on the table, no scrollable cursor; anything else, and a role without
//! `EXECUTE` on the function, is planned as it is and runs the function.
//! `alerts.routed_plan = off` turns it off. Without the planned call the
//! function's `EXECUTE` privilege would go unchecked, so the plan depends
//! on the role (planned again for another) and on the function (planned
//! again when it changes).

mod call;
mod kept;
mod node;
mod query;

use pgrx::pg_guard;
use pgrx::pg_sys;

static mut PREVIOUS: pg_sys::planner_hook_type = None;

/// Installs the hook, around any already there, and the node's methods.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: backends are single-threaded; called once at load.
    unsafe {
        node::register();
        kept::register_callback();
        PREVIOUS = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(hook);
    }
}

// Postgres' planner, called as it is (see custom_scan/one_rel.rs).
unsafe extern "C-unwind" {
    #[link_name = "standard_planner"]
    fn postgres_planner(
        parse: *mut pg_sys::Query,
        query_string: *const std::ffi::c_char,
        options: std::ffi::c_int,
        params: pg_sys::ParamListInfo,
    ) -> *mut pg_sys::PlannedStmt;
}

/// Plans `parse` with the hook that was there before ours (Citus'), or
/// Postgres' own planner.
///
/// # Safety
/// The planner's arguments.
unsafe fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    options: std::ffi::c_int,
    params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: the planner's own arguments, passed on.
    unsafe {
        match PREVIOUS {
            Some(previous) => previous(parse, query_string, options, params),
            None => postgres_planner(parse, query_string, options, params),
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn hook(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    options: std::ffi::c_int,
    params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: the planner's own arguments; the routed query is a new one,
    // so `parse` is untouched when it is planned as it is.
    unsafe {
        if let Some(stmt) = routed(parse, query_string, options, params) {
            return stmt;
        }
        plan(parse, query_string, options, params)
    }
}

/// The routed statement's plan for a lone call, or None.
///
/// # Safety
/// The planner's arguments.
unsafe fn routed(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    options: std::ffi::c_int,
    params: pg_sys::ParamListInfo,
) -> Option<*mut pg_sys::PlannedStmt> {
    // SAFETY: as the caller's.
    unsafe {
        if !crate::settings::ROUTED_PLAN.get()
            || options & pg_sys::CURSOR_OPT_SCROLL as i32 != 0
            || crate::search::running()
        {
            return None;
        }
        let call = call::lone_call(parse)?;
        if !crate::compat::may_execute(call.funcid) {
            return None;
        }
        let cursor = call.before.map(|b| b.1);
        let sql = crate::search::planned_sql(call.relid, call.org, cursor)?;
        let n = call.params().len();
        let q = kept::query(call.relid, cursor, &sql, || query::parsed(&sql, n))?;
        let q = query::routed_query(parse, &call, q)?;
        let stmt = node::wrapped(
            plan(q, query_string, options, params),
            (*parse).targetList,
            call.relid,
            call.run_checked(),
        )?;
        (*stmt).dependsOnRole = true;
        let item = pg_sys::palloc0(std::mem::size_of::<pg_sys::PlanInvalItem>())
            as *mut pg_sys::PlanInvalItem;
        (*item).type_ = pg_sys::NodeTag::T_PlanInvalItem;
        (*item).cacheId = pg_sys::SysCacheIdentifier::PROCOID as i32;
        (*item).hashValue = pg_sys::GetSysCacheHashValue(
            (*item).cacheId,
            pg_sys::Datum::from(call.funcid),
            pg_sys::Datum::from(0usize),
            pg_sys::Datum::from(0usize),
            pg_sys::Datum::from(0usize),
        );
        (*stmt).invalItems = pg_sys::lappend((*stmt).invalItems, item.cast());
        Some(stmt)
    }
}
