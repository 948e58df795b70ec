#!/usr/bin/env python3
"""Real clients, unmodified: the custom scan under psycopg 3 and SQLAlchemy 2.

Apps do not write `alerts_search`; they send `attribute_values @> $2 ...
ORDER BY id DESC LIMIT 50` through a driver or an ORM. This test sends the
queries the way those clients do and checks, for every filter and tenant,
page after page (keyset pagination on `id`):
  - psycopg 3 with `prepare_threshold=0`: server-side prepared statements
    from the first execution, run past the plan cache's five custom plans so
    generic plans are used too (`pg_prepared_statements.generic_plans`), and
    `EXPLAIN EXECUTE` of the driver's own prepared statement shows the node;
    a server-side (named) cursor with no LIMIT, fetched in batches;
  - SQLAlchemy 2 ORM: `select(Alert).where(Alert.attribute_values.contains(f))
    .order_by(Alert.id.desc()).limit(50)`; the SQL the ORM emitted has `@>`,
    and EXPLAIN of that same statement with its parameters shows the node.
Every page equals the exact oracle: containment computed here in Python over
the rows read back from the table (ids compared in "C" byte order).
Needs the scratch cluster (scripts/cluster.sh) with the extension installed
and the venv of scripts/setup.sh (target/pyenv). Prints one summary line.
"""
import json
import os
import random
import sys

import psycopg
from psycopg.types.json import Jsonb
from sqlalchemy import String, Integer, create_engine, event, select
from sqlalchemy.dialects.postgresql import BIT, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

HOST = os.environ.get("PGHOST", "/tmp")
PORT = os.environ.get("PGPORT", "5415")
USER = os.environ.get("PGUSER", "postgres")
DB = "alerts_clients"
ROWS = 30000
PAGES = 4  # pages followed per filter and tenant
rng = random.Random(20261123)


def conninfo(db, **kw):
    return psycopg.conninfo.make_conninfo(host=HOST, port=PORT, user=USER, dbname=db, **kw)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


# --- jsonb containment, the oracle (objects of scalars and arrays of scalars)
def contains(doc, f):
    if isinstance(f, dict):
        return isinstance(doc, dict) and all(k in doc and contains(doc[k], v) for k, v in f.items())
    if isinstance(f, list):
        return isinstance(doc, list) and all(any(contains(d, x) for d in doc) for x in f)
    return type(doc) is type(f) and doc == f


# --- the table, as the README sets it up, with skewed attributes
def setup():
    with psycopg.connect(conninfo("postgres"), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB}")
        c.execute(f"CREATE DATABASE {DB}")
        c.execute(f"ALTER DATABASE {DB} SET session_preload_libraries = 'alerts'")
    with psycopg.connect(conninfo(DB), autocommit=True) as c:
        c.execute("SET client_min_messages = warning")
        c.execute("CREATE EXTENSION alerts")
        c.execute("""
            CREATE TABLE alerts (
                id text COLLATE "C" PRIMARY KEY DEFAULT alerts_ulid(),
                organisation_id text COLLATE "C" NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                priority_id int NOT NULL,
                attribute_values jsonb NOT NULL DEFAULT '{}',
                attribute_values_bitmap bit(512))""")
        c.execute("""CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON alerts
                     FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()""")
        c.execute("CREATE INDEX idx_alerts_pagination ON alerts (organisation_id, id DESC)")
        t0 = 1767225600000  # 2026-01-01, ms: ULIDs of increasing time
        with c.cursor().copy("COPY alerts (id, organisation_id, priority_id, attribute_values) FROM STDIN") as cp:
            for i in range(ROWS):
                org = "org_big" if i % 5 else "org_small"
                attrs = {"team": f"t{min(int(rng.expovariate(0.35)), 40)}",
                         "env": rng.choice(["prod", "prod", "prod", "staging", "dev"])}
                if rng.random() < 0.3:
                    attrs["services"] = sorted(rng.sample([f"s{k}" for k in range(12)], rng.randint(1, 3)))
                if rng.random() < 0.002:
                    attrs["rare"] = "yes"
                if rng.random() < 0.1:
                    attrs["sev"] = rng.randint(1, 5)
                cp.write_row((ulid(t0 + i * 997, i), org, rng.randint(1, 4), json.dumps(attrs)))
        c.execute("ANALYZE alerts")
        rows = c.execute("SELECT id, organisation_id, priority_id, attribute_values FROM alerts").fetchall()
        wrong = c.execute("SELECT count(*) FROM alerts WHERE attribute_values_bitmap IS DISTINCT FROM "
                          "alerts_bloom(attribute_values)").fetchone()[0]
        if wrong:
            fail(f"{wrong} rows stored with a wrong bitmap")
    return rows


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ms, n):
    v = (ms << 80) | (n * 7919 + 12345)
    return "".join(CROCKFORD[(v >> (5 * k)) & 31] for k in range(25, -1, -1))


FILTERS = [
    {"team": "t0"},                                 # common
    {"team": "t3", "env": "prod"},                  # two attributes
    {"team": "t12"},                                # rare
    {"services": ["s3"]},                           # array containment
    {"services": ["s1", "s7"], "env": "prod"},
    {"sev": 5},                                     # number
    {"rare": "yes"},                                # very rare
    {"team": "nobody"},                             # no match
    {},                                             # every row
]
TENANTS = ["org_big", "org_small"]


def oracle(rows, org, f, below=None, limit=50):
    got = sorted((r[0] for r in rows if r[1] == org and contains(r[3], f) and (below is None or r[0] < below)),
                 reverse=True)
    return got[:limit]


def check_page(who, got, want, f, org, below):
    if got != want:
        fail(f"{who}: filter {json.dumps(f)} tenant {org} below {below}: "
             f"{len(got)} rows, {len(want)} expected; first difference at "
             f"{next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}")


# --- psycopg 3, server-side prepared statements from the first execution
FIRST = ("SELECT id FROM alerts WHERE organisation_id = %s AND attribute_values @> %s "
         "ORDER BY id DESC LIMIT %s")
NEXT = ("SELECT id FROM alerts WHERE organisation_id = %s AND attribute_values @> %s AND id < %s "
        "ORDER BY id DESC LIMIT %s")


def node_in(plan_lines):
    return any("Custom Scan (AlertsSearch)" in line for line in plan_lines)


def psycopg_pages(rows):
    pages = 0
    with psycopg.connect(conninfo(DB), prepare_threshold=0, autocommit=True) as c:
        if c.execute("SHOW alerts.custom_scan").fetchone()[0] != "on":
            fail("psycopg: alerts.custom_scan is not on in a new session (session_preload_libraries)")
        for f in FILTERS:
            for org in TENANTS:
                got = [r[0] for r in c.execute(FIRST, (org, Jsonb(f), 50))]
                check_page("psycopg", got, oracle(rows, org, f), f, org, None)
                pages += 1
                for _ in range(PAGES - 1):
                    if len(got) < 50:
                        break
                    below = got[-1]
                    got = [r[0] for r in c.execute(NEXT, (org, Jsonb(f), below, 50))]
                    check_page("psycopg", got, oracle(rows, org, f, below), f, org, below)
                    pages += 1
        # the driver's own prepared statements: generic plans were used, and
        # their plan has the node
        prepared = c.execute("SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements "
                             "WHERE statement LIKE 'SELECT id FROM alerts WHERE %' ORDER BY name").fetchall()
        if len(prepared) < 2:
            fail(f"psycopg: expected the driver's two prepared statements, found {prepared}")
        for name, stmt, generic, custom in prepared:
            if generic == 0:
                fail(f"psycopg: {name} ran {custom} custom plans and no generic one")
            args = "'org_big', '{\"team\": \"t0\"}'" + (", '7'" if "id <" in stmt else "") + ", 50"
            plan = [r[0] for r in c.execute(f"EXPLAIN EXECUTE {name}({args})")]
            if not node_in(plan):
                fail(f"psycopg: EXPLAIN EXECUTE {name} has no AlertsSearch node:\n" + "\n".join(plan))
        generic_total = sum(p[2] for p in prepared)
        # a server-side cursor, no LIMIT: the node pages below the last id.
        # EXPLAIN plans for every row; DECLARE plans for the first tenth
        # (cursor_tuple_fraction), which only favours the node's cheap start,
        # so filters whose EXPLAIN has the node. (With no LIMIT, a filter
        # matching a third of the tenant is a seq scan + sort for EXPLAIN.)
        with c.transaction():
            for f, org in (({"team": "t3", "env": "prod"}, "org_big"), ({"services": ["s3"]}, "org_small")):
                q = "SELECT id FROM alerts WHERE organisation_id = %s AND attribute_values @> %s ORDER BY id DESC"
                plan = [r[0] for r in c.execute("EXPLAIN " + q, (org, Jsonb(f)))]
                if not node_in(plan):
                    fail("psycopg: the cursor's query has no AlertsSearch node:\n" + "\n".join(plan))
                with c.cursor(name="pages") as cur:
                    cur.execute(q, (org, Jsonb(f)))
                    got = []
                    while len(got) < 260:
                        batch = cur.fetchmany(50)
                        if not batch:
                            break
                        got += [r[0] for r in batch]
                want = oracle(rows, org, f, limit=len(got))
                if got != want or len(got) < min(260, len(oracle(rows, org, f, limit=10**9))):
                    fail(f"psycopg: named cursor, filter {json.dumps(f)}: {len(got)} rows differ from the oracle")
    return pages, generic_total


# --- SQLAlchemy 2 ORM, JSONB .contains() (emits @>)
class Base(DeclarativeBase):
    pass


class Alert(Base):
    __tablename__ = "alerts"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    organisation_id: Mapped[str] = mapped_column(String)
    priority_id: Mapped[int] = mapped_column(Integer)
    attribute_values: Mapped[dict] = mapped_column(JSONB)
    attribute_values_bitmap: Mapped[str] = mapped_column(BIT(512))


def sqlalchemy_pages(rows):
    engine = create_engine(f"postgresql+psycopg://{USER}@/{DB}?host={HOST}&port={PORT}",
                           connect_args={"prepare_threshold": 0})
    emitted = []

    @event.listens_for(engine, "before_cursor_execute")
    def capture(conn, cursor, statement, parameters, context, executemany):
        if "FROM alerts" in statement:
            emitted.append((statement, parameters))

    by_id = {r[0]: r for r in rows}
    pages = 0
    with Session(engine) as s:
        for f in FILTERS:
            for org in TENANTS:
                below = None
                for _ in range(PAGES):
                    q = select(Alert).where(Alert.organisation_id == org, Alert.attribute_values.contains(f))
                    if below is not None:
                        q = q.where(Alert.id < below)
                    got = s.scalars(q.order_by(Alert.id.desc()).limit(50)).all()
                    check_page("SQLAlchemy", [a.id for a in got], oracle(rows, org, f, below), f, org, below)
                    for a in got:  # the mapped objects carry the rows' own values
                        if a.attribute_values != by_id[a.id][3] or a.priority_id != by_id[a.id][2]:
                            fail(f"SQLAlchemy: row {a.id} mapped with other values than stored")
                    pages += 1
                    if len(got) < 50:
                        break
                    below = got[-1].id
                s.expunge_all()
        statement, params = emitted[-1]
        if "@>" not in statement:
            fail(f"SQLAlchemy: the ORM query has no @>: {statement}")
        # EXPLAIN the very statement the ORM sent, with its parameters
        raw = s.connection().connection.driver_connection
        plan = [r[0] for r in raw.execute("EXPLAIN " + statement, params)]
        if not node_in(plan):
            fail("SQLAlchemy: the ORM's statement has no AlertsSearch node:\n" + statement + "\n" + "\n".join(plan))
    engine.dispose()
    return pages, statement


def main():
    rows = setup()
    p_pages, generic = psycopg_pages(rows)
    s_pages, statement = sqlalchemy_pages(rows)
    with psycopg.connect(conninfo("postgres"), autocommit=True) as c:
        c.execute(f"DROP DATABASE {DB}")
    print(f"real clients: psycopg {psycopg.__version__} {p_pages} pages exact ({generic} on generic plans, "
          f"AlertsSearch in EXPLAIN EXECUTE of the driver's statements and in a named cursor's plan); "
          f"SQLAlchemy {__import__('sqlalchemy').__version__} ORM {s_pages} pages exact "
          f"(.contains() emitted @>, AlertsSearch in its plan), {len(FILTERS)} filters x {len(TENANTS)} tenants")


if __name__ == "__main__":
    main()
