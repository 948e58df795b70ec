//! A search's arguments, checked: from `alerts_search`'s SQL arguments
//! (here), or from the quals of a query the custom scan runs (built by
//! `custom_scan/exec/`). Every wrong argument is an ERROR that names it
//! and the fix, before anything is read.

use alerts_core::walk::RarePaths;
use alerts_core::{ulid, Filter};
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use super::call::{Ascending, Call, TimeBound};
use super::indexes::Indexes;
use super::spi::cstr_owned;
use crate::datum::{error, text_datum};

/// The arguments of a search, checked: from `alerts_search`'s SQL
/// arguments, or from the quals of a query the custom scan runs.
pub struct Args<'a> {
    /// The table (from the first argument's row type) and its row type.
    pub relid: Oid,
    pub rowtype: Oid,
    pub org: Datum,
    pub filter: Datum,
    pub compiled: &'a Filter,
    /// The column filter's datum, compiled against the table's row type.
    pub columns: Option<(Datum, crate::columns::Columns)>,
    /// `since`, sent on when a Citus call is routed to another node; None
    /// from the custom scan, which is never offered for a Citus table (its
    /// window is `floor` alone).
    pub since: Option<Datum>,
    /// The window's smallest id.
    pub floor: Datum,
    /// Ids below this; None: no upper bound (a first page).
    pub before: Option<Datum>,
    pub page_size: i32,
    /// Rows a rare path may add past `page_size` from what it read anyway
    /// (`Page::with_spare`): the custom scan's one-row first page of a
    /// partition read in a merge. 0 from `alerts_search`.
    pub spare: i64,
    /// Oldest first (then `before` is unused: the bounds are here).
    pub ascending: Option<Ascending>,
    /// A partitioned table read by a plain query's scan, in several
    /// searches: the partition tree its plan read
    /// (`partitions::planned_tree`). The direct walk reads only those
    /// partitions; a search through statements, which read the table's
    /// partitions as they are, raises an ERROR if the tree is no longer
    /// that (`partitions::unchanged`).
    pub pinned: Option<&'a [Oid]>,
    /// Keys at which a row's value must not be an array
    /// (`containment::whole_keys`): the custom scan's `@>` of strings and
    /// booleans, which the filter implies but for arrays. The direct walk
    /// tests it in its exact check; other routes leave it to the scan
    /// (`Page::whole_checked`). Empty from `alerts_search`.
    pub whole: &'a [String],
    /// The query's bounds on time columns, which the direct walk tests
    /// too (`TimeBound`): the custom scan's. Empty from `alerts_search`.
    pub times: &'a [TimeBound],
}

impl<'a> Args<'a> {
    /// A search's arguments, for `alerts_search` (`checked_args`, which
    /// adds `since` for a routed call) and for the custom scan (which
    /// adds the bounds of a page read oldest first): `page_size` is
    /// checked here for both. The filter is compiled and the column
    /// filter compiled against `rowtype` by the caller, each with its own
    /// errors.
    pub fn new(
        (relid, rowtype): (Oid, Oid),
        org: Datum,
        (filter, compiled): (Datum, &'a Filter),
        columns: Option<(Datum, crate::columns::Columns)>,
        floor: Datum,
        before: Option<Datum>,
        page_size: i64,
    ) -> Args<'a> {
        if page_size < 1 {
            error(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("alerts_search: page_size must be at least 1, got {page_size}"),
                "pages are usually 50 rows",
            );
        }
        let page_size = i32::try_from(page_size).unwrap_or(i32::MAX);
        Args {
            relid,
            rowtype,
            org,
            filter,
            compiled,
            columns,
            since: None,
            floor,
            before,
            page_size,
            spare: 0,
            ascending: None,
            pinned: None,
            whole: &[],
            times: &[],
        }
    }

    /// The call the page algorithms and walkers see, on a relation (the
    /// table, a shard or a partition of it) that offers `indexes`.
    pub fn call(&self, indexes: &Indexes) -> Call<'a> {
        let compiled = self.compiled;
        let jsonpath = compiled.gin_jsonpath();
        Call {
            org: self.org,
            filter: self.filter,
            compiled,
            columns: self.columns.as_ref().map(|c| c.0),
            floor: self.floor,
            // '8' sorts after every ULID; rows with other ids at or after
            // it are read first on a first page (`Walk::above`).
            before: self.before.unwrap_or_else(|| text_datum("8")),
            first_page: self.before.is_none(),
            paths: RarePaths {
                // The rare paths: the tenant-keys index if the relation has
                // one, else a GIN index on the attributes when the filter
                // has a form it answers (not `{}`, which every row matches).
                keys: indexes.keys && !compiled.is_empty(),
                gin: indexes.gin && jsonpath.is_some(),
            },
            jsonpath,
            ids_bytewise: indexes.direct.is_some_and(|l| l.cols.ids_bytewise()),
            ascending: self.ascending,
            whole: self.whole,
            times: self.times,
        }
    }
}

/// An ERROR unless the table's columns now (`desc`, read under the
/// search's lock) are those the calling query was planned with
/// (`expected`): `alerts_search(NULL::t, ...)` names the table only by
/// its row type, so the query does not lock it while it is planned, and
/// an ALTER TABLE may commit in between.
///
/// # Safety
/// Both descriptors are live (`expected` may be null).
pub unsafe fn same_columns_as_planned(
    desc: pg_sys::TupleDesc,
    expected: pg_sys::TupleDesc,
    relid: Oid,
) {
    // SAFETY: as the caller's; attributes are read in 1..=natts.
    unsafe {
        if expected.is_null() {
            return;
        }
        let same = (*desc).natts == (*expected).natts
            && (1..=(*desc).natts).all(|i| {
                let (a, b) = (
                    crate::compat::attribute(desc, i),
                    crate::compat::attribute(expected, i),
                );
                a.attisdropped == b.attisdropped && (a.attisdropped || a.atttypid == b.atttypid)
            });
        if !same {
            error(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "alerts_search: the columns of table {} changed after this query was planned",
                    cstr_owned(pg_sys::get_rel_name(relid))
                ),
                "run the query again (a prepared statement is planned again on its next run)",
            );
        }
    }
}

/// Reads and checks the arguments (ERROR on a wrong one).
pub unsafe fn checked_args<'a>(fcinfo: pg_sys::FunctionCallInfo) -> Args<'a> {
    // SAFETY: argument datums are read only where they are not null.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let rowtype = pg_sys::get_fn_expr_argtype(flinfo, 0);
        let relid = if rowtype == pg_sys::InvalidOid {
            pg_sys::InvalidOid
        } else {
            pg_sys::get_typ_typrelid(rowtype)
        };
        if relid == pg_sys::InvalidOid {
            error(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "alerts_search: first argument must be a table's row type, got {}",
                    cstr_owned(pg_sys::format_type_be(rowtype))
                ),
                "call it as SELECT * FROM alerts_search(NULL::alerts, $1, $2)",
            );
        }
        // Locked as a statement reading it would be, before anything of it
        // is read or cached: the invalidations of DDL that committed before
        // are seen, and none that changes its columns can commit until the
        // transaction ends (the row type read below stays the rows' type).
        pg_sys::LockRelationOid(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        // The table comes from the argument's type, not from a name the
        // caller wrote: check what naming it would (USAGE on its schema),
        // with Postgres' own error.
        super::reader::require_schema_usage(relid);
        let arg = |n: usize| pgrx::fcinfo::pg_getarg_datum(fcinfo, n);
        let (Some(org), Some(filter), Some(since), Some(size)) = (arg(1), arg(2), arg(3), arg(5))
        else {
            error(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "alerts_search: organisation_id, filter, since and page_size must not be NULL".into(),
                "pass '{}' as the filter to match every alert, and leave before_id NULL for the first page",
            );
        };
        let page_size = size.value() as i32 as i64;
        // Compiles (and so validates) the filter, with the filter's own errors.
        let compiled = crate::filter_cache::compiled(fcinfo, filter);
        let floor_ms = ulid::unix_ms_of_pg_timestamp(since.value() as i64).unwrap_or_else(|| {
            error(
                PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
                "alerts_search: since is after the last time a ULID can hold".into(),
                "pass a finite timestamp",
            )
        });
        let floor = text_datum(std::str::from_utf8(&ulid::floor(floor_ms)).expect("ascii"));
        // Checked (and compiled) here, so that a wrong column filter is an
        // ERROR on every layout, before any routing. Definitions older than
        // the columns argument pass six arguments.
        let columns = (if (*fcinfo).nargs > 6 { arg(6) } else { None }).map(|d| {
            let desc = pg_sys::lookup_rowtype_tupdesc(rowtype, -1);
            let name = cstr_owned(pg_sys::get_rel_name(relid));
            let compiled = crate::columns::Columns::compile(d, desc, &name);
            pg_sys::DecrTupleDescRefCount(desc);
            (d, compiled)
        });
        Args {
            since: Some(since),
            ..Args::new(
                (relid, rowtype),
                org,
                (filter, compiled),
                columns,
                floor,
                arg(4),
                page_size,
            )
        }
    }
}
