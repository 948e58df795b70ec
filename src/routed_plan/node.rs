//! `Custom Scan (AlertsRouted)`: the node above the routed query's plan.
//! It returns the plan's rows as the call's: the columns the call selects,
//! each `jsonb` one from the stored form it crossed in (the same bytes,
//! now typed `jsonb`: nothing is parsed), and it names a node without the
//! extension in the ERROR, as the function does.

use pgrx::pg_sys;

const NAME: &std::ffi::CStr = c"AlertsRouted";

static mut SCAN_METHODS: pg_sys::CustomScanMethods = pg_sys::CustomScanMethods {
    CustomName: NAME.as_ptr(),
    CreateCustomScanState: Some(create_state),
};

static mut EXEC_METHODS: pg_sys::CustomExecMethods = pg_sys::CustomExecMethods {
    CustomName: NAME.as_ptr(),
    BeginCustomScan: Some(begin),
    ExecCustomScan: Some(exec),
    EndCustomScan: Some(end),
    ReScanCustomScan: Some(rescan),
    MarkPosCustomScan: None,
    RestrPosCustomScan: None,
    EstimateDSMCustomScan: None,
    InitializeDSMCustomScan: None,
    ReInitializeDSMCustomScan: None,
    InitializeWorkerCustomScan: None,
    ShutdownCustomScan: None,
    ExplainCustomScan: None,
};

/// Registers the node's methods by name (a plan is copied with them).
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn register() {
    // SAFETY: the table is static and never written.
    unsafe { pg_sys::RegisterCustomScanMethods(&raw const SCAN_METHODS) };
}

/// `stmt` (the routed query's plan) with the node on top, returning the
/// columns of `call_tlist` (the call's query's): None if the plan's
/// columns are not those, bar `jsonb` ones as `bytea`.
///
/// # Safety
/// A plan just made of the query `routed_query` built for `call_tlist`.
pub unsafe fn wrapped(
    stmt: *mut pg_sys::PlannedStmt,
    call_tlist: *mut pg_sys::List,
    relid: pg_sys::Oid,
    checks: Option<[*mut pg_sys::Node; 4]>,
) -> Option<*mut pg_sys::PlannedStmt> {
    // SAFETY: plan nodes, built in the planner's memory.
    unsafe {
        let child = (*stmt).planTree;
        let mut scan_tlist: *mut pg_sys::List = std::ptr::null_mut();
        let mut tlist: *mut pg_sys::List = std::ptr::null_mut();
        for (i, wanted) in crate::pg_list::ptrs::<pg_sys::TargetEntry>(call_tlist).enumerate() {
            let got = crate::pg_list::nth::<pg_sys::TargetEntry>((*child).targetlist, i)?;
            let attno = (i + 1) as pg_sys::AttrNumber;
            let (want_type, got_type) = (
                pg_sys::exprType((*wanted).expr.cast()),
                pg_sys::exprType((*got).expr.cast()),
            );
            let typmod = pg_sys::exprTypmod((*wanted).expr.cast());
            let collation = pg_sys::exprCollation((*wanted).expr.cast());
            let from = pg_sys::makeVar(
                pg_sys::OUTER_VAR as _,
                attno,
                got_type,
                -1,
                pg_sys::InvalidOid,
                0,
            );
            let expr: *mut pg_sys::Expr = if want_type == got_type {
                (*from).vartypmod = pg_sys::exprTypmod((*got).expr.cast());
                (*from).varcollid = pg_sys::exprCollation((*got).expr.cast());
                from.cast()
            } else if want_type == pg_sys::JSONBOID && got_type == pg_sys::BYTEAOID {
                // the stored form's bytes are the jsonb value's
                pg_sys::makeRelabelType(
                    from.cast(),
                    pg_sys::JSONBOID,
                    -1,
                    pg_sys::InvalidOid,
                    pg_sys::CoercionForm::COERCE_IMPLICIT_CAST,
                )
                .cast()
            } else {
                return None;
            };
            let name = (*wanted).resname;
            scan_tlist = pg_sys::lappend(
                scan_tlist,
                pg_sys::makeTargetEntry(expr, attno, name, false).cast(),
            );
            let out = pg_sys::makeVar(
                pg_sys::INDEX_VAR as _,
                attno,
                want_type,
                typmod,
                collation,
                0,
            );
            tlist = pg_sys::lappend(
                tlist,
                pg_sys::makeTargetEntry(out.cast(), attno, name, false).cast(),
            );
        }
        let cscan =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()) as *mut pg_sys::CustomScan;
        (*cscan).scan.plan = *child;
        (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.plan.qual = std::ptr::null_mut();
        (*cscan).scan.plan.initPlan = std::ptr::null_mut();
        // Postgres runs the child as `custom_plans`; `lefttree` shows it to
        // EXPLAIN's column names and to Citus, which looks for its node
        // down the left and right of a plan.
        (*cscan).scan.plan.lefttree = child;
        (*cscan).scan.plan.righttree = std::ptr::null_mut();
        (*cscan).scan.scanrelid = 0;
        (*cscan).custom_plans = pg_sys::lappend(std::ptr::null_mut(), child.cast());
        (*cscan).custom_scan_tlist = scan_tlist;
        // the call's tenant, filter, since and page size, checked as the
        // function checks them, when one is a parameter
        for arg in checks.into_iter().flatten() {
            let copy = pg_sys::copyObjectImpl(arg.cast());
            (*cscan).custom_exprs = pg_sys::lappend((*cscan).custom_exprs, copy);
        }
        (*cscan).custom_private = pg_sys::lappend(
            std::ptr::null_mut(),
            pg_sys::makeInteger(relid.to_u32() as _).cast(),
        );
        (*cscan).methods = &raw const SCAN_METHODS;
        (*stmt).planTree = cscan.cast();
        Some(stmt)
    }
}

/// The node's state: Postgres' part, then the table (for the ERROR),
/// the call's arguments to check, and whether the child ran.
#[repr(C)]
struct State {
    css: pg_sys::CustomScanState,
    relid: pg_sys::Oid,
    checks: *mut pg_sys::List,
    started: bool,
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn create_state(cscan: *mut pg_sys::CustomScan) -> *mut pg_sys::Node {
    // SAFETY: palloc0'd in the executor's memory with room for our part.
    unsafe {
        let state = pg_sys::palloc0(std::mem::size_of::<State>()) as *mut State;
        (*state).css.ss.ps.type_ = pg_sys::NodeTag::T_CustomScanState;
        (*state).css.methods = &raw const EXEC_METHODS;
        let relid = crate::pg_list::nth::<pg_sys::Integer>((*cscan).custom_private, 0)
            .map_or(0, |i| (*i).ival as u32);
        (*state).relid = pg_sys::Oid::from(relid);
        state.cast()
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn begin(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    eflags: i32,
) {
    // SAFETY: the node is ours; its plan has one child.
    unsafe {
        let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
        let child = crate::pg_list::nth::<pg_sys::Plan>((*cscan).custom_plans, 0)
            .expect("the routed query's plan");
        let state = node as *mut State;
        (*state).checks = pg_sys::ExecInitExprList((*cscan).custom_exprs, &raw mut (*node).ss.ps);
        let relid = (*state).relid;
        let ps = crate::search::run_routed(relid, || pg_sys::ExecInitNode(child, estate, eflags));
        (*node).custom_ps = pg_sys::lappend(std::ptr::null_mut(), ps.cast());
    }
}

/// The child's next row as the call's: its values, in the scan slot
/// typed as the call's columns.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn exec(
    node: *mut pg_sys::CustomScanState,
) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: the node is ours, begun.
    unsafe {
        let state = node as *mut State;
        let child = crate::pg_list::nth::<pg_sys::PlanState>((*node).custom_ps, 0)
            .expect("begun with its child");
        let next = || pg_sys::ExecProcNode(child);
        // Citus runs the statement on the first row asked for: the ERROR
        // of a node without the extension comes from there.
        let row = if (*state).started {
            next()
        } else {
            (*state).started = true;
            check_args(state);
            crate::search::run_routed((*state).relid, next)
        };
        let slot = (*node).ss.ss_ScanTupleSlot;
        pg_sys::ExecClearTuple(slot);
        if row.is_null() || (*row).tts_flags & pg_sys::TTS_FLAG_EMPTY as u16 != 0 {
            return slot;
        }
        let n = (*(*slot).tts_tupleDescriptor).natts;
        if ((*row).tts_nvalid as i32) < n {
            pg_sys::slot_getsomeattrs_int(row, n);
        }
        std::ptr::copy_nonoverlapping((*row).tts_values, (*slot).tts_values, n as usize);
        std::ptr::copy_nonoverlapping((*row).tts_isnull, (*slot).tts_isnull, n as usize);
        pg_sys::ExecStoreVirtualTuple(slot);
        let proj = (*node).ss.ps.ps_ProjInfo;
        if proj.is_null() {
            return slot;
        }
        (*(*node).ss.ps.ps_ExprContext).ecxt_scantuple = slot;
        pg_sys::ExecProject(proj)
    }
}

/// The ERROR `alerts_search` raises for its arguments' values, if any.
///
/// # Safety
/// The node is begun.
unsafe fn check_args(state: *mut State) {
    // SAFETY: the expressions were initialised for this node.
    unsafe {
        if (*state).checks.is_null() {
            return;
        }
        crate::datum::enter("alerts_search");
        let econtext = (*state).css.ss.ps.ps_ExprContext;
        let mut values = [None; 4];
        for (i, e) in crate::pg_list::ptrs::<pg_sys::ExprState>((*state).checks).enumerate() {
            let eval = (*e).evalfunc.expect("an initialised expression");
            let mut isnull = false;
            // an ERROR comes back as a panic through the guard, raised again
            // where the executor called us (see custom_scan/exec/values.rs)
            let d = pg_sys::ffi::pg_guard_ffi_boundary(|| eval(e, econtext, &mut isnull));
            values[i] = (!isnull).then_some(d);
        }
        crate::search::check_routed_values(values);
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rescan(node: *mut pg_sys::CustomScanState) {
    // SAFETY: the node is ours, begun.
    unsafe {
        (*(node as *mut State)).started = false;
        if let Some(child) = crate::pg_list::nth::<pg_sys::PlanState>((*node).custom_ps, 0) {
            pg_sys::ExecReScan(child);
        }
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn end(node: *mut pg_sys::CustomScanState) {
    // SAFETY: the node is ours, begun.
    unsafe {
        if let Some(child) = crate::pg_list::nth::<pg_sys::PlanState>((*node).custom_ps, 0) {
            pg_sys::ExecEndNode(child);
        }
    }
}
