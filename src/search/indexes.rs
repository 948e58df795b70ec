//! Which indexes of a table `alerts_search` can use, read from the catalog
//! once per relcache epoch (an index created or dropped sends a relcache
//! invalidation for its table): GIN on the attributes, GIN on the tenant
//! keys, and the btree led by (organisation_id, id) that the walk needs.

use std::cell::Cell;

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};

use super::spi::{execute, prepare};

/// Bumped by every relcache invalidation (an index created or dropped, a
/// table renamed or altered, sends one for its table) and by every change
/// of a schema (renamed: the tables in it change names): a slot of the
/// backend's state.
#[derive(Default)]
struct Epoch(Cell<u64>);

fn bump() {
    let e = &crate::backend::slot::<Epoch>().0;
    e.set(e.get().wrapping_add(1));
}

/// Invalidation callback: only bumps a counter (no catalog access is
/// allowed here).
#[pg_guard]
unsafe extern "C-unwind" fn relcache_changed(_arg: Datum, _relid: Oid) {
    bump();
}

#[pg_guard]
unsafe extern "C-unwind" fn namespace_changed(_arg: Datum, _cache: i32, _hash: u32) {
    bump();
}

/// Registers the invalidation callbacks, once, when the library is loaded:
/// a backend has a fixed number of callback slots shared by every library,
/// and running out is a FATAL error that ends the session. Registered at
/// load, it ends the session that loads the library, before any cache of
/// ours exists; there is no registration that fails and leaves the caches
/// unwatched.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn register_callbacks() {
    // SAFETY: registering callbacks that only bump a counter.
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(relcache_changed), Datum::from(0usize));
        pg_sys::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::NAMESPACEOID as i32,
            Some(namespace_changed),
            Datum::from(0usize),
        );
    }
}

/// The current relcache epoch. Read after locking the relation a cache
/// describes: the lock accepts the invalidations of DDL that committed
/// before it, and holds off DDL that would change the relation.
pub fn relcache_epoch() -> u64 {
    crate::backend::slot::<Epoch>().0.get()
}

/// The indexes of a table that `alerts_search` uses.
#[derive(Clone, Copy)]
pub struct Indexes {
    /// GIN on `attribute_values`.
    pub gin: bool,
    /// GIN on `alerts_keys(organisation_id, id, attribute_values)`.
    pub keys: bool,
    /// A btree led by `(organisation_id, id)` (or the relation is a view).
    pub page: bool,
    /// What the direct walk of `scan/` reads, when the table has the
    /// layout it needs.
    pub direct: Option<super::layout::Layout>,
}

/// The catalog statement and its last answer, for one table.
pub struct IndexCache {
    plan: pg_sys::SPIPlanPtr,
    known: Option<(Indexes, u64)>,
}

impl IndexCache {
    /// Prepares the catalog statement.
    ///
    /// # Safety
    /// SPI must be connected.
    pub unsafe fn prepare() -> IndexCache {
        // SAFETY: SPI is connected by the caller.
        unsafe {
            // Which indexes serve the call: GIN on the attributes, GIN on
            // the tenant keys, and a btree led by (organisation_id, id) that
            // the walk needs, ordered by text's own operators (family 1994,
            // text_ops: a text_pattern_ops index orders bytes, and cannot
            // serve ORDER BY id); a partitioned table's counts once every
            // partition has one: then it is valid. Views are not checked.
            // The tenant-keys index is found from the relcache instead
            // (`scan::keys_index`): by the extension's own function.
            // The access method is read from the first column's operator
            // class, not from the index's pg_class row: Citus hides its
            // shards' pg_class rows from client sessions on a worker.
            let plan = prepare(
                "SELECT coalesce(bool_or(am.amname = 'gin' AND k0.attname = 'attribute_values'), false),
                        coalesce(bool_or(am.amname = 'btree' AND k0.attname = 'organisation_id' AND k1.attname = 'id'
                                         AND oc.opcfamily = 1994 AND oc1.opcfamily = 1994), false)
                          OR (SELECT r.relkind NOT IN ('r', 'p') FROM pg_catalog.pg_class r WHERE r.oid = $1)
                 FROM pg_catalog.pg_index i
                 JOIN pg_catalog.pg_opclass oc ON oc.oid = i.indclass[0]
                 LEFT JOIN pg_catalog.pg_opclass oc1 ON i.indnkeyatts >= 2 AND oc1.oid = i.indclass[1]
                 JOIN pg_catalog.pg_am am ON am.oid = oc.opcmethod
                 LEFT JOIN pg_catalog.pg_attribute k0 ON k0.attrelid = i.indrelid AND k0.attnum = i.indkey[0]
                 LEFT JOIN pg_catalog.pg_attribute k1 ON k1.attrelid = i.indrelid AND k1.attnum = i.indkey[1]
                                                      AND i.indnkeyatts >= 2
                 WHERE i.indrelid = $1 AND i.indisvalid AND i.indpred IS NULL",
                &[pg_sys::OIDOID],
            );
            IndexCache { plan, known: None }
        }
    }

    /// The catalog statement (kept by its owner, `Statements`).
    pub fn plan(&self) -> pg_sys::SPIPlanPtr {
        self.plan
    }

    /// Which indexes the table has (valid, non-partial), read from the
    /// catalog once per relcache epoch.
    ///
    /// # Safety
    /// SPI must be connected.
    pub unsafe fn get(&mut self, relid: Oid) -> Indexes {
        let epoch = relcache_epoch();
        if let Some((known, at)) = self.known {
            if at == epoch {
                return known;
            }
        }
        // SAFETY: SPI is connected by the caller; the statement returns one
        // row of two non-null booleans.
        let known = unsafe {
            let tt = execute(self.plan, &[Datum::from(relid)]);
            let column = |n: i32| {
                let mut isnull = false;
                pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, n, &mut isnull).value() != 0
            };
            Indexes {
                gin: column(1),
                keys: super::layout::keys_index(relid).is_some(),
                page: column(2),
                direct: super::layout::layout(relid),
            }
        };
        self.known = Some((known, epoch));
        known
    }
}
