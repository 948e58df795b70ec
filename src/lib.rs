//! `alerts`: a PostgreSQL extension for filtered alert-history pages.
//!
//! Thin glue over the pure core in `crates/alerts-core`, one module per
//! SQL-facing feature. Every function is a raw version-1 C function so that
//! the SQL (`sql/alerts.sql`) is written by hand: COMMENTs, COST, volatility
//! and schema qualification stay under our control, and the hot per-row test
//! can cache its compiled filter in `fn_extra` and read the bitmap without
//! allocating.

mod backend;
mod bitmap_fns;
mod columns;
mod compat;
mod custom_scan;
mod datum;
mod filter_cache;
mod jsonb;
mod keys;
mod planner;
mod search;
mod trigger;
mod ulid_fns;

pgrx::pg_module_magic!();

/// `alerts.search_shortcuts` (default on): whether `alerts_search` sends a
/// (tenant, filter) that a walk of this session found rare straight to GIN
/// for the next 10 seconds. Off: every call walks first (the cold path; the
/// benchmark measures both).
pub static SEARCH_SHORTCUTS: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);

/// `alerts.search_direct_scan` (default on): whether `alerts_search` walks
/// a plain table's pagination index directly (`search/scan/`) rather than
/// through prepared statements. Off: the statement walk everywhere (same
/// rows; kept as a way back and to test one walker against the other).
pub static SEARCH_DIRECT_SCAN: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);

/// `alerts.custom_scan` (default on): whether the planner is offered the
/// custom scan for plain SQL (`attribute_values @> ... ORDER BY id DESC`).
/// Off: plain SQL gets Postgres' own plans.
pub static CUSTOM_SCAN: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);

/// Registers the extension's settings and the custom scan when the library
/// is loaded.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pgrx::GucRegistry::define_bool_guc(
        c"alerts.search_shortcuts",
        c"Lets alerts_search send a tenant and filter its walk found rare straight to GIN for 10 seconds.",
        c"Only ever a shortcut to the exact GIN path: turning it off changes timings, never rows.",
        &SEARCH_SHORTCUTS,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    pgrx::GucRegistry::define_bool_guc(
        c"alerts.search_direct_scan",
        c"Lets alerts_search walk a plain table's pagination index directly instead of through prepared statements.",
        c"Both walks return the same rows; off is the statement walk everywhere.",
        &SEARCH_DIRECT_SCAN,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    pgrx::GucRegistry::define_bool_guc(
        c"alerts.custom_scan",
        c"Offers the planner a search for plain SQL: organisation_id = ... AND attribute_values @> ... ORDER BY id DESC.",
        c"Only another plan for the same query: off leaves plain SQL to Postgres' own plans. Active once the library is loaded (shared_preload_libraries or session_preload_libraries).",
        &CUSTOM_SCAN,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    // SAFETY: called once at load, with a static NUL-terminated prefix;
    // the hook and method table are installed once.
    unsafe {
        pgrx::pg_sys::MarkGUCPrefixReserved(c"alerts".as_ptr());
        search::register_callbacks();
        custom_scan::init();
    }
}

// A fresh install runs sql/alerts.sql, the complete current definition;
// upgrades run the frozen sql/alerts--X--Y.sql scripts beside it.
pgrx::extension_sql_file!("../sql/alerts.sql", name = "alerts_objects", bootstrap);

/// Declares `pg_finfo_<name>`, the record Postgres looks up to learn that the
/// C function `<name>` uses the version-1 calling convention. Takes the finfo
/// symbol itself because `macro_rules!` cannot paste identifiers.
#[macro_export]
macro_rules! finfo_v1 {
    ($($finfo:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc(hidden)]
        pub extern "C" fn $finfo() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
            const V1: ::pgrx::pg_sys::Pg_finfo_record = ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }
    )*};
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
