//! Postgres `List`s read in place: since PostgreSQL 13 a list is one array
//! of cells (`elements`, `length` of them), the same in every version this
//! builds for. `list_length` and `list_nth` are inline functions in C,
//! which pgrx reaches through a shim, each call behind a `sigsetjmp`; the
//! planner hook reads lists on every planning of every query.

use pgrx::pg_sys;

/// The cells of `list` (NIL, a null pointer, has none).
///
/// # Safety
/// `list` is NIL or a valid `List` that outlives the slice and is not
/// changed while it is read.
pub unsafe fn cells<'a>(list: *const pg_sys::List) -> &'a [pg_sys::ListCell] {
    // SAFETY: as the caller's: `elements` holds `length` cells.
    unsafe {
        if list.is_null() || (*list).length <= 0 {
            &[]
        } else {
            std::slice::from_raw_parts((*list).elements, (*list).length as usize)
        }
    }
}

/// The pointers of a list of nodes, as `T`.
///
/// # Safety
/// As [`cells`]; `list` holds pointers to `T`.
pub unsafe fn ptrs<'a, T>(list: *const pg_sys::List) -> impl ExactSizeIterator<Item = *mut T> + 'a {
    // SAFETY: as the caller's; a list of pointers has `ptr_value` set.
    unsafe { cells(list).iter().map(|c| c.ptr_value.cast()) }
}

/// Its length.
///
/// # Safety
/// As [`cells`].
pub unsafe fn len(list: *const pg_sys::List) -> usize {
    // SAFETY: as the caller's.
    unsafe { cells(list).len() }
}

/// Its `n`th pointer, as `T` (None past its end).
///
/// # Safety
/// As [`ptrs`].
pub unsafe fn nth<T>(list: *const pg_sys::List, n: usize) -> Option<*mut T> {
    // SAFETY: as the caller's.
    unsafe { cells(list).get(n).map(|c| c.ptr_value.cast()) }
}

/// A new list of integers (`IntList`, or `OidList` with `tag`) holding
/// `values`, made in the current memory context in one allocation as
/// Postgres' own `new_list` makes one (its cells follow the header):
/// appending would cost a guarded call a value, on every offer.
///
/// # Safety
/// In a transaction; `tag` is `T_IntList` or `T_OidList` and `T` its cell's
/// type (`i32`, `Oid`).
unsafe fn new_list<T: Copy>(
    tag: pg_sys::NodeTag,
    values: &[T],
    set: impl Fn(&mut pg_sys::ListCell, T),
) -> *mut pg_sys::List {
    if values.is_empty() {
        return std::ptr::null_mut(); // NIL
    }
    // SAFETY: as the caller's; the allocation holds the header and
    // `values.len()` cells, all written before the list is returned.
    unsafe {
        let size = std::mem::offset_of!(pg_sys::List, initial_elements)
            + values.len() * std::mem::size_of::<pg_sys::ListCell>();
        let list = pg_sys::palloc(size) as *mut pg_sys::List;
        (*list).type_ = tag;
        (*list).length = values.len() as i32;
        (*list).max_length = values.len() as i32;
        (*list).elements = (*list).initial_elements.as_mut_ptr();
        for (i, &v) in values.iter().enumerate() {
            set(&mut *(*list).elements.add(i), v);
        }
        list
    }
}

/// An `IntList` of `values` (NIL when empty).
///
/// # Safety
/// In a transaction.
pub unsafe fn int_list(values: &[i32]) -> *mut pg_sys::List {
    // SAFETY: as the caller's.
    unsafe { new_list(pg_sys::NodeTag::T_IntList, values, |c, v| c.int_value = v) }
}

/// An `OidList` of `values` (NIL when empty).
///
/// # Safety
/// In a transaction.
pub unsafe fn oid_list(values: &[pg_sys::Oid]) -> *mut pg_sys::List {
    // SAFETY: as the caller's.
    unsafe { new_list(pg_sys::NodeTag::T_OidList, values, |c, v| c.oid_value = v) }
}
