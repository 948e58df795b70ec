//! What the planner learns of the scanned table for the offer: the
//! columns a search reads, the table's kind, its pagination and unique
//! indexes, the system columns the query reads, and whether its parent's
//! plan merges it with its siblings.

use pgrx::pg_sys::{self, AttrNumber, Oid};

use super::quals::Columns;

/// The columns a search reads, when the table has them with the types it
/// reads: text `organisation_id` and `id`, jsonb `attribute_values`, and a
/// bitmap column.
pub unsafe fn columns_of(relid: Oid) -> Option<Columns> {
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
pub struct Table {
    /// A table of the heap access method (the search's walk fetches rows
    /// through the heap's own functions) with no inheritance children. A
    /// parent's own rows are one member of its inheritance expansion, and
    /// a search of it would read the children too, which the Append reads
    /// again: the path is not offered for it (its children get it each).
    pub heap_without_children: bool,
    /// Column `id` is `NOT NULL`.
    pub id_not_null: bool,
}

pub unsafe fn table_of(relid: Oid, id: AttrNumber) -> Table {
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

/// The key columns of an index of the planner's list.
unsafe fn index_keys<'a>(index: *const pg_sys::IndexOptInfo) -> &'a [i32] {
    // SAFETY: indexkeys has nkeycolumns entries.
    unsafe { std::slice::from_raw_parts((*index).indexkeys, (*index).nkeycolumns as usize) }
}

/// Whether the table has a btree led by `(organisation_id, id)`, in the
/// columns' collations (the search's walk; it errors without one).
pub unsafe fn has_pagination_index(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
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
pub unsafe fn ids_unique(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
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
pub unsafe fn reads_system_columns(rel: *mut pg_sys::RelOptInfo, rti: pg_sys::Index) -> bool {
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

/// Whether `rel` is a child its parent's plan reads beside its siblings
/// in a merge (see `Shape::merged`).
///
/// # Safety
/// `rel` is a base relation of `root`, being planned.
pub unsafe fn merged_child(root: *mut pg_sys::PlannerInfo, rel: *mut pg_sys::RelOptInfo) -> bool {
    // SAFETY: a member relation has its AppendRelInfo in the planner's
    // array, and its parent's range table entry.
    unsafe {
        if (*rel).reloptkind != pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL
            || (*root).append_rel_array.is_null()
        {
            return false;
        }
        let info = *(*root).append_rel_array.add((*rel).relid as usize);
        if info.is_null() {
            return false;
        }
        let parent = *(*root).simple_rte_array.add((*info).parent_relid as usize);
        (*parent).rtekind != pg_sys::RTEKind::RTE_RELATION
            || crate::search::merges_children((*parent).relid)
    }
}
