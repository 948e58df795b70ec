"""The mixed-load benchmark (`benches/run.py --mixed`): pages and inserts at
once, one setup at a time, as a user would run it.

Each setup is its own table, holding the rows of the first nine `other`
tenants of the `full` data (0.96M alerts, 12k-140k per tenant; tenants the
single-client scenarios do not use) and only that setup's structures: the table and its pagination index,
plus GIN, btree_gin, RUM, or the extension's bitmap (trigger, INCLUDE) with
or without its tenant-keys or a GIN index. For `--mixed-seconds` (60 by
default), 6 clients page (the first page of 50, 30-day window, of a random
tenant and a random team value at ~50%, ~1%, ~0.05% of the tenant's alerts
or one it never has, plus the same with `priority_id IN (1, 2)`), while 2
clients insert new alerts (rows copied from a pool, new ULIDs: they land on
the pages being read) at a fixed rate, `--insert-rate` rows/s (200 by
default: 17M alerts a day). Reported per setup: page p50/p95/p99 and pages/s,
insert p95 and the rows/s the inserts reached, and the setup's bytes per row
(table and indexes over the row count). Every page query is checked against
the exact answer before the timing starts.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import common
import data
import methods
import timing
from common import lit, psql

T = "m_alerts"
SETUPS = {
    "GIN jsonb_path_ops": dict(method="gin", ddl=[f"CREATE INDEX ON {T} USING gin (attribute_values jsonb_path_ops)"]),
    "btree_gin (tenant, attributes)": dict(
        method="gin_org",
        ddl=["CREATE EXTENSION IF NOT EXISTS btree_gin",
             f"CREATE INDEX ON {T} USING gin (organisation_id, attribute_values jsonb_path_ops) WHERE {data.ORG_GIN_MARK}"]),
    "RUM tags + created_at": dict(
        method="rum", rum=True,
        ddl=[f"CREATE INDEX ON {T} USING rum (tags rum_anyarray_addon_ops, created_at) "
             "WITH (attach = 'created_at', to = 'tags')"]),
    "alerts: trigger + INCLUDE": dict(method="search", bitmap=True, ddl=[]),
    "alerts: trigger + INCLUDE + keys": dict(
        method="search", bitmap=True,
        ddl=[f"CREATE INDEX ON {T} USING gin (alerts_keys(organisation_id, id, attribute_values))"]),
    "alerts: trigger + INCLUDE + GIN": dict(
        method="search", bitmap=True, ddl=[f"CREATE INDEX ON {T} USING gin (attribute_values jsonb_path_ops)"]),
}
CLASSES = [0, 1, 2, "none"]
# The first `other` tenants by their order in the generator: 9 of them hold
# 0.96M of the `full` rows (12k-140k alerts each).
TENANTS = 9
OTHERS = f"SELECT org FROM bench_orgs WHERE role = 'other' ORDER BY seq LIMIT {TENANTS}"
QUERY_CLIENTS, INSERT_CLIENTS = 6, 2


def build(db, setup):
    """The setup's table: the `other` tenants' rows and its structures."""
    spec = SETUPS[setup]
    bitmap = spec.get("bitmap")
    cols = "id, organisation_id, created_at, priority_id, attribute_values, tags"
    ddl = [f"DROP TABLE IF EXISTS {T}",
           f"CREATE TABLE {T} (id text COLLATE \"C\" PRIMARY KEY, organisation_id text COLLATE \"C\" NOT NULL, "
           "created_at timestamptz NOT NULL, priority_id int NOT NULL, attribute_values jsonb NOT NULL, tags text[]"
           + (f", attribute_values_bitmap bit({common.BITS})" if bitmap else "") + ")"]
    if bitmap:
        ddl.append(f"CREATE TRIGGER b BEFORE INSERT OR UPDATE ON {T} FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()")
    psql(db, ddl)
    t0 = time.time()
    psql(db, f"INSERT INTO {T} ({cols}) SELECT {cols} FROM alerts WHERE organisation_id IN ({OTHERS})")
    psql(db, ["SET maintenance_work_mem = '1GB'; "
              f"CREATE INDEX {T}_page ON {T} (organisation_id, id DESC)"
              + (" INCLUDE (attribute_values_bitmap)" if bitmap else "")]
         + [f"{data.GIN_BUILD}; {d}" for d in spec["ddl"]])
    psql(db, f"VACUUM (ANALYZE) {T}")
    rows, size = psql(db, f"SELECT count(*), pg_total_relation_size({lit(T)}) FROM {T}")[0]
    print(f"mixed: {setup}: {int(rows)} rows, {int(size) / int(rows):.0f} bytes/row, built in {time.time() - t0:.0f} s",
          flush=True)
    return int(rows), int(size)


def queries(db, method):
    """The page queries of the pool, each checked against the exact answer."""
    orgs = [r[0] for r in psql(db, OTHERS)]
    out = []
    for org in orgs:
        k = data.key(db, org, "team")
        for cls in CLASSES:
            v = data.value(db, org, "team", cls) if cls != "none" else "NOPE"
            for prio in (False, True):
                s = dict(page=1, window="30d", limit=50, priority=prio, table=T, org=org, filter={k: v},
                         clauses=[(k, [v], False)])
                sql = methods.method_sql(method, s, db)
                want = [r[0] for r in methods.oracle(db, s)][:50]
                got = methods.run_query(db, method, sql)
                exact = methods.same_rows(method, got, want)
                if not exact:
                    raise RuntimeError(f"mixed: {method} returned other rows for {org} {k}={v} prio={prio}")
                out.append(sql)
    return out


def run_setup(db, setup, seconds, rate, work):
    spec = SETUPS[setup]
    rows, size = build(db, setup)
    pool = queries(db, spec["method"])
    psql(db, f"DROP TABLE IF EXISTS m_pool; CREATE TABLE m_pool AS SELECT row_number() OVER () AS k, organisation_id, "
             f"attribute_values, tags FROM (SELECT * FROM {T} ORDER BY id DESC LIMIT 10000) s; ALTER TABLE m_pool ADD PRIMARY KEY (k)")
    insert = ("\\set k random(1, 10000)\n"
              f"INSERT INTO {T} (id, organisation_id, created_at, priority_id, attribute_values, tags) "
              "SELECT alerts_ulid(), organisation_id, clock_timestamp(), 3, attribute_values, tags FROM m_pool WHERE k = :k")
    qdir, idir = work / "q", work / "i"
    for d in (qdir, idir):
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o777)
    # The inserts run beside the pages, throttled to `rate` rows/s.
    env = dict(os.environ)
    (idir / "insert.sql").write_text(insert + ";\n")
    for p in idir.glob("pgbench_log*"):
        p.unlink()
    writer = subprocess.Popen(["pgbench", "-n", "-h", common.PG["host"], "-p", str(common.PG["port"]), "-U", common.PG["user"],
                               "-M", "prepared", "-c", str(INSERT_CLIENTS), "-j", str(INSERT_CLIENTS), "-R", str(rate),
                               "-T", str(seconds), "-l", "--log-prefix", str(idir / "pgbench_log"),
                               "-f", str(idir / "insert.sql"), db],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    r = timing.pgbench(db, spec["method"], pool, seconds, "prepared", QUERY_CLIENTS, qdir)
    _, err = writer.communicate()
    if writer.returncode != 0:
        raise RuntimeError(f"mixed: insert pgbench failed: {err[-1000:]}")
    lat = sorted(int(f[2]) / 1000.0 for p in idir.glob("pgbench_log*") for line in p.read_text().splitlines()
                 if len(f := line.split()) >= 3)
    ins_p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan")
    res = dict(setup=setup, method=spec["method"], rows=rows, bytes_per_row=size / rows, pages_per_s=r["tps"],
               page_p50=r["p50"], page_p95=r["p95"], page_p99=r["p99"], insert_rows_per_s=len(lat) / seconds,
               insert_p95=ins_p95, queries=len(pool))
    print(f"  {setup:34s} pages {r['tps']:7.0f}/s  p95 {r['p95']:8.2f}  p99 {r['p99']:8.2f} ms   "
          f"inserts {res['insert_rows_per_s']:6.0f} rows/s p95 {ins_p95:6.2f} ms", flush=True)
    psql(db, f"DROP TABLE IF EXISTS {T}; DROP TABLE IF EXISTS m_pool")
    return res


def write_table(results, meta, path):
    lines = [f"# Mixed load: {QUERY_CLIENTS} clients paging, {INSERT_CLIENTS} inserting at {meta['insert_rate']} rows/s, "
             f"{meta['seconds']} s per setup",
             "",
             f"PostgreSQL {meta['postgres']}, {meta['cpu']} cores, {meta['rows']} rows of {meta['tenants']} tenants per "
             "setup table" + (f", bitmap column bit({meta['bitmap_bits']})" if meta.get("bitmap_bits", 512) != 512 else "")
             + ". Pages: first page of 50, 30-day window, random tenant and team value (~50%, ~1%, ~0.05%, "
             "none), half of them also `priority_id IN (1, 2)`; -M prepared. Bytes per row: the table with its "
             "indexes (`pg_total_relation_size`) over its rows, before the run.",
             "",
             "| setup | pages/s | page p50 ms | page p95 ms | page p99 ms | insert rows/s | insert p95 ms | bytes/row |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['setup']} | {r['pages_per_s']:.0f} | {r['page_p50']:.2f} | {r['page_p95']:.2f} | "
                     f"{r['page_p99']:.2f} | {r['insert_rows_per_s']:.0f} | {r['insert_p95']:.2f} | "
                     f"{r['bytes_per_row']:.0f} |")
    path.write_text("\n".join(lines) + "\n")


def main(args):
    # the bitmap column's width (--bitmap-bits): the setups' tables and the
    # database the rows come from, as in run.py
    common.BITS = args.bitmap_bits
    db = common.bench_db(args.size)
    if not psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = {lit(db)}"):
        data.build(db, args.size, time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    psql(db, "CREATE EXTENSION IF NOT EXISTS alerts")
    setups = [s for s in SETUPS if not args.methods or any(m in s for m in args.methods.split(","))]
    if not common.has_rum():
        setups = [s for s in setups if not SETUPS[s].get("rum")]
    psql(db, "CREATE EXTENSION IF NOT EXISTS rum") if any(SETUPS[s].get("rum") for s in setups) else None
    seconds = int(args.mixed_seconds)
    work = Path(tempfile.mkdtemp(prefix="alerts-mixed-"))
    os.chmod(work, 0o777)
    results = [run_setup(db, s, seconds, args.insert_rate, work) for s in setups]
    shutil.rmtree(work, ignore_errors=True)
    meta = dict(size=args.size, seconds=seconds, insert_rate=args.insert_rate, cpu=os.cpu_count(),
                postgres=psql(db, "SHOW server_version")[0][0], rows=results[0]["rows"] if results else 0,
                tenants=TENANTS, bitmap_bits=common.BITS)
    outdir = args.out or common.ROOT / "benches/results" / f"{args.size}-mixed"
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    write_table(results, meta, outdir / "table.md")
    print((outdir / "table.md").read_text())
