//! The few SPI operations `alerts_search` needs: prepare and keep a
//! statement, run it read-only, read ids from its result, and append its rows
//! to the page being built ([`Page`]).

use std::cell::RefCell;
use std::ffi::CString;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::error;
pub use crate::datum::{cstr_owned, text_of};

/// One running search's SPI connection, made on its first statement: most
/// pages (a direct walk, a remembered rare filter read from the keys index)
/// run no statement, and connecting, pinning `search_path` and restoring it
/// cost about 0.7 µs of a 10 µs no-match call (`benches/percall.sh`).
struct Lazy {
    /// The GUC nest level of the pinned `search_path`, once connected.
    guc_level: Option<i32>,
    /// The memory context current when the search began, current again
    /// when it ends (`SPI_finish` returns to the one current at
    /// `SPI_connect`, which may be a walker's, deleted by then).
    cxt: pg_sys::MemoryContext,
}

thread_local! {
    /// One entry per running search, innermost last (a search may run
    /// inside a statement of another).
    static LAZY: RefCell<Vec<Lazy>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` as a search whose statements connect to SPI lazily
/// ([`connect`]): at its end the connection, if made, is finished,
/// `search_path` restored and the memory context current at the start made
/// current again. On error the transaction's abort does the first two, and
/// only the search's entry is dropped.
///
/// # Safety
/// Inside a transaction.
pub unsafe fn in_search<T>(f: impl FnOnce() -> T) -> T {
    let depth = LAZY.with(|l| {
        let mut l = l.borrow_mut();
        // SAFETY: reads the backend's current context.
        l.push(Lazy {
            guc_level: None,
            cxt: unsafe { pg_sys::CurrentMemoryContext },
        });
        l.len() - 1
    });
    let ok = std::cell::Cell::new(false);
    pgrx::PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        let out = f();
        ok.set(true);
        out
    }))
    .finally(|| {
        // Entries above `depth` are inner searches' that ended by an error.
        let ended = LAZY.with(|l| {
            let mut l = l.borrow_mut();
            l.truncate(depth + 1);
            l.pop()
        });
        if let (true, Some(lazy)) = (ok.get(), ended) {
            // SAFETY: the connection and nest level are this search's own.
            unsafe {
                if let Some(level) = lazy.guc_level {
                    pg_sys::SPI_finish();
                    pg_sys::AtEOXact_GUC(true, level);
                }
                pg_sys::MemoryContextSwitchTo(lazy.cxt);
            }
        }
    })
    .execute()
}

/// Connects the innermost running search to SPI if it is not yet, with
/// `search_path` pinned to `pg_catalog, pg_temp` (our statements resolve
/// operators and functions with a fixed path, whatever the caller's, as a
/// function's `SET search_path` clause would; restored at the end of the
/// search, or by the transaction's abort on error). Outside [`in_search`]
/// (callers that connect themselves) it does nothing.
///
/// # Safety
/// Inside a transaction.
pub unsafe fn connect() {
    LAZY.with(|l| {
        let mut l = l.borrow_mut();
        let Some(top) = l.last_mut() else { return };
        if top.guc_level.is_some() {
            return;
        }
        // SAFETY: as the caller's.
        unsafe {
            let level = pg_sys::NewGUCNestLevel();
            crate::compat::set_local_search_path(c"pg_catalog, pg_temp");
            if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
                error(
                    PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                    "alerts_search: SPI_connect failed".into(),
                    "report this as a bug",
                );
            }
            top.guc_level = Some(level);
        }
    })
}

/// An identifier quoted for SQL, as `quote_ident` would.
pub fn quoted(ident: &str) -> String {
    let c = CString::new(ident).expect("identifiers have no NUL");
    // SAFETY: quote_identifier returns its argument or a palloc'd copy.
    unsafe { cstr_owned(pg_sys::quote_identifier(c.as_ptr())) }
}

/// Prepares a statement for this SPI connection (freed by `SPI_finish`
/// unless [`keep`] keeps it), left to the plan cache's choice between
/// custom and generic plans.
///
/// # Safety
/// Inside a search ([`in_search`]: this connects it) or with SPI connected.
pub unsafe fn prepare(sql: &str, types: &[Oid]) -> pg_sys::SPIPlanPtr {
    // SAFETY: as prepare_with.
    unsafe { prepare_with(sql, types, 0) }
}

/// As [`prepare`], a statement that always runs its generic plan: for
/// the index statements, whose only possible plans are the bitmap scan of
/// the index and a sequential scan. Left to choose, the plan cache compared
/// the generic plan's cost (a default selectivity) with custom plans priced
/// from the call's keys and planned every call anew (0.1-0.2 ms each).
///
/// # Safety
/// Inside a search ([`in_search`]: this connects it) or with SPI connected.
pub unsafe fn prepare_generic(sql: &str, types: &[Oid]) -> pg_sys::SPIPlanPtr {
    // SAFETY: as prepare_with.
    unsafe { prepare_with(sql, types, pg_sys::CURSOR_OPT_GENERIC_PLAN as i32) }
}

/// Keeps prepared statements for the session (`SPI_keepplan`). A set of
/// statements is kept together once all of them are prepared: an error or
/// a cancel while preparing one leaves the others in the connection's
/// memory, freed with it, never kept without their owner.
///
/// # Safety
/// The plans were prepared on the current connection and are not kept.
pub unsafe fn keep(plans: &[pg_sys::SPIPlanPtr]) {
    for &plan in plans {
        // SAFETY: as the caller's.
        unsafe { pg_sys::SPI_keepplan(plan) };
    }
}

unsafe fn prepare_with(sql: &str, types: &[Oid], options: i32) -> pg_sys::SPIPlanPtr {
    let c = CString::new(sql).expect("no NUL in SQL");
    // SAFETY: SPI is connected here or by the caller; `types` outlives the call.
    unsafe {
        connect();
        let plan = pg_sys::SPI_prepare_cursor(
            c.as_ptr(),
            types.len() as i32,
            types.as_ptr() as *mut Oid,
            options,
        );
        if plan.is_null() {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("alerts_search could not prepare: {}", cstr_owned(pg_sys::SPI_result_code_string(pg_sys::SPI_result))),
                "check that the table has the columns id, organisation_id, attribute_values and attribute_values_bitmap",
            );
        }
        plan
    }
}

/// Runs a prepared statement read-only (the caller's snapshot) and returns
/// its result table, which stays valid until `SPI_finish`.
///
/// # Safety
/// Inside a search ([`in_search`]: this connects it) or with SPI connected;
/// `args` must match the plan's parameter types.
pub unsafe fn execute(plan: pg_sys::SPIPlanPtr, args: &[Datum]) -> *mut pg_sys::SPITupleTable {
    let nulls = vec![b' ' as std::ffi::c_char; args.len()];
    // SAFETY: as the caller's; one flag per argument.
    unsafe { run(plan, args.as_ptr(), nulls.as_ptr()) }
}

/// Executes a plan read-only; an ERROR if it did not run as a SELECT.
unsafe fn run(
    plan: pg_sys::SPIPlanPtr,
    values: *const Datum,
    nulls: *const std::ffi::c_char,
) -> *mut pg_sys::SPITupleTable {
    // SAFETY: SPI is connected here or by the caller; values and nulls
    // match the plan's parameters.
    unsafe {
        connect();
        let rc = pg_sys::SPI_execute_plan(plan, values as *mut Datum, nulls, true, 0);
        if rc != pg_sys::SPI_OK_SELECT as i32 {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!(
                    "alerts_search: query failed: {}",
                    cstr_owned(pg_sys::SPI_result_code_string(rc))
                ),
                "report this as a bug",
            );
        }
        pg_sys::SPI_tuptable
    }
}

/// Number of rows of a result table.
///
/// # Safety
/// `tt` must be a live SPI result table.
pub unsafe fn rows(tt: *mut pg_sys::SPITupleTable) -> i64 {
    // SAFETY: tt is a live SPI result table.
    unsafe { (*tt).numvals as i64 }
}

/// Column 1 of the first row of a result table, if there is a row and the
/// value is not NULL.
///
/// # Safety
/// `tt` must be a live SPI result table.
pub unsafe fn first_value(tt: *mut pg_sys::SPITupleTable) -> Option<Datum> {
    // SAFETY: tt is live; row 0 exists when numvals > 0.
    unsafe {
        if rows(tt) == 0 {
            return None;
        }
        let mut isnull = true;
        let d = pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, 1, &mut isnull);
        (!isnull).then_some(d)
    }
}

/// The first id a one-column statement returns, if any (bytes copied).
///
/// # Safety
/// As [`execute`]; the statement returns one text column.
pub unsafe fn first_id(plan: pg_sys::SPIPlanPtr, args: &[Datum]) -> Option<Vec<u8>> {
    // SAFETY: as execute; the value is a non-null text datum.
    unsafe { first_value(execute(plan, args)).map(|d| crate::datum::varlena_bytes(d).to_vec()) }
}

/// Runs a prepared statement read-only, as [`execute`], with NULL where an
/// argument is None.
///
/// # Safety
/// As [`execute`].
pub unsafe fn execute_nullable(
    plan: pg_sys::SPIPlanPtr,
    args: &[Option<Datum>],
) -> *mut pg_sys::SPITupleTable {
    let values: Vec<Datum> = args
        .iter()
        .map(|a| a.unwrap_or(Datum::from(0usize)))
        .collect();
    let nulls: Vec<std::ffi::c_char> = args
        .iter()
        .map(|a| if a.is_some() { b' ' } else { b'n' } as std::ffi::c_char)
        .collect();
    // SAFETY: as the caller's; one flag per argument.
    unsafe { run(plan, values.as_ptr(), nulls.as_ptr()) }
}

/// Where a page's rows go: the tuplestore `alerts_search` returns, or the
/// rows `alerts_search_wire` sends (values copied out of SPI's memory).
enum Sink {
    Store(*mut pg_sys::Tuplestorestate),
    /// The rows, and the memory they are kept in (the page's creator's).
    Rows(Vec<Datum>, pg_sys::MemoryContext),
}

/// The page being built, in the table's row type, and how many rows it
/// still needs.
pub struct Page {
    sink: Sink,
    /// The table's row type: every row stored is of it.
    rowtype: Oid,
    /// Rows asked for.
    size: i64,
    /// Rows still to find.
    pub want: i64,
}

impl Page {
    /// A page of rows of type `rowtype` returned as the rows of a
    /// tuplestore.
    pub fn store(store: *mut pg_sys::Tuplestorestate, size: i64, rowtype: Oid) -> Page {
        Page {
            sink: Sink::Store(store),
            rowtype,
            size,
            want: size,
        }
    }

    /// A page of rows of type `rowtype` collected as rows (see
    /// [`Page::into_rows`]), kept in the current memory context: create it
    /// before `SPI_connect`.
    pub fn rows(size: i64, rowtype: Oid) -> Page {
        Page {
            // SAFETY: reads the backend's current context.
            sink: Sink::Rows(Vec::new(), unsafe { pg_sys::CurrentMemoryContext }),
            rowtype,
            size,
            want: size,
        }
    }

    pub fn size(&self) -> i64 {
        self.size
    }

    pub fn is_full(&self) -> bool {
        self.want <= 0
    }

    /// Appends one row (a non-NULL composite datum of the table's row type).
    ///
    /// # Safety
    /// `d` must be a live composite datum of the page's row type; SPI is
    /// connected.
    unsafe fn push(&mut self, d: Datum) {
        // SAFETY: as the caller's.
        unsafe {
            match &mut self.sink {
                Sink::Store(store) => {
                    let td = pg_sys::pg_detoast_datum(d.cast_mut_ptr()) as pg_sys::HeapTupleHeader;
                    let mut tmp = pg_sys::HeapTupleData {
                        t_len: pgrx::varsize_any(td as *const pg_sys::varlena) as u32,
                        t_data: td,
                        ..Default::default()
                    };
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
        let mut copied = 0;
        // SAFETY: tt is a live SPI result table; its column 1 is checked to
        // be the row type before any value is read.
        unsafe {
            self.check_type((*tt).tupdesc);
            for i in 0..rows(tt) as usize {
                if self.is_full() {
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
            if let Sink::Rows(rows, cxt) = &mut self.sink {
                let old = pg_sys::MemoryContextSwitchTo(*cxt);
                rows.push(pg_sys::heap_copy_tuple_as_datum(tuple, desc));
                pg_sys::MemoryContextSwitchTo(old);
                self.want -= 1;
                return;
            }
            self.push(pg_sys::heap_copy_tuple_as_datum(tuple, desc))
        }
    }

    /// Appends one row another node sent (see `wire::decode`); false once
    /// the page is full.
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
            Sink::Store(store) => unsafe { pg_sys::tuplestore_clear(*store) },
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
