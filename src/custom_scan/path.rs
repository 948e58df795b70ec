//! The planner side: a `set_rel_pathlist_hook` that offers the custom path
//! for the scan of a table searches can read, when the query has what a
//! search needs (see `quals.rs`) and wants the rows in `id` order (`ORDER
//! BY id DESC`, newest first, or `ASC`); and the plan made of that path.
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
use pgrx::pg_sys::{self, AttrNumber, Oid};

use super::quals::{self, Columns};
use super::shape::{Shape, NAME};

static mut PREVIOUS: pg_sys::set_rel_pathlist_hook_type = None;

/// Installs the hook, after any already there, and registers the plan's
/// methods by name.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: backends are single-threaded; called once at load; the
    // table is static.
    unsafe {
        pg_sys::RegisterCustomScanMethods(&raw const SCAN_METHODS);
        PREVIOUS = pg_sys::set_rel_pathlist_hook;
        pg_sys::set_rel_pathlist_hook = Some(hook);
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
        if crate::settings::CUSTOM_SCAN.get() && !crate::search::running() {
            offer(root, rel, rti, rte);
        }
    }
}

/// Offers the path when the scan of `rel` qualifies (see the module
/// comment); does nothing otherwise.
unsafe fn offer(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: planner structures, read; the path is built in the planner's
    // memory.
    unsafe {
        let parse = (*root).parse;
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || (*rte).relkind != pg_sys::RELKIND_RELATION as std::ffi::c_char
            || (*parse).commandType != pg_sys::CmdType::CMD_SELECT
            || !(*root).rowMarks.is_null()
            || pg_sys::list_length((*root).query_pathkeys) != 1
            || (*rel).baserestrictinfo.is_null()
        {
            return;
        }
        let relid = (*rte).relid;
        let Some(cols) = columns_of(relid) else {
            return;
        };
        let found = quals::usable((*rel).baserestrictinfo, rti, &cols);
        let Some(org) = found.org else {
            return;
        };
        let Some(ascending) = id_order(root, rel, rti, &cols) else {
            return;
        };
        // A row whose id is NULL can match, and a search never returns it
        // (its window is a range of ids): offered only where no such row
        // can be, or the query's own bounds on `id` refuse it.
        let id_bounded =
            !(found.lower.is_empty() && found.upper.is_empty() && found.upper_inclusive.is_empty());
        let table = table_of(relid, cols.id);
        if found.filters.is_empty()
            || !table.heap_without_children
            || !(id_bounded || table.id_not_null)
            || !has_pagination_index(rel, &cols)
            || reads_system_columns(rel, rti)
            || crate::search::is_distributed(relid)
        {
            return;
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
            ids_unique: ids_unique(rel, &cols),
            filters: found.filters.iter().map(|f| f.0).collect(),
            lower: found.lower.len(),
            upper: found.upper.len(),
            count: count.is_some(),
            offset: offset.is_some(),
            columns: found.columns.iter().map(|c| (c.attno, c.list)).collect(),
            upper_inclusive: found.upper_inclusive.len(),
            ascending,
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
        let mut ints: *mut pg_sys::List = std::ptr::null_mut();
        for i in shape.to_ints() {
            ints = pg_sys::lappend(ints, pg_sys::makeInteger(i).cast());
        }

        let (startup, total) = cost(root, rel, found.org_qual);
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
        let mut guaranteed: *mut pg_sys::List = std::ptr::null_mut();
        for &rinfo in &found.guaranteed {
            guaranteed = pg_sys::lappend(guaranteed, rinfo.cast());
        }
        (*path).custom_private = pg_sys::lappend(
            pg_sys::lappend(
                pg_sys::lappend(std::ptr::null_mut(), exprs.cast()),
                ints.cast(),
            ),
            guaranteed.cast(),
        );
        (*path).methods = &raw const PATH_METHODS;
        pg_sys::add_path(rel, path.cast());
    }
}

/// The columns a search reads, when the table has them with the types it
/// reads: text `organisation_id` and `id`, jsonb `attribute_values`, and a
/// bitmap column.
unsafe fn columns_of(relid: Oid) -> Option<Columns> {
    // SAFETY: syscache lookups by relation and name.
    unsafe {
        let column = |name: &std::ffi::CStr, types: &[Oid]| -> Option<(AttrNumber, Oid)> {
            let attno = pg_sys::get_attnum(relid, name.as_ptr());
            if attno <= 0 {
                return None;
            }
            let (mut ty, mut typmod, mut coll) = (Oid::INVALID, 0, Oid::INVALID);
            pg_sys::get_atttypetypmodcoll(relid, attno, &mut ty, &mut typmod, &mut coll);
            types.contains(&ty).then_some((attno, coll))
        };
        let (org, org_collation) = column(c"organisation_id", &[pg_sys::TEXTOID])?;
        let (id, id_collation) = column(c"id", &[pg_sys::TEXTOID])?;
        let (attrs, _) = column(c"attribute_values", &[pg_sys::JSONBOID])?;
        let (bitmap, _) = column(
            c"attribute_values_bitmap",
            &[pg_sys::BITOID, pg_sys::VARBITOID],
        )?;
        Some(Columns {
            org,
            id,
            attrs,
            bitmap,
            org_collation,
            id_collation,
        })
    }
}

/// What the offer needs of the table beyond its columns.
struct Table {
    /// A table of the heap access method (the search's walk fetches rows
    /// through the heap's own functions) with no inheritance children. A
    /// parent's own rows are one member of its inheritance expansion, and
    /// a search of it would read the children too, which the Append reads
    /// again: the path is not offered for it (its children get it each).
    heap_without_children: bool,
    /// Column `id` is `NOT NULL`.
    id_not_null: bool,
}

unsafe fn table_of(relid: Oid, id: AttrNumber) -> Table {
    // SAFETY: the planner holds a lock on the relation it plans.
    unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::NoLock as i32);
        let form = &*(*rel).rd_rel;
        let table = Table {
            heap_without_children: form.relam == pg_sys::HEAP_TABLE_AM_OID && !form.relhassubclass,
            id_not_null: crate::compat::attribute((*rel).rd_att, id as i32).attnotnull,
        };
        pg_sys::relation_close(rel, pg_sys::NoLock as i32);
        table
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
        let pathkey = pg_sys::list_nth((*root).query_pathkeys, 0) as *mut pg_sys::PathKey;
        let ec = (*pathkey).pk_eclass;
        if (*pathkey).pk_opfamily != pg_sys::TEXT_BTREE_FAM_OID
            || (*ec).ec_collation != cols.id_collation
        {
            return None;
        }
        let var = pg_sys::makeVar(rti as _, cols.id, pg_sys::TEXTOID, -1, cols.id_collation, 0);
        (!pg_sys::find_ec_member_matching_expr(ec, var.cast(), (*rel).relids).is_null())
            .then(|| !crate::compat::pathkey_descending(pathkey))
    }
}

/// The key columns of an index of the planner's list.
unsafe fn index_keys<'a>(index: *const pg_sys::IndexOptInfo) -> &'a [i32] {
    // SAFETY: indexkeys has nkeycolumns entries.
    unsafe { std::slice::from_raw_parts((*index).indexkeys, (*index).nkeycolumns as usize) }
}

/// Whether the table has a btree led by `(organisation_id, id)`, in the
/// columns' collations (the search's walk; it errors without one).
unsafe fn has_pagination_index(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
    // SAFETY: the planner's index list of the rel.
    unsafe {
        indexes(rel).any(|index| {
            let keys = index_keys(index);
            (*index).relam == pg_sys::BTREE_AM_OID
                && (*index).indpred.is_null()
                && keys.len() >= 2
                && keys[0] == cols.org as i32
                && keys[1] == cols.id as i32
                // by text's own operators (not text_pattern_ops, which
                // orders bytes) in the columns' collations: the walk's
                // order is the query's, its range the query's bounds
                && (0..2).all(|i| *(*index).opfamily.add(i) == pg_sys::TEXT_BTREE_FAM_OID)
                && *(*index).indexcollations == cols.org_collation
                && *(*index).indexcollations.add(1) == cols.id_collation
        })
    }
}

/// Whether a unique, immediately checked, non-partial index has only
/// `id`, or `organisation_id` and `id`, as keys: then no two rows of a
/// tenant share an id.
unsafe fn ids_unique(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
    // SAFETY: the planner's index list of the rel.
    unsafe {
        indexes(rel).any(|index| {
            let keys = index_keys(index);
            (*index).unique
                && (*index).immediate
                && (*index).indpred.is_null()
                && keys.contains(&(cols.id as i32))
                && keys
                    .iter()
                    .all(|&k| k == cols.id as i32 || k == cols.org as i32)
        })
    }
}

unsafe fn indexes(rel: *mut pg_sys::RelOptInfo) -> impl Iterator<Item = *mut pg_sys::IndexOptInfo> {
    // SAFETY: a list of IndexOptInfo pointers.
    unsafe {
        let list = (*rel).indexlist;
        (0..pg_sys::list_length(list))
            .map(move |i| pg_sys::list_nth(list, i) as *mut pg_sys::IndexOptInfo)
    }
}

/// Whether the query reads a system column (`ctid`, `tableoid`...) of the
/// scan: its rows come back as values, without them.
unsafe fn reads_system_columns(rel: *mut pg_sys::RelOptInfo, rti: pg_sys::Index) -> bool {
    // SAFETY: planner nodes, read.
    unsafe {
        let mut attnos: *mut pg_sys::Bitmapset = std::ptr::null_mut();
        pg_sys::pull_varattnos((*(*rel).reltarget).exprs.cast(), rti, &mut attnos);
        let clauses = (*rel).baserestrictinfo;
        for i in 0..pg_sys::list_length(clauses) {
            let rinfo = pg_sys::list_nth(clauses, i) as *mut pg_sys::RestrictInfo;
            pg_sys::pull_varattnos((*rinfo).clause.cast(), rti, &mut attnos);
        }
        // members are attno - FirstLowInvalidHeapAttributeNumber; the
        // whole row (0) is fine, anything below it is a system column
        let first = pg_sys::bms_next_member(attnos, -1);
        (0..-pg_sys::FirstLowInvalidHeapAttributeNumber).contains(&first)
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
/// lookup costs less.
unsafe fn cost(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    org_qual: *mut pg_sys::RestrictInfo,
) -> (f64, f64) {
    // SAFETY: planner structures and cost settings, read.
    unsafe {
        let tenant_share = pg_sys::clauselist_selectivity(
            root,
            pg_sys::lappend(std::ptr::null_mut(), org_qual.cast()),
            0,
            pg_sys::JoinType::JOIN_INNER,
            std::ptr::null_mut(),
        );
        let entries = ((*rel).tuples * tenant_share).max(1.0);
        let matches = (*rel).rows.max(1.0);
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
    }
}

/// The methods of the path and the plan. Postgres keeps pointers to them;
/// they are never written after load.
static mut PATH_METHODS: pg_sys::CustomPathMethods = pg_sys::CustomPathMethods {
    CustomName: NAME.as_ptr(),
    PlanCustomPath: Some(plan),
    ReparameterizeCustomPathByChild: None,
};
static mut SCAN_METHODS: pg_sys::CustomScanMethods = pg_sys::CustomScanMethods {
    CustomName: NAME.as_ptr(),
    CreateCustomScanState: Some(super::exec::create_state),
};

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
