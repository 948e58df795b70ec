#!/usr/bin/env python3
"""DDL under load: searches from several sessions while another changes the
tables under them (issue 39).

First, one case in two sessions that needs exact timing: a session that has
searched a table (its layout cached) searches it again while another
session's ALTER TABLE holds the table, moving attribute_values to a new
column (dropped and added: NULL in every row); when the ALTER commits, the
waiting search must read the new layout (no row matches), never the dropped
column's bytes through the old one.

Then, for ALERTS_DDL_SECONDS (default 60), four sessions page through
alerts_search (the direct walk and the statement walk, common and rare
filters) and plain SQL through the custom scan, each page compared with the
exact filter in the same statement, while a fifth session swaps two tables
of different layouts by renaming them, adds and drops columns, changes the
attribute column's type and back, drops and recreates the pagination, keys
and GIN indexes (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY), and
detaches and attaches a partition.

Passes when every page was exact or ended in an ERROR from the list of
clear ones below, no session lost its connection, and the server log has no
PANIC and no process ended by a signal.
"""
import os
import random
import re
import sys
import threading
import time

import psycopg

SECONDS = int(os.environ.get("ALERTS_DDL_SECONDS", "60"))
DB = "alerts_ddl"
LOG = os.environ["ALERTS_SERVER_LOG"]
ADMIN = dict(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"])

# What a search may answer while the tables change, besides an exact page:
# errors that name the problem. Anything else fails the test.
CLEAR = [
    r"function .*alerts_attrs_match\(text, jsonb\) does not exist",  # attributes are text for a moment
    r"operator does not exist: text @> jsonb",
    r"has no valid index on \(organisation_id, id\)",  # the pagination index dropped
    r"a statement for table .* read rows of .*: a table or schema was renamed",
    r"changed while the search began",
    r"the columns of table .* changed after this query was planned",
    r"deadlock detected",
    r"canceling statement due to lock timeout",
]
# Never acceptable: signs of a cache read with another table's layout.
BAD = [r"unknown type of jsonb container", r"tuple descriptor", r"could not open relation",
       r"cache lookup failed", r"already borrowed", r"panicked", r"SPI"]


def bound():
    """The ids of the old partition are below the floor of this time."""
    from datetime import datetime, timezone
    ms = int(datetime(2026, 1, 1, 12, tzinfo=timezone.utc).timestamp() * 1000)
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "".join(alphabet[(ms >> (5 * i)) & 31] for i in reversed(range(10)))


def connect(**kw):
    return psycopg.connect(dbname=DB, autocommit=True, **ADMIN, **kw)


def setup():
    with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB}")
        c.execute(f"CREATE DATABASE {DB}")
    with connect() as c:
        c.execute("CREATE EXTENSION alerts")
        c.execute(f"ALTER DATABASE {DB} SET session_preload_libraries = 'alerts'")
        rows = """SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '7 seconds' + interval '{off} ms'), 'org' || (g % 4),
                  jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 40),
                                     'team', CASE WHEN g % 1500 = 0 THEN 'rare' ELSE 't' || (g % 3) END)
                  FROM generate_series(1, 12000) g"""
        # two tables of different layouts, swapped by name under the load
        c.execute("""CREATE TABLE ddl_a (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL,
                                         attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512))""")
        c.execute("""CREATE TABLE ddl_b (note text DEFAULT 'b', n int DEFAULT 1, id text COLLATE "C" PRIMARY KEY,
                                         organisation_id text NOT NULL, extra jsonb DEFAULT '{"b": 1}',
                                         attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512))""")
        c.execute("""CREATE TABLE ddl_ty (LIKE ddl_a INCLUDING ALL)""")
        c.execute("""CREATE TABLE ddl_two (LIKE ddl_a INCLUDING ALL)""")
        c.execute("""CREATE TABLE ddl_part (id text COLLATE "C" NOT NULL, organisation_id text NOT NULL,
                                            attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512))
                     PARTITION BY RANGE (id)""")
        c.execute(f"CREATE TABLE ddl_part_old PARTITION OF ddl_part FOR VALUES FROM ('') TO ('{bound()}')")
        c.execute("CREATE TABLE ddl_part_new PARTITION OF ddl_part DEFAULT")
        for t, off in [("ddl_a", 0), ("ddl_b", 1), ("ddl_ty", 2), ("ddl_part", 3), ("ddl_two", 4)]:
            c.execute(f"CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON {t} FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()")
            c.execute(f"CREATE INDEX {t}_page ON {t} (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)")
            cols = "(id, organisation_id, attribute_values)"
            c.execute(f"INSERT INTO {t} {cols} " + rows.format(off=off))
        for t in ["ddl_a", "ddl_b", "ddl_part"]:
            c.execute(f"CREATE INDEX {t}_gin ON {t} USING gin (attribute_values)")
            c.execute(f"CREATE INDEX {t}_keys ON {t} USING gin (alerts_keys(organisation_id, id, attribute_values))")
        c.execute("VACUUM ANALYZE")


def check_sql(table, plain):
    """One statement: the page equals the exact filter, in one snapshot."""
    if plain:
        page = f"""SELECT id FROM {table} WHERE organisation_id = %(org)s AND attribute_values @> %(f)s::jsonb
                   ORDER BY id DESC LIMIT %(n)s"""
    else:
        page = f"SELECT id FROM alerts_search(NULL::{table}, %(org)s, %(f)s::jsonb, '-infinity', NULL, %(n)s)"
    # the oracle reads the attributes through an expression no plan of ours takes
    exact = f"""SELECT id FROM {table} WHERE organisation_id = %(org)s
                AND (attribute_values::text)::jsonb @> %(f)s::jsonb ORDER BY id DESC LIMIT %(n)s"""
    return f"SELECT array({page}) = array({exact})"


def two_sessions():
    """The waiting search sees the ALTER that held it (finding 1)."""
    with connect() as b, connect() as a:
        b.execute("SET alerts.search_direct_scan = on")
        q = "SELECT count(*) FROM alerts_search(NULL::ddl_two, 'org1', '{\"env\": \"e1\"}', '-infinity', NULL, 50)"
        assert b.execute(q).fetchone()[0] == 50
        # the attributes move to another column number, and are NULL there:
        # a layout read before the ALTER reads the dropped column's bytes
        a.execute("BEGIN")
        a.execute("ALTER TABLE ddl_two DROP COLUMN attribute_values, ADD COLUMN attribute_values jsonb")
        answer = {}

        def search():
            try:
                answer["rows"] = b.execute(q).fetchone()[0]
            except psycopg.Error as e:
                answer["error"] = str(e).splitlines()[0]
        t = threading.Thread(target=search)
        t.start()
        time.sleep(1.0)  # the search now waits for the ALTER's lock
        waiting = a.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'ddl_two'::regclass").fetchone()[0]
        a.execute("COMMIT")
        t.join(60)
    err = answer.get("error", "")
    print(f"  two sessions: the search waited ({waiting} lock wait), then: {answer} (exact: 0 rows)")
    clear = err and any(re.search(p, err) for p in CLEAR) and not any(re.search(p, err) for p in BAD)
    if waiting != 1 or not (answer.get("rows") == 0 or clear):
        sys.exit("FAIL: a search waiting behind ALTER TABLE ... DROP COLUMN, ADD COLUMN read the old layout")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.exact = 0
        self.wrong = []
        self.errors = {}
        self.lost = []

    def error(self, msg):
        with self.lock:
            self.errors[msg] = self.errors.get(msg, 0) + 1


def searcher(n, deadline, tally):
    rng = random.Random(n)
    filters = ['{"env": "e1"}', '{"team": "rare"}', '{"env": "e2", "svc": "s7"}', '{"team": "none"}', '{}']
    try:
        c = connect()
    except psycopg.Error as e:
        tally.lost.append(str(e))
        return
    while time.time() < deadline:
        table = rng.choice(["ddl_a", "ddl_b", "ddl_ty", "ddl_part"])
        plain = rng.random() < 0.4
        args = dict(org=f"org{rng.randrange(4)}", f=rng.choice(filters), n=rng.choice([1, 20, 50, 200]))
        try:
            c.execute("SET alerts.search_direct_scan = " + rng.choice(["on", "off"]))
            c.execute("SET lock_timeout = '5s'")
            with c.transaction():
                # The name is resolved once, under a lock: the statement
                # finds `NULL::t` (no lock) and `FROM t` (locked) apart, and a
                # swap committing in between gives them different tables.
                # A partition attached while a statement runs is read by the
                # search's statements planned after it and not by the oracle
                # planned before: the check holds ATTACH and DETACH off.
                mode = "SHARE" if table == "ddl_part" else "ACCESS SHARE"
                c.execute(f"LOCK TABLE {table} IN {mode} MODE")
                ok = c.execute(check_sql(table, plain), args).fetchone()[0]
            with tally.lock:
                if ok:
                    tally.exact += 1
                else:
                    tally.wrong.append((table, plain, args))
        except psycopg.OperationalError as e:
            if c.closed or c.broken:
                tally.lost.append(str(e).splitlines()[0])
                return
            tally.error(str(e).splitlines()[0])
        except psycopg.Error as e:
            tally.error(str(e).splitlines()[0])
    c.close()


def ddl(deadline, done):
    """Cycles through the changes a running application may meet."""
    c = connect()
    c.execute("SET lock_timeout = '10s'")
    step = 0
    while time.time() < deadline:
        s = step % 7
        try:
            if s == 0:  # swap the two tables by renaming them
                with c.transaction():
                    c.execute("ALTER TABLE ddl_a RENAME TO ddl_tmp")
                    c.execute("ALTER TABLE ddl_b RENAME TO ddl_a")
                    c.execute("ALTER TABLE ddl_tmp RENAME TO ddl_b")
            elif s == 1:  # a column added with a default, then dropped
                c.execute("ALTER TABLE ddl_a ADD COLUMN added int DEFAULT 3")
                time.sleep(0.3)
                c.execute("ALTER TABLE ddl_a DROP COLUMN added")
            elif s == 2:  # the attribute column's type changed and back
                c.execute("ALTER TABLE ddl_ty ALTER COLUMN attribute_values TYPE text")
                time.sleep(0.3)
                c.execute("ALTER TABLE ddl_ty ALTER COLUMN attribute_values TYPE jsonb USING attribute_values::jsonb")
            elif s == 3:  # the pagination index dropped and built again
                page = c.execute("""SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                                    WHERE x.indrelid = 'ddl_b'::regclass AND i.relname LIKE '%page%'""").fetchone()[0]
                c.execute(f"DROP INDEX CONCURRENTLY {page}")
                time.sleep(0.3)
                c.execute(f"CREATE INDEX CONCURRENTLY {page} ON ddl_b (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)")
            elif s == 4:  # the keys and GIN indexes rebuilt
                keys = c.execute("""SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                                    WHERE x.indrelid = 'ddl_a'::regclass AND i.relname LIKE '%keys%'""").fetchone()[0]
                c.execute(f"REINDEX INDEX CONCURRENTLY {keys}")
                gin = c.execute("""SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                                   WHERE x.indrelid = 'ddl_a'::regclass AND i.relname LIKE '%gin%'""").fetchone()[0]
                c.execute(f"DROP INDEX CONCURRENTLY {gin}")
                c.execute(f"CREATE INDEX CONCURRENTLY {gin} ON ddl_a USING gin (attribute_values)")
            elif s == 5:  # a partition detached and attached again
                c.execute("ALTER TABLE ddl_part DETACH PARTITION ddl_part_old")
                time.sleep(0.3)
                c.execute(f"ALTER TABLE ddl_part ATTACH PARTITION ddl_part_old FOR VALUES FROM ('') TO ('{bound()}')")
            else:  # the keys index dropped and built again
                c.execute("DROP INDEX IF EXISTS ddl_part_keys")  # partitioned: not concurrently
                c.execute("CREATE INDEX ddl_part_keys ON ddl_part USING gin (alerts_keys(organisation_id, id, attribute_values))")
        except psycopg.Error as e:
            msg = str(e).splitlines()[0]
            if c.broken:
                sys.exit(f"FAIL: the DDL session lost its connection: {msg}")
            print(f"  ddl step {s}: {msg}")
            c.rollback() if not c.autocommit else None
        step += 1
        done[s] = done.get(s, 0) + 1
    c.close()


def main():
    setup()
    with open(LOG, "rb") as f:
        f.seek(0, 2)
        log_start = f.tell()
    two_sessions()
    tally, done = Tally(), {}
    deadline = time.time() + SECONDS
    threads = [threading.Thread(target=searcher, args=(i, deadline, tally)) for i in range(4)]
    threads.append(threading.Thread(target=ddl, args=(deadline, done)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(LOG, "rb") as f:
        f.seek(log_start)
        log = f.read().decode("utf-8", "replace")
    print(f"  {SECONDS} s: {tally.exact} exact pages, {len(tally.wrong)} wrong, "
          f"{sum(tally.errors.values())} clear errors, DDL steps done {dict(sorted(done.items()))}")
    for msg, n in sorted(tally.errors.items(), key=lambda kv: -kv[1]):
        print(f"    {n:6d} x {msg[:150]}")
    bad = [m for m in tally.errors if any(re.search(p, m) for p in BAD) or not any(re.search(p, m) for p in CLEAR)]
    problems = []
    if tally.wrong:
        problems.append(f"{len(tally.wrong)} pages differ from the exact filter, e.g. {tally.wrong[0]}")
    if bad:
        problems.append(f"errors that are not clear ones: {bad[:3]}")
    if tally.lost:
        problems.append(f"sessions lost their connection: {tally.lost[:3]}")
    crash = [l for l in log.splitlines() if re.search(r"PANIC|terminated by signal|was terminated|server process .* exited", l)]
    if crash:
        problems.append(f"the server log shows a crash: {crash[:3]}")
    if tally.exact < 100:
        problems.append(f"only {tally.exact} pages checked")
    if len(done) < 7:
        problems.append(f"not every DDL step ran: {done}")
    if problems:
        sys.exit("FAIL: " + "; ".join(problems))
    with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as c:
        c.execute(f"DROP DATABASE {DB}")
    print("ddl under load: ok")


if __name__ == "__main__":
    main()
