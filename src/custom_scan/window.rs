//! The `created_at` window. A query bounded by a time column
//! (`created_at >= now() - interval '30 days'`) says nothing of the ids
//! the walk reads:
//! without more, the bound is a filter the executor tests on each row the
//! search returns, and the walk reads the tenant's matches back to its
//! first. A table declares how its ids follow that column with a validated
//! `CHECK (alerts_ulid_near(id, created_at, interval '5 minutes'))`:
//! every id is then a canonical ULID whose time is within the tolerance of
//! the row's `created_at`. So a lower time bound `t` implies the id bound
//! `alerts_ulid_floor(t - tolerance)`, and an upper time bound `t` the
//! strict id bound of the first ULID after `t + tolerance`. The scan adds
//! those bounds to its window; the executor still tests the time bound
//! itself, on every row.
//!
//! Why it is safe: Postgres checks the constraint on every insert and
//! update of every row, and of every leaf of a partitioned table (a
//! partition inherits it and cannot drop it; one attached must have it
//! validated). The bound is computed at the first row by
//! `alerts_ulid_bound`, which gives no bound (NULL) unless the constraint
//! still holds for the statement's snapshot: validated, enforced, and
//! added or validated by a transaction that committed before the snapshot
//! was taken (a row deleted before then was never checked against it).
//! Only in a bytewise collation (`C`, `POSIX`) is ULID order byte order.

use pgrx::pg_sys::{self, AttrNumber, Oid};

use crate::pg_list;
use crate::search::constraints::{self, Near};
use crate::search::Columns;

/// timestamptz's `=`, `<`, `<=`, `>`, `>=` (`pg_operator.dat`).
const TS_EQ: u32 = 1320;
const TS_LT: u32 = 1322;
const TS_LE: u32 = 1323;
const TS_GT: u32 = 1324;
const TS_GE: u32 = 1325;

/// A table's declaration: its column of times, the tolerance (an
/// interval's microseconds, days and months), the constraint that says
/// it, and this extension's `alerts_ulid_bound`.
#[derive(Clone, Copy, Debug)]
pub struct Declared {
    pub time: AttrNumber,
    within: (i64, i32, i32),
    constraint: Oid,
    bound_fn: Oid,
}

/// The declaration among relation `rel`'s constraints, if it has one the
/// search can use.
///
/// # Safety
/// In a transaction; `rel` is open and locked.
pub unsafe fn declared(rel: pg_sys::Relation, cols: &Columns) -> Option<Declared> {
    // SAFETY: as the caller's; each constraint's expression is made in the
    // current memory context and read only.
    unsafe {
        if !cols.ids_bytewise() {
            return None;
        }
        for (name, node) in crate::compat::holding_checks(rel) {
            let mut found = None;
            constraints::conjuncts(node, &mut |n| {
                found = found.or_else(|| constraints::near_call(n, cols.id))
            });
            let Some(Near {
                time,
                within,
                func: near_fn,
            }) = found
            else {
                continue;
            };
            let relid = (*rel).rd_id;
            let constraint = pg_sys::get_relation_constraint_oid(relid, name, true);
            let bound_fn = bound_function(near_fn);
            if constraint != pg_sys::InvalidOid && bound_fn != pg_sys::InvalidOid {
                return Some(Declared {
                    time,
                    within,
                    constraint,
                    bound_fn,
                });
            }
        }
        None
    }
}

/// This extension's `alerts_ulid_bound(timestamptz, interval, boolean,
/// oid)`, in the schema of its `alerts_ulid_near` `near_fn`: looked up by
/// its exact signature, and only a C function counts (a planted function
/// of that name would be SQL or PL, which only a superuser can make C).
unsafe fn bound_function(near_fn: Oid) -> Oid {
    // SAFETY: catalog lookups; the name list is made in the current memory.
    unsafe {
        let schema = pg_sys::get_namespace_name(pg_sys::get_func_namespace(near_fn));
        if schema.is_null() {
            return pg_sys::InvalidOid;
        }
        let names = pg_sys::lappend(
            pg_sys::lappend(std::ptr::null_mut(), pg_sys::makeString(schema).cast()),
            pg_sys::makeString(pg_sys::pstrdup(c"alerts_ulid_bound".as_ptr())).cast(),
        );
        let types = [
            pg_sys::TIMESTAMPTZOID,
            pg_sys::INTERVALOID,
            pg_sys::BOOLOID,
            pg_sys::OIDOID,
        ];
        let oid = pg_sys::LookupFuncName(names, 4, types.as_ptr(), true);
        if oid == pg_sys::InvalidOid || !crate::overloads::language_is_c(oid) {
            return pg_sys::InvalidOid;
        }
        oid
    }
}

/// The bounds on `id` the scan's quals on the declared time column imply.
#[derive(Default)]
pub struct Implied {
    /// Expressions, each `alerts_ulid_bound(value, ...)`.
    pub lower: Vec<*mut pg_sys::Expr>,
    pub upper: Vec<*mut pg_sys::Expr>,
    /// The quals they come from (the window then stops where they do).
    pub used: Vec<*mut pg_sys::RestrictInfo>,
}

/// A qual `column op value` on a `timestamptz` column of range table
/// entry `varno` (either side; `value` computable at the node's start):
/// (the column, the value, the operator as if the column were on the
/// left).
///
/// # Safety
/// `rinfo` is a planner node, read only.
unsafe fn time_qual(
    rinfo: *mut pg_sys::RestrictInfo,
    varno: u32,
) -> Option<(AttrNumber, *mut pg_sys::Node, u32)> {
    // SAFETY: as the caller's.
    unsafe {
        let clause = (*rinfo).clause.cast::<pg_sys::Node>();
        if (*rinfo).pseudoconstant || (*clause).type_ != pg_sys::NodeTag::T_OpExpr {
            return None;
        }
        let op = clause.cast::<pg_sys::OpExpr>();
        let args: Vec<_> = pg_list::ptrs::<pg_sys::Node>((*op).args).collect();
        let [a, b] = args[..] else { return None };
        // the operators are timestamptz's: a column of this entry is one
        let column = |n: *mut pg_sys::Node| {
            ((*n).type_ == pg_sys::NodeTag::T_Var)
                .then(|| n.cast::<pg_sys::Var>())
                .filter(|&v| (*v).varno as u32 == varno && (*v).varlevelsup == 0)
                .map(|v| (*v).varattno)
                .filter(|&attno| attno > 0)
        };
        let opno = u32::from((*op).opno);
        if !matches!(opno, TS_EQ | TS_LT | TS_LE | TS_GT | TS_GE) {
            return None;
        }
        if let Some(attno) = column(a).filter(|_| super::quals::computable(b)) {
            return Some((attno, b, opno));
        }
        let attno = column(b).filter(|_| super::quals::computable(a))?;
        let commuted = match opno {
            TS_LT => TS_GT,
            TS_LE => TS_GE,
            TS_GT => TS_LT,
            TS_GE => TS_LE,
            other => other,
        };
        Some((attno, a, commuted))
    }
}

/// The bounds on `id` the scan's quals on the declared time column imply.
///
/// # Safety
/// `clauses` is the rel's `baserestrictinfo`; `varno` its range table
/// entry; in the planner's memory.
pub unsafe fn implied(clauses: *mut pg_sys::List, varno: u32, declared: &Declared) -> Implied {
    let mut found = Implied::default();
    // SAFETY: planner nodes, read only; new nodes in the current memory.
    unsafe {
        for rinfo in pg_list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            let Some((attno, value, opno)) = time_qual(rinfo, varno) else {
                continue;
            };
            if attno != declared.time {
                continue;
            }
            if matches!(opno, TS_GE | TS_GT | TS_EQ) {
                found.lower.push(bound(value, declared, false));
            }
            if matches!(opno, TS_LE | TS_LT | TS_EQ) {
                found.upper.push(bound(value, declared, true));
            }
            found.used.push(rinfo);
        }
    }
    found
}

/// The quals on `timestamptz` columns the node tests too, in its direct
/// walk (`search::TimeBound`), declared or not: (the column, the
/// comparison as an integer of [`time_bound`], the value). The executor
/// tests each still; the walk drops a row outside the window before it
/// becomes a page's row, and a page that cannot fill ends the search
/// instead of reading on through the tenant's history.
///
/// # Safety
/// As [`implied`]'s.
pub unsafe fn tested(
    clauses: *mut pg_sys::List,
    varno: u32,
) -> Vec<(AttrNumber, i32, *mut pg_sys::Node)> {
    // SAFETY: as the caller's.
    unsafe {
        pg_list::ptrs::<pg_sys::RestrictInfo>(clauses)
            .filter_map(|rinfo| time_qual(rinfo, varno))
            .map(|(attno, value, opno)| (attno, opno as i32, value))
            .collect()
    }
}

/// The bound a qual tested by the node keeps: its column `attno`, its
/// operator `opno` (from [`tested`]) and the value computed, in
/// microseconds.
pub fn time_bound(attno: AttrNumber, opno: i32, value: i64) -> crate::search::TimeBound {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let (keep, or_equal) = match opno as u32 {
        TS_LT => (Less, false),
        TS_LE => (Less, true),
        TS_GT => (Greater, false),
        TS_GE => (Greater, true),
        _ => (Equal, true),
    };
    crate::search::TimeBound {
        attno,
        keep,
        or_equal,
        value,
    }
}

/// `alerts_ulid_bound(value, tolerance, upper, constraint)`.
///
/// # Safety
/// In the planner's memory; `value` is a timestamptz expression.
unsafe fn bound(value: *mut pg_sys::Node, d: &Declared, upper: bool) -> *mut pg_sys::Expr {
    // SAFETY: nodes made in the current memory context.
    unsafe {
        let iv =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::Interval>()).cast::<pg_sys::Interval>();
        ((*iv).time, (*iv).day, (*iv).month) = d.within;
        let size = std::mem::size_of::<pg_sys::Interval>() as i32;
        let within = pg_sys::makeConst(
            pg_sys::INTERVALOID,
            -1,
            pg_sys::InvalidOid,
            size,
            pg_sys::Datum::from(iv),
            false,
            false,
        );
        let upper = pg_sys::makeBoolConst(upper, false);
        let constraint = pg_sys::makeConst(
            pg_sys::OIDOID,
            -1,
            pg_sys::InvalidOid,
            4,
            pg_sys::Datum::from(d.constraint),
            false,
            true,
        );
        let mut args: *mut pg_sys::List = std::ptr::null_mut();
        for n in [value, within.cast(), upper, constraint.cast()] {
            args = pg_sys::lappend(args, n.cast());
        }
        pg_sys::makeFuncExpr(
            d.bound_fn,
            pg_sys::TEXTOID,
            args,
            pg_sys::C_COLLATION_OID,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        )
        .cast()
    }
}
