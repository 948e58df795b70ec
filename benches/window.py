#!/usr/bin/env python3
"""The `created_at` window against the `id` window (issue 80, item 2).

    python3 benches/window.py [--size medium] [--layouts plain,by-id,by-created] [--seconds 20]

For each layout and each filter class of the large tenant (50% ... none),
the page of 50 newest first in the last 30 days as plain SQL, written two
ways: bounded by `id >= alerts_ulid_floor(now() - interval '30 days')` and
by `created_at >= now() - interval '30 days'`. Timed call by call in one
interleaved pgbench run per setting (benches/interleave.sh), so the forms
share every slow stretch of the machine:

- undeclared: the table says nothing of how `id` relates to `created_at`;
- declared: `CHECK (alerts_ulid_near(id, created_at, '1 second'))` (the
  generator's ids carry their row's `created_at` to the millisecond);

each with the custom scan on, and the `created_at` form again with it off
(Postgres' own plan, the invariant that loading the library never makes a
query slower). Before timing, every `created_at` page equals the same query
with the custom scan off (Postgres' plan is the oracle). Goals: created_at
p50 at most 1.5x the id form's; with the node, at most Postgres' own plan
(beyond noise). Writes benches/results/<size>-window/window.md.
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from common import ROOT, SIZES, bench_db, lit, psql
from data import LAYOUTS, build, build_layout, refresh_extension, scenarios

CLASSES = ["50%", "1%", "0.05%", "0.005%", "none"]
FORMS = ("id", "created", "search")
PRELOAD = "-c session_preload_libraries=alerts"


def page_sql(s, form):
    t = s["table"]
    if form == "search":
        return (f"SELECT * FROM alerts_search(NULL::{t}, {lit(s['org'])}, {lit(json.dumps(s['filter']))}, "
                f"now() - interval '30 days', NULL, 50)")
    win = ("id >= alerts_ulid_floor(now() - interval '30 days')" if form == "id"
           else "created_at >= now() - interval '30 days'")
    obj = {k: ([v[0]] if arr else v[0]) for k, v, arr in s["clauses"]}
    return (f"SELECT * FROM {t} WHERE organisation_id = {lit(s['org'])} AND {win} "
            f"AND attribute_values @> {lit(json.dumps(obj))} ORDER BY id DESC LIMIT 50")


def ids(db, sql, options):
    out = subprocess.run(["psql", "-X", "-At", "-d", db, "-c", f"SELECT string_agg(id, ',') FROM ({sql}) p"],
                         capture_output=True, text=True, check=True, env=_env(options))
    return out.stdout.strip()


def _env(options):
    import os
    e = dict(os.environ)
    e["PGOPTIONS"] = options
    e.setdefault("PGHOST", "/tmp")
    e.setdefault("PGPORT", "5415")
    e.setdefault("PGUSER", "postgres")
    return e


def interleave(db, files, options, seconds):
    out = subprocess.run(["bash", str(ROOT / "benches/interleave.sh"), "-s", str(int(seconds)), db, *files],
                         capture_output=True, text=True, check=True, env=_env(options))
    p50 = {}
    for line in out.stdout.splitlines():
        name, rest = line.split(maxsplit=1)
        p50[name] = float(rest.split()[1])
    return p50


def route(db, sql, options):
    out = subprocess.run(["psql", "-X", "-At", "-d", db, "-c", f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {sql}"],
                         capture_output=True, text=True, check=True, env=_env(options))
    first = next((l.strip() for l in out.stdout.splitlines() if "Custom Scan" in l or "Scan" in l), "")
    return "node" if "AlertsSearch" in out.stdout else first.split(" on ")[0].replace("->  ", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=SIZES, default="medium")
    ap.add_argument("--layouts", default="plain,by-id,by-created")
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    db = bench_db(args.size)
    anchor = build(db, args.size, time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    layouts = args.layouts.split(",")
    tables = []
    for layout in layouts:
        if LAYOUTS[layout]:
            build_layout(db, layout, anchor)
            tables.append(LAYOUTS[layout]["table"])
        else:
            tables.append("alerts")
    refresh_extension(db, tables)
    version = psql(db, "SHOW server_version")[0][0]
    rows = []
    work = Path(tempfile.mkdtemp())
    for layout, table in zip(layouts, tables):
        scen = {s["name"].split()[-1]: s for s in scenarios(db, args.size, table)
                if s["tenant"] == "large" and s["core"]}
        for declared in (False, True):
            psql(db, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_id_near_created")
            if declared:
                t0 = time.time()
                psql(db, f"ALTER TABLE {table} ADD CONSTRAINT {table}_id_near_created "
                         f"CHECK (alerts_ulid_near(id, created_at, '1 second'))")
                print(f"window: {table}: declared and validated in {time.time() - t0:.0f} s", flush=True)
            files = {}
            for c in CLASSES:
                for form in FORMS:
                    sql = page_sql(scen[c], form)
                    f = work / f"{layout}-{'decl' if declared else 'undecl'}-{form}-{c.replace('%', 'pct')}.sql"
                    f.write_text(sql + ";\n")
                    files[(c, form)] = (f, sql)
                # exact: the node's page is Postgres' own
                sql = files[(c, "created")][1]
                on, off = ids(db, sql, PRELOAD), ids(db, sql, f"{PRELOAD} -c alerts.custom_scan=off")
                if on != off:
                    raise SystemExit(f"window: {table} {c} ({'declared' if declared else 'undeclared'}): "
                                     "the created_at page differs from Postgres' own plan")
                if ids(db, files[(c, "search")][1], PRELOAD) != off:
                    raise SystemExit(f"window: {table} {c} ({'declared' if declared else 'undeclared'}): "
                                     "alerts_search's page differs from Postgres' own plan")
            # Both runs interleave the same scripts, so that each cell of
            # the second shares the first's mix (the id forms of a layout
            # with hundreds of leaves touch far more of the machine's caches
            # than the created_at forms alone): only the setting differs.
            every = [str(files[k][0]) for k in files]
            on = interleave(db, every, PRELOAD, args.seconds * 2)
            off = interleave(db, every, f"{PRELOAD} -c alerts.custom_scan=off", args.seconds * 2)
            for c in CLASSES:
                fid, fcr, fse = (files[(c, f)][0].stem for f in FORMS)
                rows.append(dict(layout=layout, declared=declared, cls=c, id=on[fid], created=on[fcr],
                                 search=on[fse],
                                 off=off[fcr], plan=route(db, files[(c, "created")][1], PRELOAD)))
                r = rows[-1]
                print(f"window: {layout:10s} {'declared  ' if declared else 'undeclared'} {c:7s} "
                      f"id {r['id']:8.1f}  created_at {r['created']:8.1f} ({r['created'] / r['id']:.2f}x, {r['plan']})  "
                      f"custom scan off {r['off']:8.1f}  alerts_search {r['search']:8.1f} µs", flush=True)
        psql(db, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_id_near_created")
    out = ROOT / f"benches/results/{args.size}-window"
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# created_at window against id window ({args.size}, PostgreSQL {version}, anchor {anchor})", "",
             f"`python3 benches/window.py --size {args.size} --layouts {args.layouts} --seconds {args.seconds:g}`: "
             "p50 µs of the large tenant's page of 50 in the last 30 days, interleaved call by call.", "",
             "`x plain`: the same page's p50 over the plain table's (the same rows unpartitioned, "
             "same declaration), where the run has the plain layout.", "",
             "| layout | declared | filter | id window | created_at window | ratio | created_at plan | "
             "created_at, custom scan off | node / own plan | alerts_search | created_at x plain | "
             "alerts_search x plain |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    base = {(r["declared"], r["cls"]): r for r in rows if r["layout"] == "plain"}

    def vs_plain(r, k):
        b = base.get((r["declared"], r["cls"]))
        return f"{r[k] / b[k]:.2f}x" if b and r["layout"] != "plain" else "-"
    for r in rows:
        lines.append(f"| {r['layout']} | {'yes' if r['declared'] else 'no'} | {r['cls']} | {r['id']:.1f} | "
                     f"{r['created']:.1f} | {r['created'] / r['id']:.2f}x | {r['plan']} | {r['off']:.1f} | "
                     f"{r['created'] / r['off']:.2f}x | {r['search']:.1f} | {vs_plain(r, 'created')} | "
                     f"{vs_plain(r, 'search')} |")
    worst = max(rows, key=lambda r: r["created"] / r["id"])
    lines += ["", f"Worst created_at / id: {worst['created'] / worst['id']:.2f}x ({worst['layout']}, "
                  f"{'declared' if worst['declared'] else 'undeclared'}, {worst['cls']})."]
    for k, what in (("created", "created_at window"), ("search", "alerts_search")):
        cand = [(r[k] / base[(r["declared"], r["cls"])][k], r) for r in rows
                if r["layout"] != "plain" and (r["declared"], r["cls"]) in base]
        if cand:
            x, r = max(cand, key=lambda t: t[0])
            lines.append(f"Worst {what} over the plain table: {x:.2f}x ({r['layout']}, "
                         f"{'declared' if r['declared'] else 'undeclared'}, {r['cls']}).")
    (out / "window.md").write_text("\n".join(lines) + "\n")
    (out / "window.json").write_text(json.dumps(dict(anchor=anchor, version=version, rows=rows), indent=1))
    print(f"window: wrote {out / 'window.md'}")


if __name__ == "__main__":
    main()
