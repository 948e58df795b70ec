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
mod heap;
mod jsonb;
mod keys;
mod overloads;
mod pg_list;
mod planner;
mod search;
mod settings;
mod text_ops;
mod trigger;
mod ulid_fns;
mod unguarded;

pgrx::pg_module_magic!();

/// Registers the extension's settings and the custom scan when the library
/// is loaded.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // SAFETY: called once at load: the heap is settled and the settings,
    // callbacks, hook and method table are installed once.
    unsafe {
        heap::settle();
        settings::define();
        search::register_callbacks();
        overloads::register_callback();
        custom_scan::init();
    }
}

// A fresh install runs sql/alerts.sql, the complete current definition;
// upgrades run the frozen sql/alerts--X--Y.sql scripts beside it.
pgrx::extension_sql_file!("../sql/alerts.sql", name = "alerts_objects", bootstrap);

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
