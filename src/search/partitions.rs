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
//!
//! The direct walk of a partitioned table (`leaves.rs`) reads the tree
//! once instead ([`leaves`]) and holds every leaf it reads open from the
//! start: one partition set, whatever commits meanwhile.

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

pub use super::part_key::IdBounds;
use super::part_key::{key_column, key_use, KeyUse};
use crate::datum::{error, text_cmp, varlena_bytes};

/// The partitions of a partitioned table, every level, as the planner would
/// find them now; None for any other relation.
///
/// # Safety
/// Must run in a transaction; `relid` must be a valid relation.
pub unsafe fn tree(relid: Oid) -> Option<Vec<Oid>> {
    // SAFETY: as the caller's.
    unsafe {
        if pg_sys::get_rel_relkind(relid) != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char {
            return None;
        }
        pg_sys::AcceptInvalidationMessages();
        Some(tree_of(relid, |rel| {
            pg_sys::RelationGetPartitionDesc(rel, true)
        }))
    }
}

/// The partitions of partitioned table `relid`, every level, as the
/// planner of `root` read them: the descriptors its partition directory
/// kept (a partition attached or detached since then is not in it, nor in
/// Postgres' plan). A scan of the table as a whole reads these and no
/// other, as the rest of the plan does.
///
/// # Safety
/// Called while `root` is being planned, before its directory is freed;
/// `relid` is a partitioned table the planner has locked.
pub unsafe fn planned_tree(root: *mut pg_sys::PlannerInfo, relid: Oid) -> Vec<Oid> {
    // SAFETY: as the caller's; the directory keeps each descriptor it
    // returns (and a reference to its relation) until the plan is made.
    unsafe {
        let directory = (*(*root).glob).partition_directory;
        if directory.is_null() {
            return tree(relid).unwrap_or_default();
        }
        tree_of(relid, |rel| {
            pg_sys::PartitionDirectoryLookup(directory, rel)
        })
    }
}

/// The partitions under `relid`, every level, each level's from `desc_of`.
///
/// # Safety
/// In a transaction; `relid` is a partitioned table, and `desc_of`
/// returns the partition descriptor of an open partitioned table.
unsafe fn tree_of(
    relid: Oid,
    desc_of: impl Fn(pg_sys::Relation) -> pg_sys::PartitionDesc,
) -> Vec<Oid> {
    // SAFETY: as the caller's; the relations are opened under the lock
    // the call's statements take anyway, and closed keeping it.
    unsafe {
        let mut oids = Vec::new();
        let mut parents = vec![relid];
        while let Some(parent) = parents.pop() {
            let rel = pg_sys::relation_open(parent, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let desc = desc_of(rel);
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
        oids
    }
}

/// An ERROR unless the partition tree of `relid` is still `planned`: a
/// plain query's scan of a partitioned table searched whole reads the
/// partitions its plan read ([`planned_tree`]), as the rest of Postgres'
/// plan does (a partition can be attached beside a running query, or
/// between its planning and its execution). The direct walk reads only
/// those; a search through statements reads the table's as they are, and
/// checks here after it has read.
///
/// # Safety
/// As [`tree`].
pub unsafe fn unchanged(relid: Oid, planned: &[Oid]) {
    // SAFETY: as the caller's.
    unsafe {
        if tree(relid).unwrap_or_default() != planned {
            let name = super::spi::cstr_owned(pg_sys::get_rel_name(relid));
            error(
                PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
                format!("alerts_search: partitions of {name} were attached or detached since the query was planned (its pages would not read the partitions its plan reads)"),
                "retry the query",
            );
        }
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

/// The leaf partitions of partitioned table `relid`, every level, that may
/// hold tenant `org`'s ids in `[floor, before)` (no upper bound when
/// None): a level partitioned by range on `id` alone, in text's own order
/// and the column's collation, keeps only the partitions whose bounds meet
/// the window (and its default partition); a level partitioned by hash of
/// `organisation_id`, the tenant's partition; any other level keeps all.
/// Each level is locked as a statement's planning would lock it. With
/// `planned` (a plain query's scan, [`planned_tree`]) only the partitions
/// of its plan are kept, a partition its plan read and that is being
/// detached (`DETACH CONCURRENTLY`) among them.
///
/// # Safety
/// Must run in a transaction; `relid` is a partitioned table.
pub unsafe fn leaves(
    relid: Oid,
    (org, floor, before): (Datum, Datum, Option<Datum>),
    planned: Option<&[Oid]>,
) -> Leaves {
    // SAFETY: as the caller's; the partitioned tables are opened under
    // the lock a statement on them takes, and closed keeping it.
    unsafe {
        pg_sys::AcceptInvalidationMessages();
        let mut found = Vec::new();
        let mut bounds = Vec::new();
        let mut by_id = false;
        let mut parents = vec![relid];
        while let Some(parent) = parents.pop() {
            let rel = pg_sys::relation_open(parent, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let desc = pg_sys::RelationGetPartitionDesc(rel, planned.is_none());
            let n = usize::try_from((*desc).nparts).unwrap_or(0);
            let meets = in_window(rel, desc, (org, floor, before));
            if parent == relid {
                // One level of id ranges and no default partition: the
                // descriptor lists the partitions in their bounds' order.
                by_id = meets.as_ref().is_some_and(|(_, ranges, _)| *ranges)
                    && (*(*desc).boundinfo).default_index < 0
                    && (0..n).all(|i| *(*desc).is_leaf.add(i));
            }
            for i in 0..n {
                if meets.as_ref().is_some_and(|(m, _, _)| !m[i]) {
                    continue;
                }
                let oid = *(*desc).oids.add(i);
                if planned.is_some_and(|p| !p.contains(&oid)) {
                    continue;
                }
                if *(*desc).is_leaf.add(i) {
                    found.push(oid);
                    bounds.push(if parent == relid {
                        meets
                            .as_ref()
                            .and_then(|(_, _, b)| b.get(i).cloned().flatten())
                    } else {
                        None
                    });
                } else {
                    parents.push(oid);
                }
            }
            pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
        if by_id {
            found.reverse();
            bounds.reverse();
        }
        Leaves {
            oids: found,
            by_id,
            bounds,
        }
    }
}

/// The leaves a call reads.
pub struct Leaves {
    pub oids: Vec<Oid>,
    /// They hold ranges of ids that do not overlap, and are listed newest
    /// range first (one level partitioned by range on `id`, without a
    /// default partition).
    pub by_id: bool,
    /// Each leaf's bounds where its level's key gives them (by `id`, or by
    /// time where the parent declares how ids follow it): its ids are at
    /// or above the first and below the second.
    pub bounds: Vec<Option<IdBounds>>,
}

/// Which partitions of `rel` may hold the call's rows, by partition
/// index: partitioned by range on `id` in text's own order and `id`'s
/// collation, those whose bounds meet `[floor, before)` (and true, and
/// the bounds of those); by hash of `organisation_id` (text), the
/// tenant's (and false, no bounds); None when the key says nothing.
///
/// # Safety
/// `rel` is an open partitioned table and `desc` its partition descriptor.
unsafe fn in_window(
    rel: pg_sys::Relation,
    desc: pg_sys::PartitionDesc,
    (org, floor, before): (Datum, Datum, Option<Datum>),
) -> Option<(Vec<bool>, bool, Vec<Option<IdBounds>>)> {
    // SAFETY: as the caller's; every array is read within its length.
    unsafe {
        let bounds = (*desc).boundinfo;
        if bounds.is_null() {
            return None;
        }
        // 'h', 'l' or 'r': a `char` before PostgreSQL 16, an enum of the
        // same values after.
        let strategy = (*bounds).strategy as u8;
        let mut meets = vec![false; usize::try_from((*desc).nparts).unwrap_or(0)];
        let collation = match (key_use(rel), strategy) {
            (KeyUse::Tenant { hash, collation }, b'h') if (*bounds).nindexes > 0 => {
                // As PostgreSQL routes a row: the key's extended hash with
                // the partitioning seed, combined into 0, modulo the
                // greatest modulus (`compute_partition_hash_value`).
                let seed = Datum::from(0x7A5B_2236_7996_DCFD_u64);
                let h = pg_sys::OidFunctionCall2Coll(hash, collation, org, seed).value() as u64;
                let row_hash = h.wrapping_add(0x49a0_f4dd_15e5_a8e3);
                let i = (row_hash % (*bounds).nindexes as u64) as usize;
                if let Ok(p) = usize::try_from(*(*bounds).indexes.add(i)) {
                    meets[p] = true;
                }
                return Some((meets, false, Vec::new()));
            }
            (KeyUse::Ids { collation }, b'r') => collation,
            (KeyUse::Neither, b'r') => {
                let time = key_column((*rel).rd_id)?;
                return super::near::in_time_window(rel, desc, time, (floor, before))
                    .map(|(m, ranges)| (m, false, ranges));
            }
            _ => return None,
        };
        let (floor, before) = (varlena_bytes(floor), before.map(|b| varlena_bytes(b)));
        // Bound j of the sorted bounds (None: MINVALUE or MAXVALUE, by side)
        let bound = |j: usize| -> Option<&[u8]> {
            let kind = *(*(*bounds).kind.add(j));
            (kind == pg_sys::PartitionRangeDatumKind::PARTITION_RANGE_DATUM_VALUE)
                .then(|| varlena_bytes(*(*(*bounds).datums.add(j))))
        };
        let mut ranges = vec![None; meets.len()];
        if let Ok(d) = usize::try_from((*bounds).default_index) {
            meets[d] = true;
        }
        // indexes[j] is the partition whose upper bound is bound j, its
        // lower bound bound j-1 (or -1 for a gap).
        for j in 0..usize::try_from((*bounds).ndatums).unwrap_or(0) {
            let Ok(p) = usize::try_from(*(*bounds).indexes.add(j)) else {
                continue;
            };
            let below_floor = || bound(j).is_some_and(|hi| text_cmp(hi, floor, collation).is_le());
            let above_window = || {
                j > 0
                    && before
                        .zip(bound(j - 1))
                        .is_some_and(|(b, lo)| text_cmp(lo, b, collation).is_ge())
            };
            meets[p] = !below_floor() && !above_window();
            if meets[p] {
                let lower = j.checked_sub(1).and_then(bound).map(<[u8]>::to_vec);
                ranges[p] = Some((lower, bound(j).map(<[u8]>::to_vec)));
            }
        }
        Some((meets, true, ranges))
    }
}
