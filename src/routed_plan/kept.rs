//! The routed queries this session parsed: a page's SQL is parsed,
//! analyzed and rewritten once per table, cursor form and relcache epoch
//! (and again after any function changed), and each planning starts from
//! a copy. Under the simple protocol every call is planned: parsing the
//! page's SQL each time cost about as much as the function scan it
//! replaces.

use std::cell::{Cell, RefCell};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};

/// Queries kept, at most; past it, the one parsed first goes.
const KEPT: usize = 32;

/// One parsed query, in its own memory context (null: the table applies
/// a row security policy, so its calls are not planned so).
struct Kept {
    relid: Oid,
    cursor: Option<bool>,
    sql: String,
    epoch: u64,
    query: *mut pg_sys::Query,
    cxt: pg_sys::MemoryContext,
}

/// The session's parsed queries, and whether a function changed since
/// (they name functions by OID): a slot of the backend's state.
#[derive(Default)]
struct Parsed {
    kept: RefCell<Vec<Kept>>,
    stale: Cell<bool>,
}

/// Invalidation callback: a function was created, changed or dropped.
#[pg_guard]
unsafe extern "C-unwind" fn function_changed(_arg: Datum, _cache: i32, _hash: u32) {
    crate::backend::slot::<Parsed>().stale.set(true);
}

/// Registers the callback, once, at load (see `search::register_callbacks`
/// for why at load).
///
/// # Safety
/// Called once, from `_PG_init`.
pub unsafe fn register_callback() {
    // SAFETY: a callback that only sets a flag.
    unsafe {
        pg_sys::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::PROCOID as i32,
            Some(function_changed),
            Datum::from(0usize),
        );
    }
}

/// A copy, in the current memory context, of the query `sql` parses to
/// for table `relid` (cursor form `cursor`): kept from an earlier
/// planning, or made by `parse` (None: not to be planned so, kept too).
///
/// # Safety
/// In a transaction; `relid` is a valid relation.
pub unsafe fn query(
    relid: Oid,
    cursor: Option<bool>,
    sql: &str,
    parse: impl FnOnce() -> Option<*mut pg_sys::Query>,
) -> Option<*mut pg_sys::Query> {
    let parsed = crate::backend::slot::<Parsed>();
    // SAFETY: the kept queries live in their own contexts until replaced;
    // nothing below runs an invalidation callback while one is borrowed.
    unsafe {
        // Locked as parsing it would lock it, which also takes in the
        // invalidations of DDL committed before: the epoch read after is
        // the table's as the plan will read it.
        pg_sys::LockRelationOid(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        if parsed.stale.replace(false) {
            for k in parsed.kept.borrow_mut().drain(..) {
                pg_sys::MemoryContextDelete(k.cxt);
            }
        }
        let epoch = crate::search::relcache_epoch();
        {
            let kept = parsed.kept.borrow();
            let found = kept.iter().find(|k| {
                k.relid == relid && k.cursor == cursor && k.epoch == epoch && k.sql == sql
            });
            if let Some(k) = found {
                return (!k.query.is_null()).then(|| pg_sys::copyObjectImpl(k.query.cast()).cast());
            }
        }
        let query = parse();
        let cxt = pg_sys::AllocSetContextCreateInternal(
            pg_sys::CacheMemoryContext,
            c"alerts routed query".as_ptr(),
            pg_sys::ALLOCSET_SMALL_MINSIZE as usize,
            pg_sys::ALLOCSET_SMALL_INITSIZE as usize,
            pg_sys::ALLOCSET_SMALL_MAXSIZE as usize,
        );
        let copy = query.map_or(std::ptr::null_mut(), |q| {
            let old = pg_sys::MemoryContextSwitchTo(cxt);
            let copy = pg_sys::copyObjectImpl(q.cast()).cast();
            pg_sys::MemoryContextSwitchTo(old);
            copy
        });
        let mut kept = parsed.kept.borrow_mut();
        kept.retain(|k| {
            let same = k.relid == relid && k.cursor == cursor;
            if same {
                pg_sys::MemoryContextDelete(k.cxt);
            }
            !same
        });
        if kept.len() >= KEPT {
            pg_sys::MemoryContextDelete(kept.remove(0).cxt);
        }
        kept.push(Kept {
            relid,
            cursor,
            sql: sql.to_string(),
            epoch,
            query: copy,
            cxt,
        });
        query
    }
}
