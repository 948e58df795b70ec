//! Citus distributed tables. A table hash-distributed by `organisation_id`
//! keeps each tenant in one shard, an ordinary table on one node. A call
//! there:
//! - on the node holding the tenant's shard (a worker, reached by the
//!   routed statement below or by a delegated call) walks the shard itself,
//!   as a plain table, with no Citus planning per statement;
//! - anywhere else (the coordinator) sends one routed statement, a router
//!   query Citus sends whole to that node: the page's own SQL (the
//!   tenant, `alerts_attrs_match`, the window, `ORDER BY id DESC LIMIT`),
//!   which the node plans with the custom scan when the library is loaded
//!   there, its rows coming back as any router query's do; a call with a
//!   column filter runs `alerts_search_wire` there instead and brings the
//!   page back in binary (`wire.rs`). One round trip per call, whatever
//!   the walk does there.
//!
//! Whether a table is distributed is read from Citus' catalog once per
//! relcache epoch (distributing a table invalidates its relcache entry).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use pgrx::pg_sys::panic::CaughtError;
use pgrx::pg_sys::{self, Datum, Oid, PgTryBuilder};
use pgrx::PgSqlErrorCode;

use super::indexes::relcache_epoch;
use super::page::Page;
use super::routed::{self, RoutedPages};
use super::spi::{
    cstr_owned, execute, execute_into, execute_nullable, extension_schema, keep, prepare, rows,
};
use super::statements::qualified;
use crate::datum::error;

/// Where a call reads its rows.
pub enum Target {
    /// The table itself (not distributed, or Citus not installed).
    Plain,
    /// The tenant's shard, on this node.
    Shard(Oid),
    /// The tenant's shard is on another node: route the call there.
    Remote,
}

/// A distributed table's statements.
struct Distributed {
    /// `$1` table, `$2` tenant: the shard's relation if this node has it.
    shard: pg_sys::SPIPlanPtr,
    /// The routed call through `alerts_search_wire` (column filters).
    routed: pg_sys::SPIPlanPtr,
    /// The routed page as rows (`routed.rs`).
    pages: RoutedPages,
}

impl Distributed {
    /// # Safety
    /// Neither statement is running.
    unsafe fn free(self) {
        // SAFETY: as the caller's; both are kept, each freed once.
        unsafe {
            for plan in [self.shard, self.routed] {
                pg_sys::SPI_freeplan(plan);
            }
            self.pages.free();
        }
    }
}

/// What one table is, per relcache epoch.
#[derive(Default)]
pub struct CitusCache {
    known: Option<(u64, Option<Distributed>)>,
    /// Where each tenant's calls read, in that epoch (`Local`). Keyed by
    /// the tenant.
    /// Citus invalidates the distributed table's relcache entry whenever a
    /// row of `pg_dist_shard` or `pg_dist_placement` of it changes (a shard
    /// moved, split or dropped), which starts a new epoch.
    targets: HashMap<Vec<u8>, Local>,
}

/// What this node has of a tenant's shard.
#[derive(Clone, Copy)]
enum Local {
    /// A placement, by Citus' catalog: its relation.
    Placed(Oid),
    /// No placement, but a relation of the shard's name: an old placement
    /// a move left (dropped later), read only by a statement that already
    /// reads it itself (`Target` of a task Citus planned before the move).
    Left(Oid),
    /// Nothing: route the call.
    Nowhere,
}

/// Tenants whose targets a table keeps; past it, the map starts again.
const TARGETS_KEPT: usize = 4096;

impl CitusCache {
    /// Where the call for tenant `org` of table `relid` reads.
    ///
    /// # Safety
    /// SPI must be connected; `org` is a live text datum.
    pub unsafe fn target(&mut self, relid: Oid, org: Datum) -> Target {
        // SAFETY: as the caller's.
        unsafe {
            self.refresh(relid);
            let Some((_, Some(d))) = &self.known else {
                return Target::Plain;
            };
            let key = crate::datum::varlena_bytes(org).to_vec();
            let local = match self.targets.get(&key) {
                Some(&local) => local,
                None => {
                    let tt = execute(d.shard, &[Datum::from(relid), org]);
                    let value = |n| {
                        let mut isnull = true;
                        let d = pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, n, &mut isnull);
                        (!isnull).then_some(d)
                    };
                    let placed = value(1).is_some_and(|d| d.value() != 0);
                    let local = match value(2).map(|d| Oid::from(d.value() as u32)) {
                        Some(oid) if placed => Local::Placed(oid),
                        Some(oid) => Local::Left(oid),
                        None => Local::Nowhere,
                    };
                    if self.targets.len() >= TARGETS_KEPT {
                        self.targets.clear();
                    }
                    self.targets.insert(key, local);
                    local
                }
            };
            match local {
                Local::Placed(oid) => Target::Shard(oid),
                // A router query Citus planned before a shard move reached
                // this node after the move's catalog change: the statement
                // reads this relation itself (it holds its lock), and Citus
                // refuses a nested routed call inside it. Reading what the
                // caller's own statement reads shows nothing beyond it; a
                // statement that does not read it is routed.
                Local::Left(oid)
                    if pg_sys::CheckRelationOidLockedByMe(
                        oid,
                        pg_sys::AccessShareLock as _,
                        true,
                    ) =>
                {
                    Target::Shard(oid)
                }
                Local::Left(_) | Local::Nowhere => Target::Remote,
            }
        }
    }

    /// Whether `relid` is a distributed table.
    ///
    /// # Safety
    /// SPI must be connected.
    pub unsafe fn distributed(&mut self, relid: Oid) -> bool {
        // SAFETY: as the caller's.
        unsafe { self.refresh(relid) };
        matches!(self.known, Some((_, Some(_))))
    }

    /// Reads the catalog again when the relcache epoch moved.
    unsafe fn refresh(&mut self, relid: Oid) {
        let epoch = relcache_epoch();
        // SAFETY: SPI is connected by the caller.
        unsafe {
            if !matches!(self.known, Some((at, _)) if at == epoch) {
                // Any relcache invalidation starts a new epoch: read the
                // catalog again, keep the statements while the table stays
                // distributed with the same columns (the routed page
                // names them), make them again when its columns changed,
                // free them when it is no longer distributed.
                let known = match (is_distributed(relid), self.known.take()) {
                    (true, Some((_, Some(d)))) if d.pages.names_columns_of(relid) => Some(d),
                    (true, Some((_, Some(d)))) => {
                        d.free();
                        Some(statements(relid))
                    }
                    (true, _) => Some(statements(relid)),
                    (false, Some((_, Some(d)))) => {
                        d.free();
                        None
                    }
                    (false, _) => None,
                };
                self.known = Some((epoch, known));
                self.targets.clear();
            }
        }
    }

    /// Frees the kept statements.
    ///
    /// # Safety
    /// None of them is running.
    pub unsafe fn free(self) {
        if let Some((_, Some(d))) = self.known {
            // SAFETY: as the caller's.
            unsafe { d.free() }
        }
    }

    /// Adds the page from the node holding the tenant's shard to `page`,
    /// the rows in the table's columns (`args`: tenant, filter, floor,
    /// page size, and the cursor of a next page).
    ///
    /// # Safety
    /// As [`CitusCache::routed`]; `page` is empty.
    pub unsafe fn routed_page(
        &mut self,
        relid: Oid,
        args: &[Datum; 4],
        before: Option<Datum>,
        page: &mut Page,
    ) {
        let Some((_, Some(d))) = &mut self.known else {
            unreachable!("routed_page() is called only for a distributed table")
        };
        // SAFETY: as the caller's; the tenant is a live text datum; the
        // statement's LIMIT is the page's size.
        unsafe {
            let org = crate::datum::varlena_bytes(args[0]);
            let (plan, shared) = d.pages.plan(org, before.is_some());
            let all: Vec<Option<Datum>> = args
                .iter()
                .skip(!shared as usize)
                .copied()
                .chain(before)
                .map(Some)
                .collect();
            page.add_stored(|store, cxt, desc| {
                let arrive = routed::received(desc);
                let n = run_routed(relid, || {
                    execute_into(plan, &all, store, cxt, arrive, OTHER_COLUMNS)
                });
                pg_sys::FreeTupleDesc(arrive);
                n
            });
        }
    }

    /// The page from the node holding the tenant's shard, by the routed
    /// statement (`args`: tenant, filter, since, cursor, page size): a
    /// result table of one `bytea` (`wire.rs`), or no row when the tenant
    /// has none.
    ///
    /// # Safety
    /// SPI must be connected; the table is distributed (`target` said
    /// `Remote`); the datums are live.
    pub unsafe fn routed(&self, relid: Oid, args: &[Option<Datum>]) -> *mut pg_sys::SPITupleTable {
        let Some((_, Some(d))) = &self.known else {
            unreachable!("routed() is called only for a distributed table")
        };
        // SAFETY: as the caller's.
        unsafe { run_routed(relid, || execute_nullable(d.routed, args)) }
    }
}

/// The ERROR's message when the routed rows' columns are not the table's.
const OTHER_COLUMNS: &std::ffi::CStr =
    c"alerts_search: the rows of this table came back with other columns than the table has here";

/// Runs a routed statement (`run`), naming a node without the extension,
/// or a table whose definition differs there, in the ERROR it raises.
fn run_routed<T>(relid: Oid, run: impl FnOnce() -> T) -> T {
    // SAFETY: relid is a valid relation.
    let name = || unsafe { cstr_owned(pg_sys::get_rel_name(relid)) };
    // on an error the transaction aborts
    PgTryBuilder::new(AssertUnwindSafe(run))
        .catch_when(PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH, |cause| match &cause {
            CaughtError::PostgresError(e) | CaughtError::ErrorReport(e)
                if e.message() == OTHER_COLUMNS.to_str().unwrap_or_default() =>
            {
                error(
                    PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                    format!(
                        "alerts_search: the rows of {} came back with other columns than the table has here ({})",
                        name(),
                        e.detail().unwrap_or_default()
                    ),
                    "the table's definition differs between the coordinator and the node of the tenant's shard: compare them with run_command_on_placements",
                )
            }
            _ => cause.rethrow(),
        })
        .catch_when(PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION, |cause| {
            let detail = match &cause {
                CaughtError::PostgresError(e) | CaughtError::ErrorReport(e) => e.message().to_string(),
                _ => String::new(),
            };
            let name = name();
            error(
                PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION,
                format!(
                    "alerts_search: the Citus node holding this tenant's shard of {name} does not have the alerts extension, or has an older version of it ({detail})"
                ),
                "install alerts on every node, at the coordinator's version: CREATE EXTENSION alerts (or ALTER EXTENSION alerts UPDATE) on the coordinator after the workers were added reaches them all; check with SELECT * FROM run_command_on_workers($$SELECT extversion FROM pg_extension WHERE extname = 'alerts'$$)",
            )
        })
        .execute()
}

/// Whether `relid` is a Citus table `alerts_search` can serve: false if it
/// is not a Citus table; an ERROR for other Citus tables.
unsafe fn is_distributed(relid: Oid) -> bool {
    // SAFETY: SPI is connected by the caller.
    unsafe {
        // Whether Citus is installed: one syscache lookup (no statement,
        // so a table's first search connects to SPI only if it is).
        if pg_sys::get_relname_relid(
            c"pg_dist_partition".as_ptr(),
            pg_sys::PG_CATALOG_NAMESPACE.into(),
        ) == pg_sys::InvalidOid
        {
            return false;
        }
        // Citus is installed: statements naming its catalog can be planned.
        let tt = execute(
            prepare_once(
                "SELECT p.partmethod::text, coalesce(pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), '')
                 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1",
                &[pg_sys::OIDOID],
            ),
            &[Datum::from(relid)],
        );
        if rows(tt) == 0 {
            return false;
        }
        let text = |n: i32| {
            let p = pg_sys::SPI_getvalue(*(*tt).vals, (*tt).tupdesc, n);
            if p.is_null() {
                String::new()
            } else {
                cstr_owned(p)
            }
        };
        let (method, column) = (text(1), text(2));
        let name = cstr_owned(pg_sys::get_rel_name(relid));
        if method != "h" || column != "organisation_id" {
            let what = match method.as_str() {
                "h" => format!("hash-distributed by {column}"),
                "n" if column.is_empty() => "a reference or single-shard table".into(),
                "a" => "append-distributed".into(),
                "r" => "range-distributed".into(),
                _ => format!("a Citus table of distribution method '{method}'"),
            };
            error(
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("alerts_search: table {name} is {what}; alerts_search serves Citus tables hash-distributed by organisation_id"),
                &format!(
                    "distribute it by the tenant: SELECT create_distributed_table('{}', 'organisation_id')",
                    name.replace('\'', "''")
                ),
            );
        }
        true
    }
}

/// The kept statements of a distributed table.
unsafe fn statements(relid: Oid) -> Distributed {
    // SAFETY: SPI is connected by the caller; relid is a valid relation.
    unsafe {
        let t = qualified(relid);
        let s = extension_schema();
        let d = Distributed {
            // Whether this node holds a placement of the shard by Citus'
            // catalog, and the local relation of the shard's name. Nothing
            // a role can set decides it: a call that claimed to come from
            // Citus (its `application_name`, which any role can set) once
            // read any local relation of the shard's name, such as an
            // orphaned placement left by a shard move. Such a relation is
            // now read only by a statement holding its lock, one that reads
            // it itself (`Local::Left`; docs/security.md).
            shard: prepare(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p
                                WHERE p.shardid = s.id
                                  AND p.groupid = (SELECT groupid FROM pg_catalog.pg_dist_local_group)),
                        pg_catalog.to_regclass(pg_catalog.shard_name($1, s.id, false))::pg_catalog.oid
                 FROM (SELECT pg_catalog.get_shard_id_for_distribution_column($1, $2) AS id) s",
                &[pg_sys::REGCLASSOID, pg_sys::TEXTOID],
            ),
            // A router query Citus plans on its fast path (one table, the
            // tenant's equality): sent whole to the node of the tenant's
            // shard, where alerts_search_wire finds the shard local, and the
            // page comes back as one bytea, which Citus moves in binary. No
            // row when the tenant has none: the page is empty. (A row type
            // or an array of rows crosses as text: a 50-row page cost 2.2 ms
            // to print and parse; rows in columns need a function in FROM,
            // which Citus plans again on every call.)
            routed: prepare(
                &format!(
                    "SELECT {s}.alerts_search_wire(NULL::{t}, $1, $2, $3, $4, $5, $6)
                     FROM {t} a WHERE a.organisation_id = $1 LIMIT 1"
                ),
                &[pg_sys::TEXTOID, pg_sys::JSONBOID, pg_sys::TIMESTAMPTZOID, pg_sys::TEXTOID, pg_sys::INT4OID, pg_sys::JSONBOID],
            ),
            // The page's own SQL, routed by the tenant's equality: the
            // node's planner gives it the custom scan (the library loaded
            // there: `shared_preload_libraries`), or its own plan, exact
            // either way. Rows come back in the table's columns, in
            // binary where Citus can, as a GIN query's do.
            pages: RoutedPages::new(relid, &t, &s),
        };
        keep(&[d.shard, d.routed]);
        d
    }
}

/// A catalog statement planned for this use only (the check runs once per
/// relcache epoch, not per call).
unsafe fn prepare_once(sql: &str, types: &[Oid]) -> pg_sys::SPIPlanPtr {
    let c = std::ffi::CString::new(sql).expect("no NUL in SQL");
    // SAFETY: SPI is connected here or by the caller; the plan lives until
    // SPI_finish.
    unsafe {
        super::spi::connect();
        let plan = pg_sys::SPI_prepare(c.as_ptr(), types.len() as i32, types.as_ptr() as *mut Oid);
        assert!(!plan.is_null(), "catalog statement failed to prepare");
        plan
    }
}
