//! The walk as one direct scan of the pagination index: no statement, no
//! executor. The btree on `(organisation_id, id)` is read newest first from
//! the cursor down to the window's floor; each entry's bitmap is tested where
//! the index holds it (`INCLUDE (attribute_values_bitmap)`, read from the
//! index tuple, as an index-only scan would) and only candidates are fetched
//! from the heap, through the same scan (no second descent per candidate),
//! and checked exactly. The statement walk of `walk.rs` paid executor start
//! for two statements per call and one more index descent per candidate
//! (the `LATERAL` lookup); this is that walk without them.
//!
//! Used where it reads exactly what the statements would: a plain table (or
//! a Citus shard) whose `organisation_id` and `id` are text, with a valid,
//! non-partial btree led by them in the columns' own collations, read by a
//! role with `SELECT` on the table and no row-level security in force.
//! Anything else (views, partitioned tables, policies, column grants) takes
//! the statement walk, which the planner and executor make right.

use std::borrow::Cow;

use alerts_core::Filter;
use pgrx::pg_sys::{self, AttrNumber, Datum, Oid};

use super::layout::Layout;
use super::spi::{cstr_owned, text_of, Page};
use super::trace;
use super::walk::{Walk, Walked};
use super::Call;
use crate::columns::Columns;
use crate::datum::text_cmp as compare;

/// Deforms the slot's row up to column `upto`; then [`slot_column`] reads
/// any column up to it.
///
/// # Safety
/// The slot holds a tuple.
unsafe fn deform_slot(slot: *mut pg_sys::TupleTableSlot, upto: AttrNumber) {
    // SAFETY: as the caller's.
    unsafe {
        if ((*slot).tts_nvalid as i32) < upto as i32 {
            pg_sys::slot_getsomeattrs_int(slot, upto as i32);
        }
    }
}

/// Column `attno` of the slot's row, None when NULL.
///
/// # Safety
/// The row is deformed up to `attno` ([`deform_slot`]).
unsafe fn slot_column(slot: *mut pg_sys::TupleTableSlot, attno: AttrNumber) -> Option<Datum> {
    let i = attno as usize - 1;
    // SAFETY: as the caller's.
    unsafe { (!*(*slot).tts_isnull.add(i)).then(|| *(*slot).tts_values.add(i)) }
}

/// Deforms the index tuple `scan` stands on into `values` and `nulls` (one
/// entry per index column) and returns its `id` (column 2).
///
/// # Safety
/// The scan returns index tuples (`xs_want_itup`) and stands on one; the id
/// is valid until the scan moves.
unsafe fn deform_entry<'t>(
    scan: pg_sys::IndexScanDesc,
    values: &mut [Datum],
    nulls: &mut [bool],
) -> &'t [u8] {
    // SAFETY: as the caller's; the arrays have an entry per index column.
    unsafe {
        pg_sys::index_deform_tuple(
            (*scan).xs_itup,
            (*scan).xs_itupdesc,
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        );
        crate::datum::varlena_bytes(values[1])
    }
}

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
    let block = ((tid.ip_blkid.bi_hi as u32) << 16) | tid.ip_blkid.bi_lo as u32;
    // SAFETY: as the caller's; ReleaseAndReadBuffer keeps a buffer that
    // already holds the block.
    unsafe { *buffer = pg_sys::ReleaseAndReadBuffer(*buffer, heap, block) };
    *buffer
}

/// One call's scan of the pagination index.
pub struct IndexWalk<'a> {
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    scan: pg_sys::IndexScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    direction: pg_sys::ScanDirection::Type,
    layout: Layout,
    filter: &'a Filter,
    /// The column filter, compiled against this relation's columns.
    columns: Option<Cow<'a, Columns>>,
    /// The rows' type when it is not the relation's own (a Citus shard's
    /// rows are returned as the distributed table's): its descriptor and
    /// the conversion by column name.
    output: Option<(pg_sys::Relation, *mut pg_sys::TupleConversionMap)>,
    /// Memory of one entry's work (detoasted attributes, the row's copy),
    /// reset after each.
    entry_cxt: pg_sys::MemoryContext,
    keys: [pg_sys::ScanKeyData; 3],
    /// Whether the scan has been started with the walk's keys, and has
    /// read its last entry.
    started: bool,
    /// A first page: the scan has no upper bound on `id` (its third key
    /// stands for `end_id` only).
    open_top: bool,
    /// What `above` saw of the newest id below '8': Some(None) when there
    /// is none, the answer of `end_id('8', newest)` without a second scan.
    below_eight: Option<Option<Vec<u8>>>,
    done: bool,
    /// The scan stands on an entry it returned that `read` has not read
    /// yet: a chunk ended before it, on a whole id (see `read`).
    pending: bool,
    /// The last id read so far: ids beyond it (below it newest first, above
    /// it oldest first) are unread, and so is no entry of it.
    smallest: Vec<u8>,
    /// The page is read oldest first (`ORDER BY id ASC`).
    ascending: bool,
}

impl<'a> IndexWalk<'a> {
    /// Opens relation `source` (the table or its shard) and its pagination
    /// index for the call's walk (below its cursor down to its floor,
    /// within its tenant), returning rows of `rows_of`'s type; `columns` is
    /// the call's column filter compiled for `rows_of`.
    ///
    /// # Safety
    /// The call's datums are live; `layout` is `source`'s in this relcache
    /// epoch.
    pub unsafe fn begin(
        source: Oid,
        rows_of: Oid,
        layout: Layout,
        call: &Call<'a>,
        columns: Option<&'a Columns>,
    ) -> IndexWalk<'a> {
        let (filter, org, floor) = (call.compiled, call.org, call.floor);
        let before = match &call.ascending {
            None => (!call.first_page).then_some(call.before),
            Some(asc) => asc.upper,
        };
        // SAFETY: relations are opened and locked here and closed by `end`;
        // the scan keys are built from the index's own operator families.
        unsafe {
            let heap = pg_sys::table_open(source, pg_sys::AccessShareLock as i32);
            let index = pg_sys::index_open(layout.index, pg_sys::AccessShareLock as i32);
            // The layout was read in this relcache epoch, after the caller
            // locked the table; checked again on what is open now, so that
            // no column is ever read as another type.
            if !layout.fits(heap, index) {
                crate::datum::error(
                    pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "alerts_search: table {} changed while the search began",
                        cstr_owned(pg_sys::get_rel_name(source))
                    ),
                    "run the search again",
                );
            }
            let output = (source != rows_of).then(|| {
                let rel = pg_sys::table_open(rows_of, pg_sys::AccessShareLock as i32);
                (
                    rel,
                    pg_sys::convert_tuples_by_name((*heap).rd_att, (*rel).rd_att),
                )
            });
            // Compiled against the table's row type; a shard's column
            // numbers may differ (dropped columns), so it gets its own.
            let columns = columns.zip(call.columns).map(|(c, d)| match output {
                None => Cow::Borrowed(c),
                Some(_) => Cow::Owned(Columns::compile(
                    d,
                    (*heap).rd_att,
                    &cstr_owned(pg_sys::get_rel_name(rows_of)),
                )),
            });
            let scan = crate::compat::index_beginscan(heap, index, pg_sys::GetActiveSnapshot(), 3);
            (*scan).xs_want_itup = true;
            let mut walk = IndexWalk {
                heap,
                index,
                scan,
                slot: pg_sys::table_slot_create(heap, std::ptr::null_mut()),
                direction: if layout.id_desc != call.ascending.is_some() {
                    pg_sys::ScanDirection::ForwardScanDirection
                } else {
                    pg_sys::ScanDirection::BackwardScanDirection
                },
                layout,
                filter,
                columns,
                output,
                entry_cxt: pg_sys::AllocSetContextCreateInternal(
                    pg_sys::CurrentMemoryContext,
                    c"alerts_search entry".as_ptr(),
                    pg_sys::ALLOCSET_SMALL_MINSIZE as usize,
                    pg_sys::ALLOCSET_SMALL_INITSIZE as usize,
                    pg_sys::ALLOCSET_SMALL_MAXSIZE as usize,
                ),
                keys: Default::default(),
                started: false,
                open_top: false,
                below_eight: None,
                done: false,
                pending: false,
                smallest: Vec::new(),
                ascending: call.ascending.is_some(),
            };
            walk.key(0, 1, pg_sys::BTEqualStrategyNumber, org);
            match call.ascending.as_ref().and_then(|a| a.after) {
                // oldest first, after the last page: ids above its last id
                Some(after) => walk.key(1, 2, pg_sys::BTGreaterStrategyNumber, after),
                None => walk.key(1, 2, pg_sys::BTGreaterEqualStrategyNumber, floor),
            }
            // A first page has no upper bound: the scan reads the ids at or
            // after '8' (no ULID is) first, as they come first in the
            // index, then the ULIDs; the key stays for `end_id`.
            walk.key(
                2,
                2,
                pg_sys::BTLessStrategyNumber,
                before.unwrap_or_else(|| text_of(b"8")),
            );
            walk.open_top = before.is_none();
            walk
        }
    }

    /// Scan key `n`: index column `column` compared by `strategy` of its
    /// operator family with `value`, in the column's collation.
    unsafe fn key(&mut self, n: usize, column: i16, strategy: u32, value: Datum) {
        // SAFETY: the index's arrays have an entry per key column.
        unsafe {
            let c = column as usize - 1;
            let family = *(*self.index).rd_opfamily.add(c);
            let ty = *(*self.index).rd_opcintype.add(c);
            let op = pg_sys::get_opfamily_member(family, ty, ty, strategy as i16);
            let key = &mut self.keys[n];
            pg_sys::ScanKeyInit(key, column, strategy as u16, pg_sys::get_opcode(op), value);
            key.sk_collation = *(*self.index).rd_indcollation.add(c);
        }
    }

    /// (Re)starts the scan with the current keys.
    unsafe fn restart(&mut self) {
        // A scan takes as many keys as it was begun with: an open top
        // repeats the floor's key in place of the upper bound.
        let mut keys = self.keys;
        if self.open_top {
            keys[2] = keys[1];
        }
        // SAFETY: the scan was begun with three keys; it copies them.
        unsafe {
            pg_sys::index_rescan(self.scan, keys.as_mut_ptr(), 3, std::ptr::null_mut(), 0);
        }
        self.done = false;
        self.pending = false;
        self.started = true;
    }

    /// Reads entries until `limit` of them are read, the page is full or
    /// the scan ends (or, with `stop_at_eight`, the first id below '8',
    /// kept in `below_eight` and not read); returns the entries read, the
    /// matches added and the ULID time the entries spanned.
    ///
    /// A chunk ends on a whole id: past `limit`, the entries of the last id
    /// read are read too, and the first entry of another id is left for the
    /// next `read` (`pending`). The rare paths read beyond the cursor, and
    /// one id may have several entries: a row updated with its bitmap
    /// changed keeps its old version's entry until VACUUM, next to the new
    /// one (and ids may repeat). A chunk that ended between them lost the
    /// row.
    unsafe fn read(&mut self, page: &mut Page, limit: Option<i64>, stop_at_eight: bool) -> Walked {
        let mut walked = Walked::default();
        let mut newest: Option<Vec<u8>> = None;
        let natts = unsafe { (*(*self.index).rd_rel).relnatts } as usize;
        let mut values = vec![Datum::from(0usize); natts];
        let mut nulls = vec![false; natts];
        // SAFETY: index tuples are read before the next call moves the scan;
        // heap values are read from the slot the scan filled.
        unsafe {
            while !page.is_full() {
                pgrx::check_for_interrupts!();
                if self.pending {
                    // the scan still stands on it
                    self.pending = false;
                } else if pg_sys::index_getnext_tid(self.scan, self.direction).is_null() {
                    self.done = true;
                    if stop_at_eight {
                        self.below_eight = Some(None);
                    }
                    break;
                }
                let id = deform_entry(self.scan, &mut values, &mut nulls);
                if stop_at_eight && compare(id, b"8", self.layout.id_collation).is_lt() {
                    // Consumed, not read: the walk below '8' starts the scan
                    // again (see `above`).
                    self.below_eight = Some(Some(id.to_vec()));
                    break;
                }
                if limit.is_some_and(|l| walked.entries >= l)
                    && (walked.entries == 0
                        || !compare(id, &self.smallest, self.layout.id_collation).is_eq())
                {
                    self.pending = true;
                    break;
                }
                if limit == Some(walked.entries + 1) {
                    // the chunk's last entry: where it ends, if no entry of
                    // the same id follows
                    self.smallest.clear();
                    self.smallest.extend_from_slice(id);
                }
                walked.entries += 1;
                if newest.is_none() {
                    newest = Some(id.to_vec());
                }
                if let Some(b) = self.layout.bitmap_in_index {
                    // A NULL bitmap (not yet backfilled) is a candidate.
                    if !nulls[b]
                        && !self
                            .filter
                            .bloom_match_bytes(crate::datum::bitmap_arg(values[b]))
                    {
                        continue;
                    }
                }
                let old = pg_sys::MemoryContextSwitchTo(self.entry_cxt);
                let hit = self.candidate(page);
                walked.hits += hit as i64;
                pg_sys::MemoryContextSwitchTo(old);
                pg_sys::MemoryContextReset(self.entry_cxt);
            }
            // Where the walk stands: the last entry read (still the scan's
            // current tuple, whose id the deformed values point into).
            if walked.entries > 0 && !self.done && !stop_at_eight && !self.pending {
                self.smallest.clear();
                self.smallest
                    .extend_from_slice(crate::datum::varlena_bytes(values[1]));
            }
        }
        walked.end = self.done;
        let time = |id: &[u8]| alerts_core::keys::time_of_id(id);
        walked.span_ms = newest
            .as_deref()
            .filter(|_| !self.done)
            .and_then(time)
            .zip(time(&self.smallest))
            .map(|(first, last)| first.abs_diff(last).max(1));
        walked
    }

    /// The current entry, a bloom candidate: fetched from the heap (if
    /// visible to the snapshot), checked exactly, and added to the page if
    /// it matches.
    unsafe fn candidate(&mut self, page: &mut Page) -> bool {
        // SAFETY: the scan is positioned on an entry; the slot holds the
        // fetched tuple until the next fetch.
        unsafe {
            if !pg_sys::index_fetch_heap(self.scan, self.slot) {
                return false; // not visible to this snapshot
            }
            // None: the heap row's bitmap (not in the index) refused it,
            // before any recheck
            let Some(matched) = self.candidate_matches() else {
                return false;
            };
            trace::candidate(matched);
            if matched {
                self.add_slot(page);
            }
            matched
        }
    }

    /// Whether the fetched candidate in the slot matches exactly; None when
    /// its heap bitmap (the index has none) already refuses it.
    unsafe fn candidate_matches(&mut self) -> Option<bool> {
        // SAFETY: the slot holds the fetched tuple.
        unsafe {
            let slot = self.slot;
            deform_slot(
                slot,
                self.layout
                    .attrs
                    .max(self.layout.bitmap)
                    .max(self.last_column()),
            );
            let value = |attno| slot_column(slot, attno);
            if self.layout.bitmap_in_index.is_none() {
                if let Some(bm) = value(self.layout.bitmap) {
                    if !self.filter.bloom_match_bytes(crate::datum::bitmap_arg(bm)) {
                        return None;
                    }
                }
            }
            let Some(attrs) = value(self.layout.attrs) else {
                return Some(false); // no attributes: matches no filter but {}
            };
            // The column filter first: an equality of a few datums, where
            // the attributes' check walks the jsonb.
            Some(self.columns_match() && crate::jsonb::exact_match_of(self.filter, attrs))
        }
    }

    /// The largest column number the column filter reads (0: none).
    fn last_column(&self) -> AttrNumber {
        self.columns.as_ref().map_or(0, |c| c.last)
    }

    /// Whether the slot's row passes the column filter.
    ///
    /// # Safety
    /// The slot's row is deformed up to [`IndexWalk::last_column`].
    unsafe fn columns_match(&self) -> bool {
        let slot = self.slot;
        // SAFETY: as the caller's.
        self.columns
            .as_ref()
            .is_none_or(|c| unsafe { c.matches(|attno| slot_column(slot, attno)) })
    }

    /// Adds the slot's row to the page, as the rows' type.
    unsafe fn add_slot(&mut self, page: &mut Page) {
        // SAFETY: the slot holds a heap tuple of `heap`.
        unsafe {
            let mut free = false;
            let tuple = pg_sys::ExecFetchSlotHeapTuple(self.slot, false, &mut free);
            match self.output {
                None => page.add_tuple(tuple, (*self.heap).rd_att),
                Some((rel, map)) => {
                    let tuple = if map.is_null() {
                        tuple
                    } else {
                        pg_sys::execute_attr_map_tuple(tuple, map)
                    };
                    page.add_tuple(tuple, (*rel).rd_att)
                }
            }
        }
    }

    /// The TIDs whose tenant keys overlap every array (one per clause),
    /// from the keys index; None when its operator is missing.
    unsafe fn keys_bitmap(
        &mut self,
        keys_index: Oid,
        arrays: &[Datum],
    ) -> Option<*mut pg_sys::TIDBitmap> {
        // SAFETY: the index is opened and closed here.
        unsafe {
            let index = pg_sys::index_open(keys_index, pg_sys::AccessShareLock as i32);
            let family = *(*index).rd_opfamily;
            let ty = *(*index).rd_opcintype;
            let op = pg_sys::get_opfamily_member(family, ty, ty, GIN_OVERLAP as i16);
            if op == pg_sys::InvalidOid {
                pg_sys::index_close(index, pg_sys::NoLock as i32);
                return None;
            }
            let procedure = pg_sys::get_opcode(op);
            let mut keys: Vec<pg_sys::ScanKeyData> =
                arrays.iter().map(|_| Default::default()).collect();
            for (key, array) in keys.iter_mut().zip(arrays) {
                pg_sys::ScanKeyInit(key, 1, GIN_OVERLAP as u16, procedure, *array);
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

    /// Fetches into the slot the version of the row at `tid` (or of its
    /// HOT chain) that the snapshot sees; false if none.
    unsafe fn fetch(&mut self, buffer: pg_sys::Buffer, tid: pg_sys::ItemPointerData) -> bool {
        // SAFETY: the buffer holds tid's page and is pinned by the caller.
        unsafe {
            let mut tid = tid;
            pg_sys::ExecClearTuple(self.slot);
            // The tuple header lives in the slot, which keeps a pointer to
            // it (as the heap's own index fetch does).
            let tuple = &raw mut (*(self.slot as *mut pg_sys::BufferHeapTupleTableSlot))
                .base
                .tupdata;
            let mut all_dead = false;
            pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as i32);
            let found = pg_sys::heap_hot_search_buffer(
                &mut tid,
                self.heap,
                buffer,
                pg_sys::GetActiveSnapshot(),
                tuple,
                &mut all_dead,
                true,
            );
            pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_UNLOCK as i32);
            if found {
                pg_sys::ExecStoreBufferHeapTuple(tuple, self.slot, buffer);
            }
            found
        }
    }

    /// The id of the row at `tid` if the snapshot sees it and it is the
    /// tenant's, in the range (above `lower`, or at it when it is not
    /// strict; below `upper` when there is one), and matches the filter
    /// exactly.
    unsafe fn range_match(
        &mut self,
        buffer: pg_sys::Buffer,
        tid: pg_sys::ItemPointerData,
        (lower, strict): (Datum, bool),
        upper: Option<Datum>,
    ) -> Option<Vec<u8>> {
        // SAFETY: the slot holds the fetched tuple while it is read; the
        // entry context is reset after.
        unsafe {
            if !self.fetch(buffer, tid) {
                return None;
            }
            let l = self.layout;
            let old = pg_sys::MemoryContextSwitchTo(self.entry_cxt);
            let slot = self.slot;
            deform_slot(
                slot,
                l.org
                    .max(l.id)
                    .max(l.attrs)
                    .max(l.bitmap)
                    .max(self.last_column()),
            );
            let value = |attno| slot_column(slot, attno);
            let bytes = |d: Datum| crate::datum::varlena_bytes(d);
            let tenant = bytes(self.keys[0].sk_argument);
            let id = match (value(l.org), value(l.id), value(l.attrs)) {
                (Some(org), Some(id), Some(attrs)) => {
                    let id = bytes(id);
                    let above = compare(id, bytes(lower), l.id_collation);
                    let matched = compare(bytes(org), tenant, l.org_collation).is_eq()
                        && (above.is_gt() || (above.is_eq() && !strict))
                        && upper.is_none_or(|u| compare(id, bytes(u), l.id_collation).is_lt())
                        && value(l.bitmap).is_none_or(|bm| {
                            self.filter.bloom_match_bytes(crate::datum::bitmap_arg(bm))
                        })
                        && self.columns_match()
                        && crate::jsonb::exact_match_of(self.filter, attrs);
                    trace::candidate(matched);
                    matched.then(|| id.to_vec())
                }
                _ => None,
            };
            pg_sys::MemoryContextSwitchTo(old);
            pg_sys::MemoryContextReset(self.entry_cxt);
            id
        }
    }

    /// The rows of a range whose keys overlap every array (one per clause),
    /// checked exactly, in the walk's order, as many as the page wants;
    /// false, having added nothing, when the keys index cannot answer
    /// (lossy bitmap, or no index or operator). The range is above `lower`
    /// (or at it, not strict) and below `upper` when there is one.
    ///
    /// # Safety
    /// As [`Walk::keys_range`].
    pub unsafe fn keys_rows(
        &mut self,
        arrays: &[Datum],
        lower: (Datum, bool),
        upper: Option<Datum>,
        page: &mut Page,
    ) -> bool {
        let Some(keys_index) = self.layout.keys_index else {
            return false;
        };
        // SAFETY: the keys index is opened, scanned and closed here; heap
        // pages are read pinned and share-locked, as a bitmap heap scan
        // reads them.
        unsafe {
            let Some(tbm) = self.keys_bitmap(keys_index, arrays) else {
                return false;
            };
            // Matches in the range: their ids and the TIDs the index gave.
            let mut found: Vec<(Vec<u8>, pg_sys::ItemPointerData)> = Vec::new();
            let mut buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
            let exact = crate::compat::tbm_pages(tbm, &mut |block, offsets| {
                let Some(offsets) = offsets else {
                    return false; // lossy: the statement answers this range
                };
                buffer = pg_sys::ReleaseAndReadBuffer(buffer, self.heap, block);
                for &offset in offsets {
                    pgrx::check_for_interrupts!();
                    let tid = item_pointer(block, offset);
                    if let Some(id) = self.range_match(buffer, tid, lower, upper) {
                        found.push((id, tid));
                    }
                }
                true
            });
            pg_sys::tbm_free(tbm);
            if exact {
                // In the walk's order (newest or oldest first), in the id
                // column's collation; the page's rows fetched again (same
                // snapshot, same versions).
                let collation = self.layout.id_collation;
                if self.ascending {
                    found.sort_by(|a, b| compare(&a.0, &b.0, collation));
                } else {
                    found.sort_by(|a, b| compare(&b.0, &a.0, collation));
                }
                for (_, tid) in found.iter().take(page.want.max(0) as usize) {
                    if self.fetch(buffer_for(&mut buffer, self.heap, tid), *tid) {
                        self.add_slot(page);
                    }
                }
            }
            pg_sys::ExecClearTuple(self.slot);
            if buffer != pg_sys::InvalidBuffer as pg_sys::Buffer {
                pg_sys::ReleaseBuffer(buffer);
            }
            exact
        }
    }

    /// The oldest (or newest) id of the tenant's entries above `lower` (at
    /// it too when not strict) and below `upper` when there is one, visible
    /// or not: the oldest-first keys path only bounds its ranges with it,
    /// and a dead entry's id only widens them. A second scan; the walk's
    /// own keeps its place.
    ///
    /// # Safety
    /// The relations are open (between `begin` and `end`).
    pub unsafe fn edge(
        &mut self,
        (lower, strict): (Datum, bool),
        upper: Option<Datum>,
        oldest: bool,
    ) -> Option<Vec<u8>> {
        // SAFETY: as the caller's; the scan is ended here.
        unsafe {
            let saved = self.keys;
            let strategy = if strict {
                pg_sys::BTGreaterStrategyNumber
            } else {
                pg_sys::BTGreaterEqualStrategyNumber
            };
            self.key(1, 2, strategy, lower);
            match upper {
                Some(u) => self.key(2, 2, pg_sys::BTLessStrategyNumber, u),
                None => self.keys[2] = self.keys[1],
            }
            let mut keys = std::mem::replace(&mut self.keys, saved);
            // the walk's own direction reads oldest first when it is ascending
            let direction = if oldest == self.ascending {
                self.direction
            } else {
                -self.direction
            };
            self.first_entry(&mut keys, direction)
        }
    }

    /// The id of the first entry a second scan with `keys` reads in
    /// `direction`, visible or not; the walk's own scan keeps its place.
    ///
    /// # Safety
    /// The relations are open; `keys` are three keys of this index.
    unsafe fn first_entry(
        &self,
        keys: &mut [pg_sys::ScanKeyData; 3],
        direction: pg_sys::ScanDirection::Type,
    ) -> Option<Vec<u8>> {
        // SAFETY: as the caller's; the scan is ended here.
        unsafe {
            let scan = crate::compat::index_beginscan(
                self.heap,
                self.index,
                pg_sys::GetActiveSnapshot(),
                3,
            );
            (*scan).xs_want_itup = true;
            pg_sys::index_rescan(scan, keys.as_mut_ptr(), 3, std::ptr::null_mut(), 0);
            let id = (!pg_sys::index_getnext_tid(scan, direction).is_null()).then(|| {
                let natts = (*(*self.index).rd_rel).relnatts as usize;
                let mut values = vec![Datum::from(0usize); natts];
                let mut nulls = vec![false; natts];
                deform_entry(scan, &mut values, &mut nulls).to_vec()
            });
            pg_sys::index_endscan(scan);
            id
        }
    }

    /// Ends the scan and closes the relations (their locks are kept to the
    /// end of the transaction, as a statement's are).
    ///
    /// # Safety
    /// Called once, last.
    pub unsafe fn end(self) {
        // SAFETY: everything here was opened by `begin`.
        unsafe {
            pg_sys::ExecDropSingleTupleTableSlot(self.slot);
            pg_sys::index_endscan(self.scan);
            pg_sys::MemoryContextDelete(self.entry_cxt);
            if let Some((rel, _)) = self.output {
                pg_sys::table_close(rel, pg_sys::NoLock as i32);
            }
            pg_sys::index_close(self.index, pg_sys::NoLock as i32);
            pg_sys::table_close(self.heap, pg_sys::NoLock as i32);
        }
    }
}

impl Walk for IndexWalk<'_> {
    unsafe fn above(&mut self, page: &mut Page) {
        // Only when the walk does not read them first (a call sent
        // straight to a rare path). One scan from the top: the rows at or
        // after '8', then the first id below it, which the rare path's
        // `end_id('8', newest)` would otherwise look up with a second scan.
        // A walk below '8' afterwards starts the scan again, bounded.
        // SAFETY: the scan is open (a first page: its top is open).
        unsafe {
            self.open_top = true;
            self.restart();
            self.read(page, None, true);
            self.open_top = false;
            self.started = false;
            self.smallest.clear();
        }
    }

    fn reads_above_first(&self) -> bool {
        // A first page's scan has no upper bound: the rows at or after '8'
        // come first in the index (one descent, not two).
        self.open_top
    }

    unsafe fn chunk(&mut self, page: &mut Page, entries: Option<i64>) -> Walked {
        // SAFETY: the scan is open.
        unsafe {
            if !self.started {
                self.restart();
            }
            self.read(page, entries, false)
        }
    }

    unsafe fn cursor(&self) -> Option<Datum> {
        (!self.smallest.is_empty()).then(|| text_of(&self.smallest))
    }

    unsafe fn keys_range(
        &mut self,
        arrays: &[Datum],
        floor: Datum,
        upper: Datum,
        page: &mut Page,
    ) -> bool {
        // SAFETY: as the trait's.
        unsafe { self.keys_rows(arrays, (floor, false), Some(upper), page) }
    }

    unsafe fn end_id(&mut self, upper: Datum, newest: bool) -> Option<Vec<u8>> {
        // SAFETY: a second scan of the open relations, ended here; the walk's
        // own scan keeps its place.
        unsafe {
            if newest && crate::datum::varlena_bytes(upper) == b"8" {
                if let Some(id) = &self.below_eight {
                    return id.clone();
                }
            }
            let mut keys = self.keys;
            self.key(2, 2, pg_sys::BTLessStrategyNumber, upper);
            std::mem::swap(&mut keys, &mut self.keys);
            let direction = if newest {
                self.direction
            } else {
                -self.direction
            };
            self.first_entry(&mut keys, direction)
        }
    }
}
