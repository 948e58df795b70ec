//! A GIN index's entries read in place: the heap TIDs its entry tree lists
//! inline for a query's keys, with one descent per key, as GIN's own scan
//! descends before it reads them, and nothing else. Used by the rare paths
//! when a value is rare in the whole relation (a leaf of a month, a shard):
//! then GIN's answer is small, and one descent is cheaper than the
//! tenant-keys index's one per week.
//!
//! The keys are the operator class's own (its `extractQuery`, as GIN calls
//! it), compared by its `compare` in the index's collation, found by the
//! descent of `ginbtree.c`/`ginentrypage.c` (move right past a concurrent
//! split; the rightmost tuple of a rightmost inner page stands for
//! infinity), and the posting list decoded by `alerts_core::postings`.
//! Any other shape is refused (None), and the caller asks GIN itself: a
//! pending list (fast-update entries not yet in the tree), a posting tree
//! (more TIDs than fit in the entry), more TIDs than asked, a partial-match
//! or null key, a query that needs a full scan, an index of several
//! columns, a page or tuple that does not look as it should. The TIDs are
//! of any tenant and row version: every row is checked exactly after
//! (`keys.rs`), as a bitmap heap scan rechecks. An answer read during a
//! concurrent change is no less exact than GIN's: what it could miss is a
//! row inserted after the call's snapshot.

use std::cmp::Ordering;

use crate::unguarded::{self, guarded, Guard};
use alerts_core::postings::{self, Tid};
use pgrx::pg_sys::{self, Datum, Oid};

/// `GinPageOpaqueData`: a GIN page's special space.
#[repr(C)]
struct Opaque {
    rightlink: pg_sys::BlockNumber,
    maxoff: pg_sys::OffsetNumber,
    flags: u16,
}

const GIN_DATA: u16 = 1 << 0;
const GIN_LEAF: u16 = 1 << 1;
const GIN_DELETED: u16 = 1 << 2;
const GIN_META: u16 = 1 << 3;
const GIN_LIST: u16 = 1 << 4;
const GIN_METAPAGE_BLKNO: pg_sys::BlockNumber = 0;
const GIN_ROOT_BLKNO: pg_sys::BlockNumber = 1;
const GIN_TREE_POSTING: u16 = 0xffff;
const GIN_ITUP_COMPRESSED: u32 = 1 << 31;
/// `offsetof(GinPostingList, bytes)`: the first TID and the byte count.
const POSTING_HEADER: usize = 8;
const TID_SIZE: usize = std::mem::size_of::<pg_sys::ItemPointerData>();

/// The TIDs GIN index `index` lists inline for `query` (a datum of type
/// `right`, asked by `strategy`), any of its keys, at most `at_most` in
/// all; None when they cannot be read in place (see the module's text).
/// Memory is taken in `cxt` and reset there.
///
/// # Safety
/// A transaction is in progress; `query` is a live datum; `cxt` is a
/// memory context the caller resets freely.
pub unsafe fn inline_tids(
    index: Oid,
    strategy: u16,
    right: Oid,
    query: Datum,
    at_most: usize,
    cxt: pg_sys::MemoryContext,
) -> Option<Vec<Tid>> {
    // SAFETY: as the caller's; the index is opened and closed here.
    unsafe {
        let rel = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
        let old = pg_sys::MemoryContextSwitchTo(cxt);
        let tids = read(rel, strategy, right, query, at_most);
        pg_sys::MemoryContextSwitchTo(old);
        pg_sys::MemoryContextReset(cxt);
        pg_sys::index_close(rel, pg_sys::NoLock as i32);
        tids
    }
}

/// The index's keys for the query, compared and descended.
unsafe fn read(
    rel: pg_sys::Relation,
    strategy: u16,
    right: Oid,
    query: Datum,
    at_most: usize,
) -> Option<Vec<Tid>> {
    // SAFETY: `rel` is open; the procedures are the operator class's.
    unsafe {
        if (*(*rel).rd_att).natts != 1 || (*(*rel).rd_rel).relam != pg_sys::GIN_AM_OID {
            return None;
        }
        let (family, ty) = (*(*rel).rd_opfamily, *(*rel).rd_opcintype);
        if pg_sys::get_opfamily_member(family, ty, right, strategy as i16) == pg_sys::InvalidOid
            || pg_sys::index_getprocid(rel, 1, pg_sys::GIN_COMPARE_PROC as u16)
                == pg_sys::InvalidOid
            || pending(rel)
        {
            return None;
        }
        // as `scanPendingInsert`: with fast update, new entries go to the
        // pending list, not to the pages read below
        if fast_update(rel) {
            super::ssi::relation_read(rel);
        }
        let collation = match *(*rel).rd_indcollation {
            c if c == pg_sys::InvalidOid => pg_sys::DEFAULT_COLLATION_OID,
            c => c,
        };
        let keys = query_keys(rel, collation, strategy, query)?;
        let compare = pg_sys::index_getprocinfo(rel, 1, pg_sys::GIN_COMPARE_PROC as u16);
        let mut tids = Vec::new();
        for key in keys {
            let cmp = |g: &Guard, d: Datum| {
                let c = unguarded::call2(g, compare, collation, key, d).value() as i32;
                c.cmp(&0)
            };
            tids.extend(entry(rel, &cmp, at_most.checked_sub(tids.len())?)?);
        }
        Some(tids)
    }
}

/// `GinOptions`: a GIN index's options (`WITH (fastupdate = ...)`).
#[repr(C)]
#[allow(dead_code)] // laid out as Postgres lays it out; one field read
struct Options {
    vl_len: i32,
    use_fast_update: bool,
    pending_list_cleanup_size: i32,
}

/// Whether the index takes new entries into its pending list
/// (`GinGetUseFastUpdate`: on unless set off).
unsafe fn fast_update(rel: pg_sys::Relation) -> bool {
    // SAFETY: a GIN index's parsed options are `GinOptions`.
    unsafe {
        let options = (*rel).rd_options as *const Options;
        options.is_null() || (*options).use_fast_update
    }
}

/// Whether the index has a pending list (entries of fast update, not yet
/// in the tree; the metapage's `head`, its first field).
unsafe fn pending(rel: pg_sys::Relation) -> bool {
    // SAFETY: the metapage is read share-locked.
    unsafe {
        let buf = pg_sys::ReadBuffer(rel, GIN_METAPAGE_BLKNO);
        crate::compat::lock_buffer_share(buf);
        let page = pg_sys::BufferGetPage(buf);
        let flags = (*opaque(page)).flags;
        let head = std::ptr::read_unaligned(pg_sys::PageGetContents(page) as *const u32);
        pg_sys::UnlockReleaseBuffer(buf);
        flags & GIN_META == 0 || head != pg_sys::InvalidBlockNumber
    }
}

/// The operator class's keys for the query; None unless it gives at
/// least one, all plain (no partial match, no null) in the default mode.
unsafe fn query_keys(
    rel: pg_sys::Relation,
    collation: Oid,
    strategy: u16,
    query: Datum,
) -> Option<Vec<Datum>> {
    // SAFETY: `extractQuery` called as `ginNewScanKey` calls it.
    unsafe {
        let extract = pg_sys::index_getprocinfo(rel, 1, pg_sys::GIN_EXTRACTQUERY_PROC as u16);
        let mut n: i32 = 0;
        let mut partial: *mut bool = std::ptr::null_mut();
        let mut extra: *mut pg_sys::Pointer = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut mode: i32 = pg_sys::GIN_SEARCH_MODE_DEFAULT as i32;
        let p = |r: *mut std::ffi::c_void| Datum::from(r);
        let entries = pg_sys::FunctionCall7Coll(
            extract,
            collation,
            query,
            p((&raw mut n).cast()),
            Datum::from(strategy),
            p((&raw mut partial).cast()),
            p((&raw mut extra).cast()),
            p((&raw mut nulls).cast()),
            p((&raw mut mode).cast()),
        )
        .cast_mut_ptr::<Datum>();
        if mode != pg_sys::GIN_SEARCH_MODE_DEFAULT as i32 || n <= 0 || entries.is_null() {
            return None;
        }
        let flag = |a: *mut bool, i: usize| !a.is_null() && *a.add(i);
        (0..n as usize)
            .map(|i| (!flag(partial, i) && !flag(nulls, i)).then(|| *entries.add(i)))
            .collect()
    }
}

/// The special space of a GIN page.
unsafe fn opaque(page: pg_sys::Page) -> *const Opaque {
    // SAFETY: a GIN page's special space is its opaque data.
    unsafe { pg_sys::PageGetSpecialPointer(page) as *const Opaque }
}

/// The index tuple at `offset` of `page` and its length; None when its
/// line pointer is not a normal one within the page.
unsafe fn tuple(page: pg_sys::Page, offset: u16) -> Option<(pg_sys::IndexTuple, usize)> {
    // SAFETY: the line pointer is read from the locked page and checked.
    unsafe {
        let id = pg_sys::PageGetItemId(page, offset);
        let (start, len) = ((*id).lp_off() as usize, (*id).lp_len() as usize);
        let fits = (*id).lp_flags() == pg_sys::LP_NORMAL
            && len >= std::mem::size_of::<pg_sys::IndexTupleData>()
            && start + len <= pg_sys::BLCKSZ as usize;
        fits.then(|| (pg_sys::PageGetItem(page, id) as pg_sys::IndexTuple, len))
    }
}

/// The key compared with the tuple's (a null one sorts after every key).
unsafe fn versus(
    g: &Guard,
    rel: pg_sys::Relation,
    cmp: &dyn Fn(&Guard, Datum) -> Ordering,
    page: pg_sys::Page,
    offset: u16,
) -> Option<(Ordering, pg_sys::IndexTuple, usize)> {
    // SAFETY: as [`tuple`]'s; the key is read while the page is locked.
    unsafe {
        let (itup, len) = tuple(page, offset)?;
        if (*itup).t_info as u32 & pg_sys::INDEX_NULL_MASK != 0 {
            return Some((Ordering::Less, itup, len));
        }
        let key = unguarded::first_index_column(g, itup, (*rel).rd_att);
        Some((cmp(g, key), itup, len))
    }
}

/// The block number a TID's first half holds.
pub(super) fn block_of(tid: &pg_sys::ItemPointerData) -> u32 {
    ((tid.ip_blkid.bi_hi as u32) << 16) | tid.ip_blkid.bi_lo as u32
}

/// The TIDs of the entry the descent `cmp` steers finds: none when it is
/// not in the tree, None when they are more than `at_most` or cannot be
/// read in place.
unsafe fn entry(
    rel: pg_sys::Relation,
    cmp: &dyn Fn(&Guard, Datum) -> Ordering,
    at_most: usize,
) -> Option<Vec<Tid>> {
    // SAFETY: one page pinned and share-locked at a time, released on
    // every way out of the loop.
    unsafe {
        let mut buf = pg_sys::ReadBuffer(rel, GIN_ROOT_BLKNO);
        crate::compat::lock_buffer_share(buf);
        let found = loop {
            let page = pg_sys::BufferGetPage(buf);
            let special = pg_sys::PageGetSpecialSize(page) as usize;
            if special != std::mem::size_of::<Opaque>().next_multiple_of(8) {
                break None;
            }
            let op = &*opaque(page);
            if op.flags & (GIN_DATA | GIN_DELETED | GIN_META | GIN_LIST) != 0 {
                break None;
            }
            let maxoff = pg_sys::PageGetMaxOffsetNumber(page);
            let rightmost = op.rightlink == pg_sys::InvalidBlockNumber;
            // a concurrent split moved keys above the page's last right
            if !rightmost && maxoff >= 1 {
                match guarded(|g| versus(g, rel, cmp, page, maxoff)) {
                    None => break None,
                    Some((Ordering::Greater, ..)) => {
                        let next = pg_sys::ReadBuffer(rel, op.rightlink);
                        crate::compat::lock_buffer_share(next);
                        pg_sys::UnlockReleaseBuffer(buf);
                        buf = next;
                        continue;
                    }
                    Some(_) => {}
                }
            }
            let (mut low, mut high) = (1u16, maxoff + 1);
            if op.flags & GIN_LEAF != 0 {
                // as `startScanEntry`: the leaf where the key is or would be
                super::ssi::page_read(rel, pg_sys::BufferGetBlockNumber(buf));
                // the binary search under one guard
                let hit = guarded(|g| {
                    while high > low {
                        let mid = low + (high - low) / 2;
                        match versus(g, rel, cmp, page, mid) {
                            None => return None,
                            Some((Ordering::Equal, itup, len)) => return Some(Some((itup, len))),
                            Some((Ordering::Greater, ..)) => low = mid + 1,
                            Some((Ordering::Less, ..)) => high = mid,
                        }
                    }
                    Some(None)
                });
                break match hit {
                    None => None,
                    Some(None) => Some(Vec::new()),
                    Some(Some((itup, len))) => posting(itup, len, at_most),
                };
            }
            // an inner page: the child whose key is the first at or above
            // the key's (`entryLocateEntry`)
            let child = guarded(|g| {
                while high > low {
                    let mid = low + (high - low) / 2;
                    let order = if mid == maxoff && rightmost {
                        Some(Ordering::Less) // the right infinity
                    } else {
                        versus(g, rel, cmp, page, mid).map(|(o, ..)| o)
                    };
                    match order {
                        None => return None,
                        Some(Ordering::Equal) => return Some(Some(mid)),
                        Some(Ordering::Greater) => low = mid + 1,
                        Some(Ordering::Less) => high = mid,
                    }
                }
                Some(None)
            });
            let child = child.map(|c| c.unwrap_or(high)).filter(|&c| c <= maxoff);
            let Some((itup, _)) = child.and_then(|c| tuple(page, c)) else {
                break None;
            };
            let down = block_of(&(*itup).t_tid);
            crate::compat::unlock_buffer(buf);
            buf = pg_sys::ReleaseAndReadBuffer(buf, rel, down);
            crate::compat::lock_buffer_share(buf);
        };
        pg_sys::UnlockReleaseBuffer(buf);
        found
    }
}

/// The TIDs a leaf entry tuple (`len` bytes) lists inline; None for a
/// posting tree, more than `at_most`, or a list that does not fit the
/// tuple or decode whole.
unsafe fn posting(itup: pg_sys::IndexTuple, len: usize, at_most: usize) -> Option<Vec<Tid>> {
    // SAFETY: every read is bounded by the tuple's length.
    unsafe {
        let head = (*itup).t_tid;
        let n = head.ip_posid;
        if n == GIN_TREE_POSTING || n as usize > at_most {
            return None;
        }
        if n == 0 {
            return Some(Vec::new());
        }
        let base = itup as *const u8;
        let block = block_of(&head);
        let at = (block & !GIN_ITUP_COMPRESSED) as usize;
        let read_tid = |p: *const u8| {
            let t = std::ptr::read_unaligned(p as *const pg_sys::ItemPointerData);
            (block_of(&t), t.ip_posid)
        };
        if block & GIN_ITUP_COMPRESSED == 0 {
            // the format before 9.4 (an index pg_upgrade kept): TIDs whole
            if at + n as usize * TID_SIZE > len {
                return None;
            }
            return Some(
                (0..n as usize)
                    .map(|i| read_tid(base.add(at + i * TID_SIZE)))
                    .collect(),
            );
        }
        if at + POSTING_HEADER > len {
            return None;
        }
        let first = read_tid(base.add(at));
        let nbytes = std::ptr::read_unaligned(base.add(at + TID_SIZE) as *const u16) as usize;
        if at + POSTING_HEADER + nbytes > len {
            return None;
        }
        let bytes = std::slice::from_raw_parts(base.add(at + POSTING_HEADER), nbytes);
        postings::decode(first, bytes, n as usize)
    }
}
