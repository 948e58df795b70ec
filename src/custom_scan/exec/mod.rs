//! The executor side: the scan returns the search's pages one row at a
//! time, newest first (or oldest first: all that follows the other way),
//! asking for the next page (ids below the last one returned) only when
//! the rows above are used up. The node tests the query's containments
//! (`held.rs`), the executor every other qual (`ExecScan`), so the page the
//! client sees is exact whatever the search was told.
//!
//! - The values (tenant, filters, bounds, limit) are computed once, at the
//!   first row, from constants and parameters: the route is chosen then,
//!   from the actual filter, as `alerts_search` chooses it.
//! - The first page has the query's `LIMIT` + `OFFSET` rows (50 without a
//!   limit); each next page twice as many, up to 5000.
//! - Without a lower bound on `id`, the window is the ULID range (ids at or
//!   after `alerts_ulid_floor` of 1970, which a search reads); the ids below
//!   it, if any, are read last as a window of their own.
//! - Where ids may repeat (no unique index on them), a page's last id may
//!   have rows beyond the page: the page's rows of that id are set aside
//!   and all the tenant's rows of that id read instead, before the next
//!   page starts below it.

use std::collections::VecDeque;

use alerts_core::{ulid, Filter};
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgMemoryContexts;

mod explain;
mod held;
mod values;

use super::shape::{Shape, NAME};
use crate::datum::{text_cmp, text_of as text, varlena_bytes};
use crate::search::trace::{self, Trace};

/// Largest page a scan asks for.
const MAX_PAGE: i64 = 5000;
/// First page without a limit to size it.
const DEFAULT_PAGE: i64 = 50;

/// The scan's node: Postgres' part first, then ours.
#[repr(C)]
pub struct State {
    css: pg_sys::CustomScanState,
    run: *mut Run,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Values not computed yet.
    Start,
    /// Pages of the window.
    Window,
    /// The ids below the ULID range.
    Below,
    Done,
}

/// What one scan keeps between rows.
pub struct Run {
    pub shape: Shape,
    /// The plan's values, initialised, and its containments as one qual
    /// (null: none); `whole`, `ready_filtered`, `ready_whole`, `removed`:
    /// see `held.rs`.
    exprs: Vec<*mut pg_sys::ExprState>,
    held: *mut pg_sys::ExprState,
    whole: Option<Vec<String>>,
    ready_filtered: bool,
    ready_whole: bool,
    removed: u64,
    relid: Oid,
    rowtype: Oid,
    id_attno: i32,
    id_collation: Oid,
    desc: pg_sys::TupleDesc,
    /// Memory of the computed values (reset on rescan) and of the page
    /// being returned (reset for each page).
    values_cxt: pg_sys::MemoryContext,
    page_cxt: pg_sys::MemoryContext,
    phase: Phase,
    org: Vec<u8>,
    filter: Datum,
    compiled: Option<Filter>,
    /// The column filter the column quals imply, compiled.
    columns: Option<(Datum, crate::columns::Columns)>,
    /// The query's time bounds, which the direct walk tests too.
    times: Vec<crate::search::TimeBound>,
    /// The window: ids in `[floor, before)`; `before` None on a first page.
    /// Oldest first, `before` stays the query's upper bound and the pages
    /// start above `after`, the last page's last id.
    floor: Vec<u8>,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
    /// The query's own upper bound, for the window below the ULIDs.
    upper: Option<Vec<u8>>,
    /// No lower bound was given: the ids below the ULID range are read last.
    below_too: bool,
    size: i64,
    /// The rows a page is meant to hold (LIMIT + OFFSET, or 50).
    wanted: i64,
    ready: VecDeque<Datum>,
    /// The row in the scan slot (a heap-tuple slot keeps a pointer to it).
    current: pg_sys::HeapTupleData,
    /// The id whose rows are read whole before the next page.
    tie: Option<Vec<u8>>,
    /// A partitioned table searched whole: the partitions its plan read,
    /// those every page reads (`Args::pinned`).
    tree: Option<Vec<Oid>>,
    /// What the searches did, for EXPLAIN ANALYZE.
    pub trace: Trace,
    pub pages: u64,
    pub first_page: i64,
}

/// `CreateCustomScanState`: the node, with its plan's shape.
///
/// # Safety
/// Called by the executor with our plan.
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn create_state(cscan: *mut pg_sys::CustomScan) -> *mut pg_sys::Node {
    // SAFETY: the node is palloc0'd in the executor's memory with room for
    // our part.
    unsafe {
        let state = pg_sys::palloc0(std::mem::size_of::<State>()) as *mut State;
        (*state).css.ss.ps.type_ = pg_sys::NodeTag::T_CustomScanState;
        (*state).css.flags = (*cscan).flags;
        (*state).css.methods = &raw const EXEC_METHODS;
        crate::compat::heap_scan_slot_asked(&mut (*state).css);
        state.cast()
    }
}

/// `BeginCustomScan`.
///
/// # Safety
/// Called by the executor on a node of [`create_state`].
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn begin(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    _eflags: i32,
) {
    // SAFETY: the node is ours; the relation is open (scanrelid > 0).
    unsafe {
        crate::compat::heap_scan_slot_begun(node, estate);
        let state = node as *mut State;
        let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
        let (shape, tree) = Shape::from_private((*cscan).custom_private);
        let (exprs, held) = held::init(cscan, &mut (*node).ss.ps, shape.held);
        let rel = (*node).ss.ss_currentRelation;
        let desc = (*rel).rd_att;
        let id_attno = pg_sys::get_attnum((*rel).rd_id, c"id".as_ptr()) as i32;
        let query_cxt = (*estate).es_query_cxt;
        let new_cxt = |name: &std::ffi::CStr| {
            pg_sys::AllocSetContextCreateInternal(
                query_cxt,
                name.as_ptr(),
                pg_sys::ALLOCSET_DEFAULT_MINSIZE as usize,
                pg_sys::ALLOCSET_DEFAULT_INITSIZE as usize,
                pg_sys::ALLOCSET_DEFAULT_MAXSIZE as usize,
            )
        };
        let run = Run {
            shape,
            exprs,
            held,
            whole: None,
            ready_filtered: false,
            ready_whole: false,
            removed: 0,
            relid: (*rel).rd_id,
            rowtype: (*(*rel).rd_rel).reltype,
            id_attno,
            id_collation: crate::compat::attribute(desc, id_attno).attcollation,
            desc,
            values_cxt: new_cxt(c"alerts scan values"),
            page_cxt: new_cxt(c"alerts scan page"),
            phase: Phase::Start,
            org: Vec::new(),
            filter: Datum::from(0usize),
            compiled: None,
            columns: None,
            times: Vec::new(),
            floor: Vec::new(),
            before: None,
            after: None,
            upper: None,
            below_too: false,
            size: DEFAULT_PAGE,
            wanted: DEFAULT_PAGE,
            ready: VecDeque::new(),
            current: pg_sys::HeapTupleData::default(),
            tie: None,
            tree,
            trace: Trace::default(),
            pages: 0,
            first_page: 0,
        };
        // Dropped with the query's memory, on success or error.
        (*state).run = PgMemoryContexts::For(query_cxt).leak_and_drop_on_delete(run);
    }
}

/// `ExecCustomScan`: the next row passing every qual.
///
/// # Safety
/// Called by the executor on a begun node.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn exec(
    node: *mut pg_sys::CustomScanState,
) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: ExecScan calls back with the same node.
    unsafe {
        // The values first, here rather than under ExecScan: their errors
        // (a filter alerts_attrs_match refuses) are raised straight from
        // this function.
        let run = &mut *(*(node as *mut State)).run;
        if run.phase == Phase::Start && !run.start((*node).ss.ps.ps_ExprContext) {
            run.phase = Phase::Done;
        }
        pg_sys::ExecScan(&mut (*node).ss, Some(next), Some(recheck))
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn recheck(
    _node: *mut pg_sys::ScanState,
    _slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    true
}

/// The next row of the pages, or an empty slot at the end.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn next(ss: *mut pg_sys::ScanState) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: the node is ours (ScanState is its first member).
    unsafe {
        let run = &mut *(*(ss as *mut State)).run;
        let slot = (*ss).ss_ScanTupleSlot;
        let econtext = (*ss).ps.ps_ExprContext;
        loop {
            if let Some(row) = run.ready.pop_front() {
                // as it is (the page's memory lives until the next page);
                // the executor deforms what its quals and target read
                let td = row.cast_mut_ptr::<pg_sys::HeapTupleHeaderData>();
                run.current = pg_sys::HeapTupleData {
                    t_tableOid: run.relid,
                    ..crate::datum::row_tuple(td)
                };
                let slot = pg_sys::ExecStoreHeapTuple(&mut run.current, slot, false);
                if run.holds(slot, econtext) {
                    return slot;
                }
                pgrx::check_for_interrupts!();
                continue;
            }
            if !run.fetch(econtext) {
                return pg_sys::ExecClearTuple(slot);
            }
        }
    }
}

/// `ReScanCustomScan`: start again, values computed anew (parameters may
/// have changed).
///
/// # Safety
/// Called by the executor on a begun node.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rescan(node: *mut pg_sys::CustomScanState) {
    // SAFETY: the node is ours.
    unsafe {
        let run = &mut *(*(node as *mut State)).run;
        run.ready.clear();
        run.tie = None;
        run.phase = Phase::Start;
        pg_sys::MemoryContextReset(run.page_cxt);
        pg_sys::MemoryContextReset(run.values_cxt);
    }
}

/// `EndCustomScan`: the run is dropped with the query's memory.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn end(_node: *mut pg_sys::CustomScanState) {}

/// The executor node's methods. Postgres keeps a pointer to them; they
/// are never written after load.
static mut EXEC_METHODS: pg_sys::CustomExecMethods = pg_sys::CustomExecMethods {
    CustomName: NAME.as_ptr(),
    BeginCustomScan: Some(begin),
    ExecCustomScan: Some(exec),
    EndCustomScan: Some(end),
    ReScanCustomScan: Some(rescan),
    MarkPosCustomScan: None,
    RestrPosCustomScan: None,
    EstimateDSMCustomScan: None,
    InitializeDSMCustomScan: None,
    ReInitializeDSMCustomScan: None,
    InitializeWorkerCustomScan: None,
    ShutdownCustomScan: None,
    ExplainCustomScan: Some(explain::explain),
};

impl Run {
    /// Reads more rows into `ready`; false when there are no more.
    unsafe fn fetch(&mut self, econtext: *mut pg_sys::ExprContext) -> bool {
        // SAFETY: as `next`'s.
        unsafe {
            if self.phase == Phase::Start && !self.start(econtext) {
                self.phase = Phase::Done;
            }
            if self.phase == Phase::Done {
                return false;
            }
            pg_sys::MemoryContextReset(self.page_cxt);
            let old = pg_sys::MemoryContextSwitchTo(self.page_cxt);
            // the searches as the query reads the table (a view's owner)
            let reader = crate::search::ReadAs::begin(self.shape.reader.into());
            if let Some(id) = self.tie.take() {
                // All the tenant's rows of the last page's last id; the next
                // page starts below it.
                let rows = crate::search::rows_with_id(
                    self.relid,
                    self.rowtype,
                    (text(&self.org), text(&id)),
                    self.tree.as_deref(),
                );
                self.ready.extend(rows);
                self.ready_filtered = false;
                self.ready_whole = false;
                self.past(id);
            } else {
                self.ready_whole = self.page();
                self.ready_filtered = true;
            }
            drop(reader);
            pg_sys::MemoryContextSwitchTo(old);
            true
        }
    }

    /// One page of the search, into `ready`; whether its rows passed the
    /// exact check at the `whole` keys too (`search::rows`).
    unsafe fn page(&mut self) -> bool {
        // SAFETY: in the page's memory; the values are live.
        unsafe {
            let compiled = self.compiled.as_ref().expect("computed at start");
            let args = crate::search::Args {
                ascending: self.shape.ascending.then(|| crate::search::Ascending {
                    after: self.after.as_deref().map(text),
                    upper: self.before.as_deref().map(text),
                }),
                // `since` stays None: the node is not offered for Citus
                // tables, whose routed calls send it
                // a one-row first page keeps what its rare path read
                spare: self.wanted - self.size,
                pinned: self.tree.as_deref(),
                whole: self.whole.as_deref().unwrap_or(&[]),
                times: &self.times,
                ..crate::search::Args::new(
                    (self.relid, self.rowtype),
                    text(&self.org),
                    (self.filter, compiled),
                    self.columns.clone(),
                    text(&self.floor),
                    self.before.as_deref().map(text),
                    self.size,
                )
            };
            trace::take();
            let (rows, whole_checked) = crate::search::rows(&args);
            explain::add_trace(&mut self.trace, trace::take());
            self.pages += 1;
            if self.first_page == 0 {
                self.first_page = self.size;
            }
            let full = rows.len() as i64 >= self.size;
            self.size = (self.size * 2).max(self.wanted).min(MAX_PAGE);
            if !full {
                self.ready.extend(rows);
                self.end_of_window();
                return whole_checked;
            }
            let last = self
                .id_of(*rows.last().expect("a full page has rows"))
                .to_vec();
            if self.shape.ids_unique {
                self.ready.extend(rows);
                self.past(last);
            } else {
                // equal in the id's collation (`rows_with_id` reads them so)
                let kept: Vec<Datum> = rows
                    .into_iter()
                    .filter(|&r| text_cmp(self.id_of(r), &last, self.id_collation).is_ne())
                    .collect();
                self.ready.extend(kept);
                self.tie = Some(last);
            }
            whole_checked
        }
    }

    /// The next page starts past `id`: below it newest first, above it
    /// oldest first.
    fn past(&mut self, id: Vec<u8>) {
        if self.shape.ascending {
            self.after = Some(id);
        } else {
            self.before = Some(id);
        }
    }

    /// The window is read: on to the ids below the ULIDs, or the end.
    fn end_of_window(&mut self) {
        let epoch = ulid::floor(0).to_vec();
        if self.phase == Phase::Window && self.below_too {
            // ids in ['', min(epoch, the query's upper bound))
            self.phase = Phase::Below;
            self.before = Some(match &self.upper {
                Some(u) if text_cmp(u, &epoch, self.id_collation).is_lt() => u.clone(),
                _ => epoch,
            });
            self.floor = Vec::new();
            self.size = self.size.max(DEFAULT_PAGE);
        } else {
            self.phase = Phase::Done;
        }
    }

    /// The id of a page's row.
    unsafe fn id_of<'a>(&self, row: Datum) -> &'a [u8] {
        // SAFETY: the row is a composite datum of the table's type, whose id
        // is never NULL on a page (a search reads ids in a range).
        unsafe {
            let td = row.cast_mut_ptr::<pg_sys::HeapTupleHeaderData>();
            let mut tuple = crate::datum::row_tuple(td);
            let mut isnull = false;
            let d = pg_sys::heap_getattr(&mut tuple, self.id_attno, self.desc, &mut isnull);
            if isnull {
                return &[];
            }
            varlena_bytes(d)
        }
    }
}
