"""The cold-cache benchmark (`benches/run.py --cold`): first-touch latency
of one page, for every method, on the `full` (or `smoke`) rows.

For each filter class (a tenant's team value at ~50%, ~1%, ~0.05%, and a
value it never has) and each method, the server is restarted (empty
shared buffers) and the database's files are evicted from the OS page cache
(`vmtouch -e`); then one session runs one page for each of N tenants the
scenarios above do not use (the `other` tenants, 12k-140k alerts each, a
30-day window), each tenant once, so that every call reads pages no earlier
call of the run read, except the upper levels of the indexes, which a real
server also keeps cached. The session first runs each method once on a
tenant outside the measured ones (a warm-up that loads catalogs and, for
alerts_search, prepares its statements, as a pooled connection would have
done long before). Latency is psql's `\\timing` of each call (client round
trip). Then the same N calls again, warm, in the same session: cold and
warm side by side for the same pages.
"""

import json
import os
import re
import statistics
import subprocess
import time

import common
import data
from methods import LABELS, PGOPTIONS, method_sql, oracle, run_query, same_rows
from common import lit, psql

METHODS = ["gin", "gin_org", "gin_tags", "rum", "ext_ios", "search"]
CLASSES = [("team 50%", 0), ("team 1%", 1), ("team 0.05%", 2), ("team none", "none")]
TIME = re.compile(r"^Time: ([0-9.]+) ms")


def restart_cold(data_dir):
    """Restart the server and evict its files from the OS page cache."""
    env = dict(os.environ, ALERTS_PGPORT=str(common.PG["port"]))
    subprocess.run(["bash", "scripts/cluster.sh", "stop"], cwd=common.ROOT, check=True, capture_output=True, env=env)
    subprocess.run(["vmtouch", "-q", "-e", data_dir], check=True)
    subprocess.run(["bash", "scripts/cluster.sh", "start"], cwd=common.ROOT, check=True, capture_output=True, env=env)


def timed(db, m, queries):
    """Runs the queries in one session; their client-side latencies (ms)."""
    script = "\\o /dev/null\n\\timing on\n" + "".join(q.rstrip(";") + ";\n" for q in queries)
    env = dict(os.environ, PGOPTIONS=PGOPTIONS.get(m, ""))
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", common.PG["host"], "-p", str(common.PG["port"]),
                          "-U", common.PG["user"], "-d", db], input=script, capture_output=True, text=True, env=env,
                         check=True)
    times = [float(mt.group(1)) for line in out.stdout.splitlines() if (mt := TIME.match(line))]
    if len(times) != len(queries):
        raise RuntimeError(f"cold: {m}: {len(times)} timings for {len(queries)} queries: {out.stderr[-500:]}")
    return times


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(args):
    common.BITS = args.bitmap_bits
    db = common.bench_db(args.size)
    if not psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = {lit(db)}"):
        raise SystemExit(f"cold: no database {db}: build it first with "
                         f"python3 benches/run.py --size {args.size} --bitmap-bits {common.BITS}")
    if not psql(db, "SELECT 1 FROM pg_extension WHERE extname = 'alerts'") or \
            not psql(db, "SELECT to_regclass('alerts_keys_idx') IS NOT NULL")[0][0] == "t":
        # the recommended setup's tenant-keys index, as run.py leaves it
        data.refresh_extension(db, ["alerts"])
    data_dir = subprocess.run(["psql", "-X", "-At", "-h", common.PG["host"], "-p", str(common.PG["port"]), "-U", "postgres",
                               "-d", db, "-c", "SHOW data_directory"], check=True, capture_output=True,
                              text=True).stdout.strip()
    methods = (args.methods or ",".join(METHODS)).split(",")
    if "rum" in methods and not common.has_rum():
        methods.remove("rum")
    if "gin_org" in methods:
        data.org_gin(db)
    n = args.tenants
    orgs = [r[0] for r in psql(db, f"SELECT org FROM bench_orgs WHERE role = 'other' ORDER BY seq LIMIT {n + 1}")]
    warmup, measured = orgs[0], orgs[1:]
    outdir = args.out or common.ROOT / "benches/results" / (
        f"{args.size}-cold" + (f"-b{common.BITS}" if common.BITS != 512 else ""))
    outdir.mkdir(parents=True, exist_ok=True)
    results = []
    for label, cls in CLASSES:
        def scenario(org):
            k = data.key(db, org, "team")
            v = data.value(db, org, "team", cls) if cls != "none" else "NOPE"
            return dict(page=1, window="30d", limit=50, priority=False, table="alerts", org=org,
                        filter={k: v}, clauses=[(k, [v], False)])
        scen = [scenario(o) for o in measured]
        warm_scen = scenario(warmup)
        for m in methods:
            # the method's rows, checked against the exact oracle on the
            # first tenant before timing
            want = [r[0] for r in oracle(db, scen[0])][:50]
            got = run_query(db, m, method_sql(m, scen[0], db))
            if not same_rows(m, got, want):
                raise RuntimeError(f"cold: {m} {label}: wrong rows ({len(got)} against {len(want)})")
            queries = [method_sql(m, s, db) for s in scen]
            restart_cold(data_dir)
            times = timed(db, m, [method_sql(m, warm_scen, db)] + queries + queries)
            cold, warm = times[1:1 + len(queries)], times[1 + len(queries):]
            r = dict(scenario=label, method=m, calls=len(queries),
                     cold_p50=statistics.median(cold), cold_p95=pct(cold, 0.95), cold_p99=pct(cold, 0.99),
                     warm_p50=statistics.median(warm), warm_p95=pct(warm, 0.95), warm_p99=pct(warm, 0.99))
            results.append(r)
            print(f"  {label:11s} {m:8s} cold p50 {r['cold_p50']:8.2f} p95 {r['cold_p95']:8.2f} p99 {r['cold_p99']:8.2f}"
                  f"  warm p50 {r['warm_p50']:6.2f} p95 {r['warm_p95']:6.2f} ms", flush=True)
    meta = dict(size=args.size, bitmap_bits=common.BITS, tenants=len(measured), postgres=psql(db, "SHOW server_version")[0][0],
                shared_buffers=psql(db, "SHOW shared_buffers")[0][0], cpu=os.cpu_count(),
                when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    lines = [f"Cold cache, size `{args.size}`, bitmap column bit({common.BITS}), PostgreSQL {meta['postgres']}, {meta['cpu']} cores, shared_buffers "
             f"{meta['shared_buffers']}: for each filter class and method, the server restarted and its files "
             f"evicted from the OS cache (`vmtouch -e`), then one page (50 rows, 30-day window) for each of "
             f"{meta['tenants']} tenants (12k-140k alerts) not read before, then the same calls again warm. "
             "Client round trip per call, ms, cold p50 / p95 / p99 (warm p95).", "",
             "| filter | " + " | ".join(LABELS[m] for m in methods) + " |",
             "|---|" + "---|" * len(methods)]
    for label, _ in CLASSES:
        cells = []
        for m in methods:
            r = next(x for x in results if x["scenario"] == label and x["method"] == m)
            cells.append(f"{r['cold_p50']:.1f} / {r['cold_p95']:.1f} / {r['cold_p99']:.1f} ({r['warm_p95']:.2f})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    worst = {m: max(x["cold_p95"] for x in results if x["method"] == m) for m in methods}
    lines += ["", "Worst cold p95 per method over the filter classes: "
              + ", ".join(f"{LABELS[m]} {v:.1f} ms" for m, v in worst.items()) + "."]
    (outdir / "table.md").write_text("\n".join(lines) + "\n")
    print((outdir / "table.md").read_text())
