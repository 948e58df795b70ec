//! What searches keep for the session, per relation: its statements and
//! route memory ([`Table`]), and whether it is a Citus table
//! ([`super::citus::CitusCache`]).
//!
//! Lifetime: an entry is made by the first search of a relation and lives
//! for the session, but a search holds it only while it runs. It is taken
//! out of its map for the search ([`take`]) and put back when the search
//! ends, on error too ([`Held`]'s drop), so that a search nested in one of
//! its statements (a row-level security policy or a view's qual calling a
//! function that searches, Citus running the wire function locally) finds
//! the map free and makes or takes its own entry: it never meets a
//! borrowed map. Where the nested search left an entry for the same
//! relation, the outer one's is released instead of kept twice.
//!
//! A table's statements name it by its qualified name, which Postgres
//! resolves again whenever it replans them: an entry is checked against
//! the relation's current names whenever the relcache may have changed
//! ([`Table::still_names`]), and dropped when they differ (a rename, two
//! tables swapping names, a schema renamed).

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::pg_sys::Oid;

use super::citus::CitusCache;
use super::indexes::relcache_epoch;
use super::routes::Routes;
use super::statements::{qualified, Statements};

/// What one relation read by searches keeps for the session.
pub struct Table {
    pub statements: Statements,
    pub routes: Routes,
    /// The table whose rows the statements return: the relation itself,
    /// or the table it is a shard or a partition of (a table searched on
    /// its own and as a partition has one entry, made for one or the
    /// other).
    rows_of: Oid,
    /// The names the statements were written with: the relation read, and
    /// the table whose rows they return.
    names: (String, String),
    /// The relcache epoch at which the names were last found current.
    checked: u64,
}

impl Table {
    /// The entry of relation `source`, whose statements return rows of
    /// `rows_of` (see [`Statements::new`]).
    ///
    /// # Safety
    /// Inside a search, both relations valid and locked.
    pub unsafe fn new(source: Oid, rows_of: Oid) -> Table {
        // SAFETY: as the caller's.
        unsafe {
            Table {
                statements: Statements::new(source, rows_of),
                routes: Routes::default(),
                rows_of,
                names: (qualified(source), qualified(rows_of)),
                checked: relcache_epoch(),
            }
        }
    }

    /// Whether the statements return rows of `rows_of`, and still name
    /// `source` and `rows_of`: always in the epoch they were checked in (a
    /// rename sends a relcache invalidation, a schema rename a namespace
    /// one: either starts a new epoch), else by reading the names again.
    ///
    /// # Safety
    /// Both relations valid and locked (so that neither can be renamed
    /// until the search ends).
    pub unsafe fn still_names(&mut self, source: Oid, rows_of: Oid) -> bool {
        if self.rows_of != rows_of {
            return false;
        }
        let epoch = relcache_epoch();
        if self.checked == epoch {
            return true;
        }
        // SAFETY: as the caller's.
        let now = unsafe { (qualified(source), qualified(rows_of)) };
        let same = now == self.names;
        if same {
            self.checked = epoch;
        }
        same
    }
}

/// Relation `source`'s entry, taken for the running search: its
/// statements returning rows of `rows_of` (made when the session has
/// none, or none that still name both).
///
/// # Safety
/// Inside a search, both relations valid and locked.
pub unsafe fn table(source: Oid, rows_of: Oid) -> Held<Table> {
    let mut held = take(&crate::backend::slot::<Tables>().0, source);
    // SAFETY: as the caller's; a stale entry's plans are not running.
    unsafe {
        if let Some(stale) = held.value.take_if(|t| !t.still_names(source, rows_of)) {
            (*stale).release();
        }
        if held.value.is_none() {
            held.value = Some(Box::new(Table::new(source, rows_of)));
        }
    }
    held
}

/// Something a map of the session holds that owns Postgres resources
/// (kept plans), released when it is dropped from the map.
pub trait Release {
    /// Frees what the value holds outside Rust's memory.
    ///
    /// # Safety
    /// Not while any of its plans runs.
    unsafe fn release(self);
}

impl Release for Table {
    unsafe fn release(self) {
        // SAFETY: as the caller's.
        unsafe { self.statements.free() }
    }
}

impl Release for CitusCache {
    unsafe fn release(self) {
        // SAFETY: as the caller's.
        unsafe { self.free() }
    }
}

/// Entries are boxed: taken out and put back on every search (a
/// partitioned table's on every leaf), they move as a pointer.
pub type Map<V> = RefCell<HashMap<Oid, Box<V>>>;

/// The tables, keyed by the relation read (the table, a Citus shard or a
/// partition of it): a slot of the backend's state.
#[derive(Default)]
struct Tables(Map<Table>);

/// Whether each searched table is a Citus distributed table, and where
/// its tenants' shards are: a slot of the backend's state.
#[derive(Default)]
struct Citus(Map<CitusCache>);

/// The session's Citus entries.
pub fn citus() -> &'static Map<CitusCache> {
    &crate::backend::slot::<Citus>().0
}

/// A relation's entry taken out of its map for one search (None when the
/// map had none); put back when dropped.
pub struct Held<V: Release + 'static> {
    map: &'static Map<V>,
    key: Oid,
    pub value: Option<Box<V>>,
}

/// Takes `key`'s entry out of `map` for the running search.
pub fn take<V: Release + 'static>(map: &'static Map<V>, key: Oid) -> Held<V> {
    let value = map.borrow_mut().remove(&key);
    Held { map, key, value }
}

impl<V: Release + 'static> Drop for Held<V> {
    fn drop(&mut self) {
        let Some(value) = self.value.take() else {
            return;
        };
        let displaced = self.map.borrow_mut().insert(self.key, value);
        if let Some(other) = displaced {
            // A nested search's entry for the same relation. Freeing plans
            // while an error unwinds could raise another: then they stay
            // in their memory until the session ends.
            if std::thread::panicking() {
                std::mem::forget(other);
            } else {
                // SAFETY: the nested search that ran it has ended.
                unsafe { (*other).release() }
            }
        }
    }
}
