//! What the planner learns of the scanned table for the offer, beside
//! what the catalogs say of it (`facts.rs`): its pagination and unique
//! indexes among the planner's, the system columns the query reads,
//! whether its parent's plan merges it with its siblings, whether the
//! searches read it as the query's role would, and of a partitioned table
//! searched whole, its kept leaves (and, at a partition, whether its
//! parent will be searched whole).

use pgrx::pg_sys::{self, Oid};

use crate::search::{Columns, IndexShape};

/// Whether the table has a btree led by `(organisation_id, id)`, in the
/// columns' collations, not partial (the search's walk; it errors without
/// one).
pub unsafe fn has_pagination_index(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
    // SAFETY: the planner's index list of the rel.
    unsafe {
        indexes(rel).any(|index| {
            let shape = IndexShape::of_planner(index);
            !shape.partial() && shape.paginates(cols.leading())
        })
    }
}

/// Whether no two rows of a tenant share an id ([`IndexShape::unique_ids`]).
pub unsafe fn ids_unique(rel: *mut pg_sys::RelOptInfo, cols: &Columns) -> bool {
    // SAFETY: the planner's index list of the rel.
    unsafe { indexes(rel).any(|index| IndexShape::of_planner(index).unique_ids(cols.org, cols.id)) }
}

unsafe fn indexes(rel: *mut pg_sys::RelOptInfo) -> impl Iterator<Item = *mut pg_sys::IndexOptInfo> {
    // SAFETY: a list of IndexOptInfo pointers.
    unsafe { crate::pg_list::ptrs((*rel).indexlist) }
}

/// Whether the query reads a system column (`ctid`, `tableoid`...) of the
/// scan: its rows come back as values, without them.
pub unsafe fn reads_system_columns(rel: *mut pg_sys::RelOptInfo, rti: pg_sys::Index) -> bool {
    // SAFETY: planner nodes, read.
    unsafe {
        let mut attnos: *mut pg_sys::Bitmapset = std::ptr::null_mut();
        pg_sys::pull_varattnos((*(*rel).reltarget).exprs.cast(), rti, &mut attnos);
        for rinfo in crate::pg_list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo) {
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
            || super::facts::of((*parent).relid).merges_children
    }
}

/// What the offer of one node for a whole partitioned table needs: its
/// indexes (a partitioned index is valid once every partition has its
/// own) and the leaves the planner kept.
pub struct Partitioned {
    /// A valid btree led by `(organisation_id, id)` (what a search of the
    /// table requires, as [`has_pagination_index`] for one table).
    pub pagination_index: bool,
    /// As [`ids_unique`].
    pub ids_unique: bool,
    /// Of each kept leaf, the entries a search walks (its tenant's rows in
    /// the window, by the leaf's own statistics) and its estimated rows.
    pub leaves: Vec<(f64, f64)>,
}

/// [`Partitioned`] for partitioned table `rel`; None when a kept leaf is
/// not a heap table (a foreign partition: the search would read it
/// through statements, and Postgres' own plan is offered alone).
///
/// # Safety
/// `rel` is a partitioned base relation of `root`, being planned, whose
/// table the planner holds locked.
pub unsafe fn partitioned_of(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relid: Oid,
) -> Option<Partitioned> {
    // SAFETY: as the caller's.
    unsafe {
        let facts = super::facts::of(relid);
        let mut found = Partitioned {
            pagination_index: facts.pagination_index,
            ids_unique: facts.ids_unique,
            leaves: Vec::new(),
        };
        kept_leaves(root, rel, &mut found).then_some(found)
    }
}

/// [`Partitioned`] for partitioned table `rel` planned as one relation
/// (`one_rel.rs`), from the catalogs: None unless every partition is a
/// heap table. Its rows count as one leaf's, its partitions unplanned.
///
/// # Safety
/// `rel` is a base relation being planned.
pub unsafe fn unexpanded(
    rel: *mut pg_sys::RelOptInfo,
    facts: &super::facts::Facts,
) -> Option<Partitioned> {
    // SAFETY: the planner's estimates of the rel, read.
    unsafe {
        facts.leaves_heap.then(|| Partitioned {
            pagination_index: facts.pagination_index,
            ids_unique: facts.ids_unique,
            leaves: vec![((*rel).tuples.max(0.0), (*rel).rows)],
        })
    }
}

/// Counts the leaves under `rel` the planner kept (every level) into
/// `found`; false when one is not a heap table.
///
/// # Safety
/// As [`partitioned_of`].
unsafe fn kept_leaves(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    found: &mut Partitioned,
) -> bool {
    // SAFETY: part_rels has nparts entries, NULL for partitions pruned.
    unsafe {
        if (*rel).part_rels.is_null() {
            return true;
        }
        for i in 0..(*rel).nparts as usize {
            let child = *(*rel).part_rels.add(i);
            if child.is_null() {
                continue;
            }
            if (*child).nparts > 0 {
                if !kept_leaves(root, child, found) {
                    return false;
                }
                continue;
            }
            let rte = *(*root).simple_rte_array.add((*child).relid as usize);
            let facts = super::facts::of((*rte).relid);
            // the tenant's equality and the id bounds, as this leaf has them
            let (true, Some(cols)) = (facts.heap_without_children, facts.cols) else {
                return false;
            };
            let window = super::quals::usable((*child).baserestrictinfo, (*child).relid, &cols);
            let mut quals: *mut pg_sys::List = std::ptr::null_mut();
            for &rinfo in &window.guaranteed {
                quals = pg_sys::lappend(quals, rinfo.cast());
            }
            let share = pg_sys::clauselist_selectivity(
                root,
                quals,
                0,
                pg_sys::JoinType::JOIN_INNER,
                std::ptr::null_mut(),
            );
            found
                .leaves
                .push(((*child).tuples.max(0.0) * share, (*child).rows));
        }
        true
    }
}

/// Whether the searches read `relid` as the query would. Their
/// statements read whole rows: a role granted only some columns (which
/// Postgres checks one by one) gets Postgres' plan. A query through a
/// view reads the table as the view's owner (`rel->userid`), and its
/// searches run as that role (`search::ReadAs`): offered, for another
/// role, only where the owner reads the table as it is (no policy of its
/// own). A partition read through its parent is read with the parent's
/// privileges and policies, and its search's rare paths run statements
/// naming the partition, checked with its own: offered only where the
/// role reads the partition as it is. The plan depends on the role:
/// Postgres plans a cached statement again when another role runs it (as
/// it does for row-level security).
pub unsafe fn reads_as_it_is(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relid: pg_sys::Oid,
) -> bool {
    // SAFETY: planner structures; a valid relation.
    unsafe {
        (*(*root).glob).dependsOnRole = true;
        let current = pg_sys::GetUserId();
        let role = match (*rel).userid {
            pg_sys::InvalidOid => current,
            owner => owner,
        };
        if (*rel).reloptkind == pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL || role != current {
            crate::search::plain_read_as(relid, role)
        } else {
            crate::search::reads_whole_rows(relid, role)
        }
    }
}

/// Whether `rel` is a partition of a partitioned table the query reads
/// alone, which `path::upper_hook` will offer one node that searches it
/// whole (as far as the table decides: the quals are the partition's own,
/// and its offer checks them the same way). Then a node offered for the
/// partition is never chosen, yet Postgres would build an ordered Append
/// or Merge Append of them: planning a query of 13 partitions under the
/// simple protocol (planned on every call), about 16 µs of 340. A
/// prediction that fails keeps Postgres' own plans, as exact.
///
/// # Safety
/// `rel` is a base relation of `root`, being planned.
pub unsafe fn searched_whole(root: *mut pg_sys::PlannerInfo, rel: *mut pg_sys::RelOptInfo) -> bool {
    // SAFETY: a member relation has its AppendRelInfo in the planner's
    // array, each parent its RelOptInfo and range table entry.
    unsafe {
        if (*rel).reloptkind != pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL
            || (*root).append_rel_array.is_null()
            || (*(*root).parse).hasTargetSRFs
            || pg_sys::bms_membership((*root).all_baserels) != pg_sys::BMS_Membership::BMS_SINGLETON
            || !crate::settings::CUSTOM_SCAN_PARTITIONED.get()
        {
            return false;
        }
        // newest first (a whole table is not offered oldest first)
        match crate::pg_list::nth::<pg_sys::PathKey>((*root).query_pathkeys, 0) {
            Some(pathkey) if crate::compat::pathkey_descending(pathkey) => {}
            _ => return false,
        }
        let mut top = (*rel).relid as usize;
        let parent = loop {
            let info = *(*root).append_rel_array.add(top);
            if info.is_null() {
                return false;
            }
            top = (*info).parent_relid as usize;
            let parent = *(*root).simple_rel_array.add(top);
            if parent.is_null() {
                return false;
            }
            if (*parent).reloptkind == pg_sys::RelOptKind::RELOPT_BASEREL {
                break parent;
            }
        };
        let rte = *(*root).simple_rte_array.add(top);
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
            || (*rte).relkind != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
            || !(*rte).inh
        {
            return false;
        }
        // One partition kept: its own node costs what the whole table's
        // does, and is chosen (it reads no partition tree: a partition
        // attached meanwhile cannot make its page a serialization failure).
        if (*parent).part_rels.is_null()
            || (0..(*parent).nparts.max(0) as usize)
                .filter(|&i| !(*(*parent).part_rels.add(i)).is_null())
                .count()
                < 2
        {
            return false;
        }
        // (a distributed parent's partitions are distributed: not offered)
        let facts = super::facts::of((*rte).relid);
        facts.cols.is_some()
            && facts.pagination_index
            && facts.leaves_heap
            && facts.id_not_null
            && reads_as_it_is(root, parent, (*rte).relid)
    }
}
