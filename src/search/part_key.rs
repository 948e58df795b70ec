//! What a partitioned table's key tells a search: the column, operator
//! class and collation it partitions on (`pg_partitioned_table`), and
//! whether its bounds prune by the tenant or by ids.

use pgrx::pg_sys::{self, Datum, Oid};

/// A range partition's bounds on `id`, lower and upper: None for
/// `MINVALUE` and `MAXVALUE`.
pub type IdBounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What a partitioned table's key tells the window's pruning
/// (`partitions::in_window`).
#[derive(Clone, Copy)]
pub enum KeyUse {
    /// Hash of `organisation_id` (text): the hash support function and
    /// the key's collation.
    Tenant { hash: Oid, collation: Oid },
    /// Range on `id` in text's own order and the column's collation.
    Ids { collation: Oid },
    /// Nothing: every partition is kept.
    Neither,
}

/// Each partitioned table's [`KeyUse`] with the relcache epoch it was read
/// in: the key never changes, but the table may be dropped and its OID
/// reused (a slot of the backend's state).
#[derive(Default)]
struct KeyUses(std::cell::RefCell<Vec<(Oid, u64, KeyUse)>>);

/// `rel`'s [`KeyUse`], read from the catalogs once per relcache epoch.
///
/// # Safety
/// `rel` is an open partitioned table.
pub unsafe fn key_use(rel: pg_sys::Relation) -> KeyUse {
    let epoch = super::indexes::relcache_epoch();
    // SAFETY: as the caller's.
    let relid = unsafe { (*rel).rd_id };
    let cache = &crate::backend::slot::<KeyUses>().0;
    if let Some(&(_, _, known)) = cache.borrow().iter().find(|e| e.0 == relid && e.1 == epoch) {
        return known;
    }
    // SAFETY: catalog reads of an open relation.
    let known = unsafe { read_key_use(rel) };
    let mut cache = cache.borrow_mut();
    cache.retain(|e| e.1 == epoch && e.0 != relid);
    cache.push((relid, epoch, known));
    known
}

/// [`key_use`], from the catalogs.
///
/// # Safety
/// As [`key_use`].
unsafe fn read_key_use(rel: pg_sys::Relation) -> KeyUse {
    // SAFETY: as the caller's.
    unsafe {
        let Some((strategy, column, class, collation)) = key_of((*rel).rd_id) else {
            return KeyUse::Neither;
        };
        let named = |name: &std::ffi::CStr| pg_sys::get_attnum((*rel).rd_id, name.as_ptr());
        if strategy == b'h'
            && column == named(c"organisation_id")
            && pg_sys::get_opclass_input_type(class) == pg_sys::TEXTOID
        {
            let family = pg_sys::get_opclass_family(class);
            let hash = pg_sys::get_opfamily_proc(family, pg_sys::TEXTOID, pg_sys::TEXTOID, 2);
            if hash != pg_sys::InvalidOid {
                return KeyUse::Tenant { hash, collation };
            }
        }
        let id = named(c"id");
        if strategy == b'r'
            && column == id
            && pg_sys::get_opclass_family(class) == pg_sys::TEXT_BTREE_FAM_OID
            && collation == crate::compat::attribute((*rel).rd_att, id.into()).attcollation
        {
            return KeyUse::Ids { collation };
        }
        KeyUse::Neither
    }
}

/// Whether the planner reads `parent`'s children newest first by merging
/// their rows (a Merge Append): it is not partitioned by range on `id`,
/// whose partitions it reads one after another (an ordered Append).
///
/// # Safety
/// In a transaction; `parent` is locked.
pub unsafe fn merges_children(parent: Oid) -> bool {
    // SAFETY: catalog reads of a locked relation.
    unsafe {
        let id = pg_sys::get_attnum(parent, c"id".as_ptr());
        !matches!(key_of(parent), Some((b'r', column, _, _)) if column == id)
    }
}

/// The column `relid` is partitioned on, when its key is one column.
///
/// # Safety
/// In a transaction; `relid` is a partitioned table.
pub unsafe fn key_column(relid: Oid) -> Option<i16> {
    // SAFETY: as the caller's.
    unsafe { key_of(relid).map(|(_, column, _, _)| column) }
}

/// The operator class `relid` is partitioned by, when its key is one column.
///
/// # Safety
/// In a transaction; `relid` is a partitioned table.
pub unsafe fn key_class(relid: Oid) -> Option<Oid> {
    // SAFETY: as the caller's.
    unsafe { key_of(relid).map(|(_, _, class, _)| class) }
}

/// The strategy, column, operator class and collation of a table partitioned on one
/// column, from `pg_partitioned_table`; None for any other key.
///
/// # Safety
/// In a transaction; `relid` is a partitioned table.
unsafe fn key_of(relid: Oid) -> Option<(u8, i16, Oid, Oid)> {
    // SAFETY: the syscache tuple is read while held and released here;
    // int2vector and oidvector columns are stored plain (never toasted).
    unsafe {
        let cache = crate::compat::cache_id(pg_sys::SysCacheIdentifier::PARTRELID);
        let tuple = pg_sys::SearchSysCache1(cache, Datum::from(relid));
        if tuple.is_null() {
            return None;
        }
        // pg_partitioned_table's columns 2, 3, 5, 6, 7: partstrat,
        // partnatts, partattrs, partclass, partcollation (the same in 15
        // to 18).
        let column = |n: i16| {
            let mut isnull = false;
            let d = pg_sys::SysCacheGetAttr(cache, tuple, n, &mut isnull);
            (!isnull).then_some(d)
        };
        let key = (|| {
            if column(3)?.value() as i16 != 1 {
                return None;
            }
            let attr = (*column(5)?.cast_mut_ptr::<pg_sys::int2vector>())
                .values
                .as_slice(1)[0];
            let class = (*column(6)?.cast_mut_ptr::<pg_sys::oidvector>())
                .values
                .as_slice(1)[0];
            let collation = (*column(7)?.cast_mut_ptr::<pg_sys::oidvector>())
                .values
                .as_slice(1)[0];
            let strategy = column(2)?.value() as u8;
            (attr > 0).then_some((strategy, attr, class, collation))
        })();
        pg_sys::ReleaseSysCache(tuple);
        key
    }
}
