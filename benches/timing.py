"""Timing: pgbench runs of a method's query (latency percentiles from its
log), cells whose methods take turns over rounds, and the write path."""

import os
import statistics
import subprocess
import common
from common import PG, has_rum, psql
from methods import PGOPTIONS

def pgbench(db, m, sql, seconds, mode, clients, workdir, transactions=None, port=None, user=None):
    """Runs one cell: for `seconds` (-T), or `transactions` per client (-t).
    `sql` is one statement, or a list of them picked at random per
    transaction (a mixed load)."""
    lat, rate = pgbench_raw(db, m, sql, seconds, mode, clients, workdir, transactions, port, user)
    return summary(lat, rate)


def pgbench_raw(db, m, sql, seconds, mode, clients, workdir, transactions=None, port=None, user=None):
    """One pgbench run: every transaction's latency (ms) from its -l log,
    and the run's rate (transactions/s). Mode "connect" is -M simple with a
    new connection per transaction (-C): each latency is then the query's
    plus the run's mean connection time (pgbench logs the query alone;
    the connection includes loading a library the method preloads)."""
    scripts = []
    for i, q in enumerate([sql] if isinstance(sql, str) else sql):
        scripts += ["-f", str(workdir / f"q{i}.sql")]
        (workdir / f"q{i}.sql").write_text(q + ";\n")
    for p in workdir.glob("pgbench_log*"):
        p.unlink()
    env = dict(os.environ, PGOPTIONS=PGOPTIONS.get(m, ""))
    res = subprocess.run(["pgbench", "-n", "-h", PG["host"], "-p", str(port or PG["port"]), "-U", user or PG["user"],
                          "-M", "simple" if mode == "connect" else mode, *(["-C"] if mode == "connect" else []),
                          "-c", str(clients), "-j", str(clients),
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
    if mode == "connect":
        line = next(x for x in res.stdout.splitlines() if x.startswith("average connection time"))
        lat = [x + float(line.split()[-2]) for x in lat]
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


def timed_cell(db, runs, seconds, mode, workdir, transactions, rounds, where=None):
    """Times the methods of one cell: `runs` is [(method, sql)]; `where`
    gives a method's database, port and user (dict(db=, port=, user=))
    when they are not `db` and the defaults (the Citus nodes). With
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
            at = {"db": db, "port": None, "user": None, **(where(m) if where else {})}
            lat, rate = pgbench_raw(at["db"], m, sql, seconds, mode, 1, workdir, transactions,
                                    port=at["port"], user=at["user"])
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


def write_bench(db, seconds, workdir, rounds=1, batch=1):
    """INSERTs of `batch` rows (one statement, one transaction) into an
    empty table per variant, 1 and 8 clients; rows/s counts rows, the
    latencies are the statement's.
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
        bitmap = f"attribute_values_bitmap bit({common.BITS})" + (
            f" GENERATED ALWAYS AS (alerts_bloom(attribute_values, {common.BITS})) STORED" if "generated" in opts else "")
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
        sql = (f"\\set k random(1, {10001 - batch})\n"
               f"INSERT INTO {t} (id, organisation_id, created_at, priority_id, attribute_values, tags) "
               "SELECT alerts_ulid(), organisation_id, clock_timestamp(), 3, attribute_values, tags FROM w_pool "
               + ("WHERE k = :k" if batch == 1 else f"WHERE k BETWEEN :k AND :k + {batch - 1}"))
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
            r["tps"] *= batch  # rows, not statements
            results.append(dict(variant=label, clients=clients, **r))
            print(f"  write {label:18s} {clients} client(s): {r['tps']:8.0f} rows/s  p95 {r['p95']:.3f}  p99 {r['p99']:.3f} ms"
                  + ("  (rounds: " + ", ".join(f"{x['tps']:.0f}" for x in runs) + ")" if rounds > 1 else ""),
                  flush=True)
        psql(db, f"DROP TABLE IF EXISTS {t}")
    psql(db, "DROP TABLE IF EXISTS w_pool")
    base = {r["clients"]: r["tps"] for r in results if r["variant"] == "no bitmap"}
    for r in results:
        r["ratio_to_no_bitmap"] = r["tps"] / base[r["clients"]] if base.get(r["clients"]) else float("nan")
    return results
