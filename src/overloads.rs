//! No function another role created runs inside the extension's own
//! statements. They call the extension's functions qualified with its
//! schema, but a qualified call still resolves among every function of that
//! name in the schema, and an exact match of the argument types wins over
//! the extension's own signature (`alerts_columns_match(a, ...)` is declared
//! on `record` and called with the table's row type). A role with CREATE on
//! the schema (`public`, in databases made before PostgreSQL 15) could
//! define such an overload and have it run as the searching role, with that
//! role's rows: the class of CVE-2018-1058.
//!
//! So before the extension's statements run, the schema is checked for
//! functions that share a name with one of the extension's and are not its
//! members; if there is one, the call ERRORs and names it. Operators and
//! types need no check: the statements run with `search_path` pinned to
//! `pg_catalog, pg_temp`, and `pg_temp` is never searched for functions or
//! operators, and last for types. The check reads the catalog once per
//! change of `pg_proc` (a syscache callback moves an epoch), so a call
//! pays one comparison.

use std::cell::Cell;
use std::ffi::CStr;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::{cstr_owned, error};

/// The `pg_proc` epoch, and the epoch in which the schema was last found
/// clean (0: never).
struct Epochs {
    now: Cell<u64>,
    clean: Cell<u64>,
}

impl Default for Epochs {
    fn default() -> Epochs {
        Epochs {
            now: Cell::new(1),
            clean: Cell::new(0),
        }
    }
}

fn epochs() -> &'static Epochs {
    crate::backend::slot::<Epochs>()
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn proc_changed(_arg: Datum, _cache: i32, _hash: u32) {
    let e = epochs();
    e.now.set(e.now.get() + 1);
}

/// Registers the `pg_proc` callback.
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn register_callback() {
    // SAFETY: a callback that only bumps a counter.
    unsafe {
        pg_sys::CacheRegisterSyscacheCallback(
            crate::compat::cache_id(pg_sys::SysCacheIdentifier::PROCOID),
            Some(proc_changed),
            Datum::from(0usize),
        );
    }
}

/// The first function of the extension's schema that shares a name with
/// one of the extension's functions and is not one of them, with its
/// owner. Fully qualified: it means the same under any `search_path`.
const FOREIGN: &CStr = c"
SELECT pg_catalog.format('%s (owner %s)', p.oid::pg_catalog.regprocedure,
                         pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(p.proowner)))
FROM pg_catalog.pg_extension e
JOIN pg_catalog.pg_proc p ON p.pronamespace OPERATOR(pg_catalog.=) e.extnamespace
WHERE e.extname OPERATOR(pg_catalog.=) 'alerts'
  AND p.proname OPERATOR(pg_catalog.=) ANY (SELECT q.proname FROM pg_catalog.pg_depend d
                    JOIN pg_catalog.pg_proc q ON q.oid OPERATOR(pg_catalog.=) d.objid
                    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                      AND d.refobjid OPERATOR(pg_catalog.=) e.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                    AND d.objid OPERATOR(pg_catalog.=) p.oid
                    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                    AND d.refobjid OPERATOR(pg_catalog.=) e.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
ORDER BY 1 LIMIT 1";

/// ERRORs, naming it, if the extension's schema holds a function that could
/// capture one of the extension's calls (see the module's comment); else
/// nothing. The message names the SQL function running (`datum::error`).
///
/// # Safety
/// SPI connected, inside a transaction.
pub unsafe fn refuse_foreign() {
    let e = epochs();
    let now = e.now.get();
    if e.clean.get() == now {
        return;
    }
    // SAFETY: as the caller's; the statement is read-only.
    let found = unsafe {
        let rc = pg_sys::SPI_execute(FOREIGN.as_ptr(), true, 1);
        if rc != pg_sys::SPI_OK_SELECT as i32 || pg_sys::SPI_processed == 0 {
            None
        } else {
            let t = pg_sys::SPI_tuptable;
            let v = pg_sys::SPI_getvalue(*(*t).vals, (*t).tupdesc, 1);
            (!v.is_null()).then(|| cstr_owned(v))
        }
    };
    match found {
        None => e.clean.set(now),
        Some(function) => error(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "function {function} is in the alerts extension's schema but is not the extension's: it could run inside the extension's own statements, which refuse to run while it is there"
            ),
            "drop that function, or move the extension to a schema where only trusted roles have CREATE (CREATE EXTENSION alerts SCHEMA alerts; see docs/security.md)",
        ),
    }
}

/// [`refuse_foreign`] for a caller not connected to SPI.
///
/// # Safety
/// Inside a transaction.
pub unsafe fn refuse_foreign_connecting() {
    if epochs().clean.get() == epochs().now.get() {
        return;
    }
    // SAFETY: a connection of this call's own, finished before returning
    // (an ERROR's abort cleans it up otherwise).
    unsafe {
        if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                "SPI_connect failed".into(),
                "report this as a bug",
            );
        }
        refuse_foreign();
        pg_sys::SPI_finish();
    }
}

/// `pg_language`'s oid of C (`ClanguageId`, fixed in every version).
const C_LANGUAGE: Oid = Oid::from_u32(13);

/// Whether function `funcid` is written in C.
pub(crate) unsafe fn language_is_c(funcid: Oid) -> bool {
    // SAFETY: a syscache lookup, released here.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            crate::compat::cache_id(pg_sys::SysCacheIdentifier::PROCOID),
            pg_sys::Datum::from(funcid),
        );
        if tuple.is_null() {
            return false;
        }
        let form = pg_sys::GETSTRUCT(tuple) as *mut pg_sys::FormData_pg_proc;
        let c = (*form).prolang == C_LANGUAGE;
        pg_sys::ReleaseSysCache(tuple);
        c
    }
}
