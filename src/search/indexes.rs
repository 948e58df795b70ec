//! Which indexes of a table `alerts_search` can use (`layout.rs` reads
//! them), kept once per relcache epoch (an index created or dropped sends
//! a relcache invalidation for its table), and the epoch itself.

use std::cell::Cell;

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};

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
            crate::compat::cache_id(pg_sys::SysCacheIdentifier::NAMESPACEOID),
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

pub use super::layout::Indexes;

/// Which indexes a table has, kept for one relcache epoch.
#[derive(Default)]
pub struct IndexCache {
    known: Option<(Indexes, u64)>,
}

impl IndexCache {
    /// Which indexes the table has (valid, non-partial), read from its
    /// relcache entry once per relcache epoch.
    ///
    /// # Safety
    /// `relid` must be a valid relation, locked by the caller's transaction.
    pub unsafe fn get(&mut self, relid: Oid) -> Indexes {
        let epoch = relcache_epoch();
        if let Some((known, at)) = self.known {
            if at == epoch {
                return known;
            }
        }
        // SAFETY: as the caller's.
        let known = unsafe { super::layout::indexes(relid) };
        self.known = Some((known, epoch));
        known
    }
}
