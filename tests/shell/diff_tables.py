"""The rows and tables of the random differential (differential.py).

The same rows (three tenants of very different sizes, common and rare
attribute values, arrays, numbers written differently, nested values, ids
that are not upper-case ULIDs) in twelve layouts: plain tables with the
tenant-keys index, with only a GIN index, with neither (128-bit), with
repeated ids, with ids in an ICU collation, with varchar ids, with ids
and tenants in a case-insensitive collation; partitioned by id ranges, by
created_at with a default partition, by created_at with the ids of each
partition bounded by CHECK constraints (ULIDs only), by created_at then
tenant hash, and with partitions whose columns differ from the parent's
(REPEATS: the by-created_at layouts but the checked one hold some ids
twice, in two partitions). And the changes made between queries
(`mutate`)."""
import json
import random
from datetime import datetime, timedelta, timezone

import psycopg

# seeded by differential.py
rng = random.Random()
# A ULID of a time, its random part from a hash of `salt`: the same
# rows, and the same failures, for the same seed.
ULID = "left(alerts_ulid_floor({time}), 10) || upper(left(md5(({salt})::text), 16))"

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


def layouts(icu):
    """name -> the statements that make it (the bloom trigger and the
    pagination index follow for every table)."""
    # ids ordered by an ICU collation, not byte by byte
    icu_columns = (COLUMNS % 512).replace('COLLATE "C"', 'COLLATE "und-x-icu"', 1)
    ddl = {}
    ddl["d_keys"] = [f"CREATE TABLE d_keys ({COLUMNS % 512}, PRIMARY KEY (id))",
                     "CREATE INDEX ON d_keys USING gin (alerts_keys(organisation_id, id, attribute_values))"]
    ddl["d_gin"] = [f"CREATE TABLE d_gin ({COLUMNS % 512}, PRIMARY KEY (id))",
                    "CREATE INDEX ON d_gin USING gin (attribute_values jsonb_path_ops)"]
    ddl["d_bare"] = [f"CREATE TABLE d_bare ({COLUMNS % 128}, PRIMARY KEY (id))"]
    ddl["d_repeat"] = [f"CREATE TABLE d_repeat ({COLUMNS % 128})",
                       "CREATE INDEX ON d_repeat USING gin (alerts_keys(organisation_id, id, attribute_values))"]
    # by id ranges; and again with ids in an ICU collation, where the
    # partitions hold other ids (a lowercase ULID goes with its time)
    bounds = ["MINVALUE"] + [f"alerts_ulid_floor('{m.isoformat()}')" for m in months((2025, 1), (2026, 7))[::2]] + ["'8'", "MAXVALUE"]
    for name, columns in [("d_by_id", COLUMNS % 256)] + ([("d_by_id_icu", icu_columns)] if icu else []):
        by_id = [f"CREATE TABLE {name} ({columns}, PRIMARY KEY (id)) PARTITION BY RANGE (id)"]
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            by_id.append(f"CREATE TABLE {name}_{i} PARTITION OF {name} FOR VALUES FROM ({lo}) TO ({hi})")
        by_id.append(f"CREATE INDEX ON {name} USING gin (alerts_keys(organisation_id, id, attribute_values))")
        ddl[name] = by_id
    by_time = [f"CREATE TABLE d_by_time ({COLUMNS % 512}, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)"]
    quarters = months((2025, 1), (2026, 4))[::3]
    for i, (lo, hi) in enumerate(zip(quarters, quarters[1:])):
        by_time.append(f"CREATE TABLE d_by_time_{i} PARTITION OF d_by_time FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}')")
    by_time.append("CREATE TABLE d_by_time_rest PARTITION OF d_by_time DEFAULT")
    by_time.append("CREATE INDEX ON d_by_time USING gin (alerts_keys(organisation_id, id, attribute_values))")
    ddl["d_by_time"] = by_time
    # by created_at, each quarter's ids bounded by CHECK constraints written
    # four ways (a search leaves the leaves they keep out of its window
    # unopened), and a default partition without one; ULIDs only (ROWS)
    checked = [f"CREATE TABLE d_checked ({COLUMNS % 512}, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)",
               "CREATE TABLE d_checked_rest PARTITION OF d_checked DEFAULT"]
    for i, (lo, hi) in enumerate(zip(quarters, quarters[1:])):
        a, b = (f"alerts_ulid_floor('{t.isoformat()}')" for t in (lo, hi))
        checked.append(f"CREATE TABLE d_checked_{i} PARTITION OF d_checked FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}')")
        checked += [[f"ALTER TABLE d_checked_{i} ADD CHECK (id >= {a} AND id < {b})"],
                     [f"ALTER TABLE d_checked_{i} ADD CHECK (id >= {a})", f"ALTER TABLE d_checked_{i} ADD CHECK ({b} > id)"],
                     [f"ALTER TABLE d_checked_{i} ADD CHECK (id BETWEEN {a} AND {b})"],
                     [f"ALTER TABLE d_checked_{i} ADD CHECK (organisation_id <> '' AND {a} <= id AND id < {b}) NOT VALID",
                      f"ALTER TABLE d_checked_{i} VALIDATE CONSTRAINT d_checked_{i}_check"]][i % 4]
    checked.append("CREATE INDEX ON d_checked USING gin (alerts_keys(organisation_id, id, attribute_values))")
    ddl["d_checked"] = checked
    two = [f"CREATE TABLE d_two ({COLUMNS % 512}, PRIMARY KEY (id, created_at, organisation_id)) PARTITION BY RANGE (created_at)"]
    halves = [months((2024, 1), (2024, 1))[0], months((2025, 9), (2025, 9))[0], months((2027, 1), (2027, 1))[0]]
    for i, (lo, hi) in enumerate(zip(halves, halves[1:])):
        two.append(f"CREATE TABLE d_two_{i} PARTITION OF d_two FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}') PARTITION BY HASH (organisation_id)")
        for h in range(2):
            two.append(f"CREATE TABLE d_two_{i}_h{h} PARTITION OF d_two_{i} FOR VALUES WITH (MODULUS 2, REMAINDER {h})")
    two.append("CREATE INDEX ON d_two USING gin (attribute_values jsonb_path_ops)")
    ddl["d_two"] = two
    # ids and tenants as varchar, as ORMs make them: text's operators
    # under a cast, an `ORDER BY id` of another type
    varchar = (COLUMNS % 512).replace("id text", "id varchar(40)", 1).replace("organisation_id text", "organisation_id varchar", 1)
    # with GIN beside the tenant keys: a rare page tries GIN's entries
    # read in place first
    ddl["d_varchar"] = [f"CREATE TABLE d_varchar ({varchar}, PRIMARY KEY (id))",
                        "CREATE INDEX ON d_varchar USING gin (alerts_keys(organisation_id, id, attribute_values))",
                        "CREATE INDEX ON d_varchar USING gin (attribute_values jsonb_path_ops)"]
    if icu:  # a server built with ICU
        ddl["d_icu"] = [f"CREATE TABLE d_icu ({icu_columns}, PRIMARY KEY (id))",
                        "CREATE INDEX ON d_icu USING gin (alerts_keys(organisation_id, id, attribute_values))"]
        # ids and tenants in a case-insensitive (nondeterministic)
        # collation, some rows' tenants written in capitals (`load`):
        # 'BIG' = 'big'
        ci_columns = (COLUMNS % 512).replace('COLLATE "C"', "COLLATE d_ci_coll")
        ddl["d_ci"] = ["CREATE COLLATION IF NOT EXISTS d_ci_coll (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
                       f"CREATE TABLE d_ci ({ci_columns}, PRIMARY KEY (id))",
                       "CREATE INDEX ON d_ci USING gin (alerts_keys(organisation_id, id, attribute_values))"]
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
        "CREATE INDEX ON d_mixed USING gin (alerts_keys(organisation_id, id, attribute_values))",
        "CREATE INDEX ON d_mixed USING gin (attribute_values)"]
    return ddl


# the tables where ids repeat (no unique index on them)
REPEATS = ("d_repeat", "d_by_time", "d_two", "d_mixed")
# the rows a layout holds, when not all: ids its constraints allow
ROWS = {"d_checked": "id ~ '^[0-9A-Z]{26}$'"}
TENANTS = [("big", 9000), ("mid", 2500), ("small", 300)]
TEAMS = [f"t{i}" for i in range(8)]


def attributes():
    """One row's attributes: a common team, a rare one now and then, arrays,
    numbers and booleans written several ways, nulls, nested values."""
    a = {}
    r = rng.random()
    a["team"] = "rare" if r < 0.002 else ("uncommon" if r < 0.02 else rng.choice(TEAMS[:4] if rng.random() < 0.8 else TEAMS))
    if rng.random() < 0.05:
        # a team in an array: alerts_attrs_match takes it, @> does not
        a["team"] = [a["team"]] + rng.sample(TEAMS, rng.randint(0, 1))
    if rng.random() < 0.6:
        a["env"] = rng.choice(["prod", "staging", "dev"])
    if rng.random() < 0.3:
        a["feature"] = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
    if rng.random() < 0.2:
        a["n"] = rng.choice([1, 1.0, "1", 2, 10, 1e0, -0.0, 0])
    if rng.random() < 0.1:
        a["flag"] = rng.choice([True, False, "true", None, [True]])
    if rng.random() < 0.05:
        a["nested"] = rng.choice([{"x": 1}, {"x": [1, 2]}, [1, [2]], {}])
    if rng.random() < 0.003:
        a = {}
    return a


def id_kind():
    r = rng.random()
    return "ulid" if r < 0.97 else rng.choice(["lower", "nine", "low", "short"])


def generated(statement):
    """A table's bitmap as a stored generated column (Citus refuses
    triggers on distributed tables)."""
    for width in (128, 256, 512):
        statement = statement.replace(f"attribute_values_bitmap bit({width})",
                                      f"attribute_values_bitmap bit({width}) GENERATED ALWAYS AS "
                                      f"(alerts_bloom(attribute_values, {width})) STORED")
    return statement


def drop(conn, tables):
    """The staging and lookup tables and `tables`, if there."""
    conn.execute("DROP TABLE IF EXISTS d_stage, d_src, d_dups, d_prio, " + ", ".join(tables) + " CASCADE")


def load(conn, icu, citus):
    """The staged rows, then every layout filled from them (on Citus each
    distributed by organisation_id, its key holding it; a layout Citus
    refuses is left out, named). Returns the tables and some ids."""
    rows = []
    for org, n in TENANTS:
        for _ in range(n):
            ts = START + timedelta(seconds=rng.randrange(DAYS * 86400))
            rows.append((org, ts, rng.randint(1, 4), json.dumps(attributes()), id_kind()))
    with conn.cursor() as cur:
        drop(conn, layouts(icu))
        cur.execute("CREATE TABLE d_stage (n serial, organisation_id text, created_at timestamptz, priority_id int, "
                    "attribute_values jsonb, kind text)")
        with cur.copy("COPY d_stage (organisation_id, created_at, priority_id, attribute_values, kind) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        cur.execute(f"""CREATE TABLE d_src AS SELECT CASE kind
              WHEN 'ulid' THEN ulid WHEN 'lower' THEN lower(ulid)
              WHEN 'nine' THEN '9' || md5(n || 'nine') WHEN 'low' THEN '!' || md5(n || 'low')
              ELSE '0' || n END COLLATE "C" AS id, organisation_id, created_at, priority_id, attribute_values
            FROM d_stage, LATERAL (SELECT {ULID.format(time="created_at", salt="n")} AS ulid) u""")
        # a few repeated ids, for the table that allows them
        cur.execute("""CREATE TABLE d_dups AS SELECT id, organisation_id, created_at, priority_id,
              attribute_values || jsonb_build_object('dup', true) AS attribute_values
            FROM d_src WHERE id LIKE '0%' ORDER BY md5(id) LIMIT 200""")
        tables = []
        for name, stmts in layouts(icu).items():
            if citus:  # the key holds the distribution column; no triggers
                stmts = [generated(s if "PRIMARY KEY (id" not in s or "organisation_id)" in s
                                   else s.replace("PRIMARY KEY (id", "PRIMARY KEY (organisation_id, id"))
                         for s in stmts]
            try:
                with conn.transaction():
                    for s in stmts:
                        cur.execute(s)
                    if citus:
                        cur.execute("SELECT create_distributed_table(%s, 'organisation_id')", [name])
            except psycopg.Error as e:
                print(f"  SKIPPED one layout on Citus: {name} ({str(e).splitlines()[0]})")
                continue
            tables.append(name)
            if not citus:
                cur.execute(f"CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON {name} "
                            "FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()")
            cur.execute(f"CREATE INDEX ON {name} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)")
            cur.execute(f"INSERT INTO {name} (id, organisation_id, created_at, priority_id, attribute_values) "
                        "SELECT id, organisation_id, created_at, priority_id, attribute_values FROM d_src "
                        f"WHERE {ROWS.get(name, 'true')}")
            if name == "d_ci":
                cur.execute("UPDATE d_ci SET organisation_id = upper(organisation_id) WHERE md5(id) < '6'")
            if name in REPEATS:
                # the same ids again; in another partition where created_at
                # partitions the table (its key holds created_at)
                cur.execute(f"INSERT INTO {name} (id, organisation_id, created_at, priority_id, attribute_values) "
                            "SELECT id, organisation_id, created_at + interval '100 days', priority_id, attribute_values "
                            "FROM d_dups")
            cur.execute(f"ANALYZE {name}")
        cur.execute("SELECT array_agg(id ORDER BY md5(id)) FROM (SELECT id FROM d_src ORDER BY md5(id) LIMIT 300) s")
        return tables, cur.fetchone()[0]


def day():
    return (START + timedelta(days=rng.randrange(DAYS))).isoformat()


def tenant():
    return rng.choice(["big", "big", "mid", "small", "nobody"])


def mutate(conn, table, kinds=("update", "delete", "insert", "index", "vacuum", "detach")):
    """A change between queries, as an application or a DBA makes one: rows
    written (attributes changed, so that a rare value turns common; rows
    deleted or added), the rare paths' index dropped and made again, a
    partition detached and attached again, a VACUUM. Each query after it
    must see it: cached indexes, routes and plans may not."""
    kind = rng.choice(kinds)
    with conn.cursor() as cur:
        # a sample of rows: those whose salted hash is below a bound
        if kind == "update":
            team = rng.choice(["rare", "uncommon", "t7"])
            cur.execute(f"UPDATE {table} SET attribute_values = attribute_values || jsonb_build_object('team', %s::text) "
                        "WHERE organisation_id = %s AND md5(id || %s) < %s",
                        [team, tenant(), str(rng.random()), rng.choice(["01", "08", "30"])])
        elif kind == "delete":
            cur.execute(f"DELETE FROM {table} WHERE md5(id || %s) < '008'", [str(rng.random())])
        elif kind == "insert":  # values written in (Citus plans no parameters here)
            cur.execute(f"INSERT INTO {table} (id, organisation_id, created_at, priority_id, attribute_values) "
                        f"SELECT {ULID.format(time='t', salt=repr(str(rng.random())) + ' || g')}, '{tenant()}', t, 1 + g % 4, "
                        f"jsonb_build_object('team', '{rng.choice(['rare', 't0', 'uncommon'])}'::text, 'env', 'prod') "
                        f"FROM generate_series(1, 40) g, LATERAL (SELECT '{day()}'::timestamptz + g * interval '1 hour' AS t) x")
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
