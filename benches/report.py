"""The run's report: the table of every cell, the goal table against the
best peer, the write-path table and the p95 chart."""

from methods import LABELS, METHODS

# What each timed mode is, as the tables say it.
MODE_TEXT = {"prepared": "-M prepared",
             "connect": "-M simple, a new connection per query (its connection time included)"}

# --- output -----------------------------------------------------------------------

def svg_chart(results, path, mode="prepared"):
    """Grouped horizontal bars of p95 (log scale) per core scenario and method."""
    import math
    rows = [r for r in results if r["mode"] == mode]
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
           '<text x="10" y="16" font-size="13">p95 latency per page (ms, log scale), ' + MODE_TEXT[mode] + ', 1 client</text>']
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


PEERS = ["gin", "gin_org", "gin_all", "gin_tags", "rum", "sql_bloom"]


def goal_table(results, scen, mode="prepared"):
    """The fast-path goal per scenario: alerts_search's p95 against the best
    peer's in the same run (below 1 is faster than every peer)."""
    lines = ["alerts_search against the best peer (GIN planner, btree_gin planner, GIN read-all, GIN on tags, RUM, plain-SQL bloom), "
             f"p95 ms, {MODE_TEXT[mode]}:", "",
             "| scenario | best peer | p95 | alerts_search | ratio | no shortcuts | ratio | plain SQL | to alerts_search |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in scen:
        rows = {r["method"]: r for r in results if r["scenario"] == s and r["mode"] == mode}
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
             "by-id": ", the same rows in 13 monthly partitions by id (ULID month bounds)",
             "partman-daily": ", the same rows in pg_partman's daily partitions by created_at, "
                              "`alerts_ulid_near` declared on the parent",
             "partman-hourly": ", the last 30 days' rows in pg_partman's hourly partitions by created_at "
                               "(30-day retention), `alerts_ulid_near` declared on the parent"}[meta.get("layout", "plain")]
    where += f", bitmap column bit({meta['bitmap_bits']})" if meta.get("bitmap_bits", 512) != 512 else ""
    if meta.get("writes_only"):
        lines = [f"Size `{meta['size']}` (the pool of rows inserted){where}, PostgreSQL {meta['postgres']}, "
                 f"{meta['cpu']} cores, shared_buffers {meta['shared_buffers']}; each variant's table starts empty."]
        return write_table_writes(lines, writes, {}, meta, path)
    mode = meta.get("mode", "prepared")
    if not results:
        lines = [f"Size `{meta['size']}`{where}: no scenario was measured (--only / --scenarios matched none).", ""]
        return write_table_writes(lines, writes, sz, meta, path)
    lines = [f"Size `{meta['size']}`{where}, PostgreSQL {meta['postgres']}, {meta['cpu']} cores, shared_buffers "
             f"{meta['shared_buffers']}, pgbench "
             + (f"-t {meta['transactions_per_cell']}" if meta.get("transactions_per_cell") else f"-T {meta['seconds_per_cell']}")
             + (f" x {meta['rounds']} rounds (methods taking turns; percentiles: the median round's)" if meta.get("rounds", 1) > 1 else "")
             + f" per cell, 1 client, {MODE_TEXT[mode]}. "
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
            r = next((r for r in results if r["scenario"] == s and r["method"] == m and r["mode"] == mode), None)
            if r:
                matches = r["matches"]
                cells.append(f"{r['p95']:.2f} ({r['ratio_p95_to_gin']:.2g}x)")
            else:
                cells.append("n/a" if m in meta.get("unavailable", {}) else "-")
        lines.append(f"| {s} | {matches} | " + " | ".join(cells) + " |")
    for m, why in meta.get("unavailable", {}).items():
        lines += ["", f"{LABELS[m]}: n/a, {why}."]
    lines += ["", goal_table(results, scen, mode)]
    if meta.get("layout", "plain") != "plain":
        lines += ["", f"p50 / p95 / p99 (ms), {MODE_TEXT[mode]}:", "",
                  "| scenario | " + " | ".join(LABELS[m] for m in cols if m not in meta.get("unavailable", {}))
                  + " |"]
        shown = [m for m in cols if m not in meta.get("unavailable", {})]
        lines.append("|---|" + "---|" * len(shown))
        for sc in scen:
            cells = []
            for m in shown:
                r = next((r for r in results if r["scenario"] == sc and r["method"] == m and r["mode"] == mode),
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
        batch = meta.get("write_batch", 1)
        what = "one alert" if batch == 1 else f"{batch} alerts in one statement"
        lines += ["", f"Write path (INSERT of {what}, -M prepared{sync}, {meta.get('write_seconds', '?')} s a cell"
                  + (f", {wr} rounds with the variants taking turns, medians" if wr > 1 else "") + "):", "",
                  "| variant | clients | rows/s | p95 ms | p99 ms | ratio to no bitmap |", "|---|---|---|---|---|---|"]
    for w in writes:
        lines.append(f"| {w['variant']} | {w['clients']} | {w['tps']:.0f} | {w['p95']:.3f} | {w.get('p99', float('nan')):.3f} | {w['ratio_to_no_bitmap']:.2f} |")
    if sz:
        lines += ["", "Sizes:", "", "| relation | size |", "|---|---|"]
    for k, v in sz.items():
        lines.append(f"| {k} | {v / 1048576:.1f} MiB |")
    path.write_text("\n".join(lines) + "\n")
