//! The page being built: rows of the table's row type, checked to be of
//! it, into the tuplestore `alerts_search` returns or as the rows the
//! custom scan and `alerts_search_wire` use, and how many it still needs.

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use super::spi::{cstr_owned, rows};
use crate::datum::{error, text_cmp, varlena_bytes};

/// Where a page's rows go: the tuplestore `alerts_search` returns, or the
/// rows `alerts_search_wire` sends (values copied out of SPI's memory).
enum Sink {
    /// The store, and the memory it lives in.
    Store(*mut pg_sys::Tuplestorestate, pg_sys::MemoryContext),
    /// The rows, and the memory they are kept in (the page's creator's).
    Rows(Vec<Datum>, pg_sys::MemoryContext),
}

/// Rows kept out of the page for a merge: every row from the first one
/// at or below `bound` on (a walk adds rows newest first), or every row
/// when there is no bound, with its id.
struct Aside {
    bound: Option<Vec<u8>>,
    /// The `id` column's number in the row type, and its collation.
    column: i16,
    collation: Oid,
    rows: Vec<(Vec<u8>, Datum)>,
    /// The memory they are kept in (the caller of `divert`'s).
    cxt: pg_sys::MemoryContext,
}

/// The page being built, in the table's row type, and how many rows it
/// still needs.
pub struct Page {
    sink: Sink,
    aside: Option<Aside>,
    /// The table's row type: every row stored is of it.
    rowtype: Oid,
    /// Rows asked for.
    size: i64,
    /// Rows still to find.
    pub want: i64,
    /// Rows a rare path may add past `want`, from what it has read anyway
    /// (the rest of a range it checks whole; see [`Page::with_spare`]).
    spare: i64,
    /// Some row came from a statement or another node, not through the
    /// direct walk's exact check with `Args::whole` (see
    /// [`Page::whole_checked`]).
    unchecked: bool,
}

impl Page {
    /// A page of rows of type `rowtype` returned as the rows of a
    /// tuplestore, made in memory `cxt`.
    pub fn store(
        store: *mut pg_sys::Tuplestorestate,
        cxt: pg_sys::MemoryContext,
        size: i64,
        rowtype: Oid,
    ) -> Page {
        Page {
            sink: Sink::Store(store, cxt),
            aside: None,
            rowtype,
            size,
            want: size,
            spare: 0,
            unchecked: false,
        }
    }

    /// A page of rows of type `rowtype` collected as rows (see
    /// [`Page::into_rows`]), kept in the current memory context: create it
    /// before `SPI_connect`.
    pub fn rows(size: i64, rowtype: Oid) -> Page {
        Page {
            // SAFETY: reads the backend's current context.
            sink: Sink::Rows(Vec::with_capacity(size.clamp(0, 1024) as usize), unsafe {
                pg_sys::CurrentMemoryContext
            }),
            aside: None,
            rowtype,
            size,
            want: size,
            spare: 0,
            unchecked: false,
        }
    }

    pub fn size(&self) -> i64 {
        self.size
    }

    /// The page with `spare` rows more for a rare path: its cost does not
    /// depend on the rows wanted (the tenant-keys path checks a range of
    /// weeks whole, the GIN statement sorts every match), and what it
    /// found past the page would be found again by the next page. The
    /// rows it adds are still the newest below the cursor, none skipped.
    pub fn with_spare(mut self, spare: i64) -> Page {
        self.spare = spare.max(0);
        self
    }

    /// How many rows a rare path may add now: the rows wanted and the
    /// spare ones.
    pub fn rare_want(&self) -> i64 {
        self.want + self.spare
    }

    pub fn is_full(&self) -> bool {
        self.want <= 0
    }

    /// Whether every row came through the direct walk's exact check,
    /// which refuses arrays at `Args::whole` keys: rows of statements
    /// (the statement walk, the rare paths) and of other nodes did not.
    pub fn whole_checked(&self) -> bool {
        !self.unchecked
    }

    /// Rows are added that the direct walk did not check
    /// ([`Page::whole_checked`]).
    pub fn mark_unchecked(&mut self) {
        self.unchecked = true;
    }

    /// Appends one row (a non-NULL composite datum of the table's row type).
    ///
    /// # Safety
    /// `d` must be a live composite datum of the page's row type; SPI is
    /// connected.
    unsafe fn push(&mut self, d: Datum) {
        // SAFETY: as the caller's.
        unsafe {
            if let Some(column) = self.aside.as_ref().map(|a| a.column) {
                let mut isnull = false;
                let id = pg_sys::GetAttributeByNum(d.cast_mut_ptr(), column, &mut isnull);
                let id = if isnull { &[][..] } else { varlena_bytes(id) };
                if self.set_aside(id, || {
                    pg_sys::pg_detoast_datum_copy(d.cast_mut_ptr()).into()
                }) {
                    return;
                }
            }
            self.keep(d)
        }
    }

    /// Stores one row that is not kept aside.
    ///
    /// # Safety
    /// As [`Page::push`].
    unsafe fn keep(&mut self, d: Datum) {
        // SAFETY: as the caller's.
        unsafe {
            match &mut self.sink {
                Sink::Store(store, _) => {
                    let td = crate::datum::row_header(d);
                    let mut tmp = crate::datum::row_tuple(td);
                    pg_sys::tuplestore_puttuple(*store, &mut tmp);
                }
                // into the page's memory, not compressed (a statement's
                // row value may be)
                Sink::Rows(rows, cxt) => {
                    let old = pg_sys::MemoryContextSwitchTo(*cxt);
                    let flat = pg_sys::pg_detoast_datum(d.cast_mut_ptr());
                    let kept = if flat == d.cast_mut_ptr() {
                        let len = pgrx::varsize_any(flat);
                        let copy = pg_sys::palloc(len);
                        std::ptr::copy_nonoverlapping(flat as *const u8, copy as *mut u8, len);
                        Datum::from(copy)
                    } else {
                        Datum::from(flat)
                    };
                    pg_sys::MemoryContextSwitchTo(old);
                    rows.push(kept)
                }
            }
        }
        self.want -= 1;
    }

    /// Appends the non-NULL values of column 1 (the table's row type) of a
    /// result table, at most as many as the page still wants; returns how
    /// many.
    ///
    /// # Safety
    /// `tt` must be a live SPI result table whose column 1 is the table's
    /// row type.
    pub unsafe fn add(&mut self, tt: *mut pg_sys::SPITupleTable) -> i64 {
        // SAFETY: as the caller's.
        unsafe { self.add_up_to(tt, 0) }
    }

    /// As [`Page::add`], for a rare path's statement: also the spare rows.
    ///
    /// # Safety
    /// As [`Page::add`].
    pub unsafe fn add_rare(&mut self, tt: *mut pg_sys::SPITupleTable) -> i64 {
        // SAFETY: as the caller's.
        unsafe { self.add_up_to(tt, self.spare) }
    }

    /// Appends values of `tt` until the page wants none and `spare` more.
    ///
    /// # Safety
    /// As [`Page::add`].
    unsafe fn add_up_to(&mut self, tt: *mut pg_sys::SPITupleTable, spare: i64) -> i64 {
        let mut copied = 0;
        self.unchecked = true;
        // SAFETY: tt is a live SPI result table; its column 1 is checked to
        // be the row type before any value is read.
        unsafe {
            self.check_type((*tt).tupdesc);
            for i in 0..rows(tt) as usize {
                if self.want + spare <= 0 {
                    break;
                }
                let mut isnull = false;
                let d = pg_sys::SPI_getbinval(*(*tt).vals.add(i), (*tt).tupdesc, 1, &mut isnull);
                if !isnull {
                    self.push(d);
                    copied += 1;
                }
            }
        }
        copied
    }

    /// Adds the rows a statement writes into a tuplestore itself, rows of
    /// the table's type (its live columns matched by position): `run` gets
    /// the store, the memory it lives in and the table's descriptor, and
    /// returns how many rows it wrote. A page returned as a store takes
    /// them straight into it (no copy in SPI's result, no row formed
    /// again); a page of rows, or one keeping rows aside, reads them from
    /// a store of its own.
    ///
    /// # Safety
    /// `run` writes rows of the descriptor it is given, at most as many as
    /// the page wants; SPI is connected.
    pub unsafe fn add_stored(
        &mut self,
        run: impl FnOnce(*mut pg_sys::Tuplestorestate, pg_sys::MemoryContext, pg_sys::TupleDesc) -> u64,
    ) {
        self.unchecked = true;
        // SAFETY: as the caller's; the descriptor and the page's own
        // store are released here.
        unsafe {
            let desc = pg_sys::lookup_rowtype_tupdesc(self.rowtype, -1);
            match (&self.sink, &self.aside) {
                (Sink::Store(store, cxt), None) => {
                    self.want -= run(*store, *cxt, desc) as i64;
                }
                _ => {
                    let store = pg_sys::tuplestore_begin_heap(false, false, pg_sys::work_mem);
                    run(store, pg_sys::CurrentMemoryContext, desc);
                    let slot = pg_sys::MakeSingleTupleTableSlot(desc, &pg_sys::TTSOpsMinimalTuple);
                    while !self.is_full()
                        && pg_sys::tuplestore_gettupleslot(store, true, false, slot)
                    {
                        let tuple =
                            pg_sys::ExecFetchSlotHeapTuple(slot, false, std::ptr::null_mut());
                        self.add_tuple(tuple, desc);
                    }
                    pg_sys::ExecDropSingleTupleTableSlot(slot);
                    pg_sys::tuplestore_end(store);
                }
            }
            pg_sys::DecrTupleDescRefCount(desc);
        }
    }

    /// An ERROR unless column 1 of `desc` is the page's row type. A
    /// statement names its table, and Postgres resolves the name again
    /// when it replans: if another table took the name since (a schema
    /// renamed while the search ran), its rows are refused here, never
    /// stored as this table's.
    ///
    /// # Safety
    /// `desc` is a live descriptor with at least one column.
    unsafe fn check_type(&self, desc: pg_sys::TupleDesc) {
        // SAFETY: as the caller's.
        let got = unsafe { crate::compat::attribute(desc, 1).atttypid };
        if got != self.rowtype {
            // SAFETY: format_type_be of valid type OIDs.
            let (want, got) = unsafe {
                (
                    cstr_owned(pg_sys::format_type_be(self.rowtype)),
                    cstr_owned(pg_sys::format_type_be(got)),
                )
            };
            error(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("alerts_search: a statement for table {want} read rows of {got}: a table or schema was renamed while the search ran"),
                "run the search again",
            );
        }
    }

    /// Appends one row read from a table (a heap tuple of descriptor
    /// `desc`, the page's row type), flattened out of TOAST as a composite
    /// value would be.
    ///
    /// # Safety
    /// `tuple` must be live and of descriptor `desc`; the page is not full.
    pub unsafe fn add_tuple(&mut self, tuple: pg_sys::HeapTuple, desc: pg_sys::TupleDesc) {
        // SAFETY: as the caller's. A page of rows gets the datum built
        // in its own memory (one copy, flat), a store a copy of it.
        unsafe {
            // A row stored before a column was added with a default has
            // fewer columns than the table: the default is in the
            // catalog, not in the row. A composite value carries every
            // column (a reader of it never looks at the catalog), so the
            // row is expanded first, as a whole-row reference would be.
            let natts = (*(*tuple).t_data).t_infomask2 & pg_sys::HEAP_NATTS_MASK as u16;
            let tuple = if (natts as i32) < (*desc).natts {
                pg_sys::heap_expand_tuple(tuple, desc)
            } else {
                tuple
            };
            if let Some(a) = &self.aside {
                let mut isnull = false;
                let id = pg_sys::heap_getattr(tuple, a.column as i32, desc, &mut isnull);
                let id = if isnull { &[][..] } else { varlena_bytes(id) };
                if self.set_aside(id, || pg_sys::heap_copy_tuple_as_datum(tuple, desc)) {
                    return;
                }
            }
            match &mut self.sink {
                Sink::Rows(rows, cxt) => {
                    let old = pg_sys::MemoryContextSwitchTo(*cxt);
                    rows.push(pg_sys::heap_copy_tuple_as_datum(tuple, desc));
                    pg_sys::MemoryContextSwitchTo(old);
                }
                // The store copies the row: one with no value out of line
                // (the rest are as a composite value's) goes in as it is.
                Sink::Store(store, _)
                    if (*(*tuple).t_data).t_infomask & pg_sys::HEAP_HASEXTERNAL as u16 == 0 =>
                {
                    pg_sys::tuplestore_puttuple(*store, tuple)
                }
                Sink::Store(..) => return self.keep(pg_sys::heap_copy_tuple_as_datum(tuple, desc)),
            }
            self.want -= 1;
        }
    }

    /// From now on, rows at or below id `bound` (in `collation`; `column`
    /// is the `id` column's number), and every row after the first of
    /// them, are kept aside instead of stored, for [`Page::take_aside`];
    /// they count as found. Rows above it go to the page as before. With
    /// no bound, every row is kept aside.
    pub fn divert(&mut self, bound: Option<Vec<u8>>, column: i16, collation: Oid) {
        self.aside = Some(Aside {
            bound,
            column,
            collation,
            rows: Vec::new(),
            // SAFETY: reads the backend's current context.
            cxt: unsafe { pg_sys::CurrentMemoryContext },
        });
    }

    /// The rows kept aside since [`Page::divert`], newest first, with
    /// their ids; the page wants them again, and keeps every row again.
    pub fn take_aside(&mut self) -> Vec<(Vec<u8>, Datum)> {
        let rows = self.aside.take().map(|a| a.rows).unwrap_or_default();
        self.want += rows.len() as i64;
        rows
    }

    /// Keeps the row of id `id` aside when it is due (see
    /// [`Page::divert`]), copied by `copy` into the aside's memory; false
    /// when it goes to the page.
    fn set_aside(&mut self, id: &[u8], copy: impl FnOnce() -> Datum) -> bool {
        let Some(a) = &mut self.aside else {
            return false;
        };
        let above = |b: &Vec<u8>| text_cmp(id, b, a.collation).is_gt();
        if a.rows.is_empty() && a.bound.as_ref().is_some_and(above) {
            return false;
        }
        // SAFETY: the aside's memory is its creator's, live for the call.
        let row = unsafe {
            let old = pg_sys::MemoryContextSwitchTo(a.cxt);
            let row = copy();
            pg_sys::MemoryContextSwitchTo(old);
            row
        };
        a.rows.push((id.to_vec(), row));
        self.want -= 1;
        true
    }

    /// Appends one row another node sent (see `wire::decode`; the caller
    /// marks the page [`Page::mark_unchecked`]) or that this page set
    /// aside (a merge); false once the page is full.
    ///
    /// # Safety
    /// As [`Page::push`].
    pub unsafe fn add_row(&mut self, d: Datum) -> bool {
        if !self.is_full() {
            // SAFETY: as the caller's.
            unsafe { self.push(d) };
        }
        !self.is_full()
    }

    /// Empties the page, to be read again.
    pub fn clear(&mut self) {
        match &mut self.sink {
            // SAFETY: the store is live for the call.
            Sink::Store(store, _) => unsafe { pg_sys::tuplestore_clear(*store) },
            Sink::Rows(rows, _) => rows.clear(),
        }
        self.want = self.size;
    }

    /// The page's rows, in the memory of the caller of `SPI_connect`.
    pub fn into_rows(self) -> Vec<Datum> {
        let Sink::Rows(rows, _) = self.sink else {
            unreachable!("into_rows is called on pages collected as rows")
        };
        rows
    }
}
