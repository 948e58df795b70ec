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
import sys
import tempfile
import time
from pathlib import Path
import common
from common import ROOT, SIZES, bench_db, has_rum, psql, psql_file
from data import LAYOUTS, LAYOUT_METHODS, build, portable_copy, build_layout, declare_near, layout_sizes, org_gin, refresh_extension, scenarios, sizes
from methods import METHODS, _PGOPTIONS, method_sql, oracle, plan_shape, run_query, same_rows
from timing import timed_cell, write_bench
from report import svg_chart, write_table

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=SIZES, default="smoke")
    ap.add_argument("--seconds", type=float, default=None, help="pgbench -T per cell (default 1 smoke, 5 otherwise)")
    ap.add_argument("--write-seconds", type=float, default=None)
    ap.add_argument("--write-batch", type=int, default=1,
                    help="rows a write-path INSERT adds (one statement, one transaction)")
    ap.add_argument("--write-rounds", type=int, default=1,
                    help="the write variants take turns this many times; rows/s and p95 are each variant's medians")
    ap.add_argument("--transactions", type=int, default=None,
                    help="pgbench -t per read cell instead of -T (default 30 for smoke)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="the methods of a cell take turns this many times, --seconds each per round; each "
                         "percentile is the median of the method's rounds' (noise episodes fall on all alike)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--layout", choices=LAYOUTS, default="plain",
                    help="plain table, or the same rows in 13 monthly partitions (by created_at or by id), or "
                         "in pg_partman's daily leaves, or its hourly ones with a 30-day retention; "
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
    ap.add_argument("--new-connections", action="store_true",
                    help="each query on a new connection (pgbench -C -M simple), the connection's time included: "
                         "what an application without a pooler pays for a session's first page")
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
    common.BITS = args.bitmap_bits
    db = bench_db(args.size)
    anchor = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime())
    anchor = build(db, args.size, anchor)
    if layout:
        build_layout(db, args.layout, anchor)
        args.skip_write = True
    refresh_extension(db, ["alerts"] + ([table] if layout else []))
    if layout and "interval" in layout:
        declare_near(db, table)  # the one step docs/partitioned-tables.md asks of a pg_partman table
    if not layout:
        org_gin(db)
    # (plain_expanded differs from plain on partitioned tables only, and is
    # asked for by name)
    methods = (args.methods or ",".join(LAYOUT_METHODS if layout else
                                        [m for m in METHODS if m != "plain_expanded"])).split(",")
    unavailable = {}
    if "portable_search" in methods:
        psql_file(db, ROOT / "clients/sql/alerts_portable.sql")  # as a managed server would take it
        if not layout:
            portable_copy(db, anchor)
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
            ok = same_rows(m, got, want_ids)
            if not ok:
                failures.append((s["name"], m, len(got), len(want_ids)))
                print(f"  {m}: WRONG ROWS ({len(got)} rows, expected {len(want_ids)})")
                continue
            runs.append((m, sql))
        # the peers' plans, as timed (GIN's changes with the statistics' sample)
        plans = {m: plan_shape(db, m, sql) for m, sql in runs if m in ("gin", "gin_all", "gin_org")}
        for m, shape in plans.items():
            print(f"  {m} plan: {shape}", flush=True)
        modes = ["prepared", "simple"] if s["core"] and not args.prepared_only else ["prepared"]
        for mode in ["connect"] if args.new_connections else modes:
            cell = timed_cell(db, runs, seconds, mode, work, args.transactions, args.rounds)
            for m, _ in runs:
                r = cell[m]
                results.append(dict(scenario=s["name"], tenant=s["tenant"], method=m, mode=mode,
                                    matches=len(want), **r, **({"plan": plans[m]} if m in plans else {})))
                print(f"  {m:10s} {mode:8s} p50 {r['p50']:9.3f}  p95 {r['p95']:9.3f}  p99 {r['p99']:9.3f} ms  "
                      f"{r['tps']:8.1f} tps", flush=True)
    for r in results:
        g = next((x for x in results if x["scenario"] == r["scenario"] and x["mode"] == r["mode"]
                  and x["method"] == "gin"), None)
        r["ratio_p95_to_gin"] = r["p95"] / g["p95"] if g and g["p95"] else float("nan")

    writes = [] if args.skip_write else write_bench(db, wseconds, work, args.write_rounds, args.write_batch)
    sz = sizes(db) if not layout else layout_sizes(db, table)
    shutil.rmtree(work, ignore_errors=True)

    meta = dict(size=args.size, layout=args.layout, mode="connect" if args.new_connections else "prepared", bitmap_bits=common.BITS, writes_only=args.writes_only, anchor=anchor, seconds_per_cell=seconds, rounds=args.rounds, transactions_per_cell=args.transactions,
                write_seconds=wseconds, write_rounds=args.write_rounds, write_batch=args.write_batch,
                synchronous_commit=psql(db, "SHOW synchronous_commit")[0][0] if not args.synchronous_commit
                else args.synchronous_commit,
                cpu=os.cpu_count(),
                postgres=psql(db, "SHOW server_version")[0][0], unavailable=unavailable,
                shared_buffers=psql(db, "SHOW shared_buffers")[0][0])
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, reads=results, writes=writes, sizes=sz,
                                                         failures=failures), indent=1))
    with open(outdir / "reads.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in results for k in r)) or ["scenario"])
        w.writeheader()
        w.writerows(results)
    if results:
        svg_chart(results, outdir / "p95.svg", meta["mode"])
    write_table(results, writes, sz, meta, outdir / "table.md")
    print((outdir / "table.md").read_text())
    if failures:
        print(f"bench: {len(failures)} method(s) returned wrong rows: {failures}")
        sys.exit(1)


if __name__ == "__main__":
    main()
