//! Predicate locks for index pages read in place, as the access methods'
//! own scans take them: under SERIALIZABLE, a row another transaction adds
//! where a search looked (a page of an index it read, or, for a GIN index
//! with fast update, anywhere in it) is a read-write conflict that SSI
//! sees. Outside SERIALIZABLE each call returns at once.

use pgrx::pg_sys;

// `storage/predicate.h`, alike in 15, 16 and 18 (pgrx does not bind it);
// called through pgrx's guard, as its own bindings are (a lock table out
// of memory is an ERROR).
unsafe extern "C-unwind" {
    fn PredicateLockRelation(relation: pg_sys::Relation, snapshot: pg_sys::Snapshot);
    fn PredicateLockPage(
        relation: pg_sys::Relation,
        blkno: pg_sys::BlockNumber,
        snapshot: pg_sys::Snapshot,
    );
}

/// The whole of index `rel` read, as GIN's scan locks an index with fast
/// update (its pending list takes new entries outside the tree's pages).
///
/// # Safety
/// `rel` is open, a snapshot is active.
pub unsafe fn relation_read(rel: pg_sys::Relation) {
    // SAFETY: as the caller's.
    unsafe {
        let snapshot = pg_sys::GetActiveSnapshot();
        pg_sys::ffi::pg_guard_ffi_boundary(|| PredicateLockRelation(rel, snapshot))
    }
}

/// Page `block` of index `rel` read.
///
/// # Safety
/// `rel` is open, a snapshot is active.
pub unsafe fn page_read(rel: pg_sys::Relation, block: pg_sys::BlockNumber) {
    // SAFETY: as the caller's.
    unsafe {
        let snapshot = pg_sys::GetActiveSnapshot();
        pg_sys::ffi::pg_guard_ffi_boundary(|| PredicateLockPage(rel, block, snapshot))
    }
}
