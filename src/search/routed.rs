//! The routed page of a Citus tenant as rows: the statement the
//! coordinator sends to the node of the tenant's shard (`citus.rs`).
//!
//! Two forms of the same SQL. The shared one takes the tenant as `$1`:
//! Citus then prunes and writes the shard's query at every execution (its
//! "deferred pruning": about 80 µs of the coordinator's time a call, the
//! query deparsed again each time, where a router query with the tenant
//! written in costs it nothing: `perf` on the coordinator, 50-row page).
//! A tenant the session keeps calling gets its own statements, its value
//! written in as a literal, with a generic plan: Citus prunes once, when
//! it plans, and sends the filter, the window and the page size as
//! parameters, as it does for a client's prepared statement with a
//! constant tenant. A shard move invalidates the distributed table's
//! relcache entry, and with it the plan, which Citus makes again.
//!
//! Making them costs about 0.5 ms (parsing, and Citus planning the
//! generic plan), and each plan about 34 KB of the session's memory: so a
//! tenant gets them on its fourth call (the three before used the shared
//! form), and a table keeps them for the 32 tenants used last (about 2
//! MB at most, for a first and a next page each).

use std::collections::{HashMap, VecDeque};

use pgrx::pg_sys::{self, Oid};

use super::spi::{cstr_owned, keep, prepare, prepare_generic, quoted};

/// Tenants whose own statements a table keeps; past it, the one used
/// longest ago loses them.
const TENANTS_KEPT: usize = 32;
/// Calls of a tenant by the shared statements before it gets its own.
const SHARED_CALLS: u8 = 3;
/// Tenants whose calls are counted; past it, the counts start again.
const COUNTED: usize = 4096;

/// The parameters of the shared statements: tenant, filter, floor, rows,
/// and the cursor of a next page. A tenant's own statements take the same
/// less the first.
const TYPES: [Oid; 5] = [
    pg_sys::TEXTOID,
    pg_sys::JSONBOID,
    pg_sys::TEXTOID,
    pg_sys::INT4OID,
    pg_sys::TEXTOID,
];

/// A table's routed page statements.
pub struct RoutedPages {
    /// The shared statements: a first page and a next one.
    shared: [pg_sys::SPIPlanPtr; 2],
    /// The page's SQL before and after the tenant's literal, without and
    /// with the cursor, for the tenants' own statements.
    around: [(String, String); 2],
    /// Each tenant's own statements (prepared when first needed), and the
    /// tenants in the order they were last used, the latest last.
    own: HashMap<Vec<u8>, [Option<pg_sys::SPIPlanPtr>; 2]>,
    order: VecDeque<Vec<u8>>,
    /// The calls of tenants without statements of their own.
    calls: HashMap<Vec<u8>, u8>,
    /// The table's columns the statements select, as written in them,
    /// and the extension's schema they name.
    columns: String,
    schema: String,
}

impl RoutedPages {
    /// The statements of table `relid` (`t`, its qualified name), by the
    /// extension's exact check in schema `s`.
    ///
    /// # Safety
    /// SPI is connected; `relid` is a valid relation.
    pub unsafe fn new(relid: Oid, t: &str, s: &str) -> Self {
        // SAFETY: as the caller's.
        unsafe {
            let columns = columns(relid, s);
            let shared = [false, true].map(|cursor| {
                let (head, tail) = sql(&columns, t, s, 2, cursor);
                prepare(&format!("{head}$1{tail}"), &TYPES[..4 + cursor as usize])
            });
            keep(&shared);
            Self {
                shared,
                around: [false, true].map(|cursor| sql(&columns, t, s, 1, cursor)),
                own: HashMap::new(),
                order: VecDeque::new(),
                calls: HashMap::new(),
                columns,
                schema: s.to_string(),
            }
        }
    }

    /// Whether the statements select the table's columns as they are now
    /// (an `ALTER TABLE` adding, dropping or renaming one changes them).
    ///
    /// # Safety
    /// `relid` is a valid relation.
    pub unsafe fn names_columns_of(&self, relid: Oid) -> bool {
        // SAFETY: as the caller's.
        unsafe { columns(relid, &self.schema) == self.columns }
    }

    /// The statement for a page of tenant `org` (a next page: `cursor`),
    /// and whether it takes the tenant as its first parameter (the shared
    /// one) or has it written in.
    ///
    /// # Safety
    /// SPI is connected.
    pub unsafe fn plan(&mut self, org: &[u8], cursor: bool) -> (pg_sys::SPIPlanPtr, bool) {
        let i = cursor as usize;
        if let Some(plans) = self.own.get(org) {
            let plan = plans[i];
            if let Some(at) = self.order.iter().position(|t| t == org) {
                let used = self.order.remove(at).expect("a position in the queue");
                self.order.push_back(used);
            }
            if let Some(plan) = plan {
                return (plan, false);
            }
        } else {
            if self.calls.len() >= COUNTED && !self.calls.contains_key(org) {
                self.calls.clear();
            }
            let n = self.calls.entry(org.to_vec()).or_insert(0);
            if *n < SHARED_CALLS {
                *n += 1;
                return (self.shared[i], true);
            }
            self.calls.remove(org);
        }
        // SAFETY: as the caller's; the plan is kept once prepared, and
        // recorded only then (an ERROR while preparing leaves it to the
        // SPI connection's memory).
        unsafe {
            let (head, tail) = &self.around[i];
            let literal = std::ffi::CString::new(org).expect("a text value holds no NUL");
            let literal = cstr_owned(pg_sys::quote_literal_cstr(literal.as_ptr()));
            let plan = prepare_generic(
                &format!("{head}{literal}::pg_catalog.text{tail}"),
                &TYPES[1..4 + i],
            );
            keep(&[plan]);
            if !self.own.contains_key(org) {
                if self.order.len() >= TENANTS_KEPT {
                    if let Some(old) = self.order.pop_front() {
                        if let Some(plans) = self.own.remove(&old) {
                            free(plans);
                        }
                    }
                }
                self.order.push_back(org.to_vec());
            }
            self.own.entry(org.to_vec()).or_insert([None, None])[i] = Some(plan);
            (plan, false)
        }
    }

    /// Frees every statement.
    ///
    /// # Safety
    /// None of them is running.
    pub unsafe fn free(self) {
        // SAFETY: as the caller's; each kept plan is freed once.
        unsafe {
            free(self.shared.map(Some));
            for plans in self.own.into_values() {
                free(plans);
            }
        }
    }
}

/// # Safety
/// Kept plans, none running.
unsafe fn free(plans: [Option<pg_sys::SPIPlanPtr>; 2]) {
    for plan in plans.into_iter().flatten() {
        // SAFETY: as the caller's.
        unsafe { pg_sys::SPI_freeplan(plan) };
    }
}

/// The table's live columns, as the page's select list: a `jsonb` one in
/// its stored form (`s.alerts_jsonb_bytes`, see [`received`]).
///
/// # Safety
/// `relid` is a valid relation.
unsafe fn columns(relid: Oid, s: &str) -> String {
    // SAFETY: the descriptor of a valid relation, released here.
    unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let desc = (*rel).rd_att;
        let names: Vec<String> = (1..=(*desc).natts)
            .map(|i| crate::compat::attribute(desc, i))
            .filter(|a| !a.attisdropped)
            .map(|a| {
                let column = format!("a.{}", quoted(&cstr_owned(a.attname.data.as_ptr())));
                if stored_form(a) {
                    format!("{s}.alerts_jsonb_bytes({column})")
                } else {
                    column
                }
            })
            .collect();
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        names.join(", ")
    }
}

/// Whether a live column crosses in its stored form (a `jsonb` one): the
/// one rule [`columns`] writes the select list by and [`received`] reads
/// the rows by.
fn stored_form(a: &pg_sys::FormData_pg_attribute) -> bool {
    !a.attisdropped && a.atttypid == pg_sys::JSONBOID
}

/// The columns the routed page's rows arrive in: the table's row type
/// `desc` with each live `jsonb` column a `bytea` (the value's stored
/// form, [`columns`]). Both are varlenas of the same alignment, so a row
/// formed in these columns is, byte for byte, the table's row with the
/// jsonb values: it is stored in the page as one. A copy, made in the
/// current memory context.
///
/// # Safety
/// `desc` is a live descriptor.
pub unsafe fn received(desc: pg_sys::TupleDesc) -> pg_sys::TupleDesc {
    // SAFETY: as the caller's; the copy's entries are re-made in place.
    unsafe {
        let copy = pg_sys::CreateTupleDescCopy(desc);
        for i in 1..=(*copy).natts {
            let a = crate::compat::attribute(copy, i);
            if stored_form(a) {
                let name = a.attname.data.as_ptr();
                pg_sys::TupleDescInitEntry(copy, i as i16, name, pg_sys::BYTEAOID, -1, 0);
            }
        }
        copy
    }
}

/// The page of table `t` in its own columns, by the extension's exact
/// check (`s`), before and after the tenant: its filter is parameter
/// `$first`, then the floor, the rows and the cursor (a next page).
fn sql(columns: &str, t: &str, s: &str, first: usize, cursor: bool) -> (String, String) {
    let p = |k: usize| format!("${}", first + k);
    let after = if cursor {
        format!(" AND a.id < {}", p(3))
    } else {
        String::new()
    };
    (
        format!("SELECT {columns} FROM {t} a WHERE a.organisation_id = "),
        format!(
            " AND {s}.alerts_attrs_match(a.attribute_values, {})
           AND a.id >= {}{after}
         ORDER BY a.id DESC LIMIT {}",
            p(0),
            p(1),
            p(2)
        ),
    )
}
