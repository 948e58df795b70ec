//! What the search asks of an index, asked once whether the index comes
//! from the relcache (a search, the custom scan's catalog facts) or from
//! the planner's `IndexOptInfo` (the custom scan's offer): both are read
//! into one [`IndexShape`] and tested by the same two functions.

use pgrx::pg_sys::{self, AttrNumber, Oid};

/// Most key columns an index has (`INDEX_MAX_KEYS`).
const MAX_KEYS: usize = 32;

/// One index, as the tests below read it.
pub struct IndexShape {
    am: Oid,
    /// Key columns (`nkeys` of them; 0 for an expression).
    keys: [AttrNumber; MAX_KEYS],
    nkeys: usize,
    /// Of the first two key columns: operator family, input type and
    /// collation (zero past the key columns).
    opfamilies: [Oid; 2],
    opcintypes: [Oid; 2],
    collations: [Oid; 2],
    unique: bool,
    immediate: bool,
    partial: bool,
}

impl IndexShape {
    /// From an open index's relcache entry.
    ///
    /// # Safety
    /// `index` is open.
    pub unsafe fn of_relation(index: pg_sys::Relation) -> IndexShape {
        // SAFETY: as the caller's; the arrays have a cell per key column.
        unsafe {
            let form = &*(*index).rd_index;
            let keys = form.indkey.values.as_slice(form.indnkeyatts as usize);
            let two = |array: *const Oid| {
                let at = |i: usize| {
                    if i < keys.len() {
                        *array.add(i)
                    } else {
                        Oid::INVALID
                    }
                };
                [at(0), at(1)]
            };
            IndexShape::new(
                (*(*index).rd_rel).relam,
                keys,
                [
                    two((*index).rd_opfamily),
                    two((*index).rd_opcintype),
                    two((*index).rd_indcollation),
                ],
                [
                    form.indisunique,
                    form.indimmediate,
                    !pg_sys::RelationGetIndexPredicate(index).is_null(),
                ],
            )
        }
    }

    /// From the planner's description of an index of a table being
    /// planned.
    ///
    /// # Safety
    /// `index` is an `IndexOptInfo` of the planner's.
    pub unsafe fn of_planner(index: *const pg_sys::IndexOptInfo) -> IndexShape {
        // SAFETY: as the caller's; the arrays have a cell per key column.
        unsafe {
            let n = (*index).nkeycolumns.max(0) as usize;
            let mut keys = [0; MAX_KEYS];
            for (i, key) in keys.iter_mut().enumerate().take(n.min(MAX_KEYS)) {
                *key = *(*index).indexkeys.add(i) as AttrNumber;
            }
            let two = |array: *const Oid| {
                let at = |i: usize| if i < n { *array.add(i) } else { Oid::INVALID };
                [at(0), at(1)]
            };
            IndexShape::new(
                (*index).relam,
                &keys[..n.min(MAX_KEYS)],
                [
                    two((*index).opfamily),
                    two((*index).opcintype),
                    two((*index).indexcollations),
                ],
                [
                    (*index).unique,
                    (*index).immediate,
                    !(*index).indpred.is_null(),
                ],
            )
        }
    }

    fn new(
        am: Oid,
        keys: &[AttrNumber],
        [opfamilies, opcintypes, collations]: [[Oid; 2]; 3],
        [unique, immediate, partial]: [bool; 3],
    ) -> IndexShape {
        let nkeys = keys.len().min(MAX_KEYS);
        let mut all = [0; MAX_KEYS];
        all[..nkeys].copy_from_slice(&keys[..nkeys]);
        IndexShape {
            am,
            keys: all,
            nkeys,
            opfamilies,
            opcintypes,
            collations,
            unique,
            immediate,
            partial,
        }
    }

    fn keys(&self) -> &[AttrNumber] {
        &self.keys[..self.nkeys]
    }

    /// A btree led by the tenant's and the id's columns (`columns`: each
    /// one's number and collation), both by text's own operators
    /// (text_ops; a `text_pattern_ops` index orders bytes whatever the
    /// collation) in those collations: an index that serves `ORDER BY id`
    /// within a tenant. Partial or not (the caller asks).
    pub fn paginates(&self, columns: [(AttrNumber, Oid); 2]) -> bool {
        self.am == pg_sys::BTREE_AM_OID
            && self.nkeys >= 2
            && self.keys()[..2] == [columns[0].0, columns[1].0]
            && (0..2).all(|i| {
                self.opfamilies[i] == pg_sys::TEXT_BTREE_FAM_OID
                    && self.opcintypes[i] == pg_sys::TEXTOID
                    && self.collations[i] == columns[i].1
            })
    }

    /// A btree led by the id's column (`id`: its number and collation) by
    /// text's own operators in that collation: its first or last entry
    /// holds the table's smallest or largest id. Partial or not (the
    /// caller asks).
    pub fn orders_ids(&self, id: (AttrNumber, Oid)) -> bool {
        self.am == pg_sys::BTREE_AM_OID
            && self.keys().first() == Some(&id.0)
            && self.opfamilies[0] == pg_sys::TEXT_BTREE_FAM_OID
            && self.opcintypes[0] == pg_sys::TEXTOID
            && self.collations[0] == id.1
    }

    /// Unique, checked immediately, not partial, with only `id`, or the
    /// tenant and `id`, as keys: no two rows of a tenant share an id.
    pub fn unique_ids(&self, org: AttrNumber, id: AttrNumber) -> bool {
        self.unique
            && self.immediate
            && !self.partial
            && self.keys().contains(&id)
            && self.keys().iter().all(|&k| k == id || k == org)
    }

    /// Has a predicate (`CREATE INDEX ... WHERE`).
    pub fn partial(&self) -> bool {
        self.partial
    }
}
