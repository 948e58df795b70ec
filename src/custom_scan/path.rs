//! The planner side: a `set_rel_pathlist_hook` that offers the custom path
//! for the scan of a table searches can read, when the query has what a
//! search needs (see `quals.rs`) and wants the rows in `id` order (`ORDER
//! BY id DESC`, newest first, or `ASC`); the plan is made in `plan.rs`.
//!
//! A hook on the relation's path list (rather than a table access method
//! or an index AM) because the scan is a different way of reading one
//! table with its own indexes, chosen per query by cost against the plans
//! Postgres already has; it is how ParadeDB, ZomboDB and pg_strom add
//! theirs.
//!
//! What the plan carries (`custom_exprs`, in this order): the tenant, the
//! attribute conditions, the lower bounds on `id`, its upper bounds, and
//! the query's `LIMIT` and `OFFSET` when the scan is all the query reads;
//! `custom_private` holds a list of integers describing them
//! ([`Shape`]).

use pgrx::pg_guard;
use pgrx::pg_sys;

use super::quals;
use super::shape::Shape;
use super::table::{
    has_pagination_index, ids_unique, merged_child, partitioned_of, reads_as_it_is,
    reads_system_columns, searched_whole, unexpanded, Partitioned,
};
use crate::search::Columns;

static mut PREVIOUS: pg_sys::set_rel_pathlist_hook_type = None;
static mut PREVIOUS_UPPER: pg_sys::create_upper_paths_hook_type = None;

/// Installs the hook, after any already there, and registers the plan's
/// methods by name.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: backends are single-threaded; called once at load; the
    // table is static.
    unsafe {
        pg_sys::RegisterCustomScanMethods(&raw const super::plan::SCAN_METHODS);
        PREVIOUS = pg_sys::set_rel_pathlist_hook;
        pg_sys::set_rel_pathlist_hook = Some(hook);
        PREVIOUS_UPPER = pg_sys::create_upper_paths_hook;
        pg_sys::create_upper_paths_hook = Some(upper_hook);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn hook(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: the planner's own arguments.
    unsafe {
        if let Some(previous) = PREVIOUS {
            previous(root, rel, rti, rte);
        }
        if !crate::settings::CUSTOM_SCAN.get()
            || crate::search::running()
            || searched_whole(root, rel)
        {
            return;
        }
        if super::one_rel::planning(root, rte) {
            // Planned as one relation (`one_rel.rs`): Postgres made the
            // unexpanded table an empty relation, as it does `FROM ONLY`;
            // the node is its only path, unless its quals can never hold.
            if pg_sys::relation_excluded_by_constraints(root, rel, rte) {
                return;
            }
            pg_sys::set_baserel_size_estimates(root, rel);
            if let Some(path) = offer(root, rel, rti, rte, false) {
                // as among the ordered paths (`upper_hook`): the node
                // computes the query's target itself
                (*path).flags |= pg_sys::CUSTOMPATH_SUPPORT_PROJECTION;
                (*rel).pathlist = std::ptr::null_mut();
                (*rel).partial_pathlist = std::ptr::null_mut();
                pg_sys::add_path(rel, path.cast());
            }
        } else if let Some(path) = offer(root, rel, rti, rte, false) {
            pg_sys::add_path(rel, path.cast());
        }
    }
}

/// A partitioned table searched whole, when the query reads it alone:
/// once the query's target is known, Postgres drops a partitioned table's
/// own paths and builds them again from its partitions'
/// (`apply_scanjoin_target_to_paths`), so the node is offered again here,
/// among the paths of the rows in the query's order.
#[pg_guard]
unsafe extern "C-unwind" fn upper_hook(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
    input_rel: *mut pg_sys::RelOptInfo,
    output_rel: *mut pg_sys::RelOptInfo,
    extra: *mut std::ffi::c_void,
) {
    // SAFETY: the planner's own arguments; a base relation's range table
    // entry is in the planner's array.
    unsafe {
        if let Some(previous) = PREVIOUS_UPPER {
            previous(root, stage, input_rel, output_rel, extra);
        }
        if stage != pg_sys::UpperRelationKind::UPPERREL_ORDERED
            || !crate::settings::CUSTOM_SCAN.get()
            || crate::search::running()
            || (*input_rel).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
            || (*input_rel).relid == 0
        {
            return;
        }
        let rti = (*input_rel).relid;
        let rte = *(*root).simple_rte_array.add(rti as usize);
        if (*rte).relkind != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char || !(*rte).inh {
            return;
        }
        // The query's target, as Postgres' own ordered paths compute it
        // (the ordered rel's own target is not set).
        if (*(*root).parse).hasTargetSRFs {
            return;
        }
        let Some(first) = crate::pg_list::nth::<pg_sys::Path>((*output_rel).pathlist, 0) else {
            return;
        };
        let target = (*first).pathtarget;
        if let Some(path) = offer(root, input_rel, rti, rte, true) {
            // the node computes the target from the rows it reads
            // (`ExecScan` projects), with no Result above it
            (*path).flags |= pg_sys::CUSTOMPATH_SUPPORT_PROJECTION;
            let path = pg_sys::apply_projection_to_path(root, output_rel, path.cast(), target);
            pg_sys::add_path(output_rel, path);
        }
    }
}

/// The path, when the scan of `rel` qualifies (see the module comment);
/// `ordered`: asked among the ordered paths (`upper_hook`).
unsafe fn offer(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
    ordered: bool,
) -> Option<*mut pg_sys::CustomPath> {
    // SAFETY: planner structures, read; the path is built in the planner's
    // memory.
    unsafe {
        let parse = (*root).parse;
        // A partitioned table is also offered one node that searches it
        // whole (the search merges its partitions, or walks them in turn
        // when partitioned by id), beside the node each partition gets
        // under Postgres' Merge Append or ordered Append: one node's setup
        // instead of one per partition the window reaches.
        // Read alone, the table's own paths are dropped before the ordered
        // ones are made: offered there only, not built twice.
        // Planned as one relation (`one_rel.rs`), the table is not
        // expanded: offered here, with its leaves from the catalogs.
        let alone =
            pg_sys::bms_membership((*root).all_baserels) == pg_sys::BMS_Membership::BMS_SINGLETON;
        let one_rel = super::one_rel::planning(root, rte);
        let whole = (*rte).relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
            && (*rel).reloptkind == pg_sys::RelOptKind::RELOPT_BASEREL
            && ((*rte).inh && (ordered || !alone) || one_rel)
            && crate::settings::CUSTOM_SCAN_PARTITIONED.get();
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || !((*rte).relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char || whole)
            || (*parse).commandType != pg_sys::CmdType::CMD_SELECT
            || !(*root).rowMarks.is_null()
            || crate::pg_list::len((*root).query_pathkeys) != 1
            || (*rel).baserestrictinfo.is_null()
        {
            return None;
        }
        let relid = (*rte).relid;
        let facts = super::facts::of(relid);
        let cols = facts.cols?;
        let found = quals::usable((*rel).baserestrictinfo, rti, &cols);
        let org = found.org?;
        // bounds on `id` from bounds on the time column the table declares
        // its ids follow (`window.rs`)
        let implied = match &facts.declared {
            Some(d) => super::window::implied((*rel).baserestrictinfo, rti, d),
            None => Default::default(),
        };
        let (implied_lower, implied_upper) = (&implied.lower, &implied.upper);
        let times = super::window::tested((*rel).baserestrictinfo, rti);
        let ascending = id_order(root, rel, rti, &cols)?;
        // A row whose id is NULL can match, and a search never returns it
        // (its window is a range of ids): offered only where no such row
        // can be, or the query's own bounds on `id` refuse it.
        let id_bounded =
            !(found.lower.is_empty() && found.upper.is_empty() && found.upper_inclusive.is_empty());
        // Searched whole: newest first, its pagination index valid (every
        // partition has one), every partition kept a heap table.
        let parts = if whole {
            let quals = pg_sys::extract_actual_clauses((*rel).baserestrictinfo, false).cast();
            // bounds on the partition key that become no id bounds
            let unimplied = implied.lower.is_empty() && implied.upper.is_empty();
            if ascending || (unimplied && super::one_rel::bounds_key(quals, rti, relid, cols.id)) {
                return None;
            }
            let parts = if one_rel {
                unexpanded(rel, &facts)
            } else {
                partitioned_of(root, rel, relid)
            };
            match parts {
                Some(p) if p.pagination_index && !p.leaves.is_empty() => Some(p),
                _ => return None,
            }
        } else {
            None
        };
        if found.filters.is_empty()
            || !(parts.is_some() || facts.heap_without_children)
            || !(id_bounded || facts.id_not_null)
            || !(parts.is_some() || has_pagination_index(rel, &cols))
            || reads_system_columns(rel, rti)
            || crate::search::is_distributed(relid)
            || !reads_as_it_is(root, rel, relid)
        {
            return None;
        }

        // The query's LIMIT (and OFFSET) size the first page when this
        // scan is all the query reads and nothing stands between its rows
        // and the limit; otherwise pages start at 50 rows.
        let simple = pg_sys::bms_membership((*root).all_baserels)
            == pg_sys::BMS_Membership::BMS_SINGLETON
            && (*parse).groupClause.is_null()
            && !(*parse).hasAggs
            && !(*parse).hasWindowFuncs
            && !(*parse).hasTargetSRFs
            && (*parse).distinctClause.is_null()
            && (*parse).setOperations.is_null()
            && (*parse).havingQual.is_null();
        let limit_expr = |node: *mut pg_sys::Node| {
            (simple
                && !node.is_null()
                && matches!(
                    (*node).type_,
                    pg_sys::NodeTag::T_Const | pg_sys::NodeTag::T_Param
                ))
            .then_some(node)
        };
        let count = limit_expr((*parse).limitCount);
        let offset = limit_expr((*parse).limitOffset);

        let shape = Shape {
            ids_unique: parts
                .as_ref()
                .map_or_else(|| ids_unique(rel, &cols), |p| p.ids_unique),
            filters: found.filters.iter().map(|f| f.0).collect(),
            lower: found.lower.len(),
            upper: found.upper.len(),
            count: count.is_some(),
            offset: offset.is_some(),
            columns: found.columns.iter().map(|c| (c.attno, c.list)).collect(),
            upper_inclusive: found.upper_inclusive.len(),
            ascending,
            merged: merged_child(root, rel),
            partitioned: parts.is_some(),
            reader: (*rel).userid.to_u32(),
            held: found.held.len(),
            attrs: cols.attrs,
            implied_lower: implied_lower.len(),
            implied_upper: implied_upper.len(),
            times: times.iter().map(|&(attno, op, _)| (attno, op)).collect(),
        };
        let mut exprs: *mut pg_sys::List = std::ptr::null_mut();
        let mut push = |e: *mut std::ffi::c_void| exprs = pg_sys::lappend(exprs, e);
        push(org.cast());
        for e in found.filters.iter().flat_map(|f| &f.1) {
            push(e.cast());
        }
        for e in found
            .lower
            .iter()
            .chain(&found.upper)
            .chain(&found.upper_inclusive)
        {
            push(e.cast());
        }
        for e in count.iter().chain(&offset) {
            push(e.cast());
        }
        for c in &found.columns {
            push(c.value.cast());
        }
        for &e in implied_lower.iter().chain(implied_upper) {
            push(e.cast());
        }
        for &(_, _, e) in &times {
            push(e.cast());
        }
        for &rinfo in &found.held {
            push((*rinfo).clause.cast());
        }
        let ints = shape.to_list();

        // The quals the search does not apply only filter the rows it
        // returns: it reads 1 / their selectivity as many (all the tenant's
        // matches when the rows they keep are fewer than the page).
        let mut residual: *mut pg_sys::List = std::ptr::null_mut();
        for rinfo in crate::pg_list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo) {
            if !(*rinfo).pseudoconstant
                && !found.used.contains(&rinfo)
                && !implied.used.contains(&rinfo)
            {
                residual = pg_sys::lappend(residual, rinfo.cast());
            }
        }
        let kept = if residual.is_null() {
            1.0
        } else {
            pg_sys::clauselist_selectivity(
                root,
                residual,
                rti as i32,
                pg_sys::JoinType::JOIN_INNER,
                std::ptr::null_mut(),
            )
        };
        let (startup, total) = cost(root, rel, found.org_qual, parts.as_ref(), kept);
        let path =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomPath>()) as *mut pg_sys::CustomPath;
        (*path).path.type_ = pg_sys::NodeTag::T_CustomPath;
        (*path).path.pathtype = pg_sys::NodeTag::T_CustomScan;
        (*path).path.parent = rel;
        (*path).path.pathtarget = (*rel).reltarget;
        (*path).path.parallel_aware = false;
        (*path).path.parallel_safe = false; // a search runs SPI statements
        (*path).path.rows = (*rel).rows;
        (*path).path.startup_cost = startup;
        (*path).path.total_cost = total;
        (*path).path.pathkeys = (*root).query_pathkeys;
        // the quals the executor need not test (plan.rs)
        let mut guaranteed: *mut pg_sys::List = std::ptr::null_mut();
        for &rinfo in found.guaranteed.iter().chain(&found.held) {
            guaranteed = pg_sys::lappend(guaranteed, rinfo.cast());
        }
        (*path).custom_private = pg_sys::lappend(
            pg_sys::lappend(
                pg_sys::lappend(std::ptr::null_mut(), exprs.cast()),
                ints.cast(),
            ),
            guaranteed.cast(),
        );
        (*path).methods = &raw const super::plan::PATH_METHODS;
        Some(path)
    }
}

/// Whether the query wants this scan's rows in `id` order, in the
/// column's collation: Some(false) newest first (`DESC`), Some(true)
/// oldest first (`ASC`), None otherwise.
unsafe fn id_order(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    cols: &Columns,
) -> Option<bool> {
    // SAFETY: planner structures, read.
    unsafe {
        let pathkey = crate::pg_list::nth::<pg_sys::PathKey>((*root).query_pathkeys, 0)?;
        let ec = (*pathkey).pk_eclass;
        if (*pathkey).pk_opfamily != pg_sys::TEXT_BTREE_FAM_OID
            || (*ec).ec_collation != cols.id_collation
        {
            return None;
        }
        let (ty, typmod) = cols.id_type;
        let var = pg_sys::makeVar(rti as _, cols.id, ty, typmod, cols.id_collation, 0);
        (!pg_sys::find_ec_member_matching_expr(ec, var.cast(), (*rel).relids).is_null())
            .then(|| !crate::compat::pathkey_descending(pathkey))
    }
}

/// The path's startup and total cost. A search walks the tenant's
/// pagination index testing bitmaps held in the index (an entry costs an
/// index tuple and an operator), fetches only the matches from the heap
/// (mostly pages the walk's neighbours share: a twentieth of a random page
/// each), and leaves the walk for the tenant-keys or GIN index when matches
/// are rare (then it reads at most a first chunk of entries). Startup is
/// one index descent: rows come as soon as the first page is found. An
/// index scan with the same quals as a filter reads the heap for every
/// entry, so it costs more unless nearly every row matches; a unique id
/// lookup costs less. A partitioned table searched whole costs what its
/// kept leaves' scans would, each by its own rows and entries in the
/// window (most leaves by created_at have none of a recent one), without
/// the merge above them.
unsafe fn cost(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    org_qual: *mut pg_sys::RestrictInfo,
    parts: Option<&Partitioned>,
    kept: f64,
) -> (f64, f64) {
    // SAFETY: planner structures and cost settings, read.
    unsafe {
        let one = |entries: f64, rows: f64| {
            let entries = entries.max(1.0);
            // the rows the search reads: those the executor keeps, and
            // those it drops, up to every entry of the tenant
            let matches = (rows / kept.max(1e-9)).min(entries).max(1.0);
            let per_entry = pg_sys::cpu_index_tuple_cost + pg_sys::cpu_operator_cost;
            let per_match = pg_sys::cpu_tuple_cost + 0.05 * pg_sys::random_page_cost;
            // Fewer than one match in 200 entries: the walk leaves after a
            // first chunk (`alerts_core::walk::leave_walk`).
            let walked = if matches * 200.0 < entries {
                entries.min(2000.0)
            } else {
                entries
            };
            let startup = 100.0 * pg_sys::cpu_operator_cost;
            (startup, startup + walked * per_entry + matches * per_match)
        };
        match parts {
            None => {
                let tenant_share = pg_sys::clauselist_selectivity(
                    root,
                    pg_sys::lappend(std::ptr::null_mut(), org_qual.cast()),
                    0,
                    pg_sys::JoinType::JOIN_INNER,
                    std::ptr::null_mut(),
                );
                one((*rel).tuples * tenant_share, (*rel).rows)
            }
            Some(p) => p
                .leaves
                .iter()
                .fold((0.0, 0.0), |(s, t), &(entries, rows)| {
                    let (ls, lt) = one(entries, rows);
                    (s + ls, t + lt)
                }),
        }
    }
}
