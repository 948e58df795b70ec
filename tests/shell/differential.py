#!/usr/bin/env python3
"""Random differential test of every query path against Postgres' own plan.

The same rows in ten layouts (diff_tables.py), then ALERTS_DIFF_QUERIES
(default 1500) random plain-SQL queries (diff_queries.py), each checked against the same
statement with the custom scan off, and alerts_search calls checked
against the exact filter; a change between every 40 of them. What it
varies, and what makes it fail: docs/testing.md. ALERTS_DIFF_SEED picks
other queries; a failing run keeps the database (ALERTS_DIFF_KEEP=1
keeps it always).

    target/pyenv/bin/python tests/shell/differential.py
"""
import collections
import contextlib
import os
import re
import sys

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diff_queries  # noqa: E402
from diff_queries import Query, plain_query, search_query  # noqa: E402
from diff_tables import drop, load, mutate, rng  # noqa: E402

for var, default in (("PGHOST", "/tmp"), ("PGPORT", "5415"), ("PGUSER", "postgres")):
    os.environ.setdefault(var, default)
ADMIN = dict(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"])
# ALERTS_DIFF_CITUS=1: the tables distributed by organisation_id in
# database ALERTS_DIFF_DB of a Citus cluster (PGPORT its coordinator), the
# oracle with the custom scan off on the workers too
CITUS = os.environ.get("ALERTS_DIFF_CITUS") == "1"
DB = os.environ.get("ALERTS_DIFF_DB", "alerts_diff") if CITUS else "alerts_diff"
QUERIES = int(os.environ.get("ALERTS_DIFF_QUERIES", "1500"))
SEED = int(os.environ.get("ALERTS_DIFF_SEED", "20261127"))
rng.seed(SEED)
diff_queries.CITUS = CITUS
# Routes every run of at least 1000 queries must reach (EXPLAIN ANALYZE's
# "Routes Taken"), so that the rare paths stay tested.
ROUTES = ["walk", "walk, then tenant keys", "walk, then GIN", "tenant keys (remembered rare)",
          "GIN (remembered rare)"]


def attempt(conn, execute):
    """The rows `execute` fetches, or the error it meets (in a savepoint,
    so that a transaction around it goes on)."""
    try:
        with conn.transaction():
            return execute()
    except psycopg.Error as e:
        return [("ERROR", e.sqlstate, str(e).splitlines()[0])]


def run(conn, q, params, generic, routes):
    """The rows with the custom scan on (and whether it ran), and with it
    off (`SET LOCAL`, which Citus sends on to the workers); the routes its
    pages took, counted into `routes`."""
    cur = conn.cursor()
    cur.execute("SET plan_cache_mode = " + ("force_generic_plan" if generic else "auto"))

    def fetch(sql, values, prepare=False):
        cur.execute(sql, values, prepare=prepare)
        return cur.fetchall()

    if q.kind == "search":
        return (attempt(conn, lambda: fetch(q.sql, params, generic)),
                attempt(conn, lambda: fetch(*q.want)), None)
    plan = attempt(conn, lambda: fetch("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + q.sql, params))
    used = any("AlertsSearch" in str(r[0]) for r in plan)
    if any("Planned: as one relation" in str(r[0]) for r in plan):
        used = "one relation"  # (custom_scan/one_rel.rs)
    for (line, *_) in plan:
        if "Routes Taken:" in str(line):
            for route, n in re.findall(r"(.+?) x(\d+)(?:, |$)", line.split(":", 1)[1].strip()):
                routes[route] += int(n)

    def oracle():
        cur.execute("SET LOCAL alerts.custom_scan = off")
        rows = fetch(q.sql, params)
        cur.execute("SET LOCAL alerts.custom_scan = on")
        return rows
    if getattr(q, "cursor", False):
        # a read-only cursor keeps the snapshot it was opened with while
        # another session commits changes to its table between two reads:
        # the oracle runs first, on the same rows
        between = getattr(q, "between", None) if " FOR " not in q.sql else None
        want = attempt(conn, oracle) if between else None
        got = attempt(conn, lambda: through_cursor(conn, q.sql, params, " FOR " not in q.sql, between))
        return got, want if between else attempt(conn, oracle), used
    got = attempt(conn, lambda: fetch(q.sql, params, generic))
    return got, attempt(conn, oracle), used


def through_cursor(conn, sql, params, read_only, between=None):
    """The rows of a cursor read 7 at a time (`between` called after the
    first 7); a scrollable one (read-only queries) is read again from its
    start (backwards first), and must give the same rows."""
    scroll = read_only and rng.random() < 0.5
    with conn.cursor(name="diff", scrollable=scroll) as c:
        c.execute(sql, params)
        rows = []
        while chunk := c.fetchmany(7):
            rows += chunk
            if between and len(rows) == 7:
                between()
        if scroll and rows:
            c.scroll(-min(len(rows), 3))
            back = c.fetchall()
            c.scroll(0, mode="absolute")
            again = c.fetchall()
            if back != rows[len(rows) - len(back):] or again != rows:
                return rows + [("the cursor read other rows the second time",)]
        return rows


# Cases the random queries once found, made certain: ids in an ICU
# collation, a third of them lowercase ULIDs (which sort among the
# uppercase ones of their time there, and past every `01Z...` byte by
# byte), a rare filter read oldest first through the tenant-keys index.
# Until 0.3.0's fix the keys path skipped weeks after a lowercase id and
# returned 44 of 50 rows. And tenants in a case-insensitive collation,
# half written 'O': the keys (hashed from the tenant's bytes) found only
# the other half.
KNOWN = """
CREATE TABLE d_known (id text COLLATE "und-x-icu" PRIMARY KEY, organisation_id text COLLATE "C" NOT NULL,
  created_at timestamptz NOT NULL, attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON d_known FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON d_known (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX ON d_known USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO d_known (id, organisation_id, created_at, attribute_values)
SELECT CASE WHEN g % 3 = 0 THEN lower(u) ELSE u END, 'o', t,
       jsonb_build_object('team', CASE WHEN g % 500 = 7 THEN 'rare' ELSE 'common' END)
FROM generate_series(1, 30000) g,
     LATERAL (SELECT timestamptz '2025-01-01' + g * interval '25 minutes' AS t) x,
     LATERAL (SELECT left(alerts_ulid_floor(t), 10) || upper(left(md5(g::text), 16)) AS u) y;
ANALYZE d_known;
CREATE TABLE d_known_ci (id text COLLATE "C" PRIMARY KEY, organisation_id text COLLATE d_ci_coll NOT NULL,
  created_at timestamptz NOT NULL, attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON d_known_ci FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON d_known_ci (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX ON d_known_ci USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO d_known_ci (id, organisation_id, created_at, attribute_values)
SELECT upper(id), CASE WHEN md5(id) < '8' THEN 'O' ELSE 'o' END, created_at, attribute_values FROM d_known;
ANALYZE d_known_ci"""


def known_cases(conn, icu, failures):
    if not icu or CITUS:
        return
    conn.execute(KNOWN)
    conn.execute("LOAD 'alerts'")
    for table, tail in [(t, o) for t in ("d_known", "d_known_ci") for o in (
            "ORDER BY id ASC LIMIT 50", "ORDER BY id ASC", "ORDER BY id DESC", "ORDER BY id DESC LIMIT 50")]:
        q = Query(f"SELECT id FROM {table} WHERE organisation_id = 'o' AND attribute_values @> '{{\"team\": \"rare\"}}' "
                  + tail, [], "plain")
        got, want, used = run(conn, q, [], False, collections.Counter())
        if got != want or not used:
            failures.append(q)
            print(f"DIFFERENT (a known case{'' if used else ', without the custom scan'}): {q.sql}\n"
                  f"  got {len(got)} rows, want {len(want)}")
    conn.execute("DROP TABLE d_known, d_known_ci")


def setup(conn):
    """The tables, the rows and (not on Citus) the role under row-level
    security; returns the tables and some ids for cursors."""
    conn.execute("SET TimeZone = 'UTC'")
    icu = conn.execute("SELECT count(*) > 0 FROM pg_collation WHERE collname = 'und-x-icu'").fetchone()[0]
    if not icu:
        print("  SKIPPED one layout: ids in an ICU collation (this server was built without ICU)")
    tables, ids = load(conn, icu, CITUS)
    # the lookup table some pages join (diff_queries.combined)
    conn.execute("DROP TABLE IF EXISTS d_prio")
    conn.execute("CREATE TABLE d_prio (pn int PRIMARY KEY, plabel text NOT NULL)")
    if CITUS:
        conn.execute("SELECT create_reference_table('d_prio')")
    conn.execute("INSERT INTO d_prio VALUES (1, 'one'), (2, 'two'), (3, 'skip'), (4, 'four')")
    if not CITUS:
        conn.execute("DROP ROLE IF EXISTS d_reader")
        conn.execute("CREATE ROLE d_reader")
        conn.execute("GRANT SELECT, UPDATE ON ALL TABLES IN SCHEMA public TO d_reader")
        for t in ("d_keys", "d_by_time"):
            conn.execute(f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY")
            conn.execute(f"CREATE POLICY not_four ON {t} USING (priority_id <> 4)")
    else:
        conn.execute("SET citus.propagate_set_commands = 'local'")
    conn.execute("LOAD 'alerts'")
    return tables, ids


def main():
    if not CITUS:
        with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB}")
            admin.execute(f"CREATE DATABASE {DB}")
    with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) as conn:
        if not CITUS:
            conn.execute("CREATE EXTENSION alerts")
        tables, ids = setup(conn)
        counts, routes, failures = collections.Counter(), collections.Counter(), []
        known_cases(conn, any(t == "d_icu" for t in tables), failures)
        for i in range(QUERIES):
            if i % 40 == 39:
                # made in this session or in another one (whose DDL reaches
                # this session's caches only as invalidations)
                other = rng.random() < 0.5
                with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) if other else contextlib.nullcontext(conn) as by:
                    counts["mutation", mutate(by, rng.choice(tables)) + (" (another session)" if other else "")] += 1
            table = rng.choice(tables)
            q = search_query(table, ids) if rng.random() < 0.25 else plain_query(table, ids)
            check(conn, q, table, counts, routes, failures)
    report(tables, counts, routes, failures)


def check(conn, q, table, counts, routes, failures):
    """Runs `q` (and again, generic plans with other values) against the
    oracle. Some queries run in a transaction that wrote rows first (its
    own rows visible, rolled back after), some in a REPEATABLE READ one
    where another session commits changes to the table before they run
    again (the same rows again), some as the role under row-level security;
    a cursor may see another session's changes between two reads."""
    generic = rng.random() < 0.3 and "%s" in q.sql
    runs = [q.params] + ([q.draw() for _ in range(2)] if generic and q.kind == "plain" else [])
    own, role = rng.random() < 0.05, rng.random() < 0.15 and not CITUS
    snap = not own and not CITUS and rng.random() < 0.05 and " FOR " not in q.sql

    def change():
        with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) as other:
            counts["mutation", mutate(other, table, ("update", "delete", "insert")) + " (committed meanwhile)"] += 1
    if not CITUS and not own and rng.random() < 0.5:  # (own rows: the change would wait for them)
        q.between = change
    with conn.transaction(force_rollback=True) if own or snap else contextlib.nullcontext():
        if snap:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if own:
            counts["mutation", mutate(conn, table, ("update", "delete", "insert")) + " (uncommitted)"] += 1
        if role:
            conn.execute("SET ROLE d_reader")
        for params in runs:
            got, want, used = run(conn, q, params, generic, routes)
            counts[(q.kind, table)] += 1
            counts[("node", table)] += bool(used)
            counts[("one relation", table)] += used == "one relation"
            if got[:1] == want[:1] and got and got[0][0] == "ERROR":
                counts["errors", ""] += 1
                counts["error", got[0][2][:90]] += 1
            note = ""
            if getattr(q, "cursor", False) and getattr(q, "between", None) and got == want:
                counts["moved", ""] += fresh(q, params, role) != want
            if snap and got == want:
                change()
                again, want_again, _ = run(conn, q, params, generic, routes)
                counts["moved", ""] += fresh(q, params, role) != want
                if (again, want_again) != (got, want):  # against the rows before the change
                    got, want = (again, got) if again != got else (want_again, want)
                    note = ", again after a change committed meanwhile"
            if got != want or (got and got[0][0] == "ERROR" and not CITUS):
                failures.append(q)
                if len(failures) <= 5:
                    print(f"DIFFERENT ({'generic' if generic else 'custom'} plan{', as d_reader' if role else ''}{note}"
                          f"{', in REPEATABLE READ' if snap else ''}): {q.sql}\n  params: {params!r}\n"
                          f"  got {len(got)} rows {got[:4]}...\n  want {len(want)} rows {want[:4]}...")
        if role:
            conn.execute("RESET ROLE")


def fresh(q, params, role):
    """The oracle's rows in a new session: whether a change committed
    meanwhile moved the answer (so that the checks of snapshots check)."""
    with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) as other:
        other.execute("SET alerts.custom_scan = off; SET TimeZone = 'UTC'")
        if role:
            other.execute("SET ROLE d_reader")
        return attempt(other, lambda: other.execute(*(q.want if q.kind == "search" else (q.sql, params))).fetchall())


def report(tables, counts, routes, failures):
    for table in tables:
        one = counts[("one relation", table)]
        print(f"  {table}: {counts[('plain', table)]} plain-SQL queries ({counts[('node', table)]} through the "
              f"custom scan{f', {one} planned as one relation' if one else ''}), "
              f"{counts[('search', table)]} alerts_search calls")
    print("  changes between queries: " + ", ".join(f"{k[1]} {n}" for k, n in sorted(counts.items()) if k[0] == "mutation"))
    print("  routes the custom scan's pages took: " + ", ".join(f"{r} {n}" for r, n in routes.most_common()))
    if CITUS:
        print(f"  statements Citus refused with and without the custom scan alike: {counts['errors', '']}: "
              + "; ".join(f"{k[1]} ({n})" for k, n in counts.most_common() if k[0] == "error"))
    plain = sum(counts[("plain", t)] for t in tables)
    node = sum(counts[("node", t)] for t in tables)
    if failures:
        print(f"FAIL: {len(failures)} runs of {QUERIES} queries differ from Postgres' own plan or failed "
              f"(seed {SEED}; database {DB} kept to reproduce them)")
        sys.exit(1)
    if node * 2 < plain:
        print(f"FAIL: the custom scan answered only {node} of {plain} plain-SQL queries: the test no longer tests it")
        sys.exit(1)
    unplanned = [t for t in tables if counts[("plain", t)] >= 50 and not counts[("node", t)]]
    if unplanned:
        print(f"FAIL: the custom scan answered no query on {', '.join(unplanned)}: the test no longer tests that layout")
        sys.exit(1)
    if QUERIES >= 1000 and not CITUS and not sum(counts[("one relation", t)] for t in tables):
        print("FAIL: no query was planned as one relation: the test no longer tests that plan")
        sys.exit(1)
    if not CITUS:
        print(f"  answers a change committed meanwhile moved, where a snapshot kept the old rows: {counts['moved', '']}")
    missing = [r for r in ROUTES if not routes[r]] if QUERIES >= 1000 else []
    if not counts["moved", ""] and QUERIES >= 1000 and not CITUS:
        missing.append("(a snapshot's rows, where a change moved the answer)")
    if missing:
        print(f"FAIL: no page took the route(s) {', '.join(missing)}: the test no longer reaches them")
        sys.exit(1)
    if os.environ.get("ALERTS_DIFF_KEEP"):
        pass
    elif CITUS:  # the cluster's database stays; its shards of these go
        with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) as conn:
            drop(conn, tables)
    else:
        with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB}")
            admin.execute("DROP ROLE IF EXISTS d_reader")
    print(f"differential: ok ({QUERIES} queries, seed {SEED}; {node} of {plain} plain-SQL queries through the custom scan)")


if __name__ == "__main__":
    main()
