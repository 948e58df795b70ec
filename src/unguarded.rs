//! Postgres functions called in batches under one guard.
//!
//! pgrx puts every `pg_sys` call behind a guard of its own (a `sigsetjmp`,
//! so that an ERROR raised inside becomes a Rust panic and Rust's frames
//! unwind). On the pages that fetch, check and sort a few dozen rows those
//! guards were 10-14% of a search's time in the server (`perf` of
//! `benches/percall.sh`'s loop, 2026-12-02). The hot loops make their calls
//! here instead: [`guarded`] sets one guard for a batch, and the functions
//! below can be called only with its token, so only inside one.
//!
//! What keeps this sound: an ERROR inside a batch jumps straight back to
//! its guard, past every frame between, whose destructors do not run. The
//! closure given to [`guarded`] therefore holds no value with a destructor
//! (no `Vec` made inside, no `RefCell` borrow, no std sort, whose frames
//! restore the slice in destructors): only pointers, numbers and slices
//! borrowed from outside. A `longjmp` across such plain frames is defined
//! (the `C-unwind` RFC's "plain old frames"). After the guard the ERROR is
//! a panic, as from any other `pg_sys` call.
//!
//! Every function declared here exists with the same signature in each
//! major this builds for (15 to 19; checked against their headers; the
//! buffer lock, which 19 made inline, is `compat::buffers::raw_buffer_lock`).

#![allow(non_snake_case)]

use std::ffi::{c_char, c_int};
use std::marker::PhantomData;

use pgrx::pg_sys::{
    self, Buffer, Datum, FmgrInfo, HeapTuple, IndexScanDesc, IndexTuple, ItemPointer, Oid,
    Relation, ScanDirection, Snapshot, TupleDesc, TupleTableSlot,
};

/// Proof of a guard: made by [`guarded`] for the batch's closure only.
pub struct Guard {
    _batch_only: PhantomData<*mut ()>,
}

/// Runs `f` under one guard: an ERROR raised by a call inside becomes a
/// Rust panic here. `f` holds no value with a destructor (see the module's
/// text).
///
/// # Safety
/// On the backend's main thread, in a state where the calls `f` makes are
/// valid.
pub unsafe fn guarded<T>(f: impl FnOnce(&Guard) -> T) -> T {
    // SAFETY: as the caller's.
    unsafe {
        pg_sys::ffi::pg_guard_ffi_boundary(|| {
            f(&Guard {
                _batch_only: PhantomData,
            })
        })
    }
}

mod raw {
    use super::*;
    unsafe extern "C-unwind" {
        pub fn varstr_cmp(
            a: *const c_char,
            alen: c_int,
            b: *const c_char,
            blen: c_int,
            collid: Oid,
        ) -> c_int;
        pub fn GetActiveSnapshot() -> Snapshot;
        pub fn heap_hot_search_buffer(
            tid: ItemPointer,
            relation: Relation,
            buffer: Buffer,
            snapshot: Snapshot,
            heap_tuple: HeapTuple,
            all_dead: *mut bool,
            first_call: bool,
        ) -> bool;
        pub fn ExecStoreBufferHeapTuple(
            tuple: HeapTuple,
            slot: *mut TupleTableSlot,
            buffer: Buffer,
        ) -> *mut TupleTableSlot;
        pub fn slot_getsomeattrs_int(slot: *mut TupleTableSlot, attnum: c_int);
        pub fn nocache_index_getattr(tup: IndexTuple, attnum: c_int, desc: TupleDesc) -> Datum;
        pub fn FunctionCall2Coll(
            flinfo: *mut FmgrInfo,
            collation: Oid,
            a: Datum,
            b: Datum,
        ) -> Datum;
        pub fn index_getnext_tid(
            scan: IndexScanDesc,
            direction: ScanDirection::Type,
        ) -> ItemPointer;
        pub fn index_deform_tuple(
            tup: IndexTuple,
            desc: TupleDesc,
            values: *mut Datum,
            isnull: *mut bool,
        );
        pub fn GetAttributeByNum(
            tuple: pg_sys::HeapTupleHeader,
            attrno: pg_sys::AttrNumber,
            isNull: *mut bool,
        ) -> Datum;
        pub fn index_fetch_heap(scan: IndexScanDesc, slot: *mut TupleTableSlot) -> bool;
        pub fn XidInMVCCSnapshot(xid: pg_sys::TransactionId, snapshot: Snapshot) -> bool;
        pub fn TransactionIdIsCurrentTransactionId(xid: pg_sys::TransactionId) -> bool;
        pub fn get_relation_constraint_oid(
            relid: Oid,
            conname: *const c_char,
            missing_ok: bool,
        ) -> Oid;
    }
}

/// Whether transaction `xid` committed before `snapshot` was taken, so
/// that every row the snapshot sees was there when it committed: not this
/// transaction, and not one the snapshot counts as running or later. A
/// frozen or bootstrap `xid` did; an invalid one, or no snapshot, does not
/// count.
///
/// # Safety
/// `snapshot` is live or null; `xid` is of a committed catalog row.
pub unsafe fn committed_before(_: &Guard, xid: pg_sys::TransactionId, snapshot: Snapshot) -> bool {
    let raw_xid = xid.into_inner();
    if snapshot.is_null() || raw_xid == 0 {
        return false;
    }
    if raw_xid < pg_sys::TransactionId::FIRST_NORMAL.into_inner() {
        return true;
    }
    // SAFETY: as the caller's.
    unsafe {
        !raw::TransactionIdIsCurrentTransactionId(xid) && !raw::XidInMVCCSnapshot(xid, snapshot)
    }
}

/// The OID of table `relid`'s constraint named `name`; invalid when it has
/// none.
///
/// # Safety
/// `name` is a NUL-terminated string; in a transaction.
pub unsafe fn constraint_oid(_: &Guard, relid: Oid, name: *const c_char) -> Oid {
    // SAFETY: as the caller's.
    unsafe { raw::get_relation_constraint_oid(relid, name, true) }
}

/// The statement's snapshot (`GetActiveSnapshot`).
///
/// # Safety
/// Inside a statement.
pub unsafe fn active_snapshot(_: &Guard) -> Snapshot {
    // SAFETY: as the caller's.
    unsafe { raw::GetActiveSnapshot() }
}

/// `a` against `b` as the text type compares them in `collation`
/// (`varstr_cmp`); byte-equal strings are equal in every collation, without
/// a call.
///
/// # Safety
/// `collation` is a valid collation.
pub unsafe fn text_cmp(_: &Guard, a: &[u8], b: &[u8], collation: Oid) -> std::cmp::Ordering {
    if a == b {
        return std::cmp::Ordering::Equal;
    }
    // SAFETY: both slices are live; varstr_cmp reads exactly their lengths.
    let c = unsafe {
        raw::varstr_cmp(
            a.as_ptr().cast(),
            a.len() as c_int,
            b.as_ptr().cast(),
            b.len() as c_int,
            collation,
        )
    };
    c.cmp(&0)
}

/// Fetches into `slot` (a buffer heap tuple slot of `heap`) the version of
/// the row at `tid`, or of its HOT chain, that the active snapshot sees, as
/// the heap's index fetch does; false if none.
///
/// # Safety
/// `buffer` holds `tid`'s page and is pinned.
pub unsafe fn hot_fetch(
    _: &Guard,
    heap: Relation,
    slot: *mut TupleTableSlot,
    buffer: Buffer,
    mut tid: pg_sys::ItemPointerData,
) -> bool {
    // SAFETY: as the caller's. The tuple header lives in the slot, which
    // keeps a pointer to it (as the heap's own index fetch does).
    unsafe {
        clear_slot(slot);
        let tuple = &raw mut (*(slot as *mut pg_sys::BufferHeapTupleTableSlot))
            .base
            .tupdata;
        let mut all_dead = false;
        crate::compat::buffers::raw_buffer_lock::share(buffer);
        let found = raw::heap_hot_search_buffer(
            &mut tid,
            heap,
            buffer,
            raw::GetActiveSnapshot(),
            tuple,
            &mut all_dead,
            true,
        );
        crate::compat::buffers::raw_buffer_lock::unlock(buffer);
        if found {
            raw::ExecStoreBufferHeapTuple(tuple, slot, buffer);
        }
        found
    }
}

/// Moves index scan `scan` to its next entry (unless `advance` is false:
/// it stands on one) and deforms that entry into `values` and `nulls` (an
/// entry per index column); false at the scan's end.
///
/// # Safety
/// `scan` returns index tuples (`xs_want_itup`); the arrays have an entry
/// per index column.
pub unsafe fn next_entry(
    _: &Guard,
    scan: IndexScanDesc,
    direction: ScanDirection::Type,
    advance: bool,
    values: &mut [Datum],
    nulls: &mut [bool],
) -> bool {
    // SAFETY: as the caller's.
    unsafe {
        if advance && raw::index_getnext_tid(scan, direction).is_null() {
            return false;
        }
        raw::index_deform_tuple(
            (*scan).xs_itup,
            (*scan).xs_itupdesc,
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        );
        true
    }
}

/// Fetches into `slot` the heap row of the entry index scan `scan` stands
/// on, the version its snapshot sees (`index_fetch_heap`), and deforms it
/// up to column `upto`; false if none is visible.
///
/// # Safety
/// `scan` stands on an entry; `slot` is its heap's.
pub unsafe fn fetch_entry_row(
    g: &Guard,
    scan: IndexScanDesc,
    slot: *mut TupleTableSlot,
    upto: i16,
) -> bool {
    // SAFETY: as the caller's.
    unsafe {
        raw::index_fetch_heap(scan, slot) && {
            deform(g, slot, upto);
            true
        }
    }
}

/// `ExecClearTuple`: an inline function in C, its slot's `clear` callback.
///
/// # Safety
/// `slot` is a valid slot.
unsafe fn clear_slot(slot: *mut TupleTableSlot) {
    // SAFETY: every slot's operations have `clear`.
    unsafe {
        if let Some(clear) = (*(*slot).tts_ops).clear {
            clear(slot)
        }
    }
}

/// Deforms the slot's row up to column `upto` (`slot_getsomeattrs`).
///
/// # Safety
/// The slot holds a tuple with at least `upto` columns in its descriptor.
pub unsafe fn deform(_: &Guard, slot: *mut TupleTableSlot, upto: i16) {
    // SAFETY: as the caller's.
    unsafe {
        if ((*slot).tts_nvalid as i32) < upto as i32 {
            raw::slot_getsomeattrs_int(slot, upto as c_int);
        }
    }
}

/// The first column of index tuple `itup` (`index_getattr`, not null).
///
/// # Safety
/// `itup` is a tuple of an index whose descriptor is `desc`.
pub unsafe fn first_index_column(_: &Guard, itup: IndexTuple, desc: TupleDesc) -> Datum {
    // SAFETY: as the caller's.
    unsafe { raw::nocache_index_getattr(itup, 1, desc) }
}

/// Attribute `attno` of row value `td` (Postgres' `GetAttributeByNum`,
/// which checks a versioned row value against its type first on the minors
/// that version them).
///
/// # Safety
/// `td` is a live, detoasted row value's header.
pub unsafe fn row_attribute(
    _: &Guard,
    td: pg_sys::HeapTupleHeader,
    attno: pg_sys::AttrNumber,
    isnull: &mut bool,
) -> Datum {
    // SAFETY: as the caller's.
    unsafe { raw::GetAttributeByNum(td, attno, isnull) }
}

/// `FunctionCall2Coll`.
///
/// # Safety
/// As Postgres' own.
pub unsafe fn call2(_: &Guard, f: *mut FmgrInfo, collation: Oid, a: Datum, b: Datum) -> Datum {
    // SAFETY: as the caller's.
    unsafe { raw::FunctionCall2Coll(f, collation, a, b) }
}

/// The order of `keys` (indexes into it) sorted in `collation`, stable,
/// newest (greatest) first when `descending`: one guard for every
/// comparison. A merge sort of plain indexes, written here because std's
/// sorts restore the slice in destructors, which an ERROR would skip.
///
/// # Safety
/// `collation` is a valid collation.
pub unsafe fn text_order(keys: &[&[u8]], collation: Oid, descending: bool) -> Vec<u32> {
    let n = keys.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    if n < 2 {
        return order;
    }
    let mut scratch = vec![0u32; n];
    let (order_s, scratch_s) = (order.as_mut_slice(), scratch.as_mut_slice());
    // SAFETY: as the caller's; the closure holds borrowed slices only.
    let in_order = unsafe {
        guarded(|g| {
            // Whether key i goes before (or with, keeping order) key j.
            let first = |i: u32, j: u32| {
                let c = text_cmp(g, keys[i as usize], keys[j as usize], collation);
                if descending {
                    c.is_ge()
                } else {
                    c.is_le()
                }
            };
            let (mut from, mut to) = (order_s, scratch_s);
            let mut width = 1;
            let mut swapped = false;
            while width < n {
                let mut start = 0;
                while start < n {
                    let mid = (start + width).min(n);
                    let end = (start + 2 * width).min(n);
                    let (mut i, mut j) = (start, mid);
                    for slot in to[start..end].iter_mut() {
                        let take_left = j >= end || (i < mid && first(from[i], from[j]));
                        if take_left {
                            *slot = from[i];
                            i += 1;
                        } else {
                            *slot = from[j];
                            j += 1;
                        }
                    }
                    start = end;
                }
                std::mem::swap(&mut from, &mut to);
                swapped = !swapped;
                width *= 2;
            }
            !swapped
        })
    };
    if in_order {
        order
    } else {
        scratch
    }
}

/// Sorts `items` by their text `key` in `collation` ([`text_order`]:
/// stable, one guard), greatest first when `descending`.
///
/// # Safety
/// `collation` is a valid collation.
pub unsafe fn sort_by_text<T>(
    items: &mut Vec<T>,
    key: impl Fn(&T) -> &[u8],
    collation: Oid,
    descending: bool,
) {
    if items.len() < 2 {
        return;
    }
    // SAFETY: as the caller's.
    let order = unsafe {
        text_order(
            &items.iter().map(&key).collect::<Vec<_>>(),
            collation,
            descending,
        )
    };
    let mut taken: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(
        order
            .into_iter()
            .map(|i| taken[i as usize].take().expect("a permutation")),
    );
}
