//! The direct walk's heap side: a candidate's row fetched (the version the
//! snapshot sees, through its HOT chain), checked exactly (tenant, bloom,
//! column filter, attributes), and added to the page in the rows' type.

use pgrx::pg_sys::{self, AttrNumber, Datum};

use super::IndexWalk;
use crate::columns::Columns;
use crate::search::call::TimeBound;
use crate::search::page::Page;
use crate::search::spi::cstr_owned;
use crate::unguarded::{self, guarded};

/// Deforms the slot's row up to column `upto`; then [`slot_column`] reads
/// any column up to it.
///
/// # Safety
/// The slot holds a tuple.
pub(super) unsafe fn deform_slot(slot: *mut pg_sys::TupleTableSlot, upto: AttrNumber) {
    // SAFETY: as the caller's.
    unsafe { guarded(|g| unguarded::deform(g, slot, upto)) }
}

/// Column `attno` of the slot's row, None when NULL.
///
/// # Safety
/// The row is deformed up to `attno` ([`deform_slot`]).
pub(super) unsafe fn slot_column(
    slot: *mut pg_sys::TupleTableSlot,
    attno: AttrNumber,
) -> Option<Datum> {
    let i = attno as usize - 1;
    // SAFETY: as the caller's.
    unsafe { (!*(*slot).tts_isnull.add(i)).then(|| *(*slot).tts_values.add(i)) }
}

impl IndexWalk<'_> {
    /// The current entry, a bloom candidate: fetched from the heap (if
    /// visible to the snapshot), checked exactly, and added to the page if
    /// it matches.
    pub(super) unsafe fn candidate(&mut self, page: &mut Page) -> bool {
        // SAFETY: the scan is positioned on an entry; the slot holds the
        // fetched tuple until the next fetch.
        unsafe {
            let (scan, slot, upto) = (self.scan, self.slot, self.upto());
            // the fetch and the deform under one guard
            if !guarded(|g| unguarded::fetch_entry_row(g, scan, slot, upto)) {
                return false; // not visible to this snapshot
            }
            // None: the heap row's bitmap (not in the index) refused it,
            // before any recheck
            let Some(matched) = self.candidate_matches() else {
                return false;
            };
            self.count(matched);
            // A match outside the time bounds is a hit all the same: the
            // walk's measure of how rare the filter is (and what the route
            // memory keeps of it) is the filter's, not the window's.
            if matched && self.times_match() {
                self.add_slot(page);
            }
            matched
        }
    }

    /// Whether the fetched candidate in the slot matches exactly; None when
    /// its heap bitmap (the index has none) already refuses it.
    pub(super) unsafe fn candidate_matches(&mut self) -> Option<bool> {
        // SAFETY: the slot holds the fetched tuple.
        unsafe {
            let slot = self.slot;
            deform_slot(slot, self.upto());
            let value = |attno| slot_column(slot, attno);
            if self.layout.bitmap_in_index.is_none() {
                if let Some(bm) = value(self.layout.cols.bitmap) {
                    if !self.filter.bloom_match_bytes(crate::datum::bitmap_arg(bm)) {
                        return None;
                    }
                }
            }
            let Some(attrs) = value(self.layout.cols.attrs) else {
                return Some(false); // no attributes: matches no filter but {}
            };
            // The column filter first: an equality of a few datums, where
            // the attributes' check walks the jsonb.
            Some(
                self.columns_match()
                    && crate::jsonb::exact_match_of(self.filter, attrs, self.whole),
            )
        }
    }

    /// The last column the exact check reads of a candidate's row.
    fn upto(&self) -> AttrNumber {
        let cols = self.layout.cols;
        cols.attrs.max(cols.bitmap).max(self.last_column())
    }

    /// A candidate checked exactly, for the trace.
    pub(super) fn count(&mut self, matched: bool) {
        self.checked.0 += 1;
        self.checked.1 += u64::from(matched);
    }

    /// The largest column number the column filter and the time bounds
    /// read (0: none).
    pub(super) fn last_column(&self) -> AttrNumber {
        let times = self.times().iter().map(|t| t.attno).max().unwrap_or(0);
        self.columns().map_or(0, |c| c.last).max(times)
    }

    /// The query's time bounds, numbered as this relation's columns: the
    /// rows' type's when it is this relation, else each column found by
    /// its name (a bound whose column this relation numbers otherwise or
    /// has not as a `timestamptz` is left to the executor, which tests
    /// every bound anyway).
    fn times(&self) -> &[TimeBound] {
        // SAFETY: the relations are open; catalog lookups only.
        unsafe {
            if self.times.is_empty() || self.rows_of == (*self.heap).rd_id {
                return self.times;
            }
            self.own_times.get_or_init(|| {
                let here = (*self.heap).rd_id;
                let own = |t: &TimeBound| {
                    let name = pg_sys::get_attname(self.rows_of, t.attno, true);
                    if name.is_null() {
                        return None;
                    }
                    let attno = pg_sys::get_attnum(here, name);
                    let fits =
                        attno > 0 && pg_sys::get_atttype(here, attno) == pg_sys::TIMESTAMPTZOID;
                    fits.then_some(TimeBound { attno, ..*t })
                };
                self.times.iter().filter_map(own).collect()
            })
        }
    }

    /// The column filter, compiled against this relation's columns: the
    /// call's when they are at the same numbers (a partition made with
    /// `PARTITION OF`), else compiled here; decided once per walk (in the
    /// walk's memory, not the entry's: its values and equality functions
    /// are palloc'd).
    fn columns(&self) -> Option<&Columns> {
        let (compiled, datum) = self.columns?;
        // SAFETY: the relations are open; the datum is the call's; the
        // walk's memory outlives the entry's.
        unsafe {
            if self.rows_of == (*self.heap).rd_id {
                return Some(compiled);
            }
            let own = self.own_columns.get_or_init(|| {
                if compiled.fits((*self.heap).rd_att) {
                    return None;
                }
                let old = pg_sys::MemoryContextSwitchTo((*self.entry_cxt).parent);
                let own = Columns::compile(
                    datum,
                    (*self.heap).rd_att,
                    &cstr_owned(pg_sys::get_rel_name(self.rows_of)),
                );
                pg_sys::MemoryContextSwitchTo(old);
                Some(own)
            });
            Some(own.as_ref().unwrap_or(compiled))
        }
    }

    /// Whether the slot's row passes the column filter.
    ///
    /// # Safety
    /// The slot's row is deformed up to [`IndexWalk::last_column`].
    pub(super) unsafe fn columns_match(&self) -> bool {
        let slot = self.slot;
        // SAFETY: as the caller's.
        self.columns()
            .is_none_or(|c| unsafe { c.matches(|_, attno| slot_column(slot, attno)) })
    }

    /// Whether the slot's row passes the query's time bounds.
    ///
    /// # Safety
    /// As [`IndexWalk::columns_match`].
    pub(super) unsafe fn times_match(&self) -> bool {
        let slot = self.slot;
        // SAFETY: as the caller's; a timestamptz datum is its integer.
        let time = |attno| unsafe { slot_column(slot, attno).map(|d| d.value() as i64) };
        self.times().iter().all(|t| t.admits(time(t.attno)))
    }

    /// Adds the slot's row to the page, as the rows' type.
    pub(super) unsafe fn add_slot(&mut self, page: &mut Page) {
        // SAFETY: the slot holds a heap tuple of `heap`.
        unsafe {
            let mut free = false;
            let tuple = pg_sys::ExecFetchSlotHeapTuple(self.slot, false, &mut free);
            self.add_heap_tuple(tuple, page);
        }
    }

    /// Adds row `tuple` of `heap` to the page, as the rows' type.
    ///
    /// # Safety
    /// `tuple` is a live heap tuple of `heap`.
    pub(super) unsafe fn add_heap_tuple(&mut self, tuple: pg_sys::HeapTuple, page: &mut Page) {
        // SAFETY: as the caller's.
        unsafe {
            if self.rows_of == (*self.heap).rd_id {
                page.add_tuple(tuple, (*self.heap).rd_att);
                return;
            }
            let (rel, map) = self.output();
            let tuple = if map.is_null() {
                tuple
            } else {
                pg_sys::execute_attr_map_tuple(tuple, map)
            };
            page.add_tuple(tuple, (*rel).rd_att)
        }
    }

    /// The rows' type's relation and the conversion to it, opened on the
    /// first row added (most leaves of a partitioned table add none), in
    /// the walk's memory (not the entry's, reset after each).
    ///
    /// # Safety
    /// The relations are open (between `begin` and `end`).
    unsafe fn output(&mut self) -> (pg_sys::Relation, *mut pg_sys::TupleConversionMap) {
        if let Some(output) = self.output {
            return output;
        }
        // SAFETY: as the caller's; the walk's memory outlives the entry's.
        unsafe {
            let old = pg_sys::MemoryContextSwitchTo((*self.entry_cxt).parent);
            let rel = pg_sys::table_open(self.rows_of, pg_sys::AccessShareLock as i32);
            let map = pg_sys::convert_tuples_by_name((*self.heap).rd_att, (*rel).rd_att);
            pg_sys::MemoryContextSwitchTo(old);
            self.output = Some((rel, map));
            (rel, map)
        }
    }

    /// Fetches into the slot the version of the row at `tid` (or of its
    /// HOT chain) that the snapshot sees; false if none.
    pub(super) unsafe fn fetch(
        &mut self,
        buffer: pg_sys::Buffer,
        tid: pg_sys::ItemPointerData,
    ) -> bool {
        let (heap, slot) = (self.heap, self.slot);
        // SAFETY: the buffer holds tid's page and is pinned by the caller.
        unsafe { guarded(|g| unguarded::hot_fetch(g, heap, slot, buffer, tid)) }
    }
}
