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
//! Used where it reads exactly what the statements would: a plain table (a
//! Citus shard, a leaf of a partitioned table) whose `organisation_id` and
//! `id` are text, with a valid, non-partial btree led by them in the
//! columns' own collations, read by a role with `SELECT` on the table (on
//! the partitioned table, for a leaf) and no row-level security in force.
//! Anything else (views, policies, column grants, leaves of another
//! access method) takes the statement walk, which the planner and executor
//! make right.
//!
//! - this file: the scan of the pagination index, chunk by chunk;
//! - `heap.rs`: a candidate's row fetched and checked exactly;
//! - `keys.rs`: ranges of the tenant-keys index read in place;
//! - `entries.rs`: a GIN index's inline entries read in place;
//! - `ends.rs`: the first entry of a range, by a second scan; `largest.rs`:
//!   a table's largest id; `ssi.rs`: predicate locks of pages read in place.

mod ends;
mod entries;
mod heap;
mod keys;
mod largest;
mod ssi;
pub use largest::largest_id;

use std::cell::OnceCell;

use alerts_core::Filter;
use pgrx::pg_sys::{self, Datum, Oid};

use super::call::Call;
use super::layout::Layout;
use super::page::Page;
use super::spi::{cstr_owned, text_of};
use super::trace;
use super::walker::{Bitmap, Walk, Walked};
use crate::columns::Columns;
use crate::datum::text_cmp as compare;
use crate::unguarded::{self, guarded};

/// One call's scan of the pagination index.
pub struct IndexWalk<'a> {
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    scan: pg_sys::IndexScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    direction: pg_sys::ScanDirection::Type,
    layout: Layout,
    filter: &'a Filter,
    /// Keys where the exact check refuses an array (`Call::whole`).
    whole: &'a [String],
    /// The query's time bounds (`Call::times`), and the same numbered as
    /// this relation's columns when it is not the rows' type (decided on
    /// the first candidate checked, as `own_columns` is).
    times: &'a [super::call::TimeBound],
    own_times: OnceCell<Vec<super::call::TimeBound>>,
    /// Candidates checked exactly and those that matched, for the trace
    /// (counted here, told once at `end`).
    checked: (u64, u64),
    /// The column filter, compiled against the rows' type, and its datum.
    columns: Option<(&'a Columns, Datum)>,
    /// The column filter compiled against this relation's own columns, when
    /// it is not the rows' type and its column numbers differ (None: they
    /// do not, the rows' type's serves): decided on the first candidate
    /// checked (most leaves of a partitioned table check none).
    own_columns: OnceCell<Option<Columns>>,
    /// The table whose rows are returned: the relation itself, or the
    /// table it is a Citus shard or a partition of.
    rows_of: Oid,
    /// When `rows_of` is another relation: it, opened, and the conversion
    /// to its columns by name; opened when the first row is added (most
    /// leaves of a partitioned table add none).
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
                whole: call.whole,
                times: call.times,
                own_times: OnceCell::new(),
                checked: (0, 0),
                columns: columns.zip(call.columns),
                own_columns: OnceCell::new(),
                output: None,
                rows_of,
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
    /// operator family with `value`, in the column's collation. The layout
    /// holds only indexes whose first two columns are text_ops
    /// (`Layout::fits`, checked on the open index): text's own comparison
    /// functions, named without a catalog lookup (two a key otherwise, on
    /// every leaf of a partitioned table).
    unsafe fn key(&mut self, n: usize, column: i16, strategy: u32, value: Datum) {
        let proc = match strategy {
            pg_sys::BTLessStrategyNumber => pg_sys::F_TEXT_LT,
            pg_sys::BTLessEqualStrategyNumber => pg_sys::F_TEXT_LE,
            pg_sys::BTEqualStrategyNumber => pg_sys::F_TEXTEQ,
            pg_sys::BTGreaterEqualStrategyNumber => pg_sys::F_TEXT_GE,
            pg_sys::BTGreaterStrategyNumber => pg_sys::F_TEXT_GT,
            _ => unreachable!("btree strategy {strategy}"),
        };
        // SAFETY: the index's arrays have an entry per key column.
        unsafe {
            let key = &mut self.keys[n];
            pg_sys::ScanKeyInit(key, column, strategy as u16, Oid::from(proc), value);
            key.sk_collation = *(*self.index).rd_indcollation.add(column as usize - 1);
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
                // the next entry, unless the scan still stands on it
                let advance = !std::mem::take(&mut self.pending);
                let (scan, direction) = (self.scan, self.direction);
                let (v, n) = (values.as_mut_slice(), nulls.as_mut_slice());
                if !guarded(|g| unguarded::next_entry(g, scan, direction, advance, v, n)) {
                    self.done = true;
                    if stop_at_eight {
                        self.below_eight = Some(None);
                    }
                    break;
                }
                let id = crate::datum::varlena_bytes(values[1]);
                if stop_at_eight && compare(id, b"8", self.layout.cols.id_collation).is_lt() {
                    // Consumed, not read: the walk below '8' starts the scan
                    // again (see `above`).
                    self.below_eight = Some(Some(id.to_vec()));
                    break;
                }
                if limit.is_some_and(|l| walked.entries >= l)
                    && (walked.entries == 0
                        || !compare(id, &self.smallest, self.layout.cols.id_collation).is_eq())
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

    /// Ends the scan and closes the relations (their locks are kept to the
    /// end of the transaction, as a statement's are).
    ///
    /// # Safety
    /// Called once, last.
    pub unsafe fn end(self) {
        trace::candidates(self.checked);
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
        if self.pending && matches!(self.below_eight, Some(Some(_))) {
            // `first_id` read the window's first entry, below '8': no row
            // is above it, and the walk goes on from that entry.
            return;
        }
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

    fn reads_bitmaps(&self) -> bool {
        true
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

    unsafe fn bitmap_range(
        &mut self,
        bitmap: Bitmap,
        lower: (Datum, bool),
        upper: Option<Datum>,
        page: &mut Page,
    ) -> bool {
        // SAFETY: as the trait's.
        unsafe { self.read_bitmap(bitmap, lower, upper, page) }
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
