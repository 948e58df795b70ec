#!/usr/bin/env python3
"""Benchmark driver: builds the data, every method's structures, checks that
all methods return the same rows, times every scenario with pgbench and
prints a table, in one run so that ratios are comparable.

    python3 benches/run.py --size smoke|full|xl [--seconds S] [--rounds R] [--out DIR]
                           [--layout plain|by-created|by-id] [--citus] [--cold] [--mixed]

Runs on whichever server PGHOST/PGPORT name (`bash benches/run.sh --pg 18`
starts and picks that version's cluster). Peers the server lacks (RUM
outside Debian's PostgreSQL 15) are left out, and the table says so.

Needs the scratch cluster (scripts/cluster.sh) and the extension installed;
`bash benches/run.sh` does both first. Standard library only.
"""

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {
    # total rows, large / medium / small tenant
    "smoke": dict(total=100_000, large=40_000, medium=10_000, small=2_000),
    "full": dict(total=5_000_000, large=1_000_000, medium=100_000, small=10_000),
    "xl": dict(total=20_000_000, large=4_000_000, medium=1_000_000, small=100_000),
}
ARRAY_ATTRS = {"feature"}  # attributes the generator stores as arrays

PG = dict(host=os.environ.get("PGHOST", "/tmp"), port=os.environ.get("PGPORT", "5415"), user="postgres")


def psql(db, sql, *, port=None):
    """Runs SQL (on PGPORT's server, or `port`'s), returns rows as lists of
    strings. A list of statements runs each as its own command (Citus sends
    a multi-statement command's DDL to the shards as one prepared statement,
    which fails)."""
    cmds = [x for q in ([sql] if isinstance(sql, str) else sql) for x in ("-c", q)]
    out = subprocess.run(
        ["psql", "-X", "-q", "-At", "-F", "\x1f", "-v", "ON_ERROR_STOP=1",
         "-h", PG["host"], "-p", str(port or PG["port"]), "-U", PG["user"], "-d", db, *cmds],
        capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"psql failed ({db}): {out.stderr.strip()[-2000:]}\n  in: {str(sql)[:500]}")
    return [line.split("\x1f") for line in out.stdout.splitlines() if line]


def psql_file(db, path, variables=None):
    args = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", PG["host"], "-p", PG["port"],
            "-U", PG["user"], "-d", db, "-f", str(path)]
    for k, v in (variables or {}).items():
        args += ["-v", f"{k}={v}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def lit(s):
    return "'" + s.replace("'", "''") + "'"


# --- data ------------------------------------------------------------------

def bench_db(size):
    """The database of a size's rows at the bitmap width BITS (bit(512): no
    suffix; a narrower column has its own database, the rows being the same)."""
    return f"alerts_bench_{size}" + (f"_b{BITS}" if BITS != 512 else "")


def has_rum():
    return bool(psql("postgres", "SELECT 1 FROM pg_available_extensions WHERE name = 'rum'"))


def build(db, size, anchor):
    exists = psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = {lit(db)}")
    if exists:
        meta = psql(db, "SELECT to_regclass('bench_meta') IS NOT NULL")[0][0] == "t" and \
            psql(db, "SELECT size, anchor FROM bench_meta")
        if meta and meta[0][0] == size:
            print(f"bench: reusing database {db} (built for {size}, anchor {meta[0][1]})")
            return meta[0][1]
        psql("postgres", f"DROP DATABASE {db}")
    psql("postgres", f"CREATE DATABASE {db}")
    t0 = time.time()
    psql_file(db, ROOT / "benches/sql/schema.sql")
    if BITS != 512:
        # the same bitmap folded to a narrower column, written by the trigger
        psql(db, f"ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit({BITS})")
    psql_file(db, ROOT / "benches/sql/tags.sql")
    params = dict(SIZES[size], anchor=anchor)
    psql_file(db, ROOT / "benches/sql/generate.sql", params)
    t1 = time.time()
    psql_file(db, ROOT / "benches/sql/peers.sql", dict(rum="on" if has_rum() else "off"))
    t2 = time.time()
    psql(db, f"CREATE TABLE bench_meta AS SELECT {lit(size)}::text AS size, {lit(anchor)}::text AS anchor")
    print(f"bench: generated {size} in {t1 - t0:.0f} s, peer structures in {t2 - t1:.0f} s")
    return anchor


# --- partitioned layouts ------------------------------------------------------
# The same rows as `alerts`, copied into a table partitioned by month (13
# partitions cover the 365 days before the anchor), with the recommended
# setup on the parent: trigger, pagination index with the bitmap INCLUDEd,
# tenant-keys index, and GIN jsonb_path_ops for the peer.
LAYOUTS = {
    "plain": None,
    # the usual layout: by time; alerts_search's window is an id range, so
    # every partition's index is read (no pruning)
    "by-created": dict(table="alerts_by_created", key="created_at", pk="(id, created_at)"),
    # by id with ULID month bounds: the window prunes to the months it covers
    "by-id": dict(table="alerts_by_id", key="id", pk="(id)"),
}
LAYOUT_METHODS = ["gin", "gin_all", "ext_ios", "search_cold", "search"]


def build_layout(db, layout, anchor):
    spec = LAYOUTS[layout]
    t = spec["table"]
    done = psql(db, f"SELECT obj_description(to_regclass({lit(t)}), 'pg_class') = {lit('bench ' + anchor)}")
    if done and done[0][0] == "t":
        print(f"bench: reusing {t}")
        return
    t0 = time.time()
    months = psql(db, f"""SELECT to_char(m, 'YYYY_MM'), m, m + interval '1 month',
                                 alerts_ulid_floor(m), alerts_ulid_floor(m + interval '1 month')
                          FROM generate_series(date_trunc('month', {lit(anchor)}::timestamptz - interval '365 days'),
                                               {lit(anchor)}::timestamptz, interval '1 month') m""")
    ddl = [f"DROP TABLE IF EXISTS {t} CASCADE",
           f"CREATE TABLE {t} (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY {spec['pk']}) "
           f"PARTITION BY RANGE ({spec['key']})"]
    for name, lo, hi, idlo, idhi in months:
        lo, hi = (lo, hi) if spec["key"] == "created_at" else (idlo, idhi)
        ddl.append(f"CREATE TABLE {t}_{name} PARTITION OF {t} FOR VALUES FROM ({lit(lo)}) TO ({lit(hi)})")
    psql(db, "; ".join(ddl))
    psql(db, f"INSERT INTO {t} SELECT * FROM alerts")
    psql(db, f"SET maintenance_work_mem = '1GB'; "
             f"CREATE INDEX {t}_pagination_bitmap ON {t} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap); "
             f"{GIN_BUILD}; CREATE INDEX {t}_gin ON {t} USING gin (attribute_values jsonb_path_ops)")
    psql(db, f"VACUUM (ANALYZE) {t}")
    psql(db, f"COMMENT ON TABLE {t} IS {lit('bench ' + anchor)}")
    print(f"bench: {t}: {len(months)} monthly partitions by {spec['key']} built in {time.time() - t0:.0f} s", flush=True)


# --- scenarios ----------------------------------------------------------------

# GIN-family indexes (the tenant keys, and every GIN or RUM peer) are built
# with PostgreSQL's default maintenance_work_mem, as users build them, and
# not with the scratch cluster's 1GB: with one sorted batch in memory a GIN
# build inserts its keys in ascending order, and GIN splits a full entry page
# in half, so the pages it leaves behind stay half empty. The tenant-keys
# index of the `full` rows is 445 MiB built with 1GB and 343 MiB with 64MB
# or 16MB (GIN jsonb_path_ops 145 and 133 MiB).
GIN_BUILD = "SET maintenance_work_mem = '64MB'"


def refresh_extension(db, tables):
    """Recreates the extension's objects from the installed version, so a
    reused database measures the code just built, not the code it was
    generated with. Bitmaps are a frozen format and stay."""
    psql(db, "DROP EXTENSION IF EXISTS alerts CASCADE; CREATE EXTENSION alerts")
    for t in tables:
        # The trigger and the tenant-keys index depend on the extension's
        # functions and went with it: rebuild them (1.5 min for 5M rows).
        t0 = time.time()
        psql(db, f"CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON {t} "
                 "FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger(); "
                 f"{GIN_BUILD}; CREATE INDEX IF NOT EXISTS {t}_keys_idx ON {t} "
                 f"USING gin (alerts_keys(organisation_id, id, attribute_values)); ANALYZE {t}")
        print(f"bench: {t}: tenant-keys index built in {time.time() - t0:.0f} s", flush=True)


# The composite GIN of btree_gin, `(organisation_id, attribute_values
# jsonb_path_ops)`: tenant-scoped posting lists. It is partial on a condition
# every row meets and only the "gin_org" method's query states, so that the
# planner can use it for that method alone and every other method keeps the
# plans it has without it (all structures stay present at once).
ORG_GIN_MARK = "(priority_id + 0) IS NOT NULL"


def org_gin(db):
    if not psql(db, "SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin'"):
        print("bench: btree_gin is not available for this server; no btree_gin peer")
        return
    t0 = time.time()
    psql(db, ["CREATE EXTENSION IF NOT EXISTS btree_gin",
              f"{GIN_BUILD}; CREATE INDEX IF NOT EXISTS alerts_org_gin ON alerts "
              f"USING gin (organisation_id, attribute_values jsonb_path_ops) WHERE {ORG_GIN_MARK}",
              "ANALYZE alerts"])
    print(f"bench: btree_gin composite index ready in {time.time() - t0:.0f} s", flush=True)


def value(db, org, attr, cls):
    return psql(db, f"SELECT bench_value({lit(org)}, {lit(attr)}, {cls})")[0][0]


def key(db, org, attr):
    return psql(db, f"SELECT bench_key({lit(org)}, {lit(attr)})")[0][0]


def scenarios(db, size, table):
    orgs = {r[0]: r[1] for r in psql(db, "SELECT role, org FROM bench_orgs WHERE role <> 'other'")}
    out = []

    def filt(org, spec):
        """spec: [(attr, [class or 'none', ...])] -> (filter dict, clauses)."""
        f, clauses = {}, []
        for attr, classes in spec:
            k = key(db, org, attr)
            vals = [value(db, org, attr, c) if c != "none" else "NOPE" for c in classes]
            f[k] = vals[0] if len(vals) == 1 else vals
            clauses.append((k, vals, attr in ARRAY_ATTRS))
        return f, clauses

    sel = [("50%", 0), ("1%", 1), ("0.05%", 2), ("0.005%", 3), ("none", "none")]
    base = dict(page=1, window="30d", limit=50, priority=False, table=table)
    for role in ("large", "medium", "small"):
        for label, c in sel:
            f, cl = filt(orgs[role], [("team", [c])])
            out.append(dict(base, name=f"{role} team {label}", tenant=role, org=orgs[role], filter=f, clauses=cl,
                            core=True))
    org = orgs["large"]
    shapes = [
        ("one-of 1%|0.05%", [("team", [1, 2])]),
        ("2 attrs 50%x50%", [("team", [0]), ("environment", [0])]),
        ("2 attrs 50%x0.05%", [("team", [0]), ("region", [2])]),
        ("3 attrs 50%x50%x1%", [("team", [0]), ("environment", [0]), ("feature", [1])]),
    ]
    for label, spec in shapes:
        f, cl = filt(org, spec)
        out.append(dict(base, name=f"large {label}", tenant="large", org=org, filter=f, clauses=cl, core=False))
    for label, c in (("50%", 0), ("0.05%", 2)):
        f, cl = filt(org, [("team", [c])])
        common = dict(base, tenant="large", org=org, filter=f, clauses=cl, core=False)
        out.append(dict(common, name=f"large team {label} +priority", priority=True))
        out.append(dict(common, name=f"large team {label} page 20", page=20))
        out.append(dict(common, name=f"large team {label} unbounded", window="all"))
        out.append(dict(common, name=f"large team {label} batch 500", limit=500))
    return out


# --- methods --------------------------------------------------------------------

def gin_expr(clauses):
    parts = []
    for k, vals, is_array in clauses:
        alts = [f"attribute_values @> {lit(json.dumps({k: [v] if is_array else v}))}" for v in vals]
        parts.append("(" + " OR ".join(alts) + ")")
    return " AND ".join(parts) or "true"


def exact_expr(clauses):
    """Exact check that no index can serve: containment on the extracted value."""
    parts = []
    for k, vals, _ in clauses:
        alts = [f"(attribute_values -> {lit(k)}) @> {lit(json.dumps(v))}" for v in vals]
        parts.append("(" + " OR ".join(alts) + ")")
    return " AND ".join(parts) or "true"


def tags_expr(clauses, col="tags"):
    parts = []
    for k, vals, _ in clauses:
        arr = "ARRAY[" + ",".join(lit(f"{k}={v}") for v in vals) + "]"
        parts.append(f"{col} @> {arr}" if len(vals) == 1 else f"{col} && {arr}")
    return " AND ".join(parts) or "true"


def masks(db, clauses):
    out = []
    for k, vals, _ in clauses:
        ms = [psql(db, f"SELECT alerts_mask({lit(json.dumps({k: v}))}, {BITS})::text")[0][0] for v in vals]
        out.append(ms)
    return out


def method_sql(m, s, db):
    f = lit(json.dumps(s["filter"]))
    since = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'::timestamptz"
    cursor = f" AND id < {lit(s['cursor'])}" if s.get("cursor") else ""
    prio = " AND priority_id IN (1, 2)" if s["priority"] else ""
    t = s["table"]
    head = (f"SELECT * FROM {t} WHERE organisation_id = {lit(s['org'])} "
            f"AND id >= alerts_ulid_floor({since}){cursor}{prio}")
    tail = f" ORDER BY id DESC LIMIT {s['limit']}"
    if m in ("gin", "gin_all"):
        return f"{head} AND {gin_expr(s['clauses'])}{tail}"
    if m == "plain":
        # The query apps send: one containment when every clause has one
        # value (the node plans it), else the containments OR'ed per clause.
        if all(len(vals) == 1 for _, vals, _ in s["clauses"]):
            obj = {k: ([vals[0]] if is_array else vals[0]) for k, vals, is_array in s["clauses"]}
            return f"{head} AND attribute_values @> {lit(json.dumps(obj))}{tail}"
        return f"{head} AND {gin_expr(s['clauses'])}{tail}"
    if m == "gin_org":
        return f"{head} AND {ORG_GIN_MARK} AND {gin_expr(s['clauses'])}{tail}"
    if m == "gin_tags":
        return f"{head} AND {tags_expr(s['clauses'])}{tail}"
    if m == "rum":
        cur = f" AND created_at < {lit(s['cursor_ts'])}" if s.get("cursor_ts") else ""
        win = " AND created_at >= now() - interval '30 days'" if s["window"] == "30d" else ""
        return (f"SELECT * FROM {t} WHERE {tags_expr(s['clauses'])} AND organisation_id = {lit(s['org'])}"
                f"{win}{cur}{prio} ORDER BY created_at <=| now() LIMIT {s['limit']}")
    if m == "sql_bloom":
        conds = []
        for ms in masks(db, s["clauses"]):
            conds.append("(" + " OR ".join(
                f"attribute_values_bitmap & B'{x}' = B'{x}'" for x in ms) + ")")
        bloom = " AND ".join(conds) or "true"
        return f"{head} AND {bloom} AND {exact_expr(s['clauses'])}{tail}"
    if m == "ext":
        return (f"{head} AND alerts_bloom_match(attribute_values_bitmap, {f}) "
                f"AND alerts_attrs_match(attribute_values, {f}){tail}")
    if m == "ext_ios":
        inner = (f"SELECT id FROM {t} WHERE organisation_id = {lit(s['org'])} "
                 f"AND id >= alerts_ulid_floor({since}){cursor} "
                 f"AND alerts_bloom_match(attribute_values_bitmap, {f}) ORDER BY id DESC")
        return (f"SELECT a.* FROM ({inner}) c CROSS JOIN LATERAL "
                f"(SELECT * FROM {t} a WHERE a.id = c.id AND alerts_attrs_match(a.attribute_values, {f}){prio}) a "
                f"ORDER BY c.id DESC LIMIT {s['limit']}")
    if m == "portable":
        # The portable form (docs/managed-postgres.md): what a database
        # without the extension runs, with masks a client encoder made:
        # candidates from the pagination index and its INCLUDEd bitmap
        # alone, then the exact check of each candidate's attributes.
        conds = []
        for ms in masks(db, s["clauses"]):
            conds.append("(" + " OR ".join(
                f"attribute_values_bitmap & B'{x}' = B'{x}'" for x in ms) + ")")
        inner = (f"SELECT id FROM {t} WHERE organisation_id = {lit(s['org'])} "
                 f"AND id >= alerts_ulid_floor({since}){cursor} AND {' AND '.join(conds) or 'true'} ORDER BY id DESC")
        return (f"SELECT a.* FROM ({inner}) c CROSS JOIN LATERAL "
                f"(SELECT * FROM {t} a WHERE a.organisation_id = {lit(s['org'])} AND a.id = c.id "
                f"AND {exact_expr(s['clauses'])}{prio}) a ORDER BY c.id DESC LIMIT {s['limit']}")
    if m in ("search", "search_cold"):
        cols = ", columns => '{\"priority_id\": [1, 2]}'" if s["priority"] else ""
        since_arg = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'"
        before = lit(s["cursor"]) if s.get("cursor") else "NULL"
        return (f"SELECT * FROM alerts_search(NULL::{t}, {lit(s['org'])}, {f}, {since_arg}, {before}, "
                f"{s['limit']}{cols})")
    raise ValueError(m)


METHODS = ["gin", "gin_org", "gin_all", "gin_tags", "rum", "sql_bloom", "portable", "ext", "ext_ios", "search_cold", "search",
           "plain"]
_PGOPTIONS = {"gin_all": "-c enable_indexscan=off -c enable_indexonlyscan=off",
              # every call walks first: no per-session (tenant, filter) shortcut to GIN
              "search_cold": "-c alerts.search_shortcuts=off",
              # plain SQL with the library loaded from the first statement on
              "plain": "-c session_preload_libraries=alerts"}


class _Options(dict):
    """Each method's PGOPTIONS: the custom scan off for every method but
    "plain" (a session that loaded the library would otherwise plan the
    peers' queries with it)."""

    def get(self, m, default=""):
        base = _PGOPTIONS.get(m, default)
        return base if m == "plain" else f"{base} -c alerts.custom_scan=off".strip()


PGOPTIONS = _Options()
LABELS = {
    "gin": "GIN jsonb_path_ops (planner)",
    "gin_org": "btree_gin (tenant, attributes) (planner)",
    "gin_all": "GIN, reads all matches + sort",
    "gin_tags": "GIN on text[] tags",
    "rum": "RUM tags + created_at",
    "sql_bloom": "plain-SQL bloom (article)",
    "portable": "portable two-step (no extension)",
    "ext": "alerts_bloom_match walk",
    "ext_ios": "alerts index-only walk",
    "search_cold": "alerts_search(), no shortcuts",
    "search": "alerts_search()",
    "plain": "plain SQL @> (custom scan)",
}


def oracle(db, s):
    """Ids of the exact answer, and cursors for page 20."""
    since = "now() - interval '30 days'" if s["window"] == "30d" else "'-infinity'::timestamptz"
    prio = " AND priority_id IN (1, 2)" if s["priority"] else ""
    rows = psql(db, f"SELECT id, created_at FROM {s['table']} WHERE organisation_id = {lit(s['org'])} "
                    f"AND id >= alerts_ulid_floor({since}){prio} AND {exact_expr(s['clauses'])} ORDER BY id DESC")
    return rows


def run_query(db, m, sql, port=None, user=None):
    env = dict(os.environ, PGOPTIONS=PGOPTIONS.get(m, ""))
    out = subprocess.run(["psql", "-X", "-At", "-h", PG["host"], "-p", str(port or PG["port"]), "-U", user or PG["user"], "-d", db,
                          "-c", f"SELECT id FROM ({sql}) q"], check=True, capture_output=True, text=True, env=env)
    return out.stdout.split()


def pgbench(db, m, sql, seconds, mode, clients, workdir, transactions=None, port=None, user=None):
    """Runs one cell: for `seconds` (-T), or `transactions` per client (-t).
    `sql` is one statement, or a list of them picked at random per
    transaction (a mixed load)."""
    lat, rate = pgbench_raw(db, m, sql, seconds, mode, clients, workdir, transactions, port, user)
    return summary(lat, rate)


def pgbench_raw(db, m, sql, seconds, mode, clients, workdir, transactions=None, port=None, user=None):
    """One pgbench run: every transaction's latency (ms) from its -l log,
    and the run's rate (transactions/s)."""
    scripts = []
    for i, q in enumerate([sql] if isinstance(sql, str) else sql):
        scripts += ["-f", str(workdir / f"q{i}.sql")]
        (workdir / f"q{i}.sql").write_text(q + ";\n")
    for p in workdir.glob("pgbench_log*"):
        p.unlink()
    env = dict(os.environ, PGOPTIONS=PGOPTIONS.get(m, ""))
    res = subprocess.run(["pgbench", "-n", "-h", PG["host"], "-p", str(port or PG["port"]), "-U", user or PG["user"],
                          "-M", mode, "-c", str(clients), "-j", str(clients),
                          *(["-t", str(transactions)] if transactions else ["-T", str(seconds)]),
                          "-l", "--log-prefix", str(workdir / "pgbench_log"), *scripts, db],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"pgbench failed for {m}: {res.stderr[-2000:]}")
    lat = []
    for p in workdir.glob("pgbench_log*"):
        for line in p.read_text().splitlines():
            f = line.split()
            if len(f) >= 3:
                lat.append(int(f[2]) / 1000.0)  # microseconds -> ms
    if transactions:
        # pgbench's own summary line gives the run's rate.
        tps = [line for line in res.stdout.splitlines() if line.startswith("tps")]
        rate = float(tps[0].split()[2]) if tps else float("nan")
    else:
        rate = len(lat) / seconds
    return lat, rate


def summary(lat, rate):
    """Percentiles of pooled latencies (ms)."""
    lat = sorted(lat)

    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")

    return dict(n=len(lat), tps=rate, p50=pct(0.50), p95=pct(0.95), p99=pct(0.99),
                mean=statistics.fmean(lat) if lat else float("nan"))


def timed_cell(db, runs, seconds, mode, workdir, transactions, rounds):
    """Times the methods of one cell: `runs` is [(method, sql)]. With
    `rounds` > 1 the methods take turns, each for `seconds` per round (the
    order rotating from round to round), and each percentile is the median
    of the method's rounds' percentiles: this machine has episodes of a
    fraction of a second where every call is slower (both methods alike,
    whichever runs then), and in latencies pooled over rounds the p95 of a
    method followed how many episodes fell on its turns (1.75x between two
    runs of the same code); the median round is the typical one."""
    per = {m: [] for m, _ in runs}
    for r in range(rounds):
        turn = runs[r % len(runs):] + runs[:r % len(runs)]
        for m, sql in turn:
            lat, rate = pgbench_raw(db, m, sql, seconds, mode, 1, workdir, transactions)
            per[m].append(summary(lat, rate))
    out = {}
    for m, _ in runs:
        rs = per[m]
        out[m] = {k: statistics.median(r[k] for r in rs) for k in ("tps", "p50", "p95", "p99", "mean")}
        out[m]["n"] = sum(r["n"] for r in rs)
    return out


# --- write path -------------------------------------------------------------------

WRITE_VARIANTS = {
    "no bitmap": "",
    "trigger": "trigger",
    # the fast path's structures: bitmap INCLUDEd in the pagination index
    "trigger + INCLUDE": "trigger,include",
    # ... plus the tenant-keys GIN index for rare filters
    "trigger + INCLUDE + keys": "trigger,include,keys",
    # the same with the keys index's pending list off (each insert updates
    # the GIN tree) or four times the default (fewer, larger cleanups)
    "trigger + INCLUDE + keys, fastupdate off": "trigger,include,keys,fastupdate_off",
    "trigger + INCLUDE + keys, 16MB pending list": "trigger,include,keys,pending_16mb",
    # the floor of any GIN index on the write path: one key a row (the
    # row's own id hashed), so a GIN's fixed cost per insert is measured
    # apart from the keys' number
    "trigger + INCLUDE + GIN of one key a row": "trigger,include,one_key",
    "generated column": "generated",
    "trigger + GIN": "trigger,gin",
    "no bitmap + GIN": "gin",
    "no bitmap + btree_gin": "org_gin",
    "trigger + RUM": "trigger,rum",
}


def write_bench(db, seconds, workdir, rounds=1):
    """One-row INSERTs into an empty table per variant, 1 and 8 clients.
    With rounds > 1 the variants take turns (each round in a rotated order,
    each cell's table emptied first), and a variant's rows/s and p95 are the
    medians of its rounds: one 10-second cell per variant moved ratios by
    0.1-0.3 between runs, more than the differences measured."""
    psql(db, "DROP TABLE IF EXISTS w_pool; CREATE TABLE w_pool AS SELECT row_number() OVER () AS k, "
             "organisation_id, attribute_values, tags FROM (SELECT * FROM alerts ORDER BY id DESC LIMIT 10000) s; "
             "ALTER TABLE w_pool ADD PRIMARY KEY (k)")
    variants = []
    for n, (label, opts) in enumerate(WRITE_VARIANTS.items()):
        opts = set(filter(None, opts.split(",")))
        if "rum" in opts and not has_rum():
            continue
        t = f"w_alerts_{n}"
        bitmap = f"attribute_values_bitmap bit({BITS})" + (
            f" GENERATED ALWAYS AS (alerts_bloom(attribute_values, {BITS})) STORED" if "generated" in opts else "")
        ddl = [
            f"DROP TABLE IF EXISTS {t}",
            f"CREATE TABLE {t} (id text COLLATE \"C\" PRIMARY KEY, organisation_id text COLLATE \"C\" NOT NULL, "
            "created_at timestamptz NOT NULL, priority_id int NOT NULL, attribute_values jsonb NOT NULL, "
            f"tags text[], {bitmap})",
            f"CREATE INDEX ON {t} (organisation_id, id DESC)" + (
                " INCLUDE (attribute_values_bitmap)" if "include" in opts else ""),
        ]
        if "trigger" in opts:
            ddl.append(f"CREATE TRIGGER b BEFORE INSERT OR UPDATE ON {t} FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()")
        if "gin" in opts:
            ddl.append(f"CREATE INDEX ON {t} USING gin (attribute_values jsonb_path_ops)")
        if "org_gin" in opts:
            ddl.append(f"CREATE INDEX ON {t} USING gin (organisation_id, attribute_values jsonb_path_ops)")
        if "keys" in opts:
            storage = (" WITH (fastupdate = off)" if "fastupdate_off" in opts else
                       " WITH (gin_pending_list_limit = 16384)" if "pending_16mb" in opts else "")
            ddl.append(f"CREATE INDEX ON {t} USING gin (alerts_keys(organisation_id, id, attribute_values))" + storage)
        if "one_key" in opts:
            ddl.append(f"CREATE INDEX ON {t} USING gin ((ARRAY[hashtextextended(id, 0)]))")
        if "rum" in opts:
            ddl.append(f"CREATE INDEX ON {t} USING rum (tags rum_anyarray_addon_ops, created_at) "
                       "WITH (attach = 'created_at', to = 'tags')")
        psql(db, "; ".join(ddl))
        sql = ("\\set k random(1, 10000)\n"
               f"INSERT INTO {t} (id, organisation_id, created_at, priority_id, attribute_values, tags) "
               "SELECT alerts_ulid(), organisation_id, clock_timestamp(), 3, attribute_values, tags FROM w_pool WHERE k = :k")
        variants.append((label, t, sql))
    cells = {}  # (label, clients) -> [summary per round]
    for r in range(rounds):
        turn = variants[r % len(variants):] + variants[:r % len(variants)]
        for label, t, sql in turn:
            for clients in (1, 8):
                psql(db, f"TRUNCATE {t}")
                cells.setdefault((label, clients), []).append(
                    pgbench(db, "write", sql, seconds, "prepared", clients, workdir))
    results = []
    for label, t, _ in variants:
        for clients in (1, 8):
            runs = cells[(label, clients)]
            r = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
            results.append(dict(variant=label, clients=clients, **r))
            print(f"  write {label:18s} {clients} client(s): {r['tps']:8.0f} rows/s  p95 {r['p95']:.3f} ms"
                  + ("  (rounds: " + ", ".join(f"{x['tps']:.0f}" for x in runs) + ")" if rounds > 1 else ""),
                  flush=True)
        psql(db, f"DROP TABLE IF EXISTS {t}")
    psql(db, "DROP TABLE IF EXISTS w_pool")
    base = {r["clients"]: r["tps"] for r in results if r["variant"] == "no bitmap"}
    for r in results:
        r["ratio_to_no_bitmap"] = r["tps"] / base[r["clients"]] if base.get(r["clients"]) else float("nan")
    return results


def sizes(db):
    rows = psql(db, """
        SELECT c.relname, pg_relation_size(c.oid)
        FROM pg_class c WHERE c.relname IN ('alerts', 'alerts_pkey', 'idx_alerts_pagination', 'idx_alerts_created_at',
            'alerts_gin', 'alerts_org_gin', 'alerts_tags_gin', 'alerts_tags_rum', 'idx_alerts_pagination_bitmap',
            'alerts_keys_idx')
        ORDER BY 1""")
    extra = psql(db, """SELECT sum(pg_column_size(attribute_values_bitmap)) AS bitmap_bytes,
                               sum(pg_column_size(tags)) AS tags_bytes FROM alerts""")[0]
    out = {r[0]: int(r[1]) for r in rows}
    out["bitmap column (in heap)"] = int(extra[0])
    out["tags column (in heap)"] = int(extra[1])
    return out


def layout_sizes(db, table):
    """Each index of the partitioned table, summed over its partitions."""
    rows = psql(db, f"""
        SELECT i.relname, (SELECT sum(pg_relation_size(p.relid)) FROM pg_partition_tree(i.oid) p)
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = {lit(table)}::regclass ORDER BY 1""")
    out = {table: int(psql(db, f"SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree({lit(table)})")[0][0])}
    out.update({r[0]: int(r[1]) for r in rows})
    return out


# --- output -----------------------------------------------------------------------

def svg_chart(results, path):
    """Grouped horizontal bars of p95 (log scale) per core scenario and method."""
    import math
    rows = [r for r in results if r["mode"] == "prepared"]
    scen = []
    for r in rows:
        if r["scenario"] not in scen:
            scen.append(r["scenario"])
    colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#000000"]
    bar, gap, left, width = 7, 10, 260, 620
    height = len(scen) * (len(METHODS) * bar + gap) + 80
    lo, hi = 0.01, max([r["p95"] for r in rows if r["p95"] == r["p95"]] + [1]) * 1.2

    def x(v):
        v = max(v, lo)
        return left + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * width

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="16" font-size="13">p95 latency per page (ms, log scale), -M prepared, 1 client</text>']
    for i, (m, c) in enumerate(zip(METHODS, colors)):
        out.append(f'<rect x="{10 + i * 110}" y="26" width="10" height="10" fill="{c}"/>'
                   f'<text x="{24 + i * 110}" y="35">{LABELS[m][:16]}</text>')
    y = 50
    for t in (0.01, 0.1, 1, 10, 100, 1000, 10000):
        if t <= hi:
            out.append(f'<line x1="{x(t):.1f}" y1="45" x2="{x(t):.1f}" y2="{height - 10}" stroke="#ddd"/>'
                       f'<text x="{x(t):.1f}" y="{height - 2}" text-anchor="middle">{t:g}</text>')
    for s in scen:
        out.append(f'<text x="{left - 6}" y="{y + len(METHODS) * bar / 2 + 4}" text-anchor="end">{s}</text>')
        for m, c in zip(METHODS, colors):
            r = next((r for r in rows if r["scenario"] == s and r["method"] == m), None)
            if r and r["p95"] == r["p95"]:
                out.append(f'<rect x="{left}" y="{y}" width="{x(r["p95"]) - left:.1f}" height="{bar - 1}" fill="{c}"/>')
            y += bar
        y += gap
    out.append("</svg>")
    path.write_text("\n".join(out))


# The bitmap column's width (--bitmap-bits).
BITS = 512


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=SIZES, default="smoke")
    ap.add_argument("--seconds", type=float, default=None, help="pgbench -T per cell (default 1 smoke, 5 otherwise)")
    ap.add_argument("--write-seconds", type=float, default=None)
    ap.add_argument("--write-rounds", type=int, default=1,
                    help="the write variants take turns this many times; rows/s and p95 are each variant's medians")
    ap.add_argument("--transactions", type=int, default=None,
                    help="pgbench -t per read cell instead of -T (default 30 for smoke)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="the methods of a cell take turns this many times, --seconds each per round; each "
                         "percentile is the median of the method's rounds' (noise episodes fall on all alike)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--layout", choices=LAYOUTS, default="plain",
                    help="plain table, or the same rows in 13 monthly partitions (by created_at or by id); "
                         "partitioned layouts run GIN, the index-only walk and alerts_search, no write path")
    ap.add_argument("--citus", action="store_true",
                    help="the same rows hash-distributed over a local Citus cluster (scripts/citus.sh, port "
                         "ALERTS_CITUS_PORT, default 5550) beside this single node: latency through the "
                         "coordinator, on the worker, delegated, and 8-client throughput (benches/citus.py)")
    ap.add_argument("--cold", action="store_true",
                    help="first-touch latency: the server restarted and its files evicted from the OS cache "
                         "(vmtouch) before each filter class and method, one page for each of --tenants tenants "
                         "(benches/cold.py)")
    ap.add_argument("--tenants", type=int, default=40, help="tenants per cold filter class")
    ap.add_argument("--mixed", action="store_true",
                    help="the mixed load instead (benches/mixed.py): 6 clients paging and 2 inserting, per setup, "
                         "each setup in its own table")
    ap.add_argument("--mixed-seconds", type=float, default=60, help="seconds per setup of the mixed load")
    ap.add_argument("--insert-rate", type=int, default=200, help="rows/s the mixed load's inserts are throttled to")
    ap.add_argument("--bitmap-bits", type=int, choices=(512, 256, 128), default=512,
                    help="the bitmap column's width: bit(512), or the bitmap folded to bit(256) / bit(128) "
                         "(its own database, alerts_bench_<size>_b<bits>)")
    ap.add_argument("--methods", default=None)
    ap.add_argument("--only", default="", help="substring filter on scenario names")
    ap.add_argument("--prepared-only", action="store_true", help="no -M simple cells")
    ap.add_argument("--scenarios", default="",
                    help="only these scenarios, their exact names separated by ';'")
    ap.add_argument("--skip-write", action="store_true", help="skip the write-path benchmark")
    ap.add_argument("--synchronous-commit", choices=("off", "on"), default=None,
                    help="synchronous_commit of the write-path sessions (default: the server's, off on the "
                         "benchmark's cluster: the CPU cost of an insert; on: PostgreSQL's default durability)")
    ap.add_argument("--writes-only", action="store_true",
                    help="only the write-path benchmark (its tables start empty: the size only sets the pool "
                         "of rows inserted)")
    args = ap.parse_args()
    if args.synchronous_commit:
        _PGOPTIONS["write"] = f"-c synchronous_commit={args.synchronous_commit}"
    if args.citus:
        import citus
        return citus.main(args)
    if args.cold:
        import cold
        return cold.main(args)
    if args.mixed:
        import mixed
        return mixed.main(args)
    seconds = int(args.seconds or (1 if args.size == "smoke" else 5))
    if args.transactions is None and args.size == "smoke" and args.seconds is None:
        args.transactions = 30
    wseconds = int(args.write_seconds or (2 if args.size == "smoke" else 10))
    layout = LAYOUTS[args.layout]
    table = layout["table"] if layout else "alerts"
    outdir = args.out or ROOT / "benches/results" / (args.size + ("" if not layout else "-" + args.layout))
    outdir.mkdir(parents=True, exist_ok=True)
    global BITS
    BITS = args.bitmap_bits
    db = bench_db(args.size)
    anchor = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime())
    anchor = build(db, args.size, anchor)
    if layout:
        build_layout(db, args.layout, anchor)
        args.skip_write = True
    refresh_extension(db, ["alerts"] + ([table] if layout else []))
    if not layout:
        org_gin(db)
    methods = (args.methods or ",".join(LAYOUT_METHODS if layout else METHODS)).split(",")
    unavailable = {}
    if "rum" in methods and not has_rum():
        methods.remove("rum")
        unavailable["rum"] = "not available for this server (RUM is packaged by Debian for PostgreSQL 15 only)"
    work = Path(tempfile.mkdtemp(prefix="alerts-bench-"))
    os.chmod(work, 0o777)

    results, failures = [], []
    for s in scenarios(db, args.size, table):
        if args.writes_only or (args.only and args.only not in s["name"]):
            continue
        if args.scenarios and s["name"] not in args.scenarios.split(";"):
            continue
        want = oracle(db, s)
        if s["page"] > 1:
            if len(want) < (s["page"] - 1) * s["limit"]:
                print(f"skip {s['name']}: only {len(want)} matches")
                continue
            cut = want[(s["page"] - 1) * s["limit"] - 1]
            s["cursor"], s["cursor_ts"] = cut[0], cut[1]
            want = want[(s["page"] - 1) * s["limit"]:]
        want_ids = [r[0] for r in want[: s["limit"]]]
        print(f"== {s['name']}: {len(want)} matches in window, page of {len(want_ids)}", flush=True)
        runs = []
        for m in [x for x in METHODS if x in methods]:
            sql = method_sql(m, s, db)
            if sql is None:
                continue
            got = run_query(db, m, sql)
            ok = got == want_ids if m != "rum" else sorted(got) == sorted(want_ids)
            if not ok:
                failures.append((s["name"], m, len(got), len(want_ids)))
                print(f"  {m}: WRONG ROWS ({len(got)} rows, expected {len(want_ids)})")
                continue
            runs.append((m, sql))
        for mode in (["prepared", "simple"] if s["core"] and not args.prepared_only else ["prepared"]):
            cell = timed_cell(db, runs, seconds, mode, work, args.transactions, args.rounds)
            for m, _ in runs:
                r = cell[m]
                results.append(dict(scenario=s["name"], tenant=s["tenant"], method=m, mode=mode,
                                    matches=len(want), **r))
                print(f"  {m:10s} {mode:8s} p50 {r['p50']:9.3f}  p95 {r['p95']:9.3f}  p99 {r['p99']:9.3f} ms  "
                      f"{r['tps']:8.1f} tps", flush=True)
    for r in results:
        g = next((x for x in results if x["scenario"] == r["scenario"] and x["mode"] == r["mode"]
                  and x["method"] == "gin"), None)
        r["ratio_p95_to_gin"] = r["p95"] / g["p95"] if g and g["p95"] else float("nan")

    writes = [] if args.skip_write else write_bench(db, wseconds, work, args.write_rounds)
    sz = sizes(db) if not layout else layout_sizes(db, table)
    shutil.rmtree(work, ignore_errors=True)

    meta = dict(size=args.size, layout=args.layout, bitmap_bits=BITS, writes_only=args.writes_only, anchor=anchor, seconds_per_cell=seconds, rounds=args.rounds, transactions_per_cell=args.transactions,
                write_seconds=wseconds, write_rounds=args.write_rounds,
                synchronous_commit=psql(db, "SHOW synchronous_commit")[0][0] if not args.synchronous_commit
                else args.synchronous_commit,
                cpu=os.cpu_count(),
                postgres=psql(db, "SHOW server_version")[0][0], unavailable=unavailable,
                shared_buffers=psql(db, "SHOW shared_buffers")[0][0])
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, reads=results, writes=writes, sizes=sz,
                                                         failures=failures), indent=1))
    with open(outdir / "reads.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(results[0].keys()) if results else ["scenario"])
        w.writeheader()
        w.writerows(results)
    if results:
        svg_chart(results, outdir / "p95.svg")
    write_table(results, writes, sz, meta, outdir / "table.md")
    print((outdir / "table.md").read_text())
    if failures:
        print(f"bench: {len(failures)} method(s) returned wrong rows: {failures}")
        sys.exit(1)


PEERS = ["gin", "gin_org", "gin_all", "gin_tags", "rum", "sql_bloom"]


def goal_table(results, scen):
    """The fast-path goal per scenario: alerts_search's p95 against the best
    peer's in the same run (below 1 is faster than every peer)."""
    lines = ["alerts_search against the best peer (GIN planner, btree_gin planner, GIN read-all, GIN on tags, RUM, plain-SQL bloom), "
             "p95 ms, -M prepared:", "",
             "| scenario | best peer | p95 | alerts_search | ratio | no shortcuts | ratio | plain SQL | to alerts_search |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in scen:
        rows = {r["method"]: r for r in results if r["scenario"] == s and r["mode"] == "prepared"}
        peers = [rows[m] for m in PEERS if m in rows]
        if not peers or "search" not in rows:
            continue
        best = min(peers, key=lambda r: r["p95"])
        cells = [LABELS[best["method"]], f"{best['p95']:.2f}"]
        for m in ("search", "search_cold"):
            if m in rows:
                cells += [f"{rows[m]['p95']:.2f}", f"{rows[m]['p95'] / best['p95']:.2f}x"]
            else:
                cells += ["-", "-"]
        if "plain" in rows:
            cells += [f"{rows['plain']['p95']:.2f}", f"{rows['plain']['p95'] / rows['search']['p95']:.2f}x"]
        else:
            cells += ["-", "-"]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_table(results, writes, sz, meta, path):
    where = {"plain": "", "by-created": ", the same rows in 13 monthly partitions by created_at",
             "by-id": ", the same rows in 13 monthly partitions by id (ULID month bounds)"}[meta.get("layout", "plain")]
    where += f", bitmap column bit({meta['bitmap_bits']})" if meta.get("bitmap_bits", 512) != 512 else ""
    if meta.get("writes_only"):
        lines = [f"Size `{meta['size']}` (the pool of rows inserted){where}, PostgreSQL {meta['postgres']}, "
                 f"{meta['cpu']} cores, shared_buffers {meta['shared_buffers']}; each variant's table starts empty."]
        return write_table_writes(lines, writes, {}, meta, path)
    if not results:
        lines = [f"Size `{meta['size']}`{where}: no scenario was measured (--only / --scenarios matched none).", ""]
        return write_table_writes(lines, writes, sz, meta, path)
    lines = [f"Size `{meta['size']}`{where}, PostgreSQL {meta['postgres']}, {meta['cpu']} cores, shared_buffers "
             f"{meta['shared_buffers']}, pgbench "
             + (f"-t {meta['transactions_per_cell']}" if meta.get("transactions_per_cell") else f"-T {meta['seconds_per_cell']}")
             + (f" x {meta['rounds']} rounds (methods taking turns; percentiles: the median round's)" if meta.get("rounds", 1) > 1 else "")
             + " per cell, 1 client, -M prepared. "
             "p95 in ms; in brackets the ratio to planner-chosen GIN (below 1 is faster than GIN).", ""]
    scen = []
    for r in results:
        if r["scenario"] not in scen:
            scen.append(r["scenario"])
    # the methods this run measured, and those the server lacks (shown n/a)
    cols = [m for m in METHODS if any(r["method"] == m for r in results) or m in meta.get("unavailable", {})]
    lines.append("| scenario | matches | " + " | ".join(LABELS[m] for m in cols) + " |")
    lines.append("|---|---|" + "---|" * len(cols))
    for s in scen:
        cells = []
        matches = ""
        for m in cols:
            r = next((r for r in results if r["scenario"] == s and r["method"] == m and r["mode"] == "prepared"), None)
            if r:
                matches = r["matches"]
                cells.append(f"{r['p95']:.2f} ({r['ratio_p95_to_gin']:.2g}x)")
            else:
                cells.append("n/a" if m in meta.get("unavailable", {}) else "-")
        lines.append(f"| {s} | {matches} | " + " | ".join(cells) + " |")
    for m, why in meta.get("unavailable", {}).items():
        lines += ["", f"{LABELS[m]}: n/a, {why}."]
    lines += ["", goal_table(results, scen)]
    if meta.get("layout", "plain") != "plain":
        lines += ["", "p50 / p95 / p99 (ms), -M prepared:", "",
                  "| scenario | " + " | ".join(LABELS[m] for m in cols if m not in meta.get("unavailable", {}))
                  + " |"]
        shown = [m for m in cols if m not in meta.get("unavailable", {})]
        lines.append("|---|" + "---|" * len(shown))
        for sc in scen:
            cells = []
            for m in shown:
                r = next((r for r in results if r["scenario"] == sc and r["method"] == m and r["mode"] == "prepared"),
                         None)
                cells.append(f"{r['p50']:.2f} / {r['p95']:.2f} / {r['p99']:.2f}" if r else "-")
            lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    simple = [r for r in results if r["mode"] == "simple"]
    if simple:
        lines += ["", "Same core scenarios with -M simple (p95 ms):", ""]
        lines.append("| scenario | " + " | ".join(LABELS[m] for m in cols) + " |")
        lines.append("|---|" + "---|" * len(cols))
        for s in [x for x in scen if any(r["scenario"] == x for r in simple)]:
            cells = []
            for m in cols:
                r = next((r for r in simple if r["scenario"] == s and r["method"] == m), None)
                cells.append(f"{r['p95']:.2f}" if r else "-")
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
    write_table_writes(lines, writes, sz, meta, path)


def write_table_writes(lines, writes, sz, meta, path):
    """The write-path and size sections of table.md, then writes it."""
    if writes:
        wr = meta.get("write_rounds", 1)
        sync = f", synchronous_commit {meta['synchronous_commit']}" if meta.get("synchronous_commit") else ""
        lines += ["", f"Write path (INSERT of one alert, -M prepared{sync}, {meta.get('write_seconds', '?')} s a cell"
                  + (f", {wr} rounds with the variants taking turns, medians" if wr > 1 else "") + "):", "",
                  "| variant | clients | rows/s | p95 ms | ratio to no bitmap |", "|---|---|---|---|---|"]
    for w in writes:
        lines.append(f"| {w['variant']} | {w['clients']} | {w['tps']:.0f} | {w['p95']:.3f} | {w['ratio_to_no_bitmap']:.2f} |")
    if sz:
        lines += ["", "Sizes:", "", "| relation | size |", "|---|---|"]
    for k, v in sz.items():
        lines.append(f"| {k} | {v / 1048576:.1f} MiB |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
