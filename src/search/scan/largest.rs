//! A table's largest id, any tenant's, from a btree led by `id` (a
//! partition's primary key `(id, created_at)`): the entry at the index's
//! high end, found by one descent along its edge, as `_bt_endpoint` finds
//! it, comparing nothing on the way. Every row has an entry, so no row has
//! a larger id; dead entries only make the bound looser. A partitioned
//! table's merge reads it to leave unopened the leaves with no row in the
//! window (`leaves.rs`), as Postgres' plan skips them by the same index.
//!
//! The pages are read share-locked, one at a time, moving right past a
//! concurrent split or a deleted page (`_bt_get_endpoint`); the leaf read
//! is predicate-locked, as the btree scan locks it. Anything that does not
//! look as it should, an empty edge page, or a NULL id gives no bound
//! (None), and the leaf is searched.

use pgrx::pg_sys::{self, AttrNumber, Datum, Oid};

use super::ssi;
use crate::search::index_shape::IndexShape;

/// `BTPageOpaqueData`: a btree page's special space.
#[repr(C)]
struct Opaque {
    prev: pg_sys::BlockNumber,
    next: pg_sys::BlockNumber,
    level: u32,
    flags: u16,
    cycle: u16,
}

const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_META: u16 = 1 << 3;
const BTP_HALF_DEAD: u16 = 1 << 4;
const BTREE_METAPAGE: pg_sys::BlockNumber = 0;
const BTREE_MAGIC: u32 = 0x053162;
/// `P_NONE`: no page (the end of a level, an empty index's root).
const P_NONE: pg_sys::BlockNumber = 0;
/// Most pages a descent reads (levels and moves right) before it gives up.
const MAX_PAGES: usize = 64;

/// The largest id of table `heap` from `index` (`Layout::id_index`: a
/// btree led by `id`; `desc` when `id` descends in it), visible or not.
/// None when there is no bound to read (see the module's text).
///
/// # Safety
/// `heap` is locked; `index` is its index of this relcache epoch; `id` is
/// the id column's number and collation; a snapshot is active.
pub unsafe fn largest_id(
    heap: Oid,
    (index, desc): (Oid, bool),
    id: (AttrNumber, Oid),
) -> Option<Vec<u8>> {
    // SAFETY: as the caller's; the index is opened and closed here.
    unsafe {
        let rel = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
        let form = &*(*rel).rd_index;
        let shape = IndexShape::of_relation(rel);
        // checked again on what is open, as `Layout::fits` is
        let fits = form.indrelid == heap
            && form.indisvalid
            && (*(*rel).rd_indoption as u32 & pg_sys::INDOPTION_DESC != 0) == desc
            && shape.orders_ids(id)
            && !shape.partial();
        let largest = if fits { edge(rel, !desc) } else { None };
        pg_sys::index_close(rel, pg_sys::NoLock as i32);
        largest
    }
}

/// The first key of the entry at the right (or left) end of btree `rel`'s
/// leaf level.
unsafe fn edge(rel: pg_sys::Relation, right: bool) -> Option<Vec<u8>> {
    // SAFETY: one page pinned and share-locked at a time, released on
    // every way out.
    unsafe {
        let mut buf = pg_sys::ReadBuffer(rel, BTREE_METAPAGE);
        crate::compat::lock_buffer_share(buf);
        let meta = pg_sys::PageGetContents(pg_sys::BufferGetPage(buf)) as *const u32;
        // btm_magic, btm_version, btm_root, btm_level, btm_fastroot
        let (magic, root, fastroot) = (*meta, *meta.add(2), *meta.add(4));
        let is_meta = opaque(pg_sys::BufferGetPage(buf)).is_some_and(|o| o.flags & BTP_META != 0);
        if magic != BTREE_MAGIC || !is_meta || root == P_NONE {
            pg_sys::UnlockReleaseBuffer(buf);
            return None; // not a btree as read here, or empty
        }
        let mut block = fastroot;
        let mut found = None;
        for _ in 0..MAX_PAGES {
            crate::compat::unlock_buffer(buf);
            buf = pg_sys::ReleaseAndReadBuffer(buf, rel, block);
            crate::compat::lock_buffer_share(buf);
            let page = pg_sys::BufferGetPage(buf);
            let Some(op) = opaque(page) else {
                break;
            };
            let rightmost = op.next == P_NONE;
            // past a deleted page, and to the right end past a split
            if op.flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 || (right && !rightmost) {
                if rightmost {
                    break;
                }
                block = op.next;
                continue;
            }
            // the first item of a page with a right sibling is its high key
            let first = if rightmost { 1 } else { 2 };
            let last = pg_sys::PageGetMaxOffsetNumber(page);
            if last < first {
                break; // an empty edge page: no bound
            }
            let Some(itup) = item(page, if right { last } else { first }) else {
                break;
            };
            if op.flags & BTP_LEAF != 0 {
                ssi::page_read(rel, pg_sys::BufferGetBlockNumber(buf));
                found = first_key(rel, itup);
                break;
            }
            block = super::entries::block_of(&(*itup).t_tid);
        }
        pg_sys::UnlockReleaseBuffer(buf);
        found
    }
}

/// The special space of a btree page; None when it is not of its size.
unsafe fn opaque<'p>(page: pg_sys::Page) -> Option<&'p Opaque> {
    // SAFETY: the page is locked; its special space is checked for size.
    unsafe {
        let size = pg_sys::PageGetSpecialSize(page) as usize;
        (size == std::mem::size_of::<Opaque>().next_multiple_of(8))
            .then(|| &*(pg_sys::PageGetSpecialPointer(page) as *const Opaque))
    }
}

/// The index tuple at `offset` of `page`: a normal or dead (killed) line
/// pointer with storage within the page.
unsafe fn item(page: pg_sys::Page, offset: u16) -> Option<pg_sys::IndexTuple> {
    // SAFETY: the line pointer is read from the locked page and checked.
    unsafe {
        let id = pg_sys::PageGetItemId(page, offset);
        let (start, len) = ((*id).lp_off() as usize, (*id).lp_len() as usize);
        let stored = matches!((*id).lp_flags(), pg_sys::LP_NORMAL | pg_sys::LP_DEAD)
            && len >= std::mem::size_of::<pg_sys::IndexTupleData>()
            && start + len <= pg_sys::BLCKSZ as usize;
        stored.then(|| pg_sys::PageGetItem(page, id) as pg_sys::IndexTuple)
    }
}

/// A leaf tuple's first key (the id), copied; None when it is NULL.
unsafe fn first_key(rel: pg_sys::Relation, itup: pg_sys::IndexTuple) -> Option<Vec<u8>> {
    // SAFETY: the tuple is on the locked page, of the index's descriptor.
    unsafe {
        let natts = (*(*rel).rd_att).natts as usize;
        let mut values = vec![Datum::from(0usize); natts];
        let mut nulls = vec![false; natts];
        pg_sys::index_deform_tuple(itup, (*rel).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
        (!nulls[0]).then(|| crate::datum::varlena_bytes(values[0]).to_vec())
    }
}
