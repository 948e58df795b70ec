//! What the catalogs say of a table's constraints, for the readers of
//! bounds (`checks.rs`, `near.rs`, `custom_scan/window.rs`): which row
//! wrote a constraint and whether it holds, bytewise collations, and
//! expressions seen through their relabelling.

use pgrx::pg_sys::{self, Datum, Oid};

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
