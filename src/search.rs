//! `alerts_search(rel anyelement, organisation_id, filter, since, before_id,
//! page_size) RETURNS SETOF anyelement`: exact pages, newest first.
//!
//! Phase 1 walks the newest `budget` rows of the window along the pagination
//! index, reading only `(organisation_id, id, bitmap)`: with the bitmap
//! INCLUDEd in the index that is an index-only scan, and the heap is visited
//! only for bloom candidates, to recheck them exactly and return them. When
//! the page is not full after the budget and the walk found fewer than one
//! match in 200 rows, the filter is rare: phase 2 lets a GIN index on
//! `attribute_values` fetch the few matches of the whole window if there is
//! one. Otherwise the walk goes on to the end of the page. Every row returned
//! passed `alerts_attrs_match`.
//!
//! Why C and not PL/pgSQL: the first version was PL/pgSQL with `EXECUTE`
//! (the table is a parameter), which plans 3 statements per call: 2-4 ms of
//! planning for a page the executor produces in 0.2-1 ms. Here every
//! statement is prepared once per table and session (`SPI_keepplan`), and the
//! GIN statement once per filter shape (number of keys and values), so a call
//! only executes. Plans are revalidated by Postgres' plan cache on DDL.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};

use alerts_core::ulid;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::PgSqlErrorCode;

use crate::datum::{error, text_datum, OrRaise};

crate::finfo_v1!(pg_finfo_alerts_search);

const TEXT: Oid = pg_sys::TEXTOID;
const JSONB: Oid = pg_sys::JSONBOID;
const INT8: Oid = pg_sys::INT8OID;
/// Phase 2 uses GIN when the walk found fewer than 1 match in this many rows.
const RARE: i64 = 200;

/// Bound on the tenants remembered per table and session.
const BIG_TENANTS_MAX: usize = 10_000;

/// Prepared statements of one table.
struct TablePlans {
    walk: pg_sys::SPIPlanPtr,
    frontier: pg_sys::SPIPlanPtr,
    rest: pg_sys::SPIPlanPtr,
    has_gin: pg_sys::SPIPlanPtr,
    /// GIN statements by filter shape: the number of values of each key.
    gin: HashMap<Vec<usize>, pg_sys::SPIPlanPtr>,
    /// Tenants whose window was seen to hold more than a first chunk: for
    /// them a rare first chunk goes to GIN without first checking whether
    /// the walk already reached the window's end. Only ever a shortcut to
    /// GIN, which is exact whatever the window, so a stale entry costs time,
    /// never rows. Cleared when it reaches BIG_TENANTS_MAX.
    big_tenants: HashSet<Vec<u8>>,
    table: String,
    schema: String,
}

thread_local! {
    /// Backends are single-threaded; the plans live for the session.
    static PLANS: RefCell<HashMap<Oid, TablePlans>> = RefCell::new(HashMap::new());
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

/// Prepares and keeps a statement. `custom`: plan it anew for every call's
/// values instead of letting the plan cache settle on a generic plan.
unsafe fn prepare(sql: &str, types: &[Oid], custom: bool) -> pg_sys::SPIPlanPtr {
    let c = CString::new(sql).expect("no NUL in SQL");
    let options = if custom {
        pg_sys::CURSOR_OPT_CUSTOM_PLAN as i32
    } else {
        0
    };
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
            let walk = prepare(
                &format!(
                    "SELECT x.r FROM (SELECT c.id, {s}.alerts_bloom_match(c.attribute_values_bitmap, $4) AS maybe
                                      FROM {t} c
                                      WHERE c.organisation_id = $1 AND {window}
                                      ORDER BY c.id DESC LIMIT $6) k
                     CROSS JOIN LATERAL (SELECT a AS r FROM {t} a
                                         WHERE a.id = k.id AND {s}.alerts_attrs_match(a.attribute_values, $4)) x
                     WHERE k.maybe ORDER BY k.id DESC LIMIT $5"
                ),
                &[TEXT, TEXT, TEXT, JSONB, INT8, INT8],
                false,
            );
            let frontier = prepare(
                &format!(
                    "SELECT c.id FROM {t} c WHERE c.organisation_id = $1 AND {window}
                     ORDER BY c.id DESC OFFSET $4 - 1 LIMIT 1"
                ),
                &[TEXT, TEXT, TEXT, INT8],
                false,
            );
            let rest = prepare(
                &format!(
                    "SELECT x.r FROM (SELECT c.id FROM {t} c
                                      WHERE c.organisation_id = $1 AND {window}
                                        AND {s}.alerts_bloom_match(c.attribute_values_bitmap, $4)
                                      ORDER BY c.id DESC) k
                     CROSS JOIN LATERAL (SELECT a AS r FROM {t} a
                                         WHERE a.id = k.id AND {s}.alerts_attrs_match(a.attribute_values, $4)) x
                     ORDER BY k.id DESC LIMIT $5"
                ),
                &[TEXT, TEXT, TEXT, JSONB, INT8],
                false,
            );
            let has_gin = prepare(
                "SELECT 1 FROM pg_catalog.pg_index i
                 JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
                 JOIN pg_catalog.pg_am am ON am.oid = ic.relam
                 JOIN pg_catalog.pg_attribute att ON att.attrelid = i.indrelid AND att.attnum = i.indkey[0]
                 WHERE i.indrelid = $1 AND am.amname = 'gin' AND att.attname = 'attribute_values' AND i.indisvalid
                 LIMIT 1",
                &[pg_sys::OIDOID],
                false,
            );
            TablePlans {
                walk,
                frontier,
                rest,
                has_gin,
                gin: HashMap::new(),
                big_tenants: HashSet::new(),
                table: t,
                schema: s,
            }
        }
    }

    /// The GIN statement for a filter shape: `$6..` are the containment
    /// values `{k: v}` and `{k: [v]}` of every value, in order.
    unsafe fn gin_plan(&mut self, shape: &[usize]) -> pg_sys::SPIPlanPtr {
        if let Some(p) = self.gin.get(shape) {
            return *p;
        }
        let mut param = 6;
        let mut clauses = Vec::new();
        for &n in shape {
            if n == 0 {
                clauses.push("false".to_string());
                continue;
            }
            let alts: Vec<String> = (0..n)
                .map(|_| {
                    let s = format!(
                        "a.attribute_values @> ${} OR a.attribute_values @> ${}",
                        param,
                        param + 1
                    );
                    param += 2;
                    s
                })
                .collect();
            clauses.push(format!("({})", alts.join(" OR ")));
        }
        let pred = if clauses.is_empty() {
            "true".to_string()
        } else {
            clauses.join(" AND ")
        };
        let mut types = vec![TEXT, TEXT, TEXT, JSONB, INT8];
        types.resize(param - 1, JSONB);
        let (t, s) = (&self.table, &self.schema);
        // The tenant and window conditions are written so that no btree can
        // serve them (`|| ''`): only the GIN index can, and the plan is a
        // bitmap scan of the candidates, a sort and the limit. Left to
        // itself the planner prices jsonb `@>` at a fixed selectivity, sees
        // the LIMIT, and walks the pagination index through the whole window
        // instead: measured 50 ms against 1.5 ms on the 1M-alert tenant.
        // Phase 2 runs only once the walk has shown the filter to be rare.
        // SAFETY: SPI is connected by the caller.
        let plan = unsafe {
            prepare(
                &format!(
                    "SELECT a AS r FROM {t} a
                     WHERE ({pred}) AND a.organisation_id || '' = $1
                       AND a.id || '' >= $2 AND a.id || '' < $3
                       AND {s}.alerts_attrs_match(a.attribute_values, $4)
                     ORDER BY a.id DESC LIMIT $5"
                ),
                &types,
                // Planned with the values each time: a generic plan of an
                // AND of several `@>` clauses can fall back to a sequential
                // scan of the whole table (530 ms measured on 5M rows).
                true,
            )
        };
        self.gin.insert(shape.to_vec(), plan);
        plan
    }
}

/// The id `chunk` entries down the window from `cursor`, or None when the
/// window holds fewer: where a walk of that chunk stopped.
unsafe fn frontier_of(
    plan: pg_sys::SPIPlanPtr,
    org: Datum,
    floor: Datum,
    cursor: Datum,
    chunk: i64,
) -> Option<Datum> {
    // SAFETY: SPI is connected; the result table lives until SPI_finish.
    unsafe {
        let stop = execute(plan, &[org, floor, cursor, Datum::from(chunk)]);
        if rows(stop) == 0 {
            return None;
        }
        let mut isnull = false;
        Some(pg_sys::SPI_getbinval(
            *(*stop).vals,
            (*stop).tupdesc,
            1,
            &mut isnull,
        ))
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

/// Appends the single composite column of a result table to the tuplestore.
unsafe fn copy_into(tt: *mut pg_sys::SPITupleTable, store: *mut pg_sys::Tuplestorestate) {
    // SAFETY: tt is a live SPI result table whose column 1 is the table's row type.
    unsafe {
        for i in 0..rows(tt) as usize {
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
        }
    }
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
        let shape: Vec<usize> = compiled.clauses.iter().map(|c| c.values.len()).collect();
        let floor_ms = ulid::unix_ms_of_pg_timestamp(since.value() as i64).unwrap_or_else(|| {
            error(
                PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
                "alerts_search: since is after the last time a ULID can hold".into(),
                "pass a finite timestamp",
            )
        });
        let floor = text_datum(std::str::from_utf8(&ulid::floor(floor_ms)).expect("ascii"));
        let before = arg(4).unwrap_or_else(|| text_datum("8")); // '8' sorts after every ULID
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
        PLANS.with(|plans| {
            let mut plans = plans.borrow_mut();
            let p = plans.entry(relid).or_insert_with(|| {
                // Only when a table's statements are first prepared.
                let ext_schema = cstr_owned(pg_sys::get_namespace_name(
                    pg_sys::get_func_namespace((*flinfo).fn_oid),
                ));
                TablePlans::new(relid, &ext_schema)
            });
            // Walk the window in chunks, newest first: `budget` index
            // entries, then as many as the rate seen so far says the page
            // needs (at least twice more each time). After each chunk that leaves
            // the page short: if the chunk held fewer than 1 match in RARE
            // entries and a GIN index exists, the filter is rare from here
            // down (matches often come in bursts: many recent, then none),
            // so GIN answers the rest of the window; otherwise walk on.
            let mut cursor = before;
            let mut collected: i64 = 0;
            let mut chunk = budget;
            let mut has_gin: Option<bool> = None;
            loop {
                let want = page_size as i64 - collected;
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
                let got = rows(walked) as i64;
                if got >= want {
                    copy_into(walked, store);
                    return;
                }
                // Where the chunk stopped; no row: it read the whole window,
                // and what it found is the answer (no GIN call needed).
                // Skipped for a first chunk of a tenant known to be big.
                let first = collected == 0 && chunk == budget;
                // The tenant's bytes, read only on this path (not when the
                // first chunk fills the page).
                let org_key = first.then(|| {
                    CStr::from_ptr(pg_sys::text_to_cstring(org.cast_mut_ptr()))
                        .to_bytes()
                        .to_vec()
                });
                let mut frontier = None;
                if !org_key.as_ref().is_some_and(|k| p.big_tenants.contains(k)) {
                    match frontier_of(p.frontier, org, floor, cursor, chunk) {
                        None => {
                            copy_into(walked, store);
                            return;
                        }
                        Some(f) => frontier = Some(f),
                    }
                    if let Some(k) = org_key {
                        if p.big_tenants.len() >= BIG_TENANTS_MAX {
                            p.big_tenants.clear();
                        }
                        p.big_tenants.insert(k);
                    }
                }
                let gin = *has_gin.get_or_insert_with(|| {
                    let rc = pg_sys::SPI_execute_plan(
                        p.has_gin,
                        [Datum::from(relid)].as_mut_ptr(),
                        c" ".as_ptr(),
                        true,
                        1,
                    );
                    rc == pg_sys::SPI_OK_SELECT as i32 && pg_sys::SPI_processed > 0
                });
                if gin && got * RARE < chunk {
                    // GIN answers the rest of the page below the cursor in
                    // one statement (it finds again what this chunk found).
                    let mut args = vec![org, floor, cursor, filter, Datum::from(want)];
                    for c in &compiled.clauses {
                        for v in &c.values {
                            let value = alerts_core::encoding::decode_value(v).or_raise();
                            args.push(jsonb_datum(
                                &serde_json::json!({ c.key.clone(): value.clone() }),
                            ));
                            args.push(jsonb_datum(&serde_json::json!({ c.key.clone(): [value] })));
                        }
                    }
                    let plan = p.gin_plan(&shape);
                    copy_into(execute(plan, &args), store);
                    return;
                }
                copy_into(walked, store);
                collected += got;
                let Some(frontier) =
                    frontier.or_else(|| frontier_of(p.frontier, org, floor, cursor, chunk))
                else {
                    return;
                };
                if !gin {
                    // Nothing to switch to: walk the rest without a budget.
                    let remaining = Datum::from(page_size as i64 - collected);
                    copy_into(
                        execute(p.rest, &[org, floor, frontier, filter, remaining]),
                        store,
                    );
                    return;
                }
                // The next chunk: enough, at this chunk's rate, for the rest
                // of the page with half as much again to spare (so a second
                // chunk usually fills it), and at least twice this one.
                let needed = (page_size as i64 - collected) * chunk / got.max(1);
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

/// A jsonb datum from a serde value (through jsonb's text input).
fn jsonb_datum(v: &serde_json::Value) -> Datum {
    let text = CString::new(v.to_string()).expect("JSON text has no NUL");
    // SAFETY: jsonb_in parses a C string into a palloc'd jsonb.
    unsafe {
        pgrx::direct_function_call_as_datum(pg_sys::jsonb_in, &[Some(Datum::from(text.as_ptr()))])
            .expect("jsonb")
    }
}
