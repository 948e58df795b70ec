//! The few SPI operations `alerts_search` needs: prepare and keep a
//! statement, run it read-only, read ids from its result (the page its
//! rows go to is `page.rs`).

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

/// One entry per running search, innermost last (a search may run inside
/// a statement of another): a slot of the backend's state.
#[derive(Default)]
struct Searches(RefCell<Vec<Lazy>>);

fn with_searches<R>(f: impl FnOnce(&RefCell<Vec<Lazy>>) -> R) -> R {
    f(&crate::backend::slot::<Searches>().0)
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
    let depth = with_searches(|l| {
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
        let ended = with_searches(|l| {
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
    with_searches(|l| {
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
            // before any of the extension's statements runs
            crate::overloads::refuse_foreign();
        }
    })
}

/// The schema the extension is installed in, quoted (read when a table's
/// statements are first prepared).
///
/// # Safety
/// Inside a search ([`in_search`]: this connects it) or with SPI connected.
pub unsafe fn extension_schema() -> String {
    // SAFETY: as the caller's; one catalog read.
    unsafe {
        connect();
        let rc = pg_sys::SPI_execute(
            c"SELECT n.nspname::text FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'alerts'".as_ptr(),
            true,
            1,
        );
        let found = (rc == pg_sys::SPI_OK_SELECT as i32)
            .then(|| first_value(pg_sys::SPI_tuptable))
            .flatten();
        match found {
            Some(d) => quoted(&String::from_utf8_lossy(crate::datum::varlena_bytes(d))),
            None => error(
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                "alerts: the extension is not installed in this database".into(),
                "CREATE EXTENSION alerts",
            ),
        }
    }
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
        selected(pg_sys::SPI_execute_plan(
            plan,
            values as *mut Datum,
            nulls,
            true,
            0,
        ));
        pg_sys::SPI_tuptable
    }
}

/// An ERROR unless a statement ran as a SELECT (SPI's return code `rc`).
fn selected(rc: i32) {
    if rc != pg_sys::SPI_OK_SELECT as i32 {
        error(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            format!(
                "alerts_search: query failed: {}",
                // SAFETY: a static string for any code.
                unsafe { cstr_owned(pg_sys::SPI_result_code_string(rc)) }
            ),
            "report this as a bug",
        );
    }
}

// `tcop/tstoreReceiver.h`, alike in 15, 16 and 18 (pgrx does not bind it).
unsafe extern "C-unwind" {
    fn SetTuplestoreDestReceiverParams(
        receiver: *mut pg_sys::DestReceiver,
        store: *mut pg_sys::Tuplestorestate,
        cxt: pg_sys::MemoryContext,
        detoast: bool,
        target: pg_sys::TupleDesc,
        map_failure_msg: *const std::ffi::c_char,
    );
}

/// Runs a prepared statement read-only (the caller's snapshot), its rows
/// going straight into `store` (living in `cxt`) as rows of `target`, by
/// position (`target`'s dropped columns NULL); an ERROR with message
/// `mismatch` when its columns are not `target`'s. Returns how many rows
/// it stored. The rows are stored as the executor made them, not
/// detoasted: for a statement whose rows come from another node, which
/// are never pointers into a table here.
///
/// # Safety
/// As [`execute_nullable`]; `store` and `target` are live.
pub unsafe fn execute_into(
    plan: pg_sys::SPIPlanPtr,
    args: &[Option<Datum>],
    store: *mut pg_sys::Tuplestorestate,
    cxt: pg_sys::MemoryContext,
    target: pg_sys::TupleDesc,
    mismatch: &std::ffi::CStr,
) -> u64 {
    // SAFETY: as the caller's; one parameter per argument, typed as the
    // plan's; the receiver is freed here (on an ERROR, with the memory).
    unsafe {
        connect();
        let params = pg_sys::makeParamList(args.len() as i32);
        for (i, (p, a)) in (*params)
            .params
            .as_mut_slice(args.len())
            .iter_mut()
            .zip(args)
            .enumerate()
        {
            p.value = a.unwrap_or(Datum::from(0usize));
            p.isnull = a.is_none();
            p.pflags = pg_sys::PARAM_FLAG_CONST as u16;
            p.ptype = pg_sys::SPI_getargtypeid(plan, i as i32);
        }
        let dest = pg_sys::CreateDestReceiver(pg_sys::CommandDest::DestTuplestore);
        SetTuplestoreDestReceiverParams(dest, store, cxt, false, target, mismatch.as_ptr());
        let options = pg_sys::SPIExecuteOptions {
            params,
            read_only: true,
            allow_nonatomic: false,
            must_return_tuples: false,
            tcount: 0,
            dest,
            owner: std::ptr::null_mut(),
        };
        let rc = pg_sys::SPI_execute_plan_extended(plan, &options);
        if let Some(destroy) = (*dest).rDestroy {
            destroy(dest);
        }
        selected(rc);
        pg_sys::SPI_processed
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
