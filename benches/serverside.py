"""Server-side cost of a page, without the client round trip.

    python3 benches/serverside.py --size full [--layout by-id] [--methods gin,search,plain]
                                  [--pages 200] [--rounds 15] [--consumer count|text]
                                  [--scenarios "a;b"] [--out DIR]

pgbench's latency holds the client, the protocol and the scheduler of a
2-core machine shared by both; on cheap pages their noise (episodes of a
few seconds in which every call is slower) is larger than the difference
between the methods. This runs the same pages inside one backend: for each
method a PL/pgSQL function that runs its page `--pages` times, each as
`SELECT count(*) FROM (<the method's query>) q` (planned once, as a
prepared statement is), timed with `clock_timestamp()`. Counted, the
rows cost what the scan and its quals read; Postgres' scans then deform
only the columns the quals need, where the custom scan deforms each row
whole: `--consumer text` reads every column as text instead
(`sum(octet_length(q::text))`), nearer what a client is sent. The methods take
turns for `--rounds` rounds, in an order rotated each round; the table
gives each method's median µs per page over the rounds, its minimum, and
the median ratio to GIN's time in the same round (a noise episode falls
on the methods of one round alike). Every method's rows are first checked
against the exact oracle. The custom scan is off in every method's
function but plain SQL's (`SET alerts.custom_scan = off`, as the pgbench
runs' PGOPTIONS), and the library is loaded in the session, as
`session_preload_libraries` would.
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import common
from common import ROOT, bench_db, psql
from data import LAYOUTS, build, build_layout, refresh_extension, scenarios
from methods import LABELS, NODE_METHODS, PGOPTIONS, method_sql, oracle, run_query, same_rows

# only the custom scan's setting and alerts_search's shortcuts vary by method
SETTINGS = ("alerts.custom_scan", "alerts.search_shortcuts")


def settings_of(m):
    """The method's PGOPTIONS settings this session can set per function."""
    words = PGOPTIONS.get(m, "").split()
    pairs = [w.split("=", 1) for w in words if "=" in w]
    return [(k, v) for k, v in pairs if k in SETTINGS]


# What each page's rows go to: counted (the scan's own cost and the columns
# its quals read), or every column as text, as a client gets them.
CONSUMERS = {"count": "count(*)", "text": "sum(octet_length(q::text))"}


def function(name, m, sql, consumer):
    """A function running the method's page n times, returning µs per page."""
    sets = "".join(f" SET {k} = {v}" for k, v in settings_of(m))
    return (f"CREATE FUNCTION pg_temp.{name}(n int) RETURNS float8 LANGUAGE plpgsql{sets} AS $f$\n"
            "DECLARE t0 timestamptz; c bigint;\n"
            "BEGIN\n  t0 := clock_timestamp();\n"
            f"  FOR i IN 1..n LOOP SELECT {CONSUMERS[consumer]} INTO c FROM ({sql}) q; END LOOP;\n"
            "  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;\nEND $f$;")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=common.SIZES, default="full")
    ap.add_argument("--layout", choices=LAYOUTS, default="plain")
    ap.add_argument("--methods", default="gin,search,plain")
    ap.add_argument("--pages", type=int, default=200, help="pages per method per round")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--scenarios", default="", help="only these scenarios, exact names separated by ';'")
    ap.add_argument("--consumer", choices=CONSUMERS, default="count",
                    help="count the rows, or read every column as text (see CONSUMERS)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    layout = LAYOUTS[args.layout]
    table = layout["table"] if layout else "alerts"
    outdir = args.out or ROOT / "benches/results" / f"{args.size}-{args.layout}-serverside-{args.consumer}"
    outdir.mkdir(parents=True, exist_ok=True)
    db = bench_db(args.size)
    anchor = build(db, args.size, time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    if layout:
        build_layout(db, args.layout, anchor)
    refresh_extension(db, ["alerts"] + ([table] if layout else []))
    methods = args.methods.split(",")
    if "gin" not in methods:
        ap.error("--methods must include gin (the ratios are to it)")

    results = []
    for s in scenarios(db, args.size, table):
        if args.scenarios and s["name"] not in args.scenarios.split(";"):
            continue
        if s["page"] > 1:
            continue  # a cursor of page 20 is pgbench's (run.py)
        want = [r[0] for r in oracle(db, s)][: s["limit"]]
        for m in methods:
            got = run_query(db, m, method_sql(m, s, db))
            if not same_rows(m, got, want):
                raise RuntimeError(f"serverside: {m} on {s['name']}: wrong rows ({len(got)} against {len(want)})")
        for m in [x for x in NODE_METHODS if x in methods]:
            # what is timed is the custom scan, not Postgres' own plan
            plan = psql(db, ["LOAD 'alerts'", f"EXPLAIN (COSTS OFF) SELECT count(*) FROM ({method_sql(m, s, db)}) q"])
            if not any("AlertsSearch" in r[0] for r in plan):
                raise RuntimeError(f"serverside: {m} on {s['name']} is not planned with the custom scan")
        # one psql, one session: each statement a -c of its own (common.psql)
        setup = ["LOAD 'alerts'"] + [function(f"m_{m}", m, method_sql(m, s, db), args.consumer) for m in methods]
        calls = [f"SELECT pg_temp.m_{m}({max(args.pages // 10, 1)})" for m in methods]  # warm-up
        order = []
        for r in range(args.rounds):
            turn = methods[r % len(methods):] + methods[: r % len(methods)]
            order += turn
            calls += [f"SELECT pg_temp.m_{m}({args.pages})" for m in turn]
        times = [float(r[0]) for r in psql(db, setup + calls)][len(methods):]
        per = {m: [] for m in methods}
        for m, t in zip(order, times):
            per[m].append(t)
        rounds = [dict(zip(order[i:i + len(methods)], times[i:i + len(methods)]))
                  for i in range(0, len(times), len(methods))]
        for m in methods:
            r = dict(scenario=s["name"], method=m, rows=len(want), median_us=statistics.median(per[m]),
                     min_us=min(per[m]), ratio_to_gin=statistics.median(x[m] / x["gin"] for x in rounds))
            results.append(r)
            print(f"  {s['name']:28s} {m:8s} median {r['median_us']:8.1f} µs  min {r['min_us']:8.1f}  "
                  f"to GIN {r['ratio_to_gin']:.2f}x", flush=True)

    meta = dict(size=args.size, layout=args.layout, consumer=args.consumer, pages=args.pages, rounds=args.rounds, cpu=os.cpu_count(),
                postgres=psql(db, "SHOW server_version")[0][0], shared_buffers=psql(db, "SHOW shared_buffers")[0][0])
    (outdir / "results.json").write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    lines = [f"Server-side cost of a page (`benches/serverside.py`), size `{args.size}`, layout {args.layout}, "
             f"PostgreSQL {meta['postgres']}, {meta['cpu']} cores, shared_buffers {meta['shared_buffers']}: "
             f"{args.pages} pages per method per round in one backend, each page's rows read as "
             f"`SELECT {CONSUMERS[args.consumer]} FROM (<page>) q`, {args.rounds} rounds, methods taking turns. "
             "µs per page: median of the rounds / minimum (median ratio to GIN in the same round).", "",
             "| scenario | rows | " + " | ".join(LABELS[m] for m in methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    names = list(dict.fromkeys(r["scenario"] for r in results))
    for name in names:
        row = {r["method"]: r for r in results if r["scenario"] == name}
        cells = [f"{row[m]['median_us']:.1f} / {row[m]['min_us']:.1f} ({row[m]['ratio_to_gin']:.2f}x)" for m in methods]
        lines.append(f"| {name} | {row[methods[0]]['rows']} | " + " | ".join(cells) + " |")
    (outdir / "table.md").write_text("\n".join(lines) + "\n")
    print((outdir / "table.md").read_text())


if __name__ == "__main__":
    main()
