//! What the planner hooks ask of the search layer while a query is being
//! planned: whether a table is distributed (`custom_scan/one_rel.rs`), and
//! the page's SQL a lone `alerts_search` call is planned as
//! (`routed_plan/`). Both read through the session's per-table state,
//! inside [`spi::in_search`] (connected, `search_path` pinned), whatever
//! the path of the query being planned.

use pgrx::pg_sys::{Datum, Oid};

use super::{session, spi};

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

/// The page's SQL a lone call of `alerts_search` for tenant `org` (None:
/// a parameter) of table `relid` is planned as, its arguments parameters
/// (`$1` tenant, `$2` filter, `$3` since, `$4` page size, `$5` the cursor,
/// as `cursor` says: `RoutedPages::planned_sql`): Some when the table is
/// a Citus distributed table and the tenant's shard is on another node
/// (the call would send this page's statement there), or could be (a
/// parameter), None otherwise.
///
/// # Safety
/// `relid` is a valid relation; `org` is a live text datum; a
/// transaction is open.
pub unsafe fn planned_sql(relid: Oid, org: Option<Datum>, cursor: Option<bool>) -> Option<String> {
    // SAFETY: as is_distributed's.
    unsafe {
        spi::in_search(|| {
            let mut held = session::take(session::citus(), relid);
            held.value
                .get_or_insert_with(Default::default)
                .planned_sql(relid, org, cursor)
        })
    }
}
