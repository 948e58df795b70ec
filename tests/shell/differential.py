#!/usr/bin/env python3
"""Random differential test of every query path against Postgres' own plan.

The same rows (three tenants of very different sizes, common and rare
attribute values, arrays, numbers written differently, nested values, ids
that are not upper-case ULIDs, a few repeated ids where a layout allows
them) are loaded into seven layouts: plain tables with the tenant-keys
index, with only a GIN index and with neither, a 128-bit table, tables
partitioned by id ranges, by created_at (with a default partition), by
created_at then by tenant hash, and a plain table whose ids repeat.

Then ALERTS_DIFF_QUERIES (default 1500) random queries, each run with the
custom scan on and checked against the same statement with it off:
attribute filters (@>, OR'ed @>, alerts_attrs_match with one-of arrays,
filters that match nothing or everything), other columns' quals, id and
created_at bounds, cursors that are not ULIDs, both orders, LIMIT/OFFSET,
literal values or parameters, custom and generic plans. A quarter are
alerts_search calls (cursors, windows, column filters) against the exact
filter. Repeated tenant and filter pairs reach the remembered rare paths.
Fails on any difference (printing the statement and its parameters), and
when the custom scan answered fewer than half of the plain-SQL queries,
or no page took one of the rare routes (the test would no longer test
them). ALERTS_DIFF_SEED picks other queries; a failing run keeps the
database (ALERTS_DIFF_KEEP=1 keeps it always).

    target/pyenv/bin/python tests/shell/differential.py
"""
import collections
import json
import os
import random
import re
import sys
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg.types.json import Jsonb

for var, default in (("PGHOST", "/tmp"), ("PGPORT", "5415"), ("PGUSER", "postgres")):
    os.environ.setdefault(var, default)
ADMIN = dict(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"])
DB = "alerts_diff"
QUERIES = int(os.environ.get("ALERTS_DIFF_QUERIES", "1500"))
SEED = int(os.environ.get("ALERTS_DIFF_SEED", "20261127"))
rng = random.Random(SEED)
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
DAYS = 540

COLUMNS = """id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL, priority_id int NOT NULL,
    attribute_values jsonb NOT NULL DEFAULT '{}', attribute_values_bitmap bit(%d)"""


def months(first, last):
    """First days of the months from `first` to `last` (inclusive)."""
    out, (y, m) = [], first
    while (y, m) <= last:
        out.append(datetime(y, m, 1, tzinfo=timezone.utc))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def layouts():
    """name -> the statements that make it (the bloom trigger and the
    pagination index follow for every table)."""
    ddl = {}
    ddl["d_keys"] = [f"CREATE TABLE d_keys ({COLUMNS % 512}, PRIMARY KEY (id))",
                     "CREATE INDEX ON d_keys USING gin (alerts_keys(organisation_id, id, attribute_values))"]
    ddl["d_gin"] = [f"CREATE TABLE d_gin ({COLUMNS % 512}, PRIMARY KEY (id))",
                    "CREATE INDEX ON d_gin USING gin (attribute_values jsonb_path_ops)"]
    ddl["d_bare"] = [f"CREATE TABLE d_bare ({COLUMNS % 128}, PRIMARY KEY (id))"]
    ddl["d_repeat"] = [f"CREATE TABLE d_repeat ({COLUMNS % 128})",
                       "CREATE INDEX ON d_repeat USING gin (alerts_keys(organisation_id, id, attribute_values))"]
    by_id = [f"CREATE TABLE d_by_id ({COLUMNS % 256}, PRIMARY KEY (id)) PARTITION BY RANGE (id)"]
    bounds = ["MINVALUE"] + [f"alerts_ulid_floor('{m.isoformat()}')" for m in months((2025, 1), (2026, 7))[::2]] + ["'8'", "MAXVALUE"]
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        by_id.append(f"CREATE TABLE d_by_id_{i} PARTITION OF d_by_id FOR VALUES FROM ({lo}) TO ({hi})")
    by_id.append("CREATE INDEX ON d_by_id USING gin (alerts_keys(organisation_id, id, attribute_values))")
    ddl["d_by_id"] = by_id
    by_time = [f"CREATE TABLE d_by_time ({COLUMNS % 512}, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)"]
    quarters = months((2025, 1), (2026, 4))[::3]
    for i, (lo, hi) in enumerate(zip(quarters, quarters[1:])):
        by_time.append(f"CREATE TABLE d_by_time_{i} PARTITION OF d_by_time FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}')")
    by_time.append("CREATE TABLE d_by_time_rest PARTITION OF d_by_time DEFAULT")
    by_time.append("CREATE INDEX ON d_by_time USING gin (alerts_keys(organisation_id, id, attribute_values))")
    ddl["d_by_time"] = by_time
    two = [f"CREATE TABLE d_two ({COLUMNS % 512}, PRIMARY KEY (id, created_at, organisation_id)) PARTITION BY RANGE (created_at)"]
    halves = [months((2024, 1), (2024, 1))[0], months((2025, 9), (2025, 9))[0], months((2027, 1), (2027, 1))[0]]
    for i, (lo, hi) in enumerate(zip(halves, halves[1:])):
        two.append(f"CREATE TABLE d_two_{i} PARTITION OF d_two FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}') PARTITION BY HASH (organisation_id)")
        for h in range(2):
            two.append(f"CREATE TABLE d_two_{i}_h{h} PARTITION OF d_two_{i} FOR VALUES WITH (MODULUS 2, REMAINDER {h})")
    two.append("CREATE INDEX ON d_two USING gin (attribute_values jsonb_path_ops)")
    ddl["d_two"] = two
    # partitions whose columns are not the parent's: another order, a
    # dropped column (rows are converted to the parent's layout)
    ddl["d_mixed"] = [
        f"CREATE TABLE d_mixed (note text, {COLUMNS % 512}, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)",
        "ALTER TABLE d_mixed DROP COLUMN note",
        "CREATE TABLE d_mixed_old (attribute_values_bitmap bit(512), gone int, priority_id int NOT NULL, "
        "attribute_values jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL, "
        "organisation_id text COLLATE \"C\" NOT NULL, id text COLLATE \"C\" NOT NULL)",
        "ALTER TABLE d_mixed_old DROP COLUMN gone",
        "ALTER TABLE d_mixed ATTACH PARTITION d_mixed_old FOR VALUES FROM (MINVALUE) TO ('2025-10-01')",
        "CREATE TABLE d_mixed_new PARTITION OF d_mixed FOR VALUES FROM ('2025-10-01') TO (MAXVALUE)",
        "CREATE INDEX ON d_mixed USING gin (alerts_keys(organisation_id, id, attribute_values))"]
    return ddl


TENANTS = [("big", 9000), ("mid", 2500), ("small", 300)]
TEAMS = [f"t{i}" for i in range(8)]


def attributes():
    """One row's attributes: a common team, a rare one now and then, arrays,
    numbers and booleans written several ways, nulls, nested values."""
    a = {}
    r = rng.random()
    a["team"] = "rare" if r < 0.002 else ("uncommon" if r < 0.02 else rng.choice(TEAMS[:4] if rng.random() < 0.8 else TEAMS))
    if rng.random() < 0.6:
        a["env"] = rng.choice(["prod", "staging", "dev"])
    if rng.random() < 0.3:
        a["feature"] = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
    if rng.random() < 0.2:
        a["n"] = rng.choice([1, 1.0, "1", 2, 10, 1e0, -0.0, 0])
    if rng.random() < 0.1:
        a["flag"] = rng.choice([True, False, "true", None])
    if rng.random() < 0.05:
        a["nested"] = rng.choice([{"x": 1}, {"x": [1, 2]}, [1, [2]], {}])
    if rng.random() < 0.003:
        a = {}
    return a


def id_kind():
    r = rng.random()
    return "ulid" if r < 0.97 else rng.choice(["lower", "nine", "low", "short"])


def load(conn):
    """The staged rows, then every layout filled from them."""
    rows = []
    for org, n in TENANTS:
        for _ in range(n):
            ts = START + timedelta(seconds=rng.randrange(DAYS * 86400))
            rows.append((org, ts, rng.randint(1, 4), json.dumps(attributes()), id_kind()))
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE d_stage (n serial, organisation_id text, created_at timestamptz, priority_id int, "
                    "attribute_values jsonb, kind text)")
        with cur.copy("COPY d_stage (organisation_id, created_at, priority_id, attribute_values, kind) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        cur.execute("""CREATE TABLE d_src AS SELECT CASE kind
              WHEN 'ulid' THEN alerts_ulid(created_at) WHEN 'lower' THEN lower(alerts_ulid(created_at))
              WHEN 'nine' THEN '9' || md5(random()::text) WHEN 'low' THEN '!' || md5(random()::text)
              ELSE '0' || n END COLLATE "C" AS id, organisation_id, created_at, priority_id, attribute_values
            FROM d_stage""")
        # a few repeated ids, for the table that allows them
        cur.execute("""CREATE TABLE d_dups AS SELECT id, organisation_id, created_at, priority_id,
              attribute_values || jsonb_build_object('dup', true) AS attribute_values
            FROM d_src WHERE id LIKE '0%' ORDER BY md5(id) LIMIT 200""")
        for name, stmts in layouts().items():
            for s in stmts:
                cur.execute(s)
            cur.execute(f"CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON {name} "
                        "FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()")
            cur.execute(f"CREATE INDEX ON {name} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)")
            cur.execute(f"INSERT INTO {name} (id, organisation_id, created_at, priority_id, attribute_values) "
                        "SELECT id, organisation_id, created_at, priority_id, attribute_values FROM d_src")
            if name == "d_repeat":
                cur.execute("INSERT INTO d_repeat (id, organisation_id, created_at, priority_id, attribute_values) "
                            "SELECT * FROM d_dups")
            cur.execute(f"ANALYZE {name}")
        cur.execute("SELECT array_agg(id ORDER BY md5(id)) FROM (SELECT id FROM d_src ORDER BY md5(id) LIMIT 300) s")
        return cur.fetchone()[0]


FILTERS = [
    {"team": "t0"}, {"team": "t1"}, {"team": "t6"}, {"team": "rare"}, {"team": "uncommon"}, {"team": "none"},
    {"team": "t2", "env": "prod"}, {"team": "rare", "env": "dev"}, {"env": "staging"}, {"feature": "a"},
    {"feature": ["a"]}, {"feature": ["b", "c"]}, {"feature": []}, {"n": 1}, {"n": 1.0}, {"n": "1"}, {"n": 0},
    {"flag": True}, {"flag": "true"}, {"nested": {"x": 1}}, {"nested": {}}, {"nested": [1, [2]]}, {}, {"dup": True},
]
# one-of arrays: only alerts_attrs_match reads them so (and refuses an
# array inside one)
MATCH_FILTERS = [f for f in FILTERS if f != {"nested": [1, [2]]}] + [{"team": ["rare", "t5"]}, {"team": ["uncommon", "none"], "env": "prod"},
                           {"feature": ["a", "d"]}, {"n": [1, "1"]}, {"k": []}]


# Routes every run of at least 1000 queries must reach (EXPLAIN ANALYZE's
# "Routes Taken"), so that the rare paths stay tested.
ROUTES = ["walk", "walk, then tenant keys", "walk, then GIN", "tenant keys (remembered rare)",
          "GIN (remembered rare)"]


class Query:
    """One statement and its parameters: each drawn by a function, so that
    a prepared statement runs again with other values."""

    def __init__(self, sql, draws, kind):
        self.sql, self.draws, self.kind = sql, draws, kind
        self.params = self.draw()

    def draw(self):
        return [d() for d in self.draws]


def lit(v):
    return "'" + str(v).replace("'", "''") + "'"


def slot(draw, draws, literal, cast):
    """A value drawn by `draw`, as a literal (drawn now) or a parameter
    (drawn for each run)."""
    if literal:
        v = draw()
        return lit(json.dumps(v) if cast == "jsonb" else v) + "::" + cast
    draws.append((lambda: Jsonb(draw())) if cast == "jsonb" else draw)
    return "%s::" + cast


def day():
    return (START + timedelta(days=rng.randrange(DAYS))).isoformat()


def tenant():
    return rng.choice(["big", "big", "mid", "small", "nobody"])


def cursor_value(ids):
    r = rng.random()
    if r < 0.6:
        return rng.choice(ids)
    return rng.choice(["8", "ZZZZ", "zzzz", "", "0", "01", "9", "!", day()])


def conditions(ids, draws, literal, org):
    """The WHERE of a page: the tenant (`org`: a literal, a parameter, or
    an outer query's column), attribute conditions, other columns, bounds."""
    where = ["organisation_id = " + (org or slot(tenant, draws, literal, "text"))]
    shape = rng.random()
    contains = lambda: "attribute_values @> " + slot(lambda: rng.choice(FILTERS), draws, literal, "jsonb")
    matches = lambda: ("alerts_attrs_match(attribute_values, "
                       + slot(lambda: rng.choice(MATCH_FILTERS), draws, literal, "jsonb") + ")")
    if shape < 0.55:
        where.append(contains())
    elif shape < 0.7:
        where.append("(" + " OR ".join(contains() for _ in range(rng.randint(2, 3))) + ")")
    elif shape < 0.85:
        where.append(matches())
    elif shape < 0.93:
        where += [contains(), matches()]
    if rng.random() < 0.25:
        ps = rng.sample([1, 2, 3, 4], rng.randint(1, 2))
        where.append(f"priority_id IN ({', '.join(map(str, ps))})" if len(ps) > 1 else f"priority_id = {ps[0]}")
    if rng.random() < 0.4:
        op = rng.choice([">=", ">", ">=", "<", "<="])
        if rng.random() < 0.5:
            where.append(f"id {op} alerts_ulid_floor(" + slot(day, draws, literal, "timestamptz") + ")")
        else:
            where.append(f"id {op} " + slot(lambda: cursor_value(ids), draws, literal, "text"))
    if rng.random() < 0.35:
        op = rng.choice(["<", "<", ">", "<="])
        where.append(f"id {op} " + slot(lambda: cursor_value(ids), draws, literal, "text"))
    if rng.random() < 0.1:
        where.append("created_at >= " + slot(day, draws, literal, "timestamptz"))
    if rng.random() < 0.05:
        where.append("NOT (attribute_values ? 'env')")
    return " AND ".join(where)


def order_limit():
    tail = f" ORDER BY id {'DESC' if rng.random() < 0.8 else 'ASC'}"
    limit = rng.choice([1, 5, 20, 50, 50, 120, None])
    if limit is not None:
        tail += f" LIMIT {limit}"
        if rng.random() < 0.2:
            tail += f" OFFSET {rng.choice([1, 7, 60])}"
    return tail


def plain_query(table, ids):
    draws = []
    literal = rng.random() < 0.4
    if rng.random() < 0.15:
        # a page per tenant of an outer query: the scan runs again for each
        sql = (f"SELECT o.name, s.id FROM (VALUES ('small'), ('big'), ('nobody'), ('mid')) o(name) "
               f"CROSS JOIN LATERAL (SELECT id FROM {table} WHERE {conditions(ids, draws, literal, 'o.name')}"
               f"{order_limit()}) s")
        return Query(sql, draws, "plain")
    where = conditions(ids, draws, literal, None)
    select = rng.choice(["*", "id", "id, attribute_values->>'team'", "id, count(*) OVER ()"])
    # repeated ids: only the ids are deterministic at a page's edge
    if table == "d_repeat":
        select = "id"
    return Query(f"SELECT {select} FROM {table} WHERE {where}{order_limit()}", draws, "plain")


def search_query(table, ids):
    f = rng.choice(MATCH_FILTERS)
    org, since = tenant(), rng.choice(["-infinity", day()])
    before = cursor_value(ids) if rng.random() < 0.5 else None
    size = rng.choice([1, 10, 30, 100])
    cols = rng.choice([None, None, {"priority_id": [1, 2]}, {"priority_id": 3}, {"priority_id": []}])
    got = ("SELECT id FROM alerts_search(NULL::" + table + ", %s, %s, %s::timestamptz, %s, %s"
           + (", columns => %s" if cols is not None else "") + ")")
    params = [org, Jsonb(f), since, before, size] + ([Jsonb(cols)] if cols is not None else [])
    want = ("SELECT id FROM " + table + " WHERE organisation_id = %s AND alerts_attrs_match(attribute_values, %s)"
            " AND id >= alerts_ulid_floor(%s::timestamptz) AND (%s::text IS NULL OR id < %s::text)")
    wparams = [org, Jsonb(f), since, before, before]
    if cols is not None:
        p = cols["priority_id"]
        want += " AND priority_id = ANY(%s::int[])"
        wparams.append(p if isinstance(p, list) else [p])
    want += " ORDER BY id DESC LIMIT %s"
    wparams.append(size)
    q = Query(got, [(lambda v=v: v) for v in params], "search")
    q.want = (want, wparams)
    return q


def run(conn, q, params, generic, routes):
    """The rows with the custom scan on (and whether it ran), and with it
    off; the routes its pages took, counted into `routes`."""
    with conn.cursor() as cur:
        cur.execute("SET plan_cache_mode = " + ("force_generic_plan" if generic else "auto"))
        if q.kind == "search":
            cur.execute(q.sql, params, prepare=generic)
            got = cur.fetchall()
            cur.execute(q.want[0], q.want[1])
            return got, cur.fetchall(), None
        cur.execute("SET alerts.custom_scan = on")
        cur.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + q.sql, params)
        plan = [r[0] for r in cur.fetchall()]
        used = any("AlertsSearch" in line for line in plan)
        for line in plan:
            if "Routes Taken:" in line:
                for route, n in re.findall(r"(.+?) x(\d+)(?:, |$)", line.split(":", 1)[1].strip()):
                    routes[route] += int(n)
        cur.execute(q.sql, params, prepare=generic)
        got = cur.fetchall()
        cur.execute("SET alerts.custom_scan = off")
        cur.execute(q.sql, params)
        want = cur.fetchall()
        cur.execute("SET alerts.custom_scan = on")
        return got, want, used


def mutate(conn, table):
    """A change between queries, as an application or a DBA makes one: rows
    written (attributes changed, so that a rare value turns common; rows
    deleted or added), the rare paths' index dropped and made again, a
    partition detached and attached again, a VACUUM. Each query after it
    must see it: cached indexes, routes and plans may not."""
    kind = rng.choice(["update", "delete", "insert", "index", "vacuum", "detach"])
    with conn.cursor() as cur:
        if kind == "update":
            team = rng.choice(["rare", "uncommon", "t7"])
            cur.execute(f"UPDATE {table} SET attribute_values = attribute_values || jsonb_build_object('team', %s::text) "
                        f"WHERE organisation_id = %s AND id IN (SELECT id FROM {table} ORDER BY md5(id || %s) LIMIT %s)",
                        [team, tenant(), str(rng.random()), rng.choice([5, 50, 400])])
        elif kind == "delete":
            cur.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY md5(id || %s) LIMIT 30)",
                        [str(rng.random())])
        elif kind == "insert":
            cur.execute(f"INSERT INTO {table} (id, organisation_id, created_at, priority_id, attribute_values) "
                        "SELECT alerts_ulid(t), %s, t, 1 + g %% 4, jsonb_build_object('team', %s::text, 'env', 'prod') "
                        "FROM generate_series(1, 40) g, LATERAL (SELECT %s::timestamptz + g * interval '1 hour' AS t) x",
                        [tenant(), rng.choice(["rare", "t0", "uncommon"]), day()])
        elif kind == "index":
            cur.execute("SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                        "WHERE i.indrelid = %s::regclass AND pg_get_indexdef(i.indexrelid) LIKE '%%USING gin%%'",
                        [table])
            for name, ddl in cur.fetchall():
                cur.execute(f"DROP INDEX {name}")
                if rng.random() < 0.8:
                    cur.execute(ddl)
        elif kind == "vacuum":
            cur.execute(f"VACUUM {table}")
        elif kind == "detach":
            cur.execute("ALTER TABLE d_by_time DETACH PARTITION d_by_time_0")
            cur.execute("ALTER TABLE d_by_time ATTACH PARTITION d_by_time_0 "
                        "FOR VALUES FROM ('2025-01-01 00:00+00') TO ('2025-04-01 00:00+00')")
    return kind


def main():
    with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")
        admin.execute(f"CREATE DATABASE {DB}")
    with psycopg.connect(dbname=DB, autocommit=True, **ADMIN) as conn:
        conn.execute("CREATE EXTENSION alerts")
        conn.execute("SET TimeZone = 'UTC'")
        ids = load(conn)
        conn.execute("LOAD 'alerts'")
        tables = list(layouts())
        counts = collections.Counter()
        failures = []
        routes = collections.Counter()
        for i in range(QUERIES):
            if i % 40 == 39:
                counts["mutation", mutate(conn, rng.choice(tables))] += 1
            table = rng.choice(tables)
            q = search_query(table, ids) if rng.random() < 0.25 else plain_query(table, ids)
            generic = rng.random() < 0.3 and "%s" in q.sql
            # a generic plan runs again with other values
            runs = [q.params] + ([q.draw() for _ in range(2)] if generic and q.kind == "plain" else [])
            for params in runs:
                got, want, used = run(conn, q, params, generic, routes)
                counts[(q.kind, table)] += 1
                if used:
                    counts[("node", table)] += 1
                if got != want:
                    failures.append(q)
                    if len(failures) <= 5:
                        print(f"DIFFERENT ({'generic' if generic else 'custom'} plan): {q.sql}\n  params: {params!r}\n"
                              f"  got {len(got)} rows {got[:4]}...\n  want {len(want)} rows {want[:4]}...")
        for table in tables:
            print(f"  {table}: {counts[('plain', table)]} plain-SQL queries ({counts[('node', table)]} through the "
                  f"custom scan), {counts[('search', table)]} alerts_search calls")
        print("  changes between queries: " + ", ".join(f"{k[1]} {n}" for k, n in sorted(counts.items()) if k[0] == "mutation"))
        print("  routes the custom scan's pages took: " + ", ".join(f"{r} {n}" for r, n in routes.most_common()))
        plain = sum(counts[("plain", t)] for t in tables)
        node = sum(counts[("node", t)] for t in tables)
    if failures:
        print(f"FAIL: {len(failures)} runs of {QUERIES} queries differ from Postgres' own plan "
              f"(seed {SEED}; database {DB} kept to reproduce them)")
        sys.exit(1)
    if node * 2 < plain:
        print(f"FAIL: the custom scan answered only {node} of {plain} plain-SQL queries: the test no longer tests it")
        sys.exit(1)
    missing = [r for r in ROUTES if not routes[r]] if QUERIES >= 1000 else []
    if missing:
        print(f"FAIL: no page took the route(s) {', '.join(missing)}: the test no longer reaches them")
        sys.exit(1)
    if not os.environ.get("ALERTS_DIFF_KEEP"):
        with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB}")
    print(f"differential: ok ({QUERIES} queries, seed {SEED}; {node} of {plain} plain-SQL queries through the custom scan)")


if __name__ == "__main__":
    main()
