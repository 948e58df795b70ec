//! `alerts_search(rel anyelement, organisation_id, filter, since, before_id,
//! page_size) RETURNS SETOF anyelement`: exact pages, newest first.
//!
//! The walk reads the window newest first along the pagination index in
//! chunks, reading only `(organisation_id, id, bitmap)`: with the bitmap
//! INCLUDEd in the index that is an index-only scan, and the heap is visited
//! only for bloom candidates, to recheck them exactly and return them. When a
//! chunk leaves the page short and held fewer than one match in 200 entries,
//! the filter is rare from there down: a GIN index on `attribute_values`, if
//! there is one, answers the rest of the page with one jsonpath scan
//! (`alerts_filter_jsonpath`). The (tenant, filter) pair is remembered for a
//! few seconds so that the next pages of a rare filter go to GIN directly.
//! Every row returned passed `alerts_attrs_match`.
//!
//! Why C and not PL/pgSQL: the first version was PL/pgSQL with `EXECUTE`
//! (the table is a parameter), which plans 3 statements per call: 2-4 ms of
//! planning for a page the executor produces in 0.2-1 ms. Here every
//! statement is prepared once per table and session (`SPI_keepplan`), so a
//! call only executes. Plans are revalidated by Postgres' plan cache on DDL.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

use alerts_core::ulid;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::{error, text_datum};

crate::finfo_v1!(pg_finfo_alerts_search, pg_finfo_alerts_search_probe);

const TEXT: Oid = pg_sys::TEXTOID;
const JSONB: Oid = pg_sys::JSONBOID;
const INT8: Oid = pg_sys::INT8OID;
/// Phase 2 uses GIN when the walk found fewer than 1 match in this many rows.
const RARE: i64 = 200;

/// How long a (tenant, filter) a walk found rare goes straight to GIN.
const ROUTE_TTL: Duration = Duration::from_secs(10);
/// A GIN answer slower than this ends the shortcut: the filter may no longer
/// be rare for the tenant, and the next call walks first again.
const ROUTE_SLOW: Duration = Duration::from_millis(5);
/// Weeks of the first range the tenant-keys path reads (a 30-day window in
/// one statement), doubled for each next range.
const FIRST_WEEKS: u64 = 6;
/// A walk to the end of a window this long that found the filter rare
/// sends the next calls to the rare path.
const ROUTE_MIN_ENTRIES: i64 = 300;
/// Most weeks one keys statement looks up (keys per value).
const MAX_WEEKS: u64 = 256;
/// Bound on the (tenant, filter) shortcuts remembered per table and session.
const ROUTES_MAX: usize = 10_000;

/// Prepared statements of one table.
struct TablePlans {
    walk: pg_sys::SPIPlanPtr,
    above: pg_sys::SPIPlanPtr,
    frontier: pg_sys::SPIPlanPtr,
    rest: pg_sys::SPIPlanPtr,
    gin: pg_sys::SPIPlanPtr,
    /// Which GIN indexes the table has: (on `attribute_values`, on
    /// `alerts_keys(...)`).
    indexes: pg_sys::SPIPlanPtr,
    /// The answer of `indexes` and the relcache epoch it was read at (any
    /// relcache invalidation, such as an index created or dropped, reads it
    /// again).
    indexes_known: Option<((bool, bool), u64)>,
    /// The newest and the oldest entry of a tenant's window.
    newest: pg_sys::SPIPlanPtr,
    oldest: pg_sys::SPIPlanPtr,
    /// Tenant-key statements by the filter's number of keys.
    keys: HashMap<usize, pg_sys::SPIPlanPtr>,
    table: String,
    schema: String,
    /// (tenant, filter) pairs a walk found rare, and when: for ROUTE_TTL
    /// their calls go to GIN without walking first. Only ever a shortcut to
    /// GIN, which is exact whatever the window, so a stale entry costs time,
    /// never rows. Cleared when it reaches ROUTES_MAX.
    routes: HashMap<(Vec<u8>, Vec<u8>), (Instant, u64)>,
}

thread_local! {
    /// Backends are single-threaded; the plans live for the session.
    static PLANS: RefCell<HashMap<Oid, TablePlans>> = RefCell::new(HashMap::new());
    /// Bumped by every relcache invalidation (an index created or dropped
    /// sends one for its table).
    static RELCACHE_EPOCH: Cell<u64> = const { Cell::new(0) };
    static CALLBACK_REGISTERED: Cell<bool> = const { Cell::new(false) };
}

thread_local! {
    /// What the walk's probe saw since `probe_reset`: entries, smallest
    /// and largest id.
    static PROBE_COUNT: Cell<i64> = const { Cell::new(0) };
    static PROBE_MIN: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static PROBE_MAX: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn probe_reset() {
    PROBE_COUNT.with(|c| c.set(0));
    PROBE_MIN.with(|m| m.borrow_mut().clear());
    PROBE_MAX.with(|m| m.borrow_mut().clear());
}

/// Milliseconds between the newest and the oldest entry the probe saw, when
/// both are ULIDs.
fn probe_span_ms() -> Option<u64> {
    let t = |v: &RefCell<Vec<u8>>| alerts_core::keys::time_of_id(&v.borrow());
    let hi = PROBE_MAX.with(t)?;
    let lo = PROBE_MIN.with(t)?;
    Some(hi.saturating_sub(lo).max(1))
}

/// `alerts_search_probe(id text, bitmap bit, filter jsonb) RETURNS boolean`:
/// the walk's per-entry bloom test, which also counts the entries it is
/// called for and keeps the smallest id, so that a chunk tells where it
/// stopped without a second walk (a `row_number()` window cost 0.4 us per
/// entry, as much as the walk itself). A NULL bitmap (a row not yet
/// backfilled) is a candidate: the exact test decides. Internal to
/// `alerts_search`; calling it elsewhere only changes counters that every
/// walk resets.
///
/// # Safety
/// Called by Postgres through the V1 convention (not STRICT: NULL bitmaps
/// are counted too).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_search_probe(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_search_probe");
    let arg = |n: usize| unsafe { pgrx::fcinfo::pg_getarg_datum(fcinfo, n) };
    PROBE_COUNT.with(|c| c.set(c.get() + 1));
    if let Some(id) = arg(0) {
        // SAFETY: a non-null text datum.
        let id = unsafe { crate::datum::varlena_bytes(id) };
        PROBE_MIN.with(|m| {
            let mut m = m.borrow_mut();
            if m.is_empty() || id < m.as_slice() {
                m.clear();
                m.extend_from_slice(id);
            }
        });
        PROBE_MAX.with(|m| {
            let mut m = m.borrow_mut();
            if m.is_empty() || id > m.as_slice() {
                m.clear();
                m.extend_from_slice(id);
            }
        });
    }
    let Some(filter) = arg(2) else {
        // SAFETY: returning SQL NULL from a V1 function.
        unsafe { (*fcinfo).isnull = true };
        return Datum::from(0usize);
    };
    match arg(1) {
        // SAFETY: non-null (bit, jsonb) arguments; the compiled filter lives
        // in fn_extra.
        Some(bm) => unsafe {
            Datum::from(
                crate::filter_cache::compiled(fcinfo, filter)
                    .bloom_match(crate::datum::bitmap_arg(bm)),
            )
        },
        None => Datum::from(true),
    }
}

/// Relcache invalidation callback: only bumps a counter (no catalog access
/// is allowed here).
#[pg_guard]
unsafe extern "C-unwind" fn relcache_changed(_arg: Datum, _relid: Oid) {
    RELCACHE_EPOCH.with(|e| e.set(e.get().wrapping_add(1)));
}

unsafe fn cstr_owned(p: *const std::ffi::c_char) -> String {
    // SAFETY: callers pass NUL-terminated strings from Postgres.
    unsafe { CStr::from_ptr(p).to_string_lossy().into_owned() }
}

unsafe fn quoted(ident: &str) -> String {
    let c = CString::new(ident).expect("identifiers have no NUL");
    // SAFETY: quote_identifier returns its argument or a palloc'd copy.
    unsafe { cstr_owned(pg_sys::quote_identifier(c.as_ptr())) }
}

/// Prepares and keeps a statement, left to the plan cache's choice between
/// custom and generic plans.
unsafe fn prepare(sql: &str, types: &[Oid]) -> pg_sys::SPIPlanPtr {
    // SAFETY: as prepare_with.
    unsafe { prepare_with(sql, types, 0) }
}

/// Prepares and keeps a statement that always runs its generic plan: for
/// the index statements, whose only possible plans are the bitmap scan of
/// the index and a sequential scan. Left to choose, the plan cache compared
/// the generic plan's cost (a default selectivity) with custom plans priced
/// from the call's keys and planned every call anew (0.1-0.2 ms each).
unsafe fn prepare_generic(sql: &str, types: &[Oid]) -> pg_sys::SPIPlanPtr {
    // SAFETY: as prepare_with.
    unsafe { prepare_with(sql, types, pg_sys::CURSOR_OPT_GENERIC_PLAN as i32) }
}

unsafe fn prepare_with(sql: &str, types: &[Oid], options: i32) -> pg_sys::SPIPlanPtr {
    let c = CString::new(sql).expect("no NUL in SQL");
    // SAFETY: SPI is connected by the caller; `types` outlives the call.
    unsafe {
        let plan = pg_sys::SPI_prepare_cursor(
            c.as_ptr(),
            types.len() as i32,
            types.as_ptr() as *mut Oid,
            options,
        );
        if plan.is_null() {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("alerts_search could not prepare: {}", cstr_owned(pg_sys::SPI_result_code_string(pg_sys::SPI_result))),
                "check that the table has the columns id, organisation_id, attribute_values and attribute_values_bitmap",
            );
        }
        pg_sys::SPI_keepplan(plan);
        plan
    }
}

impl TablePlans {
    unsafe fn new(relid: Oid, ext_schema: &str) -> TablePlans {
        // SAFETY: relid is a valid relation (it came from a row type).
        let (schema, name) = unsafe {
            (
                cstr_owned(pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid))),
                cstr_owned(pg_sys::get_rel_name(relid)),
            )
        };
        // SAFETY: SPI is connected by the caller.
        unsafe {
            let t = format!("{}.{}", quoted(&schema), quoted(&name));
            // The window, plus a redundant row comparison on
            // (organisation_id, id) that only an index led by both columns
            // can use: with plain `c.id` bounds alone, generic plans on
            // tables of many equal tenants walked the primary key backwards
            // and filtered on the tenant (45 ms against 7 ms for 8000
            // entries, in the soak test's table of 10 tenants). Only the
            // upper bound: a row comparison as the lower bound is not a stop
            // condition on an `id DESC` column, and the scan ran past the
            // window to the tenant's oldest entry (small tenants: 4-5 ms
            // instead of 1).
            let window = "c.id >= $2 AND c.id < $3 AND (c.organisation_id, c.id) < ($1, $3)";
            let s = quoted(ext_schema);
            // One chunk of the walk: the newest $6 index entries below the
            // cursor, bloom-tested from the index (index-only), the heap
            // read only for candidates, at most $5 matches. The probe
            // counts the entries and keeps the smallest id: a full chunk's
            // count is $6 and its smallest id is where the next chunk
            // starts; fewer entries and a short page mean the walk reached
            // the end of the window, and what it found is the answer.
            // `frontier` finds the chunk's end by another walk, for a plan
            // that evaluated the probe on more entries than the chunk.
            let walk = prepare(
                &format!(
                    "SELECT x.r FROM (SELECT c.id, {s}.alerts_search_probe(c.id, c.attribute_values_bitmap, $4) AS maybe
                                      FROM {t} c
                                      WHERE c.organisation_id = $1 AND {window}
                                      ORDER BY c.id DESC LIMIT $6) k
                     CROSS JOIN LATERAL (SELECT a AS r FROM {t} a
                                         WHERE a.id = k.id AND {s}.alerts_attrs_match(a.attribute_values, $4)) x
                     WHERE k.maybe ORDER BY k.id DESC LIMIT $5"
                ),
                &[TEXT, TEXT, TEXT, JSONB, INT8, INT8],
            );
            let frontier = prepare(
                &format!(
                    "SELECT min(k.id) FROM (SELECT c.id FROM {t} c WHERE c.organisation_id = $1 AND {window}
                                            ORDER BY c.id DESC LIMIT $4) k"
                ),
                &[TEXT, TEXT, TEXT, INT8],
            );
            // Rows of the window whose ids sort at or after '8' (no ULID
            // does): read on first pages, before the ULIDs.
            let above = prepare(
                &format!(
                    "SELECT x.r FROM (SELECT c.id FROM {t} c
                                      WHERE c.organisation_id = $1 AND c.id >= $2 AND c.id >= '8'
                                        AND {s}.alerts_search_probe(c.id, c.attribute_values_bitmap, $3)
                                      ORDER BY c.id DESC) k
                     CROSS JOIN LATERAL (SELECT a AS r FROM {t} a
                                         WHERE a.id = k.id AND {s}.alerts_attrs_match(a.attribute_values, $3)) x
                     ORDER BY k.id DESC LIMIT $4"
                ),
                &[TEXT, TEXT, JSONB, INT8],
            );
            let rest = prepare(
                &format!(
                    "SELECT x.r FROM (SELECT c.id FROM {t} c
                                      WHERE c.organisation_id = $1 AND {window}
                                        AND {s}.alerts_search_probe(c.id, c.attribute_values_bitmap, $4)
                                      ORDER BY c.id DESC) k
                     CROSS JOIN LATERAL (SELECT a AS r FROM {t} a
                                         WHERE a.id = k.id AND {s}.alerts_attrs_match(a.attribute_values, $4)) x
                     ORDER BY k.id DESC LIMIT $5"
                ),
                &[TEXT, TEXT, TEXT, JSONB, INT8],
            );
            // The GIN statement: $6 is the filter's jsonpath
            // (alerts_filter_jsonpath), which a GIN index on the attributes
            // answers in one scan whatever the filter's shape. The tenant
            // and window conditions are written so that no btree can serve
            // them (`|| ''`): the only plans left are this bitmap scan of
            // the candidates (sorted, limited) and a sequential scan, which
            // the planner never prefers for `@@` (a fixed 0.1% estimate), so
            // the plan cache may keep one generic plan. Left to itself with
            // plain conditions the planner sees the LIMIT and walks the
            // pagination index through the whole window instead (50 ms
            // against 1.5 ms on the 1M-alert tenant). It runs only once a
            // walk has shown the filter to be rare.
            let gin = prepare_generic(
                &format!(
                    "SELECT a AS r FROM {t} a
                     WHERE a.attribute_values @@ $6 AND a.organisation_id || '' = $1
                       AND a.id || '' >= $2 AND a.id || '' < $3
                       AND {s}.alerts_attrs_match(a.attribute_values, $4)
                     ORDER BY a.id DESC LIMIT $5"
                ),
                &[TEXT, TEXT, TEXT, JSONB, INT8, pg_sys::JSONPATHOID],
            );
            let indexes = prepare(
                "SELECT coalesce(bool_or(att.attname = 'attribute_values'), false),
                        coalesce(bool_or(pg_catalog.pg_get_expr(i.indexprs, i.indrelid)
                                         LIKE '%alerts_keys(organisation_id, id, attribute_values)'), false)
                 FROM pg_catalog.pg_index i
                 JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
                 JOIN pg_catalog.pg_am am ON am.oid = ic.relam
                 LEFT JOIN pg_catalog.pg_attribute att ON att.attrelid = i.indrelid AND att.attnum = i.indkey[0]
                 WHERE i.indrelid = $1 AND am.amname = 'gin' AND i.indisvalid AND i.indpred IS NULL",
                &[pg_sys::OIDOID],
            );
            let newest = prepare(
                &format!(
                    "SELECT c.id FROM {t} c WHERE c.organisation_id = $1 AND {window} ORDER BY c.id DESC LIMIT 1"
                ),
                &[TEXT, TEXT, TEXT],
            );
            let oldest = prepare(
                &format!(
                    "SELECT c.id FROM {t} c WHERE c.organisation_id = $1 AND {window} ORDER BY c.id LIMIT 1"
                ),
                &[TEXT, TEXT, TEXT],
            );
            TablePlans {
                walk,
                above,
                frontier,
                rest,
                gin,
                indexes,
                indexes_known: None,
                newest,
                oldest,
                keys: HashMap::new(),
                routes: HashMap::new(),
                table: t,
                schema: s,
            }
        }
    }

    /// (GIN on `attribute_values`, GIN on `alerts_keys(...)`): valid,
    /// non-partial indexes of the table, read from the catalog once per
    /// relcache epoch.
    unsafe fn indexes(&mut self, relid: Oid) -> (bool, bool) {
        let epoch = RELCACHE_EPOCH.with(|e| e.get());
        if let Some((known, at)) = self.indexes_known {
            if at == epoch {
                return known;
            }
        }
        // SAFETY: SPI is connected by the caller.
        let known = unsafe {
            let tt = execute(self.indexes, &[Datum::from(relid)]);
            let mut isnull = false;
            let gin = pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, 1, &mut isnull);
            let keys = pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, 2, &mut isnull);
            (gin.value() != 0, keys.value() != 0)
        };
        self.indexes_known = Some((known, epoch));
        known
    }

    /// The tenant-key statement for filters of `n` keys: `$6..` are the keys
    /// each clause looks up (`alerts_core::keys::clause_keys`). As in the
    /// GIN statement, the tenant and window conditions are out of the
    /// btrees' reach, so the plan is the bitmap scan of the keys index.
    unsafe fn keys_plan(&mut self, n: usize) -> pg_sys::SPIPlanPtr {
        if let Some(p) = self.keys.get(&n) {
            return *p;
        }
        let (t, s) = (&self.table, &self.schema);
        let pred: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{s}.alerts_keys(a.organisation_id, a.id, a.attribute_values) OPERATOR(pg_catalog.&&) ${}",
                    6 + i
                )
            })
            .collect();
        let mut types = vec![TEXT, TEXT, TEXT, JSONB, INT8];
        types.resize(5 + n, pg_sys::INT8ARRAYOID);
        // SAFETY: SPI is connected by the caller.
        let plan = unsafe {
            prepare_generic(
                &format!(
                    "SELECT a AS r FROM {t} a
                     WHERE {} AND a.organisation_id || '' = $1
                       AND a.id || '' >= $2 AND a.id || '' < $3
                       AND {s}.alerts_attrs_match(a.attribute_values, $4)
                     ORDER BY a.id DESC LIMIT $5",
                    pred.join(" AND ")
                ),
                &types,
            )
        };
        self.keys.insert(n, plan);
        plan
    }
}

/// The first id a one-column statement returns, if any (bytes copied).
unsafe fn first_id(plan: pg_sys::SPIPlanPtr, args: &[Datum]) -> Option<Vec<u8>> {
    // SAFETY: SPI is connected; the statement returns one text column.
    unsafe {
        let tt = execute(plan, args);
        if rows(tt) == 0 {
            return None;
        }
        let mut isnull = false;
        let d = pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, 1, &mut isnull);
        (!isnull).then(|| crate::datum::varlena_bytes(d).to_vec())
    }
}

/// A `text` datum of raw bytes.
fn text_of(bytes: &[u8]) -> Datum {
    // SAFETY: cstring_to_text_with_len copies `len` bytes into a new text.
    unsafe {
        Datum::from(pg_sys::cstring_to_text_with_len(
            bytes.as_ptr() as *const _,
            bytes.len() as i32,
        ))
    }
}

/// The rest of a page through the tenant-keys index, newest weeks first:
/// the newest FIRST_WEEKS weeks, then twice as many each time, until the page is full or the
/// window's oldest week is read. Every range is bounded by ids (each row
/// belongs to exactly one range) and checked exactly. Returns false, having
/// written nothing, when the window's ends are not ULIDs (no weeks to walk).
#[allow(clippy::too_many_arguments)]
unsafe fn run_keys(
    p: &mut TablePlans,
    compiled: &alerts_core::Filter,
    org: Datum,
    floor: Datum,
    cursor: Datum,
    filter: Datum,
    mut want: i64,
    first_weeks: u64,
    store: *mut pg_sys::Tuplestorestate,
) -> bool {
    use alerts_core::keys::{clause_keys, week_floor, week_of_id, NO_WEEK};
    // SAFETY: SPI is connected by the caller; datums are live.
    unsafe {
        // The window's weeks: from the cursor's (or the tenant's newest
        // entry's, on a first page) down to the floor's (or the tenant's
        // oldest entry's, when the window reaches further back than a first
        // range; an unbounded window starts in 1970).
        let floor_bytes = crate::datum::varlena_bytes(floor).to_vec();
        let mut hi = week_of_id(crate::datum::varlena_bytes(cursor));
        if hi == NO_WEEK {
            let Some(newest) = first_id(p.newest, &[org, floor, cursor]) else {
                return true; // nothing in the window below the cursor
            };
            hi = week_of_id(&newest);
        }
        let mut lo = week_of_id(&floor_bytes);
        if hi == NO_WEEK || lo == NO_WEEK {
            return false;
        }
        if hi.saturating_sub(lo) >= FIRST_WEEKS {
            // A long window: bound it by the tenant's entries, not by the
            // cursor and the floor (a cursor far in the future or an
            // unbounded window would mean weeks without a row).
            let Some(newest) = first_id(p.newest, &[org, floor, cursor]) else {
                return true;
            };
            hi = hi.min(week_of_id(&newest));
            let Some(oldest) = first_id(p.oldest, &[org, floor, cursor]) else {
                return true;
            };
            lo = lo.max(week_of_id(&oldest));
            if lo == NO_WEEK {
                return false;
            }
        }
        if lo > hi {
            return true; // the window is empty below the cursor
        }
        let tenant = crate::datum::varlena_bytes(org).to_vec();
        let plan = p.keys_plan(compiled.clauses.len());
        let mut upper = cursor;
        let mut span: u64 = first_weeks.max(1);
        loop {
            let start = if hi - lo < span { lo } else { hi + 1 - span };
            let bound = week_floor(start);
            let range_floor = if start == lo || floor_bytes.as_slice() > bound.as_slice() {
                floor
            } else {
                text_of(&bound)
            };
            let mut args = vec![org, range_floor, upper, filter, Datum::from(want)];
            for c in &compiled.clauses {
                args.push(crate::keys::int8_array(&clause_keys(&tenant, start, hi, c)));
            }
            want -= copy_into(execute(plan, &args), store, want);
            if want <= 0 || start == lo {
                return true;
            }
            upper = text_of(&bound);
            hi = start - 1;
            span = span.saturating_mul(2).min(MAX_WEEKS);
        }
    }
}

/// Runs a prepared statement read-only (the caller's snapshot) and returns
/// its result table, which stays valid until `SPI_finish`.
unsafe fn execute(plan: pg_sys::SPIPlanPtr, args: &[Datum]) -> *mut pg_sys::SPITupleTable {
    let nulls = vec![b' ' as std::ffi::c_char; args.len()];
    // SAFETY: SPI is connected; args match the plan's parameter types.
    unsafe {
        let rc =
            pg_sys::SPI_execute_plan(plan, args.as_ptr() as *mut Datum, nulls.as_ptr(), true, 0);
        if rc != pg_sys::SPI_OK_SELECT as i32 {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!(
                    "alerts_search: query failed: {}",
                    cstr_owned(pg_sys::SPI_result_code_string(rc))
                ),
                "report this as a bug",
            );
        }
        pg_sys::SPI_tuptable
    }
}

/// Number of rows of a result table.
unsafe fn rows(tt: *mut pg_sys::SPITupleTable) -> u64 {
    // SAFETY: tt is a live SPI result table.
    unsafe { (*tt).numvals }
}

/// Appends the non-NULL values of column 1 (the table's row type) of a
/// result table to the tuplestore, at most `max`; returns how many.
unsafe fn copy_into(
    tt: *mut pg_sys::SPITupleTable,
    store: *mut pg_sys::Tuplestorestate,
    max: i64,
) -> i64 {
    let mut copied = 0;
    // SAFETY: tt is a live SPI result table whose column 1 is the table's row type.
    unsafe {
        for i in 0..rows(tt) as usize {
            if copied >= max {
                break;
            }
            let tuple = *(*tt).vals.add(i);
            let mut isnull = false;
            let d = pg_sys::SPI_getbinval(tuple, (*tt).tupdesc, 1, &mut isnull);
            if isnull {
                continue;
            }
            let td = pg_sys::pg_detoast_datum(d.cast_mut_ptr()) as pg_sys::HeapTupleHeader;
            let mut tmp = pg_sys::HeapTupleData {
                t_len: pgrx::varsize_any(td as *const pg_sys::varlena) as u32,
                t_data: td,
                ..Default::default()
            };
            pg_sys::tuplestore_puttuple(store, &mut tmp);
            copied += 1;
        }
    }
    copied
}

/// # Safety
/// Called by Postgres through the V1 convention as a set-returning function.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn alerts_search(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    crate::datum::enter("alerts_search");
    // SAFETY: we check the call context before using it; argument datums are
    // read only where they are not null.
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
        let flinfo = (*fcinfo).flinfo;
        let rowtype = pg_sys::get_fn_expr_argtype(flinfo, 0);
        let relid = if rowtype == pg_sys::InvalidOid {
            pg_sys::InvalidOid
        } else {
            pg_sys::get_typ_typrelid(rowtype)
        };
        if relid == pg_sys::InvalidOid {
            error(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "alerts_search: first argument must be a table's row type, got {}",
                    cstr_owned(pg_sys::format_type_be(rowtype))
                ),
                "call it as SELECT * FROM alerts_search(NULL::alerts, $1, $2)",
            );
        }
        let arg = |n: usize| pgrx::fcinfo::pg_getarg_datum(fcinfo, n);
        let (Some(org), Some(filter), Some(since), Some(size)) = (arg(1), arg(2), arg(3), arg(5))
        else {
            error(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "alerts_search: organisation_id, filter, since and page_size must not be NULL".into(),
                "pass '{}' as the filter to match every alert, and leave before_id NULL for the first page",
            );
        };
        let page_size = size.value() as i32;
        if page_size < 1 {
            error(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("alerts_search: page_size must be at least 1, got {page_size}"),
                "pages are usually 50 rows",
            );
        }
        // Compiles (and so validates) the filter, with the filter's own errors.
        let compiled = crate::filter_cache::compiled(fcinfo, filter);
        let floor_ms = ulid::unix_ms_of_pg_timestamp(since.value() as i64).unwrap_or_else(|| {
            error(
                PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
                "alerts_search: since is after the last time a ULID can hold".into(),
                "pass a finite timestamp",
            )
        });
        let floor = text_datum(std::str::from_utf8(&ulid::floor(floor_ms)).expect("ascii"));
        // '8' sorts after every ULID; rows with other ids at or after it are
        // read first, by `above`, on a first page.
        let first_page = arg(4).is_none();
        let before = arg(4).unwrap_or_else(|| text_datum("8"));
        let budget = (20 * page_size as i64).max(1000);

        // The result lives in the query's memory, in the table's row type.
        let per_query = (*(*rsinfo).econtext).ecxt_per_query_memory;
        let old = pg_sys::MemoryContextSwitchTo(per_query);
        let store = pg_sys::tuplestore_begin_heap(true, false, pg_sys::work_mem);
        let desc = pg_sys::lookup_rowtype_tupdesc_copy(rowtype, -1);
        pg_sys::MemoryContextSwitchTo(old);

        // Our statements resolve operators and functions with a fixed
        // search_path, whatever the caller's: as a function's `SET
        // search_path` clause would, restored at the end of the call (or by
        // the transaction's abort on error).
        let guc_level = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            c"pg_catalog, pg_temp".as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as i32 {
            error(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                "alerts_search: SPI_connect failed".into(),
                "report this as a bug",
            );
        }
        if !CALLBACK_REGISTERED.with(|r| r.replace(true)) {
            pg_sys::CacheRegisterRelcacheCallback(Some(relcache_changed), Datum::from(0usize));
        }
        PLANS.with(|plans| {
            let mut plans = plans.borrow_mut();
            let p = plans.entry(relid).or_insert_with(|| {
                // Only when a table's statements are first prepared.
                let ext_schema = cstr_owned(pg_sys::get_namespace_name(
                    pg_sys::get_func_namespace((*flinfo).fn_oid),
                ));
                TablePlans::new(relid, &ext_schema)
            });
            if compiled.matches_nothing() {
                return; // a key with no accepted values: no row matches
            }
            let mut page_size = page_size as i64;
            if first_page {
                // Ids at or after '8' (not ULIDs: other schemes, lowercase
                // hex...) come first in the index; usually there are none
                // and this costs one index descent.
                page_size -= copy_into(
                    execute(p.above, &[org, floor, filter, Datum::from(page_size)]),
                    store,
                    page_size,
                );
                if page_size == 0 {
                    return;
                }
            }
            // The rare path: the tenant-keys index if the table has one,
            // else a GIN index on the attributes when the filter has a form
            // it answers (not `{}`, which every row matches).
            let (has_gin, has_keys) = p.indexes(relid);
            let jsonpath = compiled.gin_jsonpath();
            let keys = has_keys && !compiled.is_empty();
            let gin = jsonpath.is_some() && has_gin;
            let rare_path = keys || gin;
            // The rest of the page below `cursor` by the rare path.
            let run_rare = |p: &mut TablePlans, cursor: Datum, want: i64, weeks: u64| {
                if keys && run_keys(p, compiled, org, floor, cursor, filter, want, weeks, store) {
                    return;
                }
                if gin {
                    let path = crate::datum::jsonpath_datum(jsonpath.as_deref().expect("checked"));
                    let args = [org, floor, cursor, filter, Datum::from(want), path];
                    copy_into(execute(p.gin, &args), store, want);
                } else {
                    copy_into(
                        execute(p.rest, &[org, floor, cursor, filter, Datum::from(want)]),
                        store,
                        want,
                    );
                }
            };
            let route_key = (rare_path && crate::SEARCH_SHORTCUTS.get()).then(|| {
                let org_bytes = crate::datum::varlena_bytes(org).to_vec();
                (org_bytes, crate::datum::varlena_bytes(filter).to_vec())
            });
            if let Some(key) = &route_key {
                let fresh = p.routes.get(key).filter(|(t, _)| t.elapsed() < ROUTE_TTL);
                if let Some(&(_, weeks)) = fresh {
                    // Walked recently and found rare: straight to the rare
                    // path. A slow answer means the filter is no longer rare
                    // here.
                    let started = Instant::now();
                    run_rare(p, before, page_size, weeks);
                    if started.elapsed() > ROUTE_SLOW {
                        p.routes.remove(key);
                    }
                    return;
                }
            }
            // Walk the window in chunks, newest first: `budget` index
            // entries, then as many as the rate seen so far says the page
            // needs (at least twice more each time). After each chunk that
            // leaves the page short: if the chunk held fewer than 1 match in
            // RARE entries and GIN is an option, the filter is rare from
            // here down (matches often come in bursts: many recent, then
            // none), so GIN answers the rest of the window; otherwise walk on.
            let mut cursor = before;
            let mut collected: i64 = 0;
            let mut chunk = budget;
            loop {
                let want = page_size - collected;
                probe_reset();
                let walked = execute(
                    p.walk,
                    &[
                        org,
                        floor,
                        cursor,
                        filter,
                        Datum::from(want),
                        Datum::from(chunk),
                    ],
                );
                let hits = rows(walked) as i64;
                if hits >= want {
                    copy_into(walked, store, want);
                    return;
                }
                let entries = PROBE_COUNT.with(|c| c.get());
                if entries < chunk {
                    // The walk reached the end of the window: that's all.
                    // If the rare path would have been cheaper, the next
                    // calls take it.
                    let rare = if keys {
                        alerts_core::keys::keys_cheaper_than_walked(hits, entries)
                    } else {
                        entries >= ROUTE_MIN_ENTRIES && hits * RARE < entries
                    };
                    if let (true, Some(key)) = (collected == 0 && rare, route_key) {
                        if p.routes.len() >= ROUTES_MAX {
                            p.routes.clear();
                        }
                        p.routes.insert(key, (Instant::now(), FIRST_WEEKS));
                    }
                    copy_into(walked, store, want);
                    return;
                }
                let frontier = if entries == chunk {
                    PROBE_MIN.with(|m| text_of(&m.borrow()))
                } else {
                    let tt = execute(p.frontier, &[org, floor, cursor, Datum::from(chunk)]);
                    let mut isnull = true;
                    let d = if rows(tt) > 0 {
                        pg_sys::SPI_getbinval(*(*tt).vals, (*tt).tupdesc, 1, &mut isnull)
                    } else {
                        Datum::from(0usize)
                    };
                    if isnull {
                        copy_into(walked, store, want);
                        return;
                    }
                    d
                };
                // Switch to the rare path? With the tenant-keys index, when
                // its estimated cost for the rest of the page is below the
                // walk's (`alerts_core::keys::keys_cheaper`); with GIN alone, whose cost
                // follows the whole table, when the chunk held fewer than
                // one match in RARE entries.
                let switch = if keys {
                    probe_span_ms().and_then(|span| {
                        alerts_core::keys::keys_cheaper(hits, chunk, span, want, FIRST_WEEKS)
                    })
                } else {
                    None
                }
                .or_else(|| (rare_path && hits * RARE < chunk).then_some(FIRST_WEEKS));
                if let Some(weeks) = switch {
                    // The rare path answers the rest of the page below the
                    // cursor (it finds again what this chunk found).
                    if let (true, Some(key)) = (collected == 0 && cursor == before, route_key) {
                        if p.routes.len() >= ROUTES_MAX {
                            p.routes.clear();
                        }
                        p.routes.insert(key, (Instant::now(), weeks));
                    }
                    run_rare(p, cursor, want, weeks);
                    return;
                }
                collected += copy_into(walked, store, want);
                if !rare_path {
                    // Nothing to switch to: walk the rest without a budget.
                    let remaining = page_size - collected;
                    copy_into(
                        execute(
                            p.rest,
                            &[org, floor, frontier, filter, Datum::from(remaining)],
                        ),
                        store,
                        remaining,
                    );
                    return;
                }
                // The next chunk: enough, at this chunk's rate, for the rest
                // of the page with half as much again to spare (so a second
                // chunk usually fills it), and at least twice this one.
                let needed = (page_size - collected) * chunk / hits.max(1);
                cursor = frontier;
                chunk = (needed.saturating_mul(3) / 2).max(chunk.saturating_mul(2));
            }
        });
        pg_sys::SPI_finish();
        pg_sys::AtEOXact_GUC(true, guc_level);

        (*rsinfo).returnMode = pg_sys::SetFunctionReturnMode::SFRM_Materialize;
        (*rsinfo).setResult = store;
        (*rsinfo).setDesc = desc;
        (*fcinfo).isnull = true;
        Datum::from(0usize)
    }
}
