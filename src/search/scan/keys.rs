//! The direct walk's bitmap readers, for the rare paths: one bitmap scan of
//! the tenant-keys index for a range, or of the GIN index on the
//! attributes for the rest of the window (the filter's jsonpath, as the GIN
//! statement asks it), the heap pages of the bitmap read as a bitmap heap
//! scan reads them, every row checked (tenant, id bounds, filter) and the
//! matches added in the walk's order.

use pgrx::pg_sys::{self, Datum, Oid};

use super::entries;
use super::heap::slot_column;
use super::IndexWalk;
use crate::search::page::Page;
use crate::search::trace;
use crate::search::walker::Bitmap;
use crate::unguarded::{self, guarded, text_cmp as compare};

/// The strategy of `&&` in GIN's array operator classes.
const GIN_OVERLAP: u32 = 1;

/// The TID of offset `offset` of block `block`.
fn item_pointer(
    block: pg_sys::BlockNumber,
    offset: pg_sys::OffsetNumber,
) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (block >> 16) as u16,
            bi_lo: (block & 0xffff) as u16,
        },
        ip_posid: offset,
    }
}

/// `buffer` holding the page of `tid`: the same one, or that page read in
/// its place.
///
/// # Safety
/// `buffer` is a pinned buffer of `heap` or InvalidBuffer.
unsafe fn buffer_for(
    buffer: &mut pg_sys::Buffer,
    heap: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
) -> pg_sys::Buffer {
    let block = entries::block_of(tid);
    // SAFETY: as the caller's; ReleaseAndReadBuffer keeps a buffer that
    // already holds the block.
    unsafe { *buffer = pg_sys::ReleaseAndReadBuffer(*buffer, heap, block) };
    *buffer
}

impl IndexWalk<'_> {
    /// The TIDs of GIN index `index` whose first column answers every
    /// argument (one scan key each) by `strategy` of its operator class,
    /// the right argument of type `right`; None when the operator class
    /// has no such operator.
    ///
    /// # Safety
    /// The walk's relations are open; the arguments are live datums.
    unsafe fn gin_bitmap(
        &mut self,
        index: Oid,
        strategy: u32,
        right: Option<Oid>,
        arguments: &[Datum],
    ) -> Option<*mut pg_sys::TIDBitmap> {
        // SAFETY: the index is opened and closed here.
        unsafe {
            let index = pg_sys::index_open(index, pg_sys::AccessShareLock as i32);
            let family = *(*index).rd_opfamily;
            let ty = *(*index).rd_opcintype;
            let op = pg_sys::get_opfamily_member(family, ty, right.unwrap_or(ty), strategy as i16);
            if op == pg_sys::InvalidOid {
                pg_sys::index_close(index, pg_sys::NoLock as i32);
                return None;
            }
            let procedure = pg_sys::get_opcode(op);
            let mut keys: Vec<pg_sys::ScanKeyData> =
                arguments.iter().map(|_| Default::default()).collect();
            for (key, argument) in keys.iter_mut().zip(arguments) {
                pg_sys::ScanKeyInit(key, 1, strategy as u16, procedure, *argument);
                key.sk_collation = *(*index).rd_indcollation;
            }
            let n = keys.len() as i32;
            let scan = crate::compat::index_beginscan_bitmap(index, pg_sys::GetActiveSnapshot(), n);
            pg_sys::index_rescan(scan, keys.as_mut_ptr(), n, std::ptr::null_mut(), 0);
            let tbm = crate::compat::tbm_create();
            pg_sys::index_getbitmap(scan, tbm);
            pg_sys::index_endscan(scan);
            pg_sys::index_close(index, pg_sys::NoLock as i32);
            Some(tbm)
        }
    }

    /// The id of the row at `tid` if the snapshot sees it and it is the
    /// tenant's, in the range (above `lower`, or at it when it is not
    /// strict; below `upper` when there is one), and matches the filter
    /// exactly.
    pub(super) unsafe fn range_match(
        &mut self,
        buffer: pg_sys::Buffer,
        tid: pg_sys::ItemPointerData,
        (lower, strict): (Datum, bool),
        upper: Option<Datum>,
    ) -> Option<Vec<u8>> {
        // SAFETY: the slot holds the fetched tuple while it is read; the
        // entry context is reset after.
        unsafe {
            let l = self.layout.cols;
            let (heap, slot, filter) = (self.heap, self.slot, self.filter);
            let upto = l
                .org
                .max(l.id)
                .max(l.attrs)
                .max(l.bitmap)
                .max(self.last_column());
            let bytes = |d: Datum| crate::datum::varlena_bytes(d);
            let tenant = bytes(self.keys[0].sk_argument);
            let old = pg_sys::MemoryContextSwitchTo(self.entry_cxt);
            // The fetch and the cheap tests under one guard: the tenant's
            // row in the range that the bloom admits is a candidate, checked
            // exactly below (and counted, as the walk counts its
            // candidates); a GIN index's other tenants' rows and rows
            // outside the window are not.
            let fetched = guarded(|g| {
                if !unguarded::hot_fetch(g, heap, slot, buffer, tid) {
                    return None;
                }
                unguarded::deform(g, slot, upto);
                let value = |attno| slot_column(slot, attno);
                let (Some(org), Some(id), Some(attrs)) =
                    (value(l.org), value(l.id), value(l.attrs))
                else {
                    return Some(None);
                };
                let above = compare(g, bytes(id), bytes(lower), l.id_collation);
                let candidate = compare(g, bytes(org), tenant, l.org_collation).is_eq()
                    && (above.is_gt() || (above.is_eq() && !strict))
                    && upper
                        .is_none_or(|u| compare(g, bytes(id), bytes(u), l.id_collation).is_lt())
                    && value(l.bitmap)
                        .is_none_or(|bm| filter.bloom_match_bytes(crate::datum::bitmap_arg(bm)));
                Some(candidate.then_some((id, attrs)))
            });
            let id = match fetched {
                Some(Some((id, attrs))) => {
                    let matched = self.columns_match()
                        && crate::jsonb::exact_match_of(self.filter, attrs, self.whole);
                    self.count(matched);
                    (matched && self.times_match()).then(|| bytes(id).to_vec())
                }
                _ => None,
            };
            pg_sys::MemoryContextSwitchTo(old);
            pg_sys::MemoryContextReset(self.entry_cxt);
            id
        }
    }

    /// The rows `bitmap` finds (the tenant-keys or the attributes' GIN
    /// index, asked as the path's statement asks it), checked exactly,
    /// above `lower` (or at it, not strict) and below `upper` when there
    /// is one, in the walk's order, as many as the page wants; false,
    /// having added nothing, when the index cannot answer (the table has
    /// none, its operator class lacks the operator, or the bitmap is
    /// lossy: then the statement answers).
    ///
    /// # Safety
    /// As [`Walk::bitmap_range`].
    pub unsafe fn read_bitmap(
        &mut self,
        bitmap: Bitmap,
        lower: (Datum, bool),
        upper: Option<Datum>,
        page: &mut Page,
    ) -> bool {
        let (index, strategy, right, arguments) = match &bitmap {
            Bitmap::Keys(arrays) => (self.layout.keys_index, GIN_OVERLAP, None, *arrays),
            Bitmap::Gin(path) => (
                self.layout.gin_index,
                pg_sys::JsonbJsonpathPredicateStrategyNumber,
                Some(pg_sys::JSONPATHOID),
                std::slice::from_ref(path),
            ),
            Bitmap::SmallGin(paths, _) => (
                self.layout.gin_index,
                pg_sys::JsonbJsonpathPredicateStrategyNumber,
                Some(pg_sys::JSONPATHOID),
                *paths,
            ),
        };
        let Some(index) = index else {
            return false;
        };
        // SAFETY: as the caller's.
        unsafe {
            if let Some(right) = right {
                // GIN's entries read in place when they list few rows: the
                // whole jsonpath's, or the rarest clause's
                let at_most = match bitmap {
                    Bitmap::SmallGin(_, n) => n,
                    _ => usize::MAX,
                };
                let strategy = strategy as u16;
                let tids = arguments
                    .iter()
                    .filter_map(|path| {
                        entries::inline_tids(index, strategy, right, *path, at_most, self.entry_cxt)
                    })
                    .min_by_key(Vec::len);
                match tids {
                    Some(tids) => {
                        let mut tids: Vec<_> =
                            tids.into_iter().map(|(b, o)| item_pointer(b, o)).collect();
                        let tbm = crate::compat::tbm_create();
                        pg_sys::tbm_add_tuples(tbm, tids.as_mut_ptr(), tids.len() as i32, false);
                        return self.bitmap_rows(tbm, lower, upper, page);
                    }
                    None if at_most != usize::MAX => return false,
                    None => {}
                }
            }
            match self.gin_bitmap(index, strategy, right, arguments) {
                Some(tbm) => self.bitmap_rows(tbm, lower, upper, page),
                None => false,
            }
        }
    }

    /// The rows of bitmap `tbm` (freed here) in the range, checked
    /// exactly, in the walk's order, as many as the page wants; false,
    /// having added nothing, when the bitmap is lossy.
    ///
    /// # Safety
    /// The walk's relations are open; `tbm` holds TIDs of its heap.
    unsafe fn bitmap_rows(
        &mut self,
        tbm: *mut pg_sys::TIDBitmap,
        lower: (Datum, bool),
        upper: Option<Datum>,
        page: &mut Page,
    ) -> bool {
        // SAFETY: heap pages are read pinned and share-locked, as a bitmap
        // heap scan reads them.
        unsafe {
            // Matches in the range: their ids, the TIDs the index gave and,
            // for as many as the page wants, a copy of the row (a rare
            // path's matches usually all fit: none is fetched twice).
            let want = page.rare_want().max(0) as usize;
            let mut found: Vec<(Vec<u8>, pg_sys::ItemPointerData, pg_sys::HeapTuple)> = Vec::new();
            let mut buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
            let mut fetched = 0;
            let exact = crate::compat::tbm_pages(tbm, &mut |block, offsets| {
                let Some(offsets) = offsets else {
                    return false; // lossy: the statement answers
                };
                fetched += offsets.len() as u64;
                buffer = pg_sys::ReleaseAndReadBuffer(buffer, self.heap, block);
                for &offset in offsets {
                    pgrx::check_for_interrupts!();
                    let tid = item_pointer(block, offset);
                    if let Some(id) = self.range_match(buffer, tid, lower, upper) {
                        let copy = if found.len() < want {
                            pg_sys::ExecCopySlotHeapTuple(self.slot)
                        } else {
                            std::ptr::null_mut()
                        };
                        found.push((id, tid, copy));
                    }
                }
                true
            });
            pg_sys::tbm_free(tbm);
            trace::fetched(fetched);
            if exact {
                // In the walk's order (newest or oldest first), in the id
                // column's collation; a page's row without a copy fetched
                // again (same snapshot, same version).
                let collation = self.layout.cols.id_collation;
                unguarded::sort_by_text(&mut found, |f| &f.0, collation, !self.ascending);
                for (_, tid, copy) in found.iter().take(want) {
                    if !copy.is_null() {
                        self.add_heap_tuple(*copy, page);
                    } else if self.fetch(buffer_for(&mut buffer, self.heap, tid), *tid) {
                        self.add_slot(page);
                    }
                }
            }
            for (_, _, copy) in found {
                if !copy.is_null() {
                    pg_sys::heap_freetuple(copy);
                }
            }
            pg_sys::ExecClearTuple(self.slot);
            if buffer != pg_sys::InvalidBuffer as pg_sys::Buffer {
                pg_sys::ReleaseBuffer(buffer);
            }
            exact
        }
    }
}
