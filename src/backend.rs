//! The backend's state: everything the extension keeps in a backend
//! between one call and the next, held in one place.
//!
//! A backend is one process running one session, single-threaded. Each
//! module that keeps something declares its own state type and reaches it
//! with [`slot`]; this holder knows none of them (it sits below every
//! module, and imports nothing of the extension). A slot is made, empty,
//! on its first use in the backend and lives until the backend exits:
//!
//! | kept for the session (checked before each use) | owner |
//! |---|---|
//! | each table's statements and route memory; whether it is a Citus table, and where its tenants' shards are | `search::session`, `search::citus` |
//! | compiled filters | `filter_cache` |
//! | parsed column filters | `columns` |
//! | filters implied by the custom scan's conditions | `custom_scan::exec::values` |
//! | what the catalogs say of each table the custom scan is offered for | `custom_scan::facts` |
//! | what each partitioned table's key tells a search's pruning | `search::partitions` |
//! | the relcache epoch every cache above is checked against | `search::indexes` |
//! | the jsonpaths parsed lately (filters' and clauses', for GIN) | `datum` |
//!
//! | scratch of the running call (set at its start) | owner |
//! |---|---|
//! | the SQL function running, named by every ERROR | `datum` |
//! | the query being planned as one relation (while it is) | `custom_scan::one_rel` |
//! | the searches running (nested through a statement), their SPI state | `search`, `search::spi` |
//! | what the statement walk's probe saw; the page's route and counts | `search::probe`, `search::trace` |
//!
//! A slot's type is a struct of its owner's (never a bare map or cell, so
//! that two owners cannot share one by accident); its fields carry their
//! own interior mutability, borrowed for as short as possible: a search
//! may run inside a statement of another.

use std::any::{Any, TypeId};
use std::cell::RefCell;

thread_local! {
    /// The slots made so far, each leaked once: they live as long as the
    /// backend.
    static SLOTS: RefCell<Vec<(TypeId, &'static dyn Any)>> = const { RefCell::new(Vec::new()) };
}

/// The backend's slot of type `T`, made (empty: `T::default()`) on first
/// use.
pub fn slot<T: Default + 'static>() -> &'static T {
    let id = TypeId::of::<T>();
    let found = SLOTS.with(|s| s.borrow().iter().find(|(t, _)| *t == id).map(|(_, v)| *v));
    let any = found.unwrap_or_else(|| {
        // Made outside the borrow: a slot's default may use other slots.
        let made: &'static dyn Any = Box::leak(Box::new(T::default()));
        SLOTS.with(|s| s.borrow_mut().push((id, made)));
        made
    });
    any.downcast_ref::<T>().expect("a slot holds its own type")
}
