//! A page of a partitioned table planned as one relation: a
//! `planner_hook` that plans the query first with the table unexpanded
//! (as `FROM ONLY` would, its partitions never looked at), offering the
//! node that searches the table whole (`path.rs`) as its only path, and
//! keeps that plan when the node made it; otherwise the query is planned
//! as Postgres would.
//!
//! Why: the node searching a partitioned table whole reads its partitions
//! itself, at execution, pruned by the window (`search::partitions`); yet
//! Postgres plans every partition before the node is offered. A window
//! written with a stable function (`id >= alerts_ulid_floor(now() - ...)`)
//! prunes nothing while planning, so under the simple protocol, where each
//! query is planned on every call, a page of 13 monthly partitions spent
//! about 0.6 ms planning them (their sizes, their indexes, each
//! containment's estimate from each partition's statistics) against
//! 0.15 ms for the same query on one table. A cached generic plan reads
//! only the parent, too: Postgres locks each relation of a plan's range
//! table on every execution.
//!
//! Only a query that can be nothing but the node's page is tried: one
//! partitioned table read alone, newest first, with a `LIMIT`, no grouping,
//! sub-query, row lock or policy applied; anything the offer refuses there (a
//! missing tenant equality or filter, a role that does not read the table
//! as it is) leaves no node in the trial's plan, and Postgres plans the
//! query again from the untouched original. The trial's planning of one
//! relation costs a few dozen microseconds.

use std::cell::Cell;

use pgrx::pg_guard;
use pgrx::pg_sys;

static mut PREVIOUS: pg_sys::planner_hook_type = None;

/// Installs the hook, around any already there.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: backends are single-threaded; called once at load.
    unsafe {
        PREVIOUS = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(hook);
        pg_sys::RegisterXactCallback(Some(on_abort), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(on_sub_abort), std::ptr::null_mut());
    }
}

/// The query being planned as one relation (its address), or 0: a slot of
/// the backend's state, set for the trial's planning only.
#[derive(Default)]
struct Trial(Cell<usize>);

/// Whether `root` plans the trial's query and `rte` is its table: the
/// partitioned table to offer the node to alone.
///
/// # Safety
/// `root` and `rte` are the planner's, being planned.
pub unsafe fn planning(root: *mut pg_sys::PlannerInfo, rte: *mut pg_sys::RangeTblEntry) -> bool {
    let trial = crate::backend::slot::<Trial>().0.get();
    // SAFETY: as the caller's.
    unsafe {
        trial != 0
            && (*root).parse as usize == trial
            && (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION
            && (*rte).relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
            && !(*rte).inh
    }
}

/// An ERROR in the trial's planning leaves the hook without resetting the
/// trial: it is reset when the (sub)transaction aborts.
#[pg_guard]
unsafe extern "C-unwind" fn on_abort(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    if event == pg_sys::XactEvent::XACT_EVENT_ABORT {
        crate::backend::slot::<Trial>().0.set(0);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_sub_abort(
    event: pg_sys::SubXactEvent::Type,
    _sub: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        crate::backend::slot::<Trial>().0.set(0);
    }
}

crate::planner_hook!(hook => plan_query);

/// The planner hook: the trial first when the query is a candidate.
///
/// # Safety
/// The planner's arguments.
unsafe fn plan_query(call: crate::compat::PlannerCall) -> *mut pg_sys::PlannedStmt {
    // SAFETY: the planner's own arguments; the trial plans a copy, so the
    // query is untouched when it is planned again.
    unsafe {
        let parse = call.parse;
        if candidate(parse) {
            let copy = pg_sys::copyObjectImpl(parse.cast()) as *mut pg_sys::Query;
            let rte = crate::pg_list::nth::<pg_sys::RangeTblEntry>((*copy).rtable, 0)
                .expect("a candidate has one range table entry");
            (*rte).inh = false;
            let trial = &crate::backend::slot::<Trial>().0;
            let before = trial.replace(copy as usize);
            let stmt = call.plan(copy, PREVIOUS);
            trial.set(before);
            if has_node(stmt) {
                return stmt;
            }
        }
        call.plan(parse, PREVIOUS)
    }
}

/// Whether `parse` is a query the node alone can answer, newest first,
/// of a partitioned table it can search whole (its offer checks the rest).
///
/// # Safety
/// A query being planned: its relations are locked.
unsafe fn candidate(parse: *mut pg_sys::Query) -> bool {
    use crate::settings::{CUSTOM_SCAN, CUSTOM_SCAN_ONE_REL, CUSTOM_SCAN_PARTITIONED};
    // SAFETY: the query's nodes, read.
    unsafe {
        let q = &*parse;
        if !(CUSTOM_SCAN.get() && CUSTOM_SCAN_PARTITIONED.get() && CUSTOM_SCAN_ONE_REL.get())
            || q.commandType != pg_sys::CmdType::CMD_SELECT
            || !q.utilityStmt.is_null()
            || q.hasAggs
            || q.hasWindowFuncs
            || q.hasTargetSRFs
            || q.hasSubLinks
            || q.hasDistinctOn
            || q.hasRecursive
            || q.hasModifyingCTE
            || q.hasForUpdate
            || !q.cteList.is_null()
            || !q.groupClause.is_null()
            || !q.groupingSets.is_null()
            || !q.havingQual.is_null()
            || !q.windowClause.is_null()
            || !q.distinctClause.is_null()
            || !q.rowMarks.is_null()
            || !q.setOperations.is_null()
            || q.limitCount.is_null()
            || q.limitOption != pg_sys::LimitOption::LIMIT_OPTION_COUNT
            || crate::pg_list::len(q.sortClause) != 1
            || crate::pg_list::len(q.rtable) != 1
            || q.jointree.is_null()
            || (*q.jointree).quals.is_null()
            || crate::pg_list::len((*q.jointree).fromlist) != 1
            || crate::search::running()
        {
            return false;
        }
        let Some(from) = crate::pg_list::nth::<pg_sys::Node>((*q.jointree).fromlist, 0) else {
            return false;
        };
        let Some(rte) = crate::pg_list::nth::<pg_sys::RangeTblEntry>(q.rtable, 0) else {
            return false;
        };
        if (*from).type_ != pg_sys::NodeTag::T_RangeTblRef
            || (*(from as *mut pg_sys::RangeTblRef)).rtindex != 1
            || (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || (*rte).relkind != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
            || !(*rte).inh
            // a policy applies (one the role bypasses leaves none)
            || !(*rte).securityQuals.is_null()
            || !(*rte).tablesample.is_null()
        {
            return false;
        }
        let facts = super::facts::of((*rte).relid);
        let Some(cols) = facts.cols else {
            return false;
        };
        facts.pagination_index
            && facts.leaves_heap
            && newest_first(q, cols.id)
            && (facts.declared.is_some()
                || !bounds_key((*q.jointree).quals, 1, (*rte).relid, cols.id))
            && !crate::search::is_distributed((*rte).relid)
    }
}

/// Whether `quals` (of range table entry `varno`) name the column the table
/// is partitioned on, when that is not `id`: a `created_at` bound on a table
/// partitioned by `created_at`. Postgres prunes its leaves by that bound,
/// where the node searching the table whole would open every leaf the id
/// window leaves (all of them, when nothing declares how id relates to
/// created_at): so the table is not searched whole then, unless the table
/// declares that relation (the bound then becomes the node's id window),
/// and Postgres plans the leaves, each offered the node (benches/window.py
/// measured the whole-table node 4-14x slower than Postgres' own plan on
/// rare filters).
///
/// # Safety
/// While planning; `relid` is the query's partitioned table.
pub(super) unsafe fn bounds_key(
    quals: *mut pg_sys::Node,
    varno: pg_sys::Index,
    relid: pg_sys::Oid,
    id: pg_sys::AttrNumber,
) -> bool {
    // SAFETY: the query's nodes, read; a bitmapset in the planner's memory.
    unsafe {
        let Some(key) = crate::search::part_key::key_column(relid) else {
            return false;
        };
        if key == id {
            return false;
        }
        let mut attnos: *mut pg_sys::Bitmapset = std::ptr::null_mut();
        pg_sys::pull_varattnos(quals, varno, &mut attnos);
        pg_sys::bms_is_member(
            key as i32 - pg_sys::FirstLowInvalidHeapAttributeNumber,
            attnos,
        )
    }
}

/// Whether the query's one sort key is column `id` of its table, newest
/// first (the offer checks its collation and operator family).
///
/// # Safety
/// As [`candidate`].
unsafe fn newest_first(q: &pg_sys::Query, id: pg_sys::AttrNumber) -> bool {
    // SAFETY: the query's nodes, read; the operator's from the syscache.
    unsafe {
        let Some(sort) = crate::pg_list::nth::<pg_sys::SortGroupClause>(q.sortClause, 0) else {
            return false;
        };
        let tle = pg_sys::get_sortgroupclause_tle(sort, q.targetList);
        let expr = (*tle).expr as *mut pg_sys::Node;
        if (*expr).type_ != pg_sys::NodeTag::T_Var {
            return false;
        }
        let var = expr as *mut pg_sys::Var;
        (*var).varno == 1
            && (*var).varlevelsup == 0
            && (*var).varattno == id
            && crate::compat::ordering_op_descending((*sort).sortop)
    }
}

/// Whether the plan reads through the node (under its `Limit`, and
/// whatever else Postgres puts above a scan).
///
/// # Safety
/// A plan just made.
unsafe fn has_node(stmt: *mut pg_sys::PlannedStmt) -> bool {
    // SAFETY: plan nodes, read.
    unsafe {
        let mut node = (*stmt).planTree;
        while !node.is_null() {
            if (*node).type_ == pg_sys::NodeTag::T_CustomScan
                && std::ptr::eq(
                    (*(node as *mut pg_sys::CustomScan)).methods,
                    &raw const super::plan::SCAN_METHODS,
                )
            {
                return true;
            }
            node = (*node).lefttree;
        }
        false
    }
}
