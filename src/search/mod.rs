//! `alerts_search(rel anyelement, organisation_id, filter, since, before_id,
//! page_size) RETURNS SETOF anyelement`: exact pages, newest first.
//!
//! Where things are:
//! - this file: the SQL entry points and the call's setup (result store,
//!   pinned `search_path`, SPI);
//! - `args.rs`: the arguments, checked;
//! - `statements.rs`: the per-table prepared statements;
//! - `indexes.rs`: which indexes the table has;
//! - `call.rs`: one call's checked arguments and what the table offers;
//! - `walker.rs`: the trait the walkers implement;
//! - `walk.rs`: the page walk in chunks, and where it leaves for a rare
//!   path (the decisions themselves are pure, in `alerts_core::walk`);
//! - `scan/`: the walk as one direct scan of the pagination index (its
//!   heap fetch, keys reader and range ends beside it);
//! - `layout.rs`: what that scan needs of a table, from its relcache entry;
//! - `reader.rs`: the role a search reads a table as, and whether it
//!   reads it as it is;
//! - `probe.rs`: the statement walk's per-entry bloom test and what it
//!   counts;
//! - `rare.rs`: the tenant-keys, GIN and unbounded-walk paths;
//! - `leaves.rs`: a partitioned table by the direct walk, leaf by leaf,
//!   merged newest first;
//! - `partitions.rs`: which leaves a call reads, and one partition set for
//!   the statement walk on a partitioned table;
//! - `oldest.rs`: pages oldest first (`ORDER BY id ASC`, for the custom
//!   scan): the same walk and rare paths read the other way;
//! - `routes.rs`: the session's memory of filters found rare;
//! - `session.rs`: what the session keeps per table, held by one search
//!   at a time;
//! - `citus.rs`: Citus distributed tables (the tenant's shard, or one
//!   routed statement to the node that has it);
//! - `wire.rs`: the binary form in which that node sends the page back;
//! - `spi.rs`: SPI helpers; `page.rs`: the page being built.
//!
//! `alerts_search_wire` is the same search returning the page in that
//! binary form: what a node sends back for a routed call.
//!
//! Every row returned passed `alerts_attrs_match`.

mod args;
mod call;
pub(crate) mod checks;
mod citus;
pub(crate) mod constraints;
mod index_shape;
mod indexes;
mod layout;
mod leaves;
mod near;
mod oldest;
mod page;
pub(crate) mod part_key;
pub(crate) mod partitions;
mod probe;
mod rare;
mod reader;
mod routed;
mod routes;
mod scan;
mod session;
mod spi;
mod statements;
pub mod trace;
mod walk;
mod walker;
mod wire;

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::error;
pub use args::Args;
use args::{checked_args, same_columns_as_planned};
pub use call::{Ascending, TimeBound};
pub use index_shape::IndexShape;
pub use indexes::{register_callbacks, relcache_epoch};
pub use layout::{columns, heap_table, Columns};
use page::Page;
pub use reader::{plain_read_as, reads_whole_rows, ReadAs};
use spi::cstr_owned;
use statements::Stmt;

crate::datum::finfo_v1!(pg_finfo_alerts_search);
crate::datum::finfo_v1!(pg_finfo_alerts_search_wire);

/// How many searches are running (nested through a statement): while one
/// is, the custom scan is not offered, so that a search's own statements
/// keep their plans. A slot of the backend's state.
#[derive(Default)]
struct Running(std::cell::Cell<u32>);

fn running_count() -> &'static std::cell::Cell<u32> {
    &crate::backend::slot::<Running>().0
}

/// The page of `args`: its rows (composite datums of the table's row type,
/// in the current memory context), newest first, and whether each came
/// through the direct walk's exact check, which refuses arrays at
/// `args.whole` (`Page::whole_checked`).
///
/// # Safety
/// The datums of `args` are live; `relid` is a table with the columns a
/// search reads (the custom scan's planner checks them).
pub unsafe fn rows(args: &Args) -> (Vec<Datum>, bool) {
    let mut page = Page::rows(args.page_size as i64, args.rowtype).with_spare(args.spare);
    // SAFETY: as the caller's.
    unsafe { fill(args, &mut page) };
    let whole = page.whole_checked();
    (page.into_rows(), whole)
}

/// Every row of tenant `org` in `relid` (not its inheritance children; a
/// partitioned table's partitions, which its node searches whole), of row
/// type `rowtype`, whose id is `id`, unfiltered, in the current memory
/// context: where a page ends among rows sharing its last id, the custom
/// scan reads them all here, so that the next page (ids below it) loses
/// none.
///
/// # Safety
/// `org` and `id` are live text datums; `relid` is a table, locked.
pub unsafe fn rows_with_id(
    relid: Oid,
    rowtype: Oid,
    (org, id): (Datum, Datum),
    pinned: Option<&[Oid]>,
) -> Vec<Datum> {
    // SAFETY: one read-only statement, connected and with search_path
    // pinned as in `fill`, with the caller's snapshot.
    unsafe {
        let mut page = Page::rows(i64::MAX, rowtype); // in the caller's memory
        spi::in_search(|| {
            let mut table = session::table(relid, relid);
            let statements = &mut table.value.as_mut().expect("prepared").statements;
            let partitioned = pg_sys::get_rel_relkind(relid)
                == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char;
            page.add(spi::execute(
                statements.plan(Stmt::WithId(partitioned)),
                &[org, id],
            ));
            if let Some(pinned) = pinned {
                partitions::unchanged(relid, pinned);
            }
        });
        page.into_rows()
    }
}

/// Whether `relid` is a Citus distributed table (read once per relcache
/// epoch): Citus plans queries on those itself, and its workers plan the
/// shards. Called by the planner hook: the catalog is read as a search
/// reads it, connected to SPI and with `search_path` pinned, whatever the
/// path of the query being planned.
///
/// # Safety
/// `relid` is a valid relation; a transaction is open.
pub unsafe fn is_distributed(relid: Oid) -> bool {
    // SAFETY: the catalog read runs inside in_search, which connects and
    // pins on its first statement and restores both at its end.
    unsafe {
        spi::in_search(|| {
            let mut held = session::take(session::citus(), relid);
            held.value
                .get_or_insert_with(Default::default)
                .distributed(relid)
        })
    }
}

/// # Safety
/// Called by Postgres through the V1 convention as a set-returning function.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_search(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_search");
    // SAFETY: we check the call context before using it.
    unsafe {
        let rsinfo = (*fcinfo).resultinfo as *mut pg_sys::ReturnSetInfo;
        if rsinfo.is_null()
            || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo
            || (*rsinfo).allowedModes & pg_sys::SetFunctionReturnMode::SFRM_Materialize as i32 == 0
        {
            error(
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                "alerts_search must be called in FROM".into(),
                "SELECT * FROM alerts_search(NULL::alerts, $1, $2)",
            );
        }
        let args = checked_args(fcinfo);
        // The result lives in the query's memory, in the table's row type.
        let per_query = (*(*rsinfo).econtext).ecxt_per_query_memory;
        let old = pg_sys::MemoryContextSwitchTo(per_query);
        let store = pg_sys::tuplestore_begin_heap(true, false, pg_sys::work_mem);
        let desc = pg_sys::lookup_rowtype_tupdesc_copy(args.rowtype, -1);
        pg_sys::MemoryContextSwitchTo(old);
        same_columns_as_planned(desc, (*rsinfo).expectedDesc, args.relid);

        let mut page = Page::store(store, per_query, args.page_size as i64, args.rowtype);
        fill(&args, &mut page);

        (*rsinfo).returnMode = pg_sys::SetFunctionReturnMode::SFRM_Materialize;
        (*rsinfo).setResult = store;
        (*rsinfo).setDesc = desc;
        (*fcinfo).isnull = true;
        Datum::from(0usize)
    }
}

/// `alerts_search_wire(...) RETURNS bytea`: the same page in the binary form
/// a routed call brings back from a Citus worker (`wire.rs`).
///
/// # Safety
/// Called by Postgres through the V1 convention.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_search_wire(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_search_wire");
    // SAFETY: the arguments are checked before use.
    unsafe {
        let args = checked_args(fcinfo);
        let mut page = Page::rows(args.page_size as i64, args.rowtype);
        fill(&args, &mut page);
        wire::encode(&page.into_rows(), args.rowtype)
    }
}

/// Fills the page: from the table, from the tenant's Citus shard on this
/// node, or by one routed statement to the node that has the shard.
unsafe fn fill(args: &Args, page: &mut Page) {
    let r = running_count();
    r.set(r.get() + 1);
    // SAFETY: as fill_running's; the count is restored on error too.
    pgrx::PgTryBuilder::new(std::panic::AssertUnwindSafe(|| unsafe {
        spi::in_search(|| fill_running(args, page))
    }))
    .finally(|| {
        r.set(r.get() - 1);
        if r.get() == 0 {
            crate::datum::free_dropped_jsonpaths();
        }
    })
    .execute()
}

/// Whether a search is running in this backend.
pub fn running() -> bool {
    running_count().get() > 0
}

/// As [`fill`], counted in [`Running`].
unsafe fn fill_running(args: &Args, page: &mut Page) {
    // SAFETY: SPI is connected by the first statement (`spi::connect`) and
    // finished by `fill`; the argument datums are live for the call.
    unsafe {
        let relid = args.relid;
        trace::page_starts(trace::Route::Walk);
        let target = {
            let mut held = session::take(session::citus(), relid);
            let cache = held.value.get_or_insert_with(Default::default);
            match cache.target(relid, args.org) {
                citus::Target::Remote if args.ascending.is_some() => error(
                    PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                    "alerts: an oldest-first page of a Citus tenant on another node".into(),
                    "run the query on the coordinator, which routes it to the tenant's shard",
                ),
                citus::Target::Remote => {
                    trace::page_starts(trace::Route::Routed);
                    match &args.columns {
                        // the page's own SQL, its rows in the table's columns
                        None => {
                            let page_args = [
                                args.org,
                                args.filter,
                                args.floor,
                                Datum::from(args.page_size),
                            ];
                            cache.routed_page(relid, &page_args, args.before, page);
                        }
                        Some((columns, _)) => {
                            let routed = cache.routed(
                                relid,
                                &[
                                    Some(args.org),
                                    Some(args.filter),
                                    args.since,
                                    args.before,
                                    Some(Datum::from(args.page_size)),
                                    Some(*columns),
                                ],
                            );
                            // no row when the tenant has none: an empty page
                            page.mark_unchecked();
                            if let Some(w) = spi::first_value(routed) {
                                wire::decode(w, args.rowtype, |row| page.add_row(row));
                            }
                        }
                    }
                    None
                }
                citus::Target::Shard(shard) => Some(shard),
                citus::Target::Plain => Some(relid),
            }
        };
        if let Some(source) = target {
            search(source, args, page);
        }
        trace::page_ends();
    }
}

/// The ERROR of a search on a table without a valid pagination index;
/// first, of one whose tenant or id column is of a type the search does
/// not read (`char(n)`: no index of text's operators can hold it).
fn no_pagination_index(relid: Oid) -> ! {
    // SAFETY: the name of a valid relation; catalog lookups.
    let name = unsafe { cstr_owned(pg_sys::get_rel_name(relid)) };
    for column in [c"organisation_id", c"id"] {
        // SAFETY: as above.
        let attno = unsafe { pg_sys::get_attnum(relid, column.as_ptr()) };
        let (mut ty, mut typmod, mut collation) = (pg_sys::InvalidOid, -1, pg_sys::InvalidOid);
        if attno > 0 {
            // SAFETY: a column of the relation.
            unsafe {
                pg_sys::get_atttypetypmodcoll(relid, attno, &mut ty, &mut typmod, &mut collation)
            };
        }
        if ty != pg_sys::InvalidOid && !layout::TEXT_TYPES.contains(&ty) {
            let column = column.to_string_lossy();
            // SAFETY: a valid type.
            let type_name = unsafe { cstr_owned(pg_sys::format_type_with_typemod(ty, typmod)) };
            error(
                PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                format!("alerts_search: column {name}.{column} is {type_name}; searches read text or varchar"),
                &format!(
                    "ALTER TABLE {name} ALTER COLUMN {column} TYPE text, then create the pagination index: SELECT alerts_index_command('{}') \\gexec",
                    name.replace('\'', "''")
                ),
            );
        }
    }
    error(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "alerts_search: table {name} has no valid index on (organisation_id, id): every page would read the tenant's whole history"
        ),
        &format!(
            "create the pagination index: SELECT alerts_index_command('{}') \\gexec (on a partitioned table, every partition needs it before the parent's index is valid)",
            name.replace('\'', "''")
        ),
    );
}

/// The search proper, reading relation `source` (the table or its shard).
unsafe fn search(source: Oid, args: &Args, page: &mut Page) {
    // SAFETY: SPI is connected by the caller; the datums are live.
    unsafe {
        // A shard is locked here, the table by the caller: the caches below
        // are checked after any DDL that committed before.
        pg_sys::LockRelationOid(source, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        if pg_sys::get_rel_relkind(source) == 0 {
            // A shard dropped between finding it and locking it (the old
            // placement of a shard move, cleaned up): the drop started a
            // new relcache epoch, and the next call looks the shard up
            // again.
            error(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "alerts_search: the tenant's shard was dropped while the search began (a shard move)".into(),
                "run the search again",
            );
        }
        let mut held = session::table(source, args.relid);
        {
            let Some(table) = held.value.as_mut() else {
                return;
            };
            let indexes = table.statements.indexes.get(source);
            if !indexes.page {
                no_pagination_index(args.relid);
            }
            let call = args.call(&indexes);
            // The direct scan where it reads what the statements would;
            // roles and policies are checked on every call.
            let direct_read =
                || crate::settings::SEARCH_DIRECT_SCAN.get() && reader::plain_read(args.relid);
            let direct = indexes
                .direct
                .filter(|_| direct_read() && (source == args.relid || reader::plain_read(source)));
            // A partitioned table's leaves are read by the direct walk as
            // the partitioned table would be read (its privileges and
            // policies; a leaf's own apply only to queries naming it).
            let partitioned = || {
                source == args.relid
                    && call.ascending.is_none()
                    && pg_sys::get_rel_relkind(source)
                        == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
                    && direct_read()
            };
            match direct {
                Some(layout) => {
                    let mut walker = scan::IndexWalk::begin(
                        source,
                        args.relid,
                        layout,
                        &call,
                        args.columns.as_ref().map(|(_, c)| c),
                    );
                    if call.ascending.is_some() {
                        oldest::fill(&mut table.statements, &call, &mut walker, page);
                    } else {
                        walk::fill(
                            &mut table.statements,
                            &mut table.routes,
                            &call,
                            &mut walker,
                            page,
                        );
                    }
                    walker.end();
                }
                None if call.ascending.is_some() => {
                    oldest::planned(&mut table.statements, &call, page);
                }
                None if partitioned() && leaves::fill(source, args, page) => {}
                None => {
                    // several statements: on a partitioned table, all of
                    // them on one partition set (`partitions.rs`)
                    let page = std::cell::RefCell::new(page);
                    partitions::consistent(
                        source,
                        || {
                            let mut walker = walk::StatementWalk::new(&mut table.statements, &call);
                            walk::fill(
                                &mut table.statements,
                                &mut table.routes,
                                &call,
                                &mut walker,
                                &mut page.borrow_mut(),
                            );
                        },
                        || page.borrow_mut().clear(),
                    );
                    if let Some(pinned) = args.pinned {
                        partitions::unchanged(source, pinned);
                    }
                }
            }
        }
    }
}
