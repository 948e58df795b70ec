//! A leaf's ids as its `CHECK` constraints bound them. A table partitioned
//! by `created_at` says nothing of the ids each partition holds, so every
//! leaf would be opened and its index descended to learn that it has no id
//! in the window; a validated `CHECK (id >= '…' AND id < '…')` on the leaf
//! says it without reading the index, as Postgres' own constraint exclusion
//! reads it. The leaf is still locked first, as the planner locks a
//! partition before excluding it by its constraints.
//!
//! Only what is sure counts: validated (and, in 18, enforced) constraints
//! of a heap table (a foreign table's are not enforced), conjuncts at the
//! top of each, each a comparison of the `id` column with a text constant
//! by text's own operators in the column's collation. Anything else bounds
//! nothing. Read from the relcache once per relcache epoch. And only for a
//! snapshot taken after the constraint was added or validated: a row
//! deleted before that, which an older snapshot still sees, was never
//! checked against it (Postgres' own constraint exclusion ignores this and
//! would miss the row).

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::pg_sys::{self, Datum, Oid};

use super::constraints::{bytewise, strip_relabel, written_by};
use crate::datum::varlena_bytes;
use crate::text_ops::{commuted, TEXT_EQ, TEXT_GE, TEXT_GT, TEXT_LE, TEXT_LT};
use crate::unguarded;

/// One bound on a leaf's ids: the operator as if `id` were on its left,
/// the constant, and the transaction that last wrote its constraint's
/// catalog row (added or validated it).
struct Bound {
    op: u32,
    value: Vec<u8>,
    xmin: pg_sys::TransactionId,
}

/// Each leaf's bounds and the collation they compare in, read in the
/// relcache epoch kept beside them (a slot of the backend's state); a new
/// epoch empties it. By leaf, as a table of pg_partman's keeps hundreds.
#[derive(Default)]
struct Checked(RefCell<(u64, HashMap<Oid, LeafBounds>)>);

/// A leaf's bounds and the collation of its `id`.
type LeafBounds = (Vec<Bound>, Oid);

/// Whether leaf `leaf`'s `CHECK` constraints keep every id it may hold out
/// of the window `[floor, before)` (`before` None: no top).
///
/// # Safety
/// In a transaction; `floor` and `before` are live text datums. The leaf
/// is locked here.
pub unsafe fn outside_window(leaf: Oid, floor: Datum, before: Option<Datum>) -> bool {
    // SAFETY: as the caller's; the lock is taken before the relcache entry
    // is read, and accepts the invalidations of DDL that committed before.
    unsafe {
        pg_sys::LockRelationOid(leaf, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let epoch = super::indexes::relcache_epoch();
        let cache = &crate::backend::slot::<Checked>().0;
        if cache.borrow().0 != epoch {
            *cache.borrow_mut() = (epoch, HashMap::new());
        }
        if !cache.borrow().1.contains_key(&leaf) {
            let read = read(leaf);
            cache.borrow_mut().1.insert(leaf, read);
        }
        let (floor, before) = (varlena_bytes(floor), before.map(|b| varlena_bytes(b)));
        let cache = cache.borrow();
        let Some((bounds, collation)) = cache.1.get(&leaf) else {
            return false;
        };
        let (bounds, collation) = (bounds.as_slice(), *collation);
        // one guard: the batch holds slices and numbers only
        unguarded::guarded(|g| {
            let snapshot = unguarded::active_snapshot(g);
            bounds.iter().any(|b| {
                // A constraint added or validated after the snapshot was
                // taken says nothing of rows the snapshot still sees (one
                // deleted before the constraint was checked).
                if !unguarded::committed_before(g, b.xmin, snapshot) {
                    return false;
                }
                let to_floor = || unguarded::text_cmp(g, &b.value, floor, collation);
                let to_before = || before.map(|x| unguarded::text_cmp(g, &b.value, x, collation));
                match b.op {
                    // every id below the value: the value at or below the floor
                    TEXT_LT => to_floor().is_le(),
                    TEXT_LE => to_floor().is_lt(),
                    // every id above the value: the value at or above the top
                    TEXT_GT | TEXT_GE => to_before().is_some_and(|o| o.is_ge()),
                    TEXT_EQ => to_floor().is_lt() || to_before().is_some_and(|o| o.is_ge()),
                    _ => false,
                }
            })
        })
    }
}

/// The bounds leaf `leaf`'s constraints put on `id`, and `id`'s collation;
/// none when it is not a heap table, has no `id` column or is gone.
///
/// # Safety
/// In a transaction; `leaf` is locked.
unsafe fn read(leaf: Oid) -> (Vec<Bound>, Oid) {
    let mut bounds = Vec::new();
    // SAFETY: as the caller's; the relcache entry is read while open, and
    // each constraint's expression is made in the current memory context.
    unsafe {
        // gone: detached concurrently and dropped since the partition tree
        // was read (the leaf's own checks then send the call elsewhere)
        let rel = pg_sys::try_relation_open(leaf, pg_sys::NoLock as pg_sys::LOCKMODE);
        if rel.is_null() {
            return (bounds, pg_sys::InvalidOid);
        }
        let desc = (*rel).rd_att;
        let id = pg_sys::get_attnum(leaf, c"id".as_ptr());
        let heap = (*(*rel).rd_rel).relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char;
        let constr = (*desc).constr;
        let mut collation = pg_sys::InvalidOid;
        if heap && id > 0 && !constr.is_null() {
            collation = crate::compat::attribute(desc, id.into()).attcollation;
            let n = usize::from((*constr).num_check);
            for i in 0..n {
                let check = &*(*constr).check.add(i);
                if !crate::compat::check_holds(check) || check.ccbin.is_null() {
                    continue;
                }
                let Some(xmin) = written_by(leaf, check.ccname) else {
                    continue;
                };
                // constants folded as the planner folds them
                // (`alerts_ulid_floor('2026-11-01')` to its text)
                let node = pg_sys::stringToNode(check.ccbin).cast::<pg_sys::Node>();
                let node = pg_sys::eval_const_expressions(std::ptr::null_mut(), node);
                let first = bounds.len();
                conjuncts(node, (id, collation), &mut bounds);
                // the declaration of how ids follow time, with the leaf's
                // time ranges (`near.rs`): ULID order is byte order only
                // in a bytewise collation
                if bytewise(collation) {
                    if let Some((time, within)) = super::near::declared_in(node, id) {
                        for (upper, value) in super::near::id_bounds(leaf, time, within) {
                            let op = if upper { TEXT_LT } else { TEXT_GE };
                            let xmin = pg_sys::InvalidTransactionId;
                            bounds.push(Bound { op, value, xmin });
                        }
                    }
                }
                for b in &mut bounds[first..] {
                    b.xmin = xmin;
                }
            }
        }
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        (bounds, collation)
    }
}

/// The bounds on `id` among the conjuncts of `node` (an `AND` read
/// through, `constraints::conjuncts`).
///
/// # Safety
/// `node` is an expression tree of a constraint.
unsafe fn conjuncts(node: *mut pg_sys::Node, (id, collation): (i16, Oid), out: &mut Vec<Bound>) {
    // SAFETY: as the caller's; nodes read only.
    unsafe {
        super::constraints::conjuncts(node, &mut |node| {
            if (*node).type_ != pg_sys::NodeTag::T_OpExpr {
                return;
            }
            let op = node.cast::<pg_sys::OpExpr>();
            let args = (*op).args;
            let (2, Some(a), Some(b)) = (
                crate::pg_list::len(args),
                crate::pg_list::nth::<pg_sys::Node>(args, 0),
                crate::pg_list::nth::<pg_sys::Node>(args, 1),
            ) else {
                return;
            };
            if (*op).inputcollid != collation {
                return;
            }
            let opno = u32::from((*op).opno);
            let found = match (
                is_id(a, id),
                text_constant(b),
                is_id(b, id),
                text_constant(a),
            ) {
                (true, Some(value), _, _) => Some((opno, value)),
                (_, _, true, Some(value)) => commuted(opno).map(|o| (o, value)),
                _ => None,
            };
            if let Some((op, value)) = found {
                if matches!(op, TEXT_EQ | TEXT_LT | TEXT_LE | TEXT_GT | TEXT_GE) {
                    let xmin = pg_sys::InvalidTransactionId;
                    out.push(Bound { op, value, xmin });
                }
            }
        });
    }
}

/// Whether `node` is the `id` column (a varchar one reaches text's
/// operators relabelled).
///
/// # Safety
/// `node` is an expression node.
unsafe fn is_id(node: *mut pg_sys::Node, id: i16) -> bool {
    // SAFETY: nodes read only.
    unsafe {
        let node = strip_relabel(node);
        (*node).type_ == pg_sys::NodeTag::T_Var && {
            let var = node.cast::<pg_sys::Var>();
            (*var).varlevelsup == 0 && (*var).varattno == id
        }
    }
}

/// The bytes of `node` when it is a text constant, not null.
///
/// # Safety
/// `node` is an expression node.
unsafe fn text_constant(node: *mut pg_sys::Node) -> Option<Vec<u8>> {
    // SAFETY: nodes read only; a text constant's value is a varlena.
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_Const {
            return None;
        }
        let c = node.cast::<pg_sys::Const>();
        ((*c).consttype == pg_sys::TEXTOID && !(*c).constisnull)
            .then(|| varlena_bytes((*c).constvalue).to_vec())
    }
}

/// Whether constraint `oid` holds for every row the active snapshot sees:
/// it exists, is validated (and enforced), and the transaction that last
/// wrote its catalog row (added or validated it) committed before the
/// snapshot was taken.
///
/// # Safety
/// In a transaction.
pub unsafe fn holds_for_snapshot(oid: Oid) -> bool {
    // SAFETY: as the caller's; the syscache tuple is read while held.
    unsafe {
        if !pg_sys::ActiveSnapshotSet() {
            return false;
        }
        let cache = crate::compat::cache_id(pg_sys::SysCacheIdentifier::CONSTROID);
        let tuple = pg_sys::SearchSysCache1(cache, Datum::from(oid));
        if tuple.is_null() {
            return false;
        }
        let form = pg_sys::GETSTRUCT(tuple) as *mut pg_sys::FormData_pg_constraint;
        let valid = crate::compat::constraint_row_holds(&*form);
        let xmin = pg_sys::submodules::htup::HeapTupleHeaderGetXmin((*tuple).t_data);
        pg_sys::ReleaseSysCache(tuple);
        valid
            && unguarded::guarded(|g| {
                unguarded::committed_before(g, xmin, unguarded::active_snapshot(g))
            })
    }
}
