//! `alerts`: a PostgreSQL extension for filtered alert-history pages.
//!
//! Thin glue over the pure core in `crates/alerts-core`, one module per
//! SQL-facing feature. Every function is a raw version-1 C function so that
//! the SQL (`sql/alerts.sql`) is written by hand: COMMENTs, COST, volatility
//! and schema qualification stay under our control, and the hot per-row test
//! can cache its compiled filter in `fn_extra` and read the bitmap without
//! allocating.

mod bitmap_fns;
mod datum;
mod filter_cache;
mod jsonb;
mod planner;
mod search;
mod trigger;
mod ulid_fns;

pgrx::pg_module_magic!();

pgrx::extension_sql_file!("../sql/alerts.sql", name = "alerts_objects", bootstrap);
// Each upgrade script is also the tail of a fresh install, so both paths
// build the same objects.
pgrx::extension_sql_file!(
    "../sql/alerts--0.1.0--0.2.0.sql",
    name = "alerts_0_2_0",
    finalize
);

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
