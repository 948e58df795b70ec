//! What the offer reads of a table in the catalogs, kept per relcache
//! epoch: the columns a search reads, the table's kind, whether `id` is
//! `NOT NULL`, how it declares its ids follow a time column, and of a partitioned table its own indexes and whether a
//! plan merges its children. A statement sent with the simple protocol is
//! planned on every call, and these reads were a fifth of the offer's
//! cost; they change only by DDL, and DDL on a table (a column added,
//! renamed or retyped, an index built, dropped or made valid, a partition
//! attached) sends the relcache invalidation that starts a new epoch
//! (`search::relcache_epoch`).

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::pg_sys::{self, Datum, Oid};

use crate::search::{Columns, IndexShape};

/// One table's facts.
#[derive(Clone, Copy)]
pub struct Facts {
    /// The columns a search reads, with the types it reads; None when the
    /// table lacks one (nothing is offered).
    pub cols: Option<Columns>,
    /// A plain table of the heap access method (the walk fetches rows
    /// through the heap's own functions) with no inheritance children (a parent's
    /// search would read its children, which the Append reads again).
    pub heap_without_children: bool,
    /// Column `id` is `NOT NULL`.
    pub id_not_null: bool,
    /// Of a partitioned table, from its own (partitioned) indexes: a valid
    /// btree led by `(organisation_id, id)`, and a unique one on the ids
    /// (see `table::Partitioned`).
    pub pagination_index: bool,
    pub ids_unique: bool,
    /// Of a partitioned table, every partition a heap table (what a whole
    /// search reads; see `table::kept_leaves`), none partitioned itself.
    pub leaves_heap: bool,
    /// A plan reads this table's children merged (`search::part_key::merges_children`).
    pub merges_children: bool,
    /// How the table declares its ids follow a time column (`window.rs`).
    pub declared: Option<super::window::Declared>,
}

/// The facts read in the current epoch: a slot of the backend's state.
#[derive(Default)]
struct Known(RefCell<(u64, HashMap<Oid, Facts>)>);

/// The facts of `relid`, read once per relcache epoch.
///
/// # Safety
/// In a transaction; the planner holds a lock on `relid`.
pub unsafe fn of(relid: Oid) -> Facts {
    let epoch = crate::search::relcache_epoch();
    let known = &crate::backend::slot::<Known>().0;
    {
        let k = known.borrow();
        if let Some(&facts) = k.1.get(&relid).filter(|_| k.0 == epoch) {
            return facts;
        }
    }
    // SAFETY: as the caller's; no borrow is held while the catalogs are
    // read (an ERROR there leaves the map as it was).
    let facts = unsafe { read(relid) };
    // Kept under the epoch read before: an invalidation accepted while
    // reading makes them stale at once.
    let mut k = known.borrow_mut();
    if k.0 != epoch {
        k.1.clear();
        k.0 = epoch;
    }
    k.1.insert(relid, facts);
    facts
}

/// # Safety
/// As [`of`].
unsafe fn read(relid: Oid) -> Facts {
    // SAFETY: the planner holds a lock on the relation; its indexes are
    // opened under AccessShareLock and closed keeping it.
    unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::NoLock as i32);
        let cols = crate::search::columns((*rel).rd_att);
        let form = &*(*rel).rd_rel;
        let mut facts = Facts {
            cols,
            heap_without_children: crate::search::heap_table(form),
            id_not_null: cols
                .is_some_and(|c| crate::compat::attribute((*rel).rd_att, c.id as i32).attnotnull),
            pagination_index: false,
            ids_unique: false,
            leaves_heap: false,
            merges_children: crate::search::part_key::merges_children(relid),
            declared: cols.and_then(|c| super::window::declared(rel, &c)),
        };
        if let (Some(cols), true) = (
            cols,
            form.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char,
        ) {
            for cell in crate::pg_list::cells(pg_sys::RelationGetIndexList(rel)) {
                let index = pg_sys::relation_open(cell.oid_value, pg_sys::AccessShareLock as i32);
                let shape = IndexShape::of_relation(index);
                let whole = (*(*index).rd_index).indisvalid && !shape.partial();
                facts.pagination_index |= whole && shape.paginates(cols.leading());
                facts.ids_unique |= whole && shape.unique_ids(cols.org, cols.id);
                pg_sys::relation_close(index, pg_sys::NoLock as i32);
            }
            facts.leaves_heap = leaves_heap(rel);
        }
        pg_sys::relation_close(rel, pg_sys::NoLock as i32);
        facts
    }
}

/// Whether every partition of partitioned table `rel` is a heap table,
/// from `pg_class` (the partitions need not be locked: this only steers
/// what is offered; the whole table's offer checks the leaves the planner
/// kept). False when one is partitioned itself (its own partitions are
/// not looked into).
///
/// # Safety
/// In a transaction; `rel` is open and locked.
unsafe fn leaves_heap(rel: pg_sys::Relation) -> bool {
    // SAFETY: the descriptor's arrays have nparts entries; syscache tuples
    // are read while held and released.
    unsafe {
        let desc = pg_sys::RelationGetPartitionDesc(rel, true);
        if desc.is_null() {
            return false;
        }
        let n = (*desc).nparts.max(0) as usize;
        let oids = std::slice::from_raw_parts((*desc).oids, n);
        oids.iter().all(|&oid| {
            let cache = crate::compat::cache_id(pg_sys::SysCacheIdentifier::RELOID);
            let tuple = pg_sys::SearchSysCache1(cache, Datum::from(oid));
            if tuple.is_null() {
                return false;
            }
            let form = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_class>(tuple);
            let heap = crate::search::heap_table(form);
            pg_sys::ReleaseSysCache(tuple);
            heap
        })
    }
}
