"""The scale-out benchmark (`benches/run.py --citus`): the same rows as the
single-node `full` (or `smoke`) database, hash-distributed by
organisation_id over a local Citus cluster (coordinator + 2 workers,
scripts/citus.sh, its own ports), measured in one run beside the single
node they were copied from:

- latency, 1 client, p50/p95/p99 per core scenario: GIN, alerts_search
  and plain SQL through the coordinator (alerts_search sends one routed
  statement to the tenant's worker; plain SQL is Citus' router query, the
  worker planning the shard query with the custom scan); GIN and
  alerts_search called on the worker that holds the tenant, on its shard
  (the same work without the coordinator hop: what a call through the
  coordinator costs more is the coordinator's share); GIN and
  alerts_search on the single node; Citus' floor for a router query;

Roles: the peers run as `postgres`, with `alerts.custom_scan = off` in
this database on every node (so that no worker plans GIN's query with the
node, even where a query loaded the library); alerts_search and plain SQL
run as `bench_alerts`, whose sessions load the library on every node
(`session_preload_libraries`, as docs/citus.md recommends).
- throughput, 8 clients, a mix of the core scenarios: one node against
  the coordinator and two workers.

All three Citus nodes and the single node share the machine's cores, so
throughput cannot show scaling here; the table says so.
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
from methods import NODE_METHODS, method_sql as peer_sql, oracle, run_query
import timing
from common import lit, psql

DB = "alerts_bench_citus"
METHODS = ["gin", "search", "plain", "plain_match", "gin_worker", "search_worker", "gin_1node", "search_1node"]
LABELS = {
    "gin": "GIN (planner), via coordinator",
    "search": "alerts_search(), via coordinator",
    "plain": "plain SQL @> (custom scan on the worker), via coordinator",
    "plain_match": "plain SQL alerts_attrs_match (custom scan on the worker), via coordinator",
    "gin_worker": "GIN (planner) on the tenant's worker, its shard",
    "search_worker": "alerts_search() on the tenant's worker",
    "gin_1node": "GIN (planner), one node",
    "search_1node": "alerts_search(), one node",
}
VIA_COORDINATOR = ["gin", "search", "plain", "plain_match"]
COLS = "id, organisation_id, created_at, priority_id, attribute_values, attribute_values_bitmap"


def citus_port():
    return int(os.environ.get("ALERTS_CITUS_PORT", "5550"))


def start_cluster():
    env = dict(os.environ, ALERTS_CITUS_PORT=str(citus_port()),
               ALERTS_CITUS_SHARED_BUFFERS=os.environ.get("ALERTS_CITUS_SHARED_BUFFERS", "1GB"))
    subprocess.run(["bash", str(common.ROOT / "scripts/citus.sh"), "start", DB], check=True, env=env)


def build(src_db, size, anchor):
    """The distributed copy of the single node's rows, with the recommended
    indexes and GIN on the shards; reused while it holds the same data."""
    c = citus_port()
    stamp = f"{size} {anchor}"
    have = psql(DB, "SELECT obj_description(to_regclass('alerts'), 'pg_class')", port=c)
    if have and have[0][0] == stamp:
        print(f"bench: reusing the distributed copy ({stamp})")
        return
    t0 = time.time()
    psql(DB, ["SET client_min_messages = warning", "DROP TABLE IF EXISTS alerts, bench_orgs CASCADE",
              "CREATE TABLE alerts (id text COLLATE \"C\" NOT NULL, organisation_id text COLLATE \"C\" NOT NULL, "
             "created_at timestamptz NOT NULL, priority_id int NOT NULL, attribute_values jsonb NOT NULL, "
             "attribute_values_bitmap bit(512), PRIMARY KEY (organisation_id, id))",
              "SELECT create_distributed_table('alerts', 'organisation_id')"], port=c)
    copy(src_db, f"COPY (SELECT {COLS} FROM alerts) TO STDOUT", f"COPY alerts ({COLS}) FROM STDIN")
    t1 = time.time()
    psql(DB, "CREATE TABLE bench_orgs (seq int PRIMARY KEY, role text, org text COLLATE \"C\" UNIQUE, n int)", port=c)
    copy(src_db, "COPY bench_orgs TO STDOUT", "COPY bench_orgs FROM STDIN")
    for fn in ("bench_value", "bench_key"):
        ddl = psql(src_db, f"SELECT replace(pg_get_functiondef('{fn}'::regproc), E'\\n', ' ')")[0][0]
        psql(DB, ddl, port=c)
    psql(DB, ["SET maintenance_work_mem = '1GB'",
              "CREATE INDEX idx_alerts_pagination_bitmap ON alerts (organisation_id, id DESC) "
              "INCLUDE (attribute_values_bitmap)",
              data.GIN_BUILD,
              "CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops)"], port=c)
    psql(DB, "VACUUM (ANALYZE) alerts", port=c)
    psql(DB, f"COMMENT ON TABLE alerts IS {lit(stamp)}", port=c)
    print(f"bench: distributed copy: rows in {t1 - t0:.0f} s, indexes in {time.time() - t1:.0f} s", flush=True)


def copy(src_db, out_sql, in_sql):
    """COPY from the single node straight into the coordinator."""
    base = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", common.PG["host"], "-U", common.PG["user"]]
    src = subprocess.Popen(base + ["-p", str(common.PG["port"]), "-d", src_db, "-c", out_sql], stdout=subprocess.PIPE)
    dst = subprocess.run(base + ["-p", str(citus_port()), "-d", DB, "-c", in_sql], stdin=src.stdout,
                         stdout=subprocess.DEVNULL)
    src.stdout.close()
    if src.wait() != 0 or dst.returncode != 0:
        raise RuntimeError(f"copy failed: {out_sql}")


def refresh():
    """The extension's objects from the installed version on every node,
    and the tenant-keys index on the shards."""
    c = citus_port()
    psql(DB, ["SET client_min_messages = warning", "DROP EXTENSION IF EXISTS alerts CASCADE", "CREATE EXTENSION alerts"],
         port=c)
    t0 = time.time()
    psql(DB, [data.GIN_BUILD, "CREATE INDEX alerts_keys_idx ON alerts "
              "USING gin (alerts_keys(organisation_id, id, attribute_values))", "ANALYZE alerts"], port=c)
    print(f"bench: distributed tenant-keys index built in {time.time() - t0:.0f} s", flush=True)


# Who runs each method (see the module comment).
USER = {m: "bench_alerts" for m in ("search", *NODE_METHODS)}


def roles():
    """The two roles' settings, on every node (Citus propagates neither
    ALTER ROLE ... IN DATABASE nor a role made in a DO block reliably, so
    each node is told directly)."""
    c = citus_port()
    for port in (c, c + 1, c + 2):
        psql(DB, ["SET citus.enable_ddl_propagation = off",
                  "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_alerts') "
                  "THEN CREATE ROLE bench_alerts LOGIN SUPERUSER; END IF; END $$",
                  f"ALTER ROLE bench_alerts IN DATABASE {DB} SET session_preload_libraries = 'alerts'",
                  f"ALTER ROLE postgres IN DATABASE {DB} SET alerts.custom_scan = 'off'"], port=port)


def shard_sql(sql, org):
    """`sql` on the tenant's shard (run on its worker)."""
    shard = psql(DB, f"SELECT shard_name('alerts', get_shard_id_for_distribution_column('alerts', {lit(org)}))",
                 port=citus_port())[0][0]
    return sql.replace("FROM alerts", "FROM " + shard)


def worker_of(org):
    return int(psql(DB, f"SELECT p.nodeport FROM pg_dist_shard_placement p WHERE p.shardid = "
                        f"get_shard_id_for_distribution_column('alerts', {lit(org)})", port=citus_port())[0][0])


def method_sql(m, s):
    if m in NODE_METHODS:
        return peer_sql(m, s, None)
    sql = peer_sql("gin" if m.startswith("gin") else "search", s, None)
    return shard_sql(sql, s["org"]) if m == "gin_worker" else sql


def main(args):
    size = args.size
    src_db = f"alerts_bench_{size}"
    seconds = int(args.seconds or (1 if size == "smoke" else 5))
    tput_seconds = int(args.write_seconds or (5 if size == "smoke" else 30))
    outdir = args.out or common.ROOT / "benches/results" / f"{size}-citus"
    outdir.mkdir(parents=True, exist_ok=True)
    anchor = data.build(src_db, size, time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    start_cluster()
    build(src_db, size, anchor)
    data.refresh_extension(src_db, ["alerts"])
    refresh()
    roles()
    c, one = citus_port(), int(common.PG["port"])
    work = Path(tempfile.mkdtemp(prefix="alerts-bench-"))
    os.chmod(work, 0o777)
    results, failures = [], []
    mix = {m: [] for m in ("gin", "search", *NODE_METHODS, "gin_1node", "search_1node")}
    methods = (args.methods or ",".join(METHODS)).split(",")
    for s in data.scenarios(src_db, size, "alerts"):
        if not s["core"] or (args.only and args.only not in s["name"]):
            continue
        want = [r[0] for r in oracle(src_db, s)][: s["limit"]]
        print(f"== {s['name']}: page of {len(want)}", flush=True)

        def where(m):
            port = one if m.endswith("_1node") else worker_of(s["org"]) if m.endswith("_worker") else c
            return dict(db=src_db if port == one else DB, port=port, user=USER.get(m))

        runs = []
        for m in [x for x in METHODS if x in methods]:
            sql, at = method_sql(m, s), where(m)
            got = run_query(at["db"], m, sql, port=at["port"], user=at["user"])
            if got != want:
                failures.append((s["name"], m, len(got), len(want)))
                print(f"  {m}: WRONG ROWS ({len(got)} rows, expected {len(want)})", flush=True)
                continue
            if m in mix:
                mix[m].append(sql)
            runs.append((m, sql))
        # the methods take turns over the rounds (see timing.timed_cell); then,
        # unless --prepared-only, those through the coordinator planned on each call
        for mode in ["prepared"] if args.prepared_only else ["prepared", "simple"]:
            timed = runs if mode == "prepared" else [(m, q) for m, q in runs if m in VIA_COORDINATOR]
            cell = timing.timed_cell(DB, timed, seconds, mode, work, args.transactions, args.rounds, where)
            for m, _ in timed:
                r = cell[m]
                results.append(dict(scenario=s["name"], method=m, mode=mode, matches=len(want), **r))
                print(f"  {m:14s} {mode:8s} p50 {r['p50']:8.3f}  p95 {r['p95']:8.3f}  p99 {r['p99']:8.3f} ms",
                      flush=True)
    # Citus' own cost of a router query: one indexed row of the tenant
    org = psql(src_db, "SELECT org FROM bench_orgs WHERE role = 'medium'")[0][0]
    floor_sql = f"SELECT id FROM alerts WHERE organisation_id = {lit(org)} ORDER BY id DESC LIMIT 1"
    floors = {}
    for where, db, port in (("coordinator", DB, c), ("one node", src_db, one), ("worker, shard", DB, worker_of(org))):
        q = floor_sql if where != "worker, shard" else floor_sql.replace(
            "FROM alerts", "FROM " + psql(DB, f"SELECT shard_name('alerts', get_shard_id_for_distribution_column("
                                              f"'alerts', {lit(org)}))", port=c)[0][0])
        floors[where] = timing.pgbench(db, "floor", q, seconds, "prepared", 1, work, args.transactions, port=port)
        print(f"  router floor, {where}: p50 {floors[where]['p50']:.3f} ms", flush=True)
    # throughput: 8 clients, the core scenarios mixed
    tput = []
    for m, sqls in mix.items():
        if not sqls:
            continue
        port, db = (one, src_db) if m.endswith("_1node") else (c, DB)
        r = timing.pgbench(db, m, sqls, tput_seconds, "prepared", 8, work, None, port=port, user=USER.get(m))
        tput.append(dict(method=m, **r))
        print(f"  8 clients {m:14s} {r['tps']:8.0f} pages/s  p95 {r['p95']:.3f} ms", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    meta = dict(size=size, anchor=anchor, seconds_per_cell=seconds, rounds=args.rounds, throughput_seconds=tput_seconds,
                transactions_per_cell=args.transactions,
                cpu=os.cpu_count(), postgres=psql(DB, "SHOW server_version", port=c)[0][0],
                citus=psql(DB, "SELECT extversion FROM pg_extension WHERE extname = 'citus'", port=c)[0][0],
                shards=psql(DB, "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'alerts'::regclass",
                            port=c)[0][0],
                shared_buffers=psql(DB, "SHOW shared_buffers", port=c)[0][0],
                shared_buffers_one_node=psql(src_db, "SHOW shared_buffers")[0][0])
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, reads=results, floors=floors, throughput=tput,
                                                         failures=failures), indent=1))
    write_table(results, floors, tput, meta, outdir / "table.md")
    print((outdir / "table.md").read_text())
    if failures:
        raise SystemExit(f"bench: {len(failures)} method(s) returned wrong rows: {failures}")


def write_table(everything, floors, tput, meta, path):
    results = [r for r in everything if r.get("mode", "prepared") == "prepared"]
    scen = list(dict.fromkeys(r["scenario"] for r in results))
    cols = [m for m in METHODS if any(r["method"] == m for r in results)]
    cell = {(r["scenario"], r["method"]): r for r in results}
    lines = [f"Size `{meta['size']}` hash-distributed by organisation_id over Citus {meta['citus']} "
             f"({meta['shards']} shards, coordinator + 2 workers on one machine), beside the single node the rows "
             f"were copied from; PostgreSQL {meta['postgres']}, {meta['cpu']} cores shared by all four servers, "
             f"shared_buffers {meta['shared_buffers']} per Citus node and {meta['shared_buffers_one_node']} on the "
             f"single node; pgbench "
             + (f"-t {meta['transactions_per_cell']}" if meta.get("transactions_per_cell")
                else f"-T {meta['seconds_per_cell']}") + " per cell"
             + (f" x {meta['rounds']} rounds (methods taking turns; percentiles: the median round's)"
                if meta.get('rounds', 1) > 1 else "")
             + ", 1 client, -M prepared"
             + (" (through the coordinator also -M simple, below)." if any(r.get("mode") == "simple" for r in everything)
                else "."), "",
             "p50 / p95 / p99 (ms):", "",
             "| scenario | " + " | ".join(LABELS[m] for m in cols) + " |", "|---|" + "---|" * len(cols)]
    for s in scen:
        cells = [f"{r['p50']:.2f} / {r['p95']:.2f} / {r['p99']:.2f}" if (r := cell.get((s, m))) else "-"
                 for m in cols]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "alerts_search and plain SQL against GIN through the coordinator (p95 ratio), and the "
                  "coordinator's share of a page (p50 through the coordinator minus the same work on the tenant's "
                  "worker: GIN's query on the shard for GIN, alerts_search on the worker for the other two):", "",
              "| scenario | alerts_search / GIN (p95) | plain SQL / GIN (p95) | plain SQL alerts_attrs_match / GIN "
              "(p95) | GIN's share (ms) | alerts_search's share (ms) | plain SQL's share (ms) |",
              "|---|---|---|---|---|---|---|"]
    for s in scen:
        g, a, p, pm, gw, w = (cell.get((s, m)) for m in ("gin", "search", "plain", "plain_match", "gin_worker",
                                                           "search_worker"))
        lines.append(f"| {s} | " + " | ".join([
            f"{a['p95'] / g['p95']:.2f}x" if a and g else "-",
            f"{p['p95'] / g['p95']:.2f}x" if p and g else "-",
            f"{pm['p95'] / g['p95']:.2f}x" if pm and g else "-",
            f"{g['p50'] - gw['p50']:.3f}" if g and gw else "-",
            f"{a['p50'] - w['p50']:.3f}" if a and w else "-",
            f"{p['p50'] - w['p50']:.3f}" if p and w else "-"]) + " |")
    lines += simple_table(everything, cell)
    lines += ["", "Citus' floor for a router query (one indexed row of one tenant), p50 / p95 ms:", "",
              "| where | p50 | p95 |", "|---|---|---|"]
    for where, r in floors.items():
        lines.append(f"| {where} | {r['p50']:.3f} | {r['p95']:.3f} |")
    if tput:
        lines += ["", f"Throughput, 8 clients, the core scenarios above mixed at random, -T "
                      f"{meta['throughput_seconds']} (2 cores shared by every server: this shows the cost of the "
                      f"extra hop under load, not scaling):", "",
                  "| method | pages/s | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
        for r in tput:
            lines.append(f"| {LABELS[r['method']]} | {r['tps']:.0f} | {r['p50']:.2f} | {r['p95']:.2f} | "
                         f"{r['p99']:.2f} |")
    path.write_text("\n".join(lines) + "\n")


def simple_table(everything, prepared):
    """The methods through the coordinator planned on each call (-M
    simple): p50 / p95 ms, the p50's ratio to GIN's, and what planning
    added to the p50 (against -M prepared in the same cell)."""
    simple = {(r["scenario"], r["method"]): r for r in everything if r.get("mode") == "simple"}
    if not simple:
        return []
    cols = [m for m in VIA_COORDINATOR if any(k[1] == m for k in simple)]
    lines = ["", "Through the coordinator, each call planned (-M simple): p50 / p95 ms, in brackets the p50 to "
                 "GIN's and the p50 more than -M prepared:", "",
             "| scenario | " + " | ".join(LABELS[m] for m in cols) + " |", "|---|" + "---|" * len(cols)]
    for s in dict.fromkeys(k[0] for k in simple):
        g = simple.get((s, "gin"))
        cells = []
        for m in cols:
            r, p = simple.get((s, m)), prepared.get((s, m))
            if not r:
                cells.append("-")
                continue
            ratio = f"{r['p50'] / g['p50']:.2f}x, " if g else ""
            extra = f"{r['p50'] - p['p50']:+.3f}" if p else "-"
            cells.append(f"{r['p50']:.2f} / {r['p95']:.2f} ({ratio}{extra})")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return lines
