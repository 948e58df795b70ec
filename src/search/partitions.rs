//! One partition set for a whole call on a partitioned table.
//!
//! The statement walk reads a partitioned table through several statements
//! (a chunk, the next chunk, a rare path), and each is planned, or its plan
//! revalidated, when it runs. `ATTACH PARTITION` takes only a SHARE UPDATE
//! EXCLUSIVE lock on the parent, so it may commit while a call runs: the
//! chunks before it read the old partitions and the ones after it the new,
//! and the page would be the answer of neither (the newest rows of the
//! attached partition missing, its older rows present). Detaching cannot
//! change the set mid-call: a plain DETACH waits for the call's lock on the
//! parent, and a concurrent one is hidden from, or shown to, the call's one
//! snapshot alike in every statement.
//!
//! So the call notes the partition tree before it reads and again after
//! (invalidations accepted first, as a statement's locking would); if it
//! changed, the page is read again from the start, on the new tree.

use pgrx::pg_sys::{self, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::error;

/// The partitions of a partitioned table, every level, as the planner would
/// find them now; None for any other relation.
///
/// # Safety
/// Must run in a transaction; `relid` must be a valid relation.
pub unsafe fn tree(relid: Oid) -> Option<Vec<Oid>> {
    // SAFETY: as the caller's; the relations are opened under the lock the
    // call's statements take anyway, and closed keeping it.
    unsafe {
        if pg_sys::get_rel_relkind(relid) != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char {
            return None;
        }
        pg_sys::AcceptInvalidationMessages();
        let mut oids = Vec::new();
        let mut parents = vec![relid];
        while let Some(parent) = parents.pop() {
            let rel = pg_sys::relation_open(parent, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let desc = pg_sys::RelationGetPartitionDesc(rel, true);
            let n = usize::try_from((*desc).nparts).unwrap_or(0);
            for i in 0..n {
                let oid = *(*desc).oids.add(i);
                oids.push(oid);
                if !*(*desc).is_leaf.add(i) {
                    parents.push(oid);
                }
            }
            pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
        Some(oids)
    }
}

/// How many times a call reads its page again after partitions were
/// attached while it ran, before it gives up.
const TRIES: u32 = 4;

/// Runs `read` (which fills the page from scratch) until the partition tree
/// of `relid` is the same after it as before it; every other relation is
/// read once. `retry` is called before each new read (to empty the page).
///
/// # Safety
/// As [`tree`].
pub unsafe fn consistent(relid: Oid, mut read: impl FnMut(), mut retry: impl FnMut()) {
    // SAFETY: as the caller's.
    unsafe {
        let Some(mut before) = tree(relid) else {
            read();
            return;
        };
        for _ in 0..TRIES {
            read();
            let after = tree(relid).unwrap_or_default();
            if after == before {
                return;
            }
            before = after;
            retry();
        }
        let name = super::spi::cstr_owned(pg_sys::get_rel_name(relid));
        error(
            PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            format!("alerts_search: partitions of {name} were attached while the page was read, {TRIES} times in a row"),
            "retry the query",
        );
    }
}
