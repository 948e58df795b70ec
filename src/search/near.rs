//! A leaf's ids as its time range and the table's declaration bound them.
//! pg_partman, and most retention schemes, partition by `created_at` and
//! write no `CHECK` on `id`, so every leaf of a year of days would be
//! opened to learn that it holds no id in the window. A table that
//! declares how its ids follow time, `CHECK (alerts_ulid_near(id,
//! created_at, interval '5 minutes'))` on the parent (every partition
//! inherits it and cannot drop it, one attached must have it validated),
//! says it without reading the leaf: a leaf of times `[lo, hi)` holds ids
//! at or above `alerts_ulid_floor(lo - tolerance)` and below the first
//! ULID after `hi + tolerance`. These are bounds like a `CHECK` on `id`
//! (`checks.rs`), with the same conditions: the leaf's own copy of the
//! constraint validated, and written before the snapshot.
//!
//! Why it is safe: the constraint makes every id of the leaf a canonical
//! ULID within the tolerance of the row's time, and the partition bound
//! puts every row's time in the leaf's range (Postgres routes and checks
//! every row by it, and its own pruning trusts it alike). Only in a
//! bytewise collation (`C`, `POSIX`) is ULID order byte order, so the
//! caller applies these bounds only there.

use std::cell::RefCell;
use std::collections::HashMap;

use alerts_core::ulid;
use pgrx::pg_sys::{self, AttrNumber, Datum, Oid};

use super::part_key::IdBounds;
use crate::pg_list;
use crate::unguarded;

/// What a parent partitioned by range on its time column declares, per
/// relcache epoch (a slot of the backend's state): the tolerance, and the
/// transactions that wrote its constraint and each partition's copy, for
/// the partitions listed (a descriptor read with or without the ones being
/// detached may differ).
#[derive(Default)]
struct Parents(RefCell<(u64, HashMap<Oid, Option<Declared>>)>);

struct Declared {
    partitions: Vec<Oid>,
    writers: Vec<pg_sys::TransactionId>,
    /// Each leaf's ids by its time range, by partition index (none for a
    /// partitioned partition).
    ranges: Vec<Option<IdBounds>>,
}

/// Which partitions of `rel` may hold ids in `[floor, before)`, and the
/// ids each leaf may hold (at or above the first, below the second), when `rel`
/// is partitioned by range on `time` (timestamptz, its default operator
/// class), declares `alerts_ulid_near(id, time, tolerance)` (validated)
/// and its `id` compares bytewise; by partition index. Read from the
/// parent's descriptor alone: a partition left out is neither opened nor
/// locked, as Postgres' own pruning by partition bounds leaves it.
/// Partitioned partitions are kept (their children are pruned at their
/// own level). None, so that nothing is pruned here, when the table
/// declares nothing, or when the constraint or a partition's copy was
/// written by a transaction the snapshot does not see as committed: a row
/// deleted before it was checked, which that snapshot still sees, may
/// break it (then each leaf is judged by its own copy, `checks.rs`).
///
/// # Safety
/// `rel` is an open partitioned table, `desc` its partition descriptor;
/// `floor` and `before` are live text datums.
pub unsafe fn in_time_window(
    rel: pg_sys::Relation,
    desc: pg_sys::PartitionDesc,
    time: AttrNumber,
    (floor, before): (Datum, Option<Datum>),
) -> Option<(Vec<bool>, Vec<Option<IdBounds>>)> {
    // SAFETY: as the caller's; every array is read within its length.
    unsafe {
        let n = usize::try_from((*desc).nparts).unwrap_or(0);
        let oids = std::slice::from_raw_parts((*desc).oids, n);
        let epoch = super::indexes::relcache_epoch();
        let cache = &crate::backend::slot::<Parents>().0;
        if cache.borrow().0 != epoch {
            *cache.borrow_mut() = (epoch, HashMap::new());
        }
        let relid = (*rel).rd_id;
        let stale = match cache.borrow().1.get(&relid) {
            None => true,
            Some(d) => d.as_ref().is_some_and(|d| d.partitions != oids),
        };
        if stale {
            let read = declared(rel, desc, time);
            cache.borrow_mut().1.insert(relid, read);
        }
        let cache = cache.borrow();
        let d = cache.1.get(&relid)?.as_ref()?;
        let seen = unguarded::guarded(|g| {
            let snapshot = unguarded::active_snapshot(g);
            d.writers
                .iter()
                .all(|&x| unguarded::committed_before(g, x, snapshot))
        });
        if !seen {
            return None;
        }
        let (floor, before) = (
            crate::datum::varlena_bytes(floor),
            before.map(|b| crate::datum::varlena_bytes(b)),
        );
        let mut meets = vec![true; n];
        let mut ranges = vec![None; n];
        for (p, range) in d.ranges.iter().enumerate() {
            let Some((lower, upper)) = range else {
                continue;
            };
            let below = upper.as_deref().is_some_and(|u| u <= floor);
            let above = before.zip(lower.as_deref()).is_some_and(|(b, l)| l >= b);
            meets[p] = !below && !above;
            if meets[p] {
                ranges[p] = range.clone();
            }
        }
        super::trace::pruned_by_time(meets.iter().filter(|m| !**m).count() as u64);
        Some((meets, ranges))
    }
}

/// [`Declared`] for `rel` and its partitions (`desc`), from the catalogs.
///
/// # Safety
/// As [`in_time_window`].
unsafe fn declared(
    rel: pg_sys::Relation,
    desc: pg_sys::PartitionDesc,
    time: AttrNumber,
) -> Option<Declared> {
    // SAFETY: as the caller's; constraint expressions are made in the
    // current memory context.
    unsafe {
        let n = usize::try_from((*desc).nparts).unwrap_or(0);
        let oids = std::slice::from_raw_parts((*desc).oids, n);
        let relid = (*rel).rd_id;
        let id = pg_sys::get_attnum(relid, c"id".as_ptr());
        let tuple_desc = (*rel).rd_att;
        if id <= 0
            || super::part_key::key_class(relid) != Some(pg_sys::TIMESTAMPTZ_BTREE_OPS_OID)
            || !super::constraints::bytewise(
                crate::compat::attribute(tuple_desc, id.into()).attcollation,
            )
        {
            return None;
        }
        for (name, node) in crate::compat::holding_checks(rel) {
            let Some((column, within)) = declared_in(node, id) else {
                continue;
            };
            if column != time {
                continue;
            }
            // the constraint and each partition's copy (same name), validated
            let mut writers = vec![super::constraints::written_by(relid, name)?];
            for &p in oids {
                writers.push(super::constraints::written_by(p, name)?);
            }
            writers.sort_unstable_by_key(|x| x.into_inner());
            writers.dedup();
            return Some(Declared {
                partitions: oids.to_vec(),
                writers,
                ranges: leaf_ranges(desc, within),
            });
        }
        None
    }
}

/// Each leaf's ids as its range in `desc` bounds them, with ids within
/// `within` microseconds of their time, by partition index: at or above
/// the first, below the second (none for MINVALUE and MAXVALUE).
///
/// # Safety
/// `desc` is the descriptor of a table partitioned by range on a
/// timestamptz column.
unsafe fn leaf_ranges(desc: pg_sys::PartitionDesc, within: i64) -> Vec<Option<IdBounds>> {
    // SAFETY: as the caller's; every array is read within its length.
    unsafe {
        let bounds = (*desc).boundinfo;
        let mut ranges = vec![None; usize::try_from((*desc).nparts).unwrap_or(0)];
        // indexes[j] is the partition whose upper bound is datum j, its
        // lower bound datum j-1 (or -1 for a gap)
        let at = |j: usize| {
            let kind = *(*(*bounds).kind.add(j));
            (kind == pg_sys::PartitionRangeDatumKind::PARTITION_RANGE_DATUM_VALUE)
                .then(|| (*(*(*bounds).datums.add(j))).value() as i64)
        };
        for j in 0..usize::try_from((*bounds).ndatums).unwrap_or(0) {
            let Ok(p) = usize::try_from(*(*bounds).indexes.add(j)) else {
                continue;
            };
            if *(*desc).is_leaf.add(p) {
                let upper = at(j).map(|hi| ulid::upper_of_time(hi, within));
                let lower = j
                    .checked_sub(1)
                    .and_then(at)
                    .map(|lo| ulid::lower_of_time(lo, within));
                ranges[p] = Some((lower, upper));
            }
        }
        ranges
    }
}

/// `alerts_ulid_near(id, time, tolerance)` among the conjuncts at the top
/// of constraint expression `node` (`constraints::near_call`): the time
/// column and the tolerance in microseconds (none with months, or
/// negative).
///
/// # Safety
/// `node` is a constraint's expression tree of a table whose `id` column
/// is `id`.
pub unsafe fn declared_in(node: *mut pg_sys::Node, id: AttrNumber) -> Option<(AttrNumber, i64)> {
    let mut found = None;
    // SAFETY: as the caller's.
    unsafe {
        super::constraints::conjuncts(node, &mut |n| {
            found = found.or_else(|| super::constraints::near_call(n, id));
        });
    }
    let near = found?;
    Some((near.time, near.within_us()?))
}

/// The bounds on `id` leaf `leaf`'s time ranges imply, with ids following
/// column `time` (of the leaf) within `within` microseconds: `(false,
/// value)` for ids at or above `value`, `(true, value)` for ids below it.
/// Every ancestor partitioned by range on that column (by name) adds its
/// partition's bounds.
///
/// # Safety
/// In a transaction; `leaf` and its ancestors are locked.
pub unsafe fn id_bounds(leaf: Oid, time: AttrNumber, within: i64) -> Vec<(bool, Vec<u8>)> {
    let mut out = Vec::new();
    // SAFETY: as the caller's; syscache tuples are read while held, and
    // the bound's nodes are made in the current memory context.
    unsafe {
        let name = pg_sys::get_attname(leaf, time, true);
        if name.is_null() {
            return out;
        }
        let mut rel = leaf;
        while pg_sys::get_rel_relispartition(rel) {
            let parent = pg_sys::get_partition_parent(rel, true);
            let key = super::part_key::key_column(parent);
            let spec = bound_spec(rel);
            rel = parent;
            let Some(spec) = spec.filter(|&s| (*s).strategy as u8 == b'r') else {
                continue;
            };
            if key.is_none() || key != Some(pg_sys::get_attnum(parent, name)) {
                continue;
            }
            let first = |l| pg_list::ptrs::<pg_sys::PartitionRangeDatum>(l).next();
            if let Some(ts) = first((*spec).lowerdatums).and_then(|d| timestamp(d)) {
                out.push((false, ulid::lower_of_time(ts, within)));
            }
            if let Some(ts) = first((*spec).upperdatums).and_then(|d| timestamp(d)) {
                out.push((true, ulid::upper_of_time(ts, within)));
            }
        }
    }
    out
}

/// Partition `rel`'s bound, from `pg_class.relpartbound`.
///
/// # Safety
/// In a transaction; `rel` is a locked partition.
unsafe fn bound_spec(rel: Oid) -> Option<*mut pg_sys::PartitionBoundSpec> {
    // SAFETY: the syscache tuple is read while held; the text is copied
    // out and parsed in the current memory context.
    unsafe {
        let cache = crate::compat::cache_id(pg_sys::SysCacheIdentifier::RELOID);
        let tuple = pg_sys::SearchSysCache1(cache, Datum::from(rel));
        if tuple.is_null() {
            return None;
        }
        let mut isnull = false;
        let d = pg_sys::SysCacheGetAttr(
            cache,
            tuple,
            pg_sys::Anum_pg_class_relpartbound as AttrNumber,
            &mut isnull,
        );
        let text = (!isnull).then(|| pg_sys::text_to_cstring(d.cast_mut_ptr()));
        pg_sys::ReleaseSysCache(tuple);
        let node = pg_sys::stringToNode(text?).cast::<pg_sys::Node>();
        ((*node).type_ == pg_sys::NodeTag::T_PartitionBoundSpec)
            .then(|| node.cast::<pg_sys::PartitionBoundSpec>())
    }
}

/// A range bound's value when it is a timestamptz constant, not null
/// (none for `MINVALUE` and `MAXVALUE`).
///
/// # Safety
/// `d` is a node of a partition bound.
unsafe fn timestamp(d: *mut pg_sys::PartitionRangeDatum) -> Option<i64> {
    // SAFETY: nodes read only.
    unsafe {
        if (*d).kind != pg_sys::PartitionRangeDatumKind::PARTITION_RANGE_DATUM_VALUE
            || (*d).value.is_null()
            || (*(*d).value).type_ != pg_sys::NodeTag::T_Const
        {
            return None;
        }
        let c = (*d).value.cast::<pg_sys::Const>();
        ((*c).consttype == pg_sys::TIMESTAMPTZOID && !(*c).constisnull)
            .then(|| (*c).constvalue.value() as i64)
    }
}
