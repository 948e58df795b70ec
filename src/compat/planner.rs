//! The planner hook's signature, which PostgreSQL 19 changed (part of
//! `compat.rs`).

use pgrx::pg_sys;

/// The planner hook's arguments, passed on unchanged to the hook that was
/// installed before ours or to Postgres' planner. PostgreSQL 19 added the
/// EXPLAIN state (`es`) to `planner_hook_type` and `standard_planner`.
#[derive(Clone, Copy)]
pub struct PlannerCall {
    pub parse: *mut pg_sys::Query,
    pub query_string: *const std::ffi::c_char,
    pub options: std::ffi::c_int,
    pub params: pg_sys::ParamListInfo,
    #[cfg(feature = "pg19")]
    pub es: *mut pg_sys::ExplainState,
}

// Postgres' planner, called as it is: an ERROR in it reaches the caller
// as Postgres raised it (through pgrx's wrapper it would come back as a
// Rust panic, reported again with a backtrace).
unsafe extern "C-unwind" {
    #[cfg(not(feature = "pg19"))]
    #[link_name = "standard_planner"]
    fn postgres_planner(
        parse: *mut pg_sys::Query,
        query_string: *const std::ffi::c_char,
        options: std::ffi::c_int,
        params: pg_sys::ParamListInfo,
    ) -> *mut pg_sys::PlannedStmt;
    #[cfg(feature = "pg19")]
    #[link_name = "standard_planner"]
    fn postgres_planner(
        parse: *mut pg_sys::Query,
        query_string: *const std::ffi::c_char,
        options: std::ffi::c_int,
        params: pg_sys::ParamListInfo,
        es: *mut pg_sys::ExplainState,
    ) -> *mut pg_sys::PlannedStmt;
}

impl PlannerCall {
    /// Plans `parse` (this call's query or a copy of it) with `previous`,
    /// the hook installed before ours, or with Postgres' own planner.
    ///
    /// # Safety
    /// The planner's arguments, inside its hook.
    pub unsafe fn plan(
        self,
        parse: *mut pg_sys::Query,
        previous: pg_sys::planner_hook_type,
    ) -> *mut pg_sys::PlannedStmt {
        let c = self;
        // SAFETY: as the caller's.
        unsafe {
            #[cfg(not(feature = "pg19"))]
            return match previous {
                Some(f) => f(parse, c.query_string, c.options, c.params),
                None => postgres_planner(parse, c.query_string, c.options, c.params),
            };
            #[cfg(feature = "pg19")]
            return match previous {
                Some(f) => f(parse, c.query_string, c.options, c.params, c.es),
                None => postgres_planner(parse, c.query_string, c.options, c.params, c.es),
            };
        }
    }
}

/// Defines `extern "C-unwind" fn $name`, a `planner_hook` of this major's
/// signature, that hands its arguments to `$body(PlannerCall)`.
#[macro_export]
macro_rules! planner_hook {
    ($name:ident => $body:path) => {
        #[cfg(not(feature = "pg19"))]
        #[pgrx::pg_guard]
        unsafe extern "C-unwind" fn $name(
            parse: *mut pgrx::pg_sys::Query,
            query_string: *const std::ffi::c_char,
            options: std::ffi::c_int,
            params: pgrx::pg_sys::ParamListInfo,
        ) -> *mut pgrx::pg_sys::PlannedStmt {
            let call = $crate::compat::planner::PlannerCall {
                parse,
                query_string,
                options,
                params,
            };
            let body: unsafe fn(
                $crate::compat::planner::PlannerCall,
            ) -> *mut pgrx::pg_sys::PlannedStmt = $body;
            // SAFETY: the planner's own arguments.
            unsafe { body(call) }
        }
        #[cfg(feature = "pg19")]
        #[pgrx::pg_guard]
        unsafe extern "C-unwind" fn $name(
            parse: *mut pgrx::pg_sys::Query,
            query_string: *const std::ffi::c_char,
            options: std::ffi::c_int,
            params: pgrx::pg_sys::ParamListInfo,
            es: *mut pgrx::pg_sys::ExplainState,
        ) -> *mut pgrx::pg_sys::PlannedStmt {
            let call = $crate::compat::planner::PlannerCall {
                parse,
                query_string,
                options,
                params,
                es,
            };
            let body: unsafe fn(
                $crate::compat::planner::PlannerCall,
            ) -> *mut pgrx::pg_sys::PlannedStmt = $body;
            // SAFETY: the planner's own arguments.
            unsafe { body(call) }
        }
    };
}
