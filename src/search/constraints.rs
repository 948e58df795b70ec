//! What the catalogs say of a table's constraints, for the readers of
//! bounds (`checks.rs`, `near.rs`, `custom_scan/window.rs`): which row
//! wrote a constraint and whether it holds, bytewise collations,
//! expressions seen through their relabelling, a constraint's conjuncts,
//! and the declaration `alerts_ulid_near(id, time, tolerance)` among them.

use pgrx::pg_sys::{self, AttrNumber, Datum, Oid};

use crate::unguarded;

/// `C` and `POSIX` (`pg_collation.dat`).
const BYTEWISE: [u32; 2] = [950, 951];

/// Whether `collation` compares text bytewise (`C`, `POSIX`).
pub fn bytewise(collation: Oid) -> bool {
    BYTEWISE.contains(&u32::from(collation))
}

/// The transaction that last wrote the catalog row of `leaf`'s constraint
/// `name` (its `xmin`: the one that added it, or validated it later);
/// None when there is none, or it does not hold (not validated, or not
/// enforced).
///
/// # Safety
/// In a transaction; `leaf` is locked, or its parent is; `name` is
/// NUL-terminated.
pub unsafe fn written_by(
    leaf: Oid,
    name: *const std::ffi::c_char,
) -> Option<pg_sys::TransactionId> {
    // SAFETY: as the caller's; the syscache tuple is read while held.
    unsafe {
        let oid = unguarded::guarded(|g| unguarded::constraint_oid(g, leaf, name));
        if oid == pg_sys::InvalidOid {
            return None;
        }
        let cache = crate::compat::cache_id(pg_sys::SysCacheIdentifier::CONSTROID);
        let tuple = pg_sys::SearchSysCache1(cache, Datum::from(oid));
        if tuple.is_null() {
            return None;
        }
        let xmin = pg_sys::submodules::htup::HeapTupleHeaderGetXmin((*tuple).t_data);
        let form = &*pg_sys::GETSTRUCT(tuple).cast::<pg_sys::FormData_pg_constraint>();
        let holds = crate::compat::constraint_row_holds(form);
        pg_sys::ReleaseSysCache(tuple);
        holds.then_some(xmin)
    }
}

/// `node` without the relabelling a varchar column reaches text's
/// operators through.
///
/// # Safety
/// `node` is an expression node.
pub(crate) unsafe fn strip_relabel(mut node: *mut pg_sys::Node) -> *mut pg_sys::Node {
    // SAFETY: nodes read only.
    unsafe {
        while (*node).type_ == pg_sys::NodeTag::T_RelabelType {
            node = (*node.cast::<pg_sys::RelabelType>()).arg.cast();
        }
        node
    }
}

/// Calls `f` on each conjunct at the top of `node` (an `AND` read
/// through).
///
/// # Safety
/// `node` is an expression tree.
pub(crate) unsafe fn conjuncts(node: *mut pg_sys::Node, f: &mut dyn FnMut(*mut pg_sys::Node)) {
    // SAFETY: nodes read only.
    unsafe {
        if (*node).type_ == pg_sys::NodeTag::T_BoolExpr {
            let b = node.cast::<pg_sys::BoolExpr>();
            if (*b).boolop == pg_sys::BoolExprType::AND_EXPR {
                for arg in crate::pg_list::ptrs::<pg_sys::Node>((*b).args) {
                    conjuncts(arg, f);
                }
                return;
            }
        }
        f(node)
    }
}

/// A declaration of how ids follow a time column: `alerts_ulid_near(id,
/// time, tolerance)`, with `time` a `timestamptz` column and the
/// tolerance an interval constant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Near {
    pub time: AttrNumber,
    /// The interval's microseconds, days and months.
    pub within: (i64, i32, i32),
    /// The function called (this extension's, a C function).
    pub func: Oid,
}

impl Near {
    /// The tolerance in microseconds; None with months, or negative.
    pub fn within_us(&self) -> Option<i64> {
        let (time, day, month) = self.within;
        let us = time as i128 + day as i128 * 86_400_000_000;
        (month == 0 && (0..=i64::MAX as i128).contains(&us)).then_some(us as i64)
    }
}

/// The declaration at `node`, a conjunct of a constraint of a table whose
/// `id` column is `id`; None for anything else. A planted function of
/// that name is SQL or PL (only a superuser makes a C function), so only
/// a C one counts.
///
/// # Safety
/// `node` is an expression node of a constraint.
pub(crate) unsafe fn near_call(node: *mut pg_sys::Node, id: AttrNumber) -> Option<Near> {
    // SAFETY: nodes read only; an interval constant points at its value.
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_FuncExpr {
            return None;
        }
        let f = node.cast::<pg_sys::FuncExpr>();
        let name = pg_sys::get_func_name((*f).funcid);
        if name.is_null()
            || std::ffi::CStr::from_ptr(name).to_bytes() != b"alerts_ulid_near"
            || !crate::overloads::language_is_c((*f).funcid)
        {
            return None;
        }
        let args: Vec<_> = crate::pg_list::ptrs::<pg_sys::Node>((*f).args).collect();
        let [a_id, a_time, a_within] = args[..] else {
            return None;
        };
        let column = |n: *mut pg_sys::Node| {
            let n = strip_relabel(n);
            ((*n).type_ == pg_sys::NodeTag::T_Var && (*n.cast::<pg_sys::Var>()).varlevelsup == 0)
                .then(|| (*n.cast::<pg_sys::Var>()).varattno)
        };
        let time = column(a_time)?;
        if column(a_id)? != id
            || time <= 0
            || pg_sys::exprType(a_time) != pg_sys::TIMESTAMPTZOID
            || (*a_within).type_ != pg_sys::NodeTag::T_Const
        {
            return None;
        }
        let c = a_within.cast::<pg_sys::Const>();
        if (*c).consttype != pg_sys::INTERVALOID || (*c).constisnull {
            return None;
        }
        let iv = &*(*c).constvalue.cast_mut_ptr::<pg_sys::Interval>();
        Some(Near {
            time,
            within: (iv.time, iv.day, iv.month),
            func: (*f).funcid,
        })
    }
}
