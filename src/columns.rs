//! Column filters (`alerts_search(..., columns => '{"priority_id": [1, 2]}')`)
//! resolved against a row type: each named column's number, its values
//! converted by the column type's input function, and the type's default
//! equality in the column's collation: what `priority_id IN (1, 2)` would
//! compare with. The shape is checked by `alerts_core::columns`.
//!
//! The direct walk tests the columns of the heap row it fetched; the
//! statements call `alerts_columns_match(a, $n)` on their candidates.

use alerts_core::columns::{parse, ColumnClause};
use pgrx::pg_guard;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::pg_sys::PgTryBuilder;
use pgrx::pg_sys::{self, AttrNumber, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::{arg, cstr_owned, error, jsonb_value, varlena_bytes, OrRaise};
use crate::unguarded::{self, guarded};

crate::datum::finfo_v1!(pg_finfo_alerts_columns_match);

/// One column's test.
#[derive(Clone)]
struct Test {
    attno: AttrNumber,
    /// The column as compiled: its name, type and type modifier (a row
    /// type that has the same at `attno` takes the same test).
    name: String,
    ty: Oid,
    typmod: i32,
    /// The accepted non-null values, in the column's type.
    values: Vec<Datum>,
    /// Whether NULL is accepted (`null` among the values).
    null: bool,
    /// The type's equality function (palloc'd: it may cache in fn_extra).
    eq: *mut pg_sys::FmgrInfo,
    collation: Oid,
}

/// A column filter compiled against one row type.
#[derive(Clone)]
pub struct Columns {
    tests: Vec<Test>,
    /// The largest column number tested: deform rows up to it.
    pub last: AttrNumber,
}

impl Columns {
    /// Compiles the column filter `d` (a jsonb datum) against row
    /// descriptor `desc` of table `table` (for messages). Values and
    /// equality functions are allocated in the current memory context.
    ///
    /// # Safety
    /// `d` is a non-null jsonb datum and `desc` a valid descriptor.
    pub unsafe fn compile(d: Datum, desc: pg_sys::TupleDesc, table: &str) -> Columns {
        // SAFETY: as the caller's; attribute numbers are bounded by natts.
        unsafe {
            let clauses = parsed(d);
            let tests: Vec<Test> = clauses.iter().map(|c| test(c, desc, table)).collect();
            let last = tests.iter().map(|t| t.attno).max().unwrap_or(0);
            Columns { tests, last }
        }
    }

    /// Whether rows of descriptor `desc` take these tests as they are:
    /// each tested column is at the same number there, with the same
    /// name, type, type modifier and collation (a partition made with
    /// `PARTITION OF` has its table's; one attached with other column
    /// numbers does not).
    ///
    /// # Safety
    /// `desc` is a valid descriptor.
    pub unsafe fn fits(&self, desc: pg_sys::TupleDesc) -> bool {
        self.tests.iter().all(|t| {
            // SAFETY: attribute numbers are checked against natts first.
            t.attno as i32 <= unsafe { (*desc).natts } && {
                let a = unsafe { crate::compat::attribute(desc, t.attno as i32) };
                !a.attisdropped
                    && a.atttypid == t.ty
                    && a.atttypmod == t.typmod
                    && a.attcollation == t.collation
                    && name_of(a) == t.name
            }
        })
    }

    /// Whether a row passes every test; `value` reads its column (None:
    /// NULL) under the batch's guard, so it calls only [`unguarded`]'s
    /// functions: a guarded `pg_sys` call's ERROR cannot unwind out of a
    /// batch (the process aborts).
    ///
    /// # Safety
    /// `value` returns datums of the compiled row type's columns.
    pub unsafe fn matches(
        &self,
        value: impl Fn(&unguarded::Guard, AttrNumber) -> Option<Datum>,
    ) -> bool {
        // SAFETY: both datums are of the column's type, which `eq`
        // compares; every comparison under one guard (`value` reads the
        // row in place).
        unsafe {
            guarded(|g| {
                self.tests.iter().all(|t| match value(g, t.attno) {
                    None => t.null,
                    Some(v) => t
                        .values
                        .iter()
                        .any(|&x| unguarded::call2(g, t.eq, t.collation, v, x).value() != 0),
                })
            })
        }
    }
}

/// The test of one clause: the column by name, its values converted.
unsafe fn test(c: &ColumnClause, desc: pg_sys::TupleDesc, table: &str) -> Test {
    // SAFETY: as `compile`'s.
    unsafe {
        let Some(att) = (1..=(*desc).natts)
            .map(|n| crate::compat::attribute(desc, n))
            .find(|a| !a.attisdropped && name_of(a) == c.column)
        else {
            error(
                PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
                format!("column \"{}\" of columns does not exist in table {table}", c.column),
                "columns names the table's own columns (as in its CREATE TABLE); attribute keys go in the filter argument",
            );
        };
        let ty = att.atttypid;
        let base = pg_sys::getBaseType(ty);
        let cache = pg_sys::lookup_type_cache(base, pg_sys::TYPECACHE_EQ_OPR as i32);
        if (*cache).eq_opr == pg_sys::InvalidOid {
            error(
                PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION,
                format!(
                    "column \"{}\" of table {table} has type {}, which has no equality operator",
                    c.column,
                    cstr_owned(pg_sys::format_type_be(ty))
                ),
                "leave this column out of columns and filter the page's rows in SQL",
            );
        }
        let eq = pg_sys::palloc0(std::mem::size_of::<pg_sys::FmgrInfo>()) as *mut pg_sys::FmgrInfo;
        pg_sys::fmgr_info(pg_sys::get_opcode((*cache).eq_opr), eq);
        let mut input = pg_sys::InvalidOid;
        let mut ioparam = pg_sys::InvalidOid;
        pg_sys::getTypeInputInfo(ty, &mut input, &mut ioparam);
        let mut values = Vec::new();
        let mut null = false;
        for v in &c.values {
            match v {
                None => null = true,
                Some(text) => {
                    let cstr = std::ffi::CString::new(text.as_str()).unwrap_or_else(|_| {
                        error(
                            PgSqlErrorCode::ERRCODE_UNTRANSLATABLE_CHARACTER,
                            format!(
                                "the value for column \"{}\" contains a NUL character",
                                c.column
                            ),
                            "remove \\u0000 from the value",
                        )
                    });
                    values.push(input_value(&c.column, text, ty, || {
                        pg_sys::OidInputFunctionCall(
                            input,
                            cstr.as_ptr() as *mut _,
                            ioparam,
                            att.atttypmod,
                        )
                    }));
                }
            }
        }
        Test {
            attno: att.attnum,
            name: c.column.clone(),
            ty,
            typmod: att.atttypmod,
            values,
            null,
            eq,
            collation: att.attcollation,
        }
    }
}

/// The session's parsed column filters, by their jsonb bytes (a slot of
/// the backend's state).
#[derive(Default)]
struct Parsed(crate::filter_cache::SessionMap<Vec<ColumnClause>>);

/// The clauses of column filter `d`, from the session's parsed filters or
/// parsed (and kept): a filter sent again is not printed and parsed again.
///
/// # Safety
/// `d` is a non-null jsonb datum.
unsafe fn parsed(d: Datum) -> Vec<ColumnClause> {
    // SAFETY: as the caller's. A filter that does not parse raises and is
    // not kept.
    unsafe {
        let raw = varlena_bytes(d);
        crate::filter_cache::session_kept(&crate::backend::slot::<Parsed>().0, raw, || {
            parse(&jsonb_value(d)).or_raise()
        })
    }
}

/// A value read by the column type's input function (`read`), or an ERROR
/// that names the column when the type refuses it (a data exception, such
/// as `invalid input syntax for type integer`; other errors, a cancel for
/// one, pass through).
fn input_value(column: &str, text: &str, ty: Oid, read: impl FnOnce() -> Datum) -> Datum {
    let mut read = Some(read);
    PgTryBuilder::new(std::panic::AssertUnwindSafe(|| (read.take().expect("once"))()))
        .catch_others(|e| match e {
            CaughtError::PostgresError(report)
                if report.sql_error_code() as i32 & 0xfff
                    == PgSqlErrorCode::ERRCODE_DATA_EXCEPTION as i32 & 0xfff =>
            {
                error(
                    report.sql_error_code(),
                    format!(
                        "columns: {text:?} is not a value of column \"{column}\" ({}): {}",
                        // SAFETY: format_type_be returns a palloc'd string.
                        unsafe { cstr_owned(pg_sys::format_type_be(ty)) },
                        report.message()
                    ),
                    "give each column a value its type accepts, written as in a SQL literal ('42', 'open', '2026-01-01 00:00:00+00')",
                )
            }
            other => other.rethrow(),
        })
        .execute()
}

/// A column's name.
pub fn name_of(att: &pg_sys::FormData_pg_attribute) -> String {
    // SAFETY: a NameData is NUL-terminated within its 64 bytes.
    unsafe { cstr_owned(att.attname.data.as_ptr()) }
}

/// What `alerts_columns_match` keeps between rows: the filter compiled for
/// one row type.
struct Cached {
    raw: Vec<u8>,
    rowtype: (Oid, i32),
    columns: Columns,
}

/// `alerts_columns_match(row record, columns jsonb) RETURNS boolean`: the
/// row passes the column filter. What the statements of `alerts_search`
/// check on their candidates; usable in any query.
///
/// # Safety
/// Called by Postgres through the V1 convention, declared STRICT.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_columns_match(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_columns_match");
    // SAFETY: STRICT: a composite datum and a jsonb datum. The compiled
    // filter lives in fn_mcxt (dropped with it) and is rebuilt when the
    // filter or the row type changes.
    unsafe {
        let row = crate::datum::row_header(arg(fcinfo, 0));
        let filter = arg(fcinfo, 1);
        let raw = varlena_bytes(filter);
        let rowtype = (
            (*row).t_choice.t_datum.datum_typeid,
            (*row).t_choice.t_datum.datum_typmod,
        );
        let flinfo = (*fcinfo).flinfo;
        let cached: &Cached = crate::filter_cache::call_site(
            flinfo,
            |c: &Cached| c.raw == raw && c.rowtype == rowtype,
            || {
                // The values and equality functions live as long as the
                // cached filter.
                let old = pg_sys::MemoryContextSwitchTo((*flinfo).fn_mcxt);
                let desc = pg_sys::lookup_rowtype_tupdesc(rowtype.0, rowtype.1);
                let name = if (*desc).tdtypeid == pg_sys::RECORDOID {
                    "of the row".to_string()
                } else {
                    cstr_owned(pg_sys::format_type_be(rowtype.0))
                };
                let columns = Columns::compile(filter, desc, &name);
                pg_sys::DecrTupleDescRefCount(desc);
                pg_sys::MemoryContextSwitchTo(old);
                Cached {
                    raw: raw.to_vec(),
                    rowtype,
                    columns,
                }
            },
        );
        // Postgres' own GetAttributeByNum: on the minors that version
        // composite datums it ERRORs on a row formed under an incompatible
        // definition of its type (CVE-2026-6460), inside the batch's guard.
        let matched = cached.columns.matches(|g, attno| {
            let mut isnull = false;
            let v = unguarded::row_attribute(g, row, attno, &mut isnull);
            (!isnull).then_some(v)
        });
        Datum::from(matched)
    }
}
