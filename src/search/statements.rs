//! The statements `alerts_search` runs on one table, each prepared on its
//! first use in the session and kept (`SPI_keepplan`), so that a call only
//! executes:
//! the first version was PL/pgSQL with `EXECUTE`, which planned 3 statements
//! per call (2-4 ms of planning for a page the executor produces in 0.2-1
//! ms). Postgres' plan cache revalidates them on DDL; they name the table,
//! and `session.rs` drops them when its name changes. Which indexes the
//! table has is in `indexes.rs`.

use pgrx::pg_sys::{self, Datum, Oid};

use super::indexes::IndexCache;
use super::spi::{
    cstr_owned, execute, extension_schema, first_value, keep, prepare, prepare_generic, quoted,
};

const TEXT: Oid = pg_sys::TEXTOID;
const JSONB: Oid = pg_sys::JSONBOID;
const INT8: Oid = pg_sys::INT8OID;

/// The statements of one table, each prepared on its first use (a direct
/// walk runs none of them: preparing all of them on a table's first search
/// cost a new connection's first page a few milliseconds per partition).
/// Parameters, where present: `$1` tenant, `$2` the window's floor
/// (smallest id), `$3` the cursor (ids below it), `$4` the filter, `$5`
/// rows wanted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stmt {
    /// One chunk of the walk: the newest `$6` index entries below the
    /// cursor (and the rest of the last one's id), bloom-tested from the
    /// index (index-only), the heap read only for candidates, at most `$5`
    /// matches. The probe counts the entries and keeps the smallest id: a
    /// full chunk's count is at least `$6` and its smallest id is where the
    /// next chunk starts; fewer entries and a short page mean the walk
    /// reached the end of the window, and what it found is the answer.
    Walk,
    /// Rows of the window whose ids sort at or after '8' (no ULID does):
    /// read on first pages, before the ULIDs.
    Above,
    /// The walk without a chunk bound: the rest of the window.
    Rest,
    /// One jsonpath scan (`$6`, from `alerts_filter_jsonpath`) of a GIN
    /// index on the attributes.
    Gin,
    /// Oldest first (`ORDER BY id ASC` through the custom scan): the GIN
    /// statement's range is above `$2` (strictly when `$3`) and below `$7`
    /// when it is not NULL; `$8` is the column filter.
    GinOldest,
    /// Oldest first where the direct walk cannot read the table (row-level
    /// security, column grants): the page in one statement the planner
    /// plans, parameters as `GinOldest`'s without the jsonpath (`$6` the
    /// upper bound, `$7` the column filter).
    OldestPage,
    /// The newest and the oldest entry of a tenant's window.
    Newest,
    Oldest,
    /// The rows of a filter of this many keys through the tenant-keys
    /// index: `$6..` are the keys each clause looks up
    /// (`alerts_core::keys::clause_keys`), the last parameter the column
    /// filter. As in the GIN statement, the tenant and window conditions
    /// are out of the btrees' reach, so the plan is the bitmap scan of the
    /// keys index.
    Keys(usize),
    /// Every row of tenant `$1` whose id is `$2`, of this table alone (not
    /// its inheritance children; of every partition when the table is
    /// partitioned, true), unfiltered: where a custom scan's page ends
    /// among rows sharing its last id, it reads them all with this (only
    /// tables whose ids may repeat have them).
    WithId(bool),
}

/// Prepared statements of one table, and which indexes it has.
pub struct Statements {
    /// The statements prepared so far (a few), each kept.
    plans: Vec<(Stmt, pg_sys::SPIPlanPtr)>,
    /// Which indexes the table has, per relcache epoch.
    pub indexes: IndexCache,
    /// The table read and the table whose rows are returned.
    relid: Oid,
    rows_of: Oid,
    /// The names the statements are written with, read with the first.
    names: Option<Names>,
}

/// What a table's statements are written with.
struct Names {
    /// The table read, qualified.
    table: String,
    /// The extension's schema, which qualifies its functions.
    schema: String,
    /// The row returned, from alias `a` of the table read.
    row: String,
}

impl Statements {
    /// The statements that read table `relid` and return rows of table
    /// `rows_of` (the same table, or the table whose shard or partition
    /// `relid` is). None is prepared yet.
    pub fn new(relid: Oid, rows_of: Oid) -> Statements {
        Statements {
            plans: Vec::new(),
            indexes: IndexCache::default(),
            relid,
            rows_of,
            names: None,
        }
    }

    /// The names the statements are written with, read on first use.
    ///
    /// # Safety
    /// Inside a search; both relations valid and locked.
    unsafe fn names(&mut self) -> &Names {
        let (relid, rows_of) = (self.relid, self.rows_of);
        // SAFETY: as the caller's.
        self.names.get_or_insert_with(|| unsafe {
            Names {
                table: qualified(relid),
                schema: extension_schema(),
                row: if relid == rows_of {
                    "a".to_string()
                } else {
                    row_as(rows_of)
                },
            }
        })
    }

    /// Statement `which`, prepared and kept on its first use.
    ///
    /// # Safety
    /// Inside a search (`spi::in_search`) or with SPI connected.
    pub unsafe fn plan(&mut self, which: Stmt) -> pg_sys::SPIPlanPtr {
        if let Some(&(_, p)) = self.plans.iter().find(|(s, _)| *s == which) {
            return p;
        }
        // SAFETY: as the caller's.
        let (sql, types, generic) = sql(unsafe { self.names() }, which);
        // SAFETY: as the caller's; kept once prepared.
        let plan = unsafe {
            let plan = if generic {
                prepare_generic(&sql, &types)
            } else {
                prepare(&sql, &types)
            };
            keep(&[plan]);
            plan
        };
        self.plans.push((which, plan));
        plan
    }
}

/// Statement `which`'s text, its parameter types, and whether it always
/// runs its generic plan.
fn sql(names: &Names, which: Stmt) -> (String, Vec<Oid>, bool) {
    match which {
        Stmt::Walk | Stmt::Above | Stmt::Rest | Stmt::Newest | Stmt::Oldest => {
            walk_sql(names, which)
        }
        Stmt::Gin | Stmt::GinOldest | Stmt::OldestPage | Stmt::Keys(_) | Stmt::WithId(_) => {
            index_sql(names, which)
        }
    }
}

/// The walk's statements: along the pagination index, each candidate's
/// row read by tenant and id and checked exactly.
fn walk_sql(names: &Names, which: Stmt) -> (String, Vec<Oid>, bool) {
    let (t, s, row) = (&names.table, &names.schema, &names.row);
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
    // The exact check of a candidate, reading its row from the heap.
    // By tenant and id, so that any index on (organisation_id, id)
    // finds it: a primary key of (organisation_id, id), which Citus
    // requires of a table distributed by the tenant, cannot serve
    // `id` alone (it scanned the whole key per candidate: 3.3 ms
    // each, 166 ms for a page on a 1M-alert tenant's shard).
    // `$filter` is the filter, `$columns` the column filter.
    let lookup = |filter: usize, columns: usize| {
        format!(
            "SELECT {row} AS r FROM {t} a
                 WHERE a.organisation_id = $1 AND a.id = k.id AND {}",
            exact(s, filter, columns)
        )
    };
    let recheck = |columns| format!("CROSS JOIN LATERAL ({}) x", lookup(4, columns));
    let probe = format!("{s}.alerts_search_probe(c.id, c.attribute_values_bitmap, $4)");
    let end = |order: &str| {
        format!("SELECT c.id FROM {t} c WHERE c.organisation_id = $1 AND {window} ORDER BY c.id {order} LIMIT 1")
    };
    match which {
        // A chunk ends on a whole id (`WITH TIES`: the entries of an id
        // that repeats, or of a row's old and new version, are never
        // split between two chunks, since the next reads strictly below
        // this one), and each id is looked up once (`DISTINCT`: the
        // lookup returns every row of it). The probe runs above the
        // chunk's LIMIT, on its entries and no others, so its count and
        // smallest id are the chunk's.
        Stmt::Walk => (
            format!(
                "SELECT x.r FROM (SELECT DISTINCT e.id FROM (SELECT c.id, c.attribute_values_bitmap AS b
                                                          FROM {t} c
                                                          WHERE c.organisation_id = $1 AND {window}
                                                          ORDER BY c.id DESC FETCH FIRST $6 ROWS WITH TIES) e
                                  WHERE {s}.alerts_search_probe(e.id, e.b, $4)
                                  ORDER BY e.id DESC) k
                 {}
                 ORDER BY k.id DESC LIMIT $5",
                recheck(7)
            ),
            vec![TEXT, TEXT, TEXT, JSONB, INT8, INT8, JSONB],
            false,
        ),
        // `above` has no cursor: $3 is the filter, $4 the rows wanted,
        // $5 the column filter.
        Stmt::Above => (
            format!(
                "SELECT x.r FROM (SELECT DISTINCT c.id FROM {t} c
                                  WHERE c.organisation_id = $1 AND c.id >= $2 AND c.id >= '8'
                                    AND {s}.alerts_search_probe(c.id, c.attribute_values_bitmap, $3)
                                  ORDER BY c.id DESC) k
                 CROSS JOIN LATERAL ({}) x
                 ORDER BY k.id DESC LIMIT $4",
                lookup(3, 5)
            ),
            vec![TEXT, TEXT, JSONB, INT8, JSONB],
            false,
        ),
        Stmt::Rest => (
            format!(
                "SELECT x.r FROM (SELECT DISTINCT c.id FROM {t} c
                                  WHERE c.organisation_id = $1 AND {window} AND {probe}
                                  ORDER BY c.id DESC) k
                 {}
                 ORDER BY k.id DESC LIMIT $5",
                recheck(6)
            ),
            vec![TEXT, TEXT, TEXT, JSONB, INT8, JSONB],
            false,
        ),
        Stmt::Newest => (end("DESC"), vec![TEXT, TEXT, TEXT], false),
        Stmt::Oldest => (end("ASC"), vec![TEXT, TEXT, TEXT], false),
        _ => unreachable!("sql() sends the walk's statements only"),
    }
}

/// The statements of the index paths: GIN, the tenant keys, the planned
/// oldest-first page and the rows of one id.
fn index_sql(names: &Names, which: Stmt) -> (String, Vec<Oid>, bool) {
    let (t, s, row) = (&names.table, &names.schema, &names.row);
    match which {
        // The tenant and window conditions are written so that no
        // btree can serve them (`|| ''`): the only plans left are this
        // bitmap scan of the candidates (sorted, limited) and a
        // sequential scan, which the planner never prefers for `@@` (a
        // fixed 0.1% estimate), so the plan cache may keep one generic
        // plan. Left to itself with plain conditions the planner sees
        // the LIMIT and walks the pagination index through the whole
        // window instead (50 ms against 1.5 ms on the 1M-alert
        // tenant). It runs only once a walk has shown the filter to be
        // rare.
        Stmt::Gin => (
            format!(
                "SELECT {row} AS r FROM {t} a
                     WHERE a.attribute_values @@ $6 AND {}
                     ORDER BY a.id DESC LIMIT $5",
                unindexed_window(s, 7)
            ),
            vec![TEXT, TEXT, TEXT, JSONB, INT8, pg_sys::JSONPATHOID, JSONB],
            true,
        ),
        Stmt::GinOldest => (
            format!(
                "SELECT {row} AS r FROM {t} a
                     WHERE a.attribute_values @@ $6
                       AND a.organisation_id || '' = $1
                       AND (a.id || '' > $2 OR (NOT $3 AND a.id || '' = $2))
                       AND ($7::text IS NULL OR a.id || '' < $7)
                       AND {}
                     ORDER BY a.id ASC LIMIT $5",
                exact(s, 4, 8)
            ),
            vec![
                TEXT,
                TEXT,
                pg_sys::BOOLOID,
                JSONB,
                INT8,
                pg_sys::JSONPATHOID,
                TEXT,
                JSONB,
            ],
            true,
        ),
        Stmt::OldestPage => (
            format!(
                "SELECT {row} AS r FROM {t} a
                     WHERE a.organisation_id = $1 AND a.id >= $2 AND (NOT $3 OR a.id > $2)
                       AND ($6::text IS NULL OR a.id < $6)
                       AND {}
                     ORDER BY a.id ASC LIMIT $5",
                exact(s, 4, 7)
            ),
            vec![TEXT, TEXT, pg_sys::BOOLOID, JSONB, INT8, TEXT, JSONB],
            false,
        ),
        Stmt::Keys(n) => {
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
            types.push(JSONB);
            (
                format!(
                    "SELECT {row} AS r FROM {t} a WHERE {} AND {} ORDER BY a.id DESC LIMIT $5",
                    pred.join(" AND "),
                    unindexed_window(s, 6 + n)
                ),
                types,
                true,
            )
        }
        Stmt::WithId(partitioned) => (
            format!(
                "SELECT {row} AS r FROM {} {t} a WHERE a.organisation_id = $1 AND a.id = $2",
                if partitioned { "" } else { "ONLY" }
            ),
            vec![TEXT, TEXT],
            false,
        ),
        _ => unreachable!("sql() sends the index paths' statements only"),
    }
}

impl Statements {
    /// Frees the kept statements.
    ///
    /// # Safety
    /// None of them is running.
    pub unsafe fn free(self) {
        for (_, plan) in self.plans {
            // SAFETY: as the caller's; each plan is kept and freed once.
            unsafe { pg_sys::SPI_freeplan(plan) };
        }
    }
}

/// A relation's schema-qualified, quoted name.
///
/// # Safety
/// `relid` must be a valid relation.
pub unsafe fn qualified(relid: Oid) -> String {
    // SAFETY: as the caller's.
    unsafe {
        format!(
            "{}.{}",
            quoted(&cstr_owned(pg_sys::get_namespace_name(
                pg_sys::get_rel_namespace(relid)
            ))),
            quoted(&cstr_owned(pg_sys::get_rel_name(relid)))
        )
    }
}

/// A row of table `rows_of` built from the same-named columns of alias `a`
/// (a Citus shard has its table's columns, but not its row type, and
/// perhaps not its dropped columns).
///
/// # Safety
/// SPI must be connected; `rows_of` must be a valid relation.
unsafe fn row_as(rows_of: Oid) -> String {
    // SAFETY: as the caller's; the statement returns one non-null text.
    unsafe {
        let plan = prepare(
            "SELECT pg_catalog.string_agg(pg_catalog.format('a.%I', attname), ', ' ORDER BY attnum)
             FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped",
            &[pg_sys::OIDOID],
        );
        let columns =
            first_value(execute(plan, &[Datum::from(rows_of)])).expect("a table has columns");
        pg_sys::SPI_freeplan(plan);
        let columns = String::from_utf8_lossy(crate::datum::varlena_bytes(columns)).into_owned();
        format!("ROW({columns})::{}", qualified(rows_of))
    }
}

/// The tenant, window and exact conditions of the index statements, out of
/// the btrees' reach (see the GIN statement); `$columns` is the column
/// filter.
fn unindexed_window(s: &str, columns: usize) -> String {
    format!(
        "a.organisation_id || '' = $1 AND a.id || '' >= $2 AND a.id || '' < $3 AND {}",
        exact(s, 4, columns)
    )
}

/// The exact check of row `a`: its attributes match filter `$filter` and
/// its columns the column filter `$columns` (NULL when the call has none).
fn exact(s: &str, filter: usize, columns: usize) -> String {
    format!(
        "{s}.alerts_attrs_match(a.attribute_values, ${filter})
         AND (${columns}::jsonb IS NULL OR {s}.alerts_columns_match(a, ${columns}))"
    )
}
