#!/usr/bin/env python3
"""The portable form (docs/managed-postgres.md), on a database where
CREATE EXTENSION alerts was never run: 20,000 rows written through the
Python client (clients/python: ULIDs, bit(128) bitmaps), then every page of
17 filters (single values, two attributes, one-of, numbers written
differently, array attributes, no match) read with the portable query and
compared with an oracle computed in Python from the rows inserted (pages
of 1 row: the first 60 of each filter). The same pages again through the
rare-filter form: the client's tenant keys (keys()) stored in a bigint[]
column with a built-in GIN index, the filter's keys for each week of the
window computed by the client, the exact check last. Then the
extension arrives: 7 bitmaps are spoiled on purpose, CALL alerts_enable
must rewrite those 7 and no other row (the others keep their row version),
and alerts_search's pages equal the portable query's.

    target/pyenv/bin/python tests/shell/portable.py
"""
import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

import psycopg

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
from alerts_bloom import bloom, keys, mask, ulid, ulid_floor  # noqa: E402

DB = "alerts_portable"
BITS = 128
ADMIN = dict(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"])
NOW = datetime(2026, 11, 26, tzinfo=timezone.utc)
rng = random.Random(20261126)

# The page query: candidates from the pagination index alone (the bitmap is
# INCLUDEd), then the exact check of each candidate's attributes; newest
# first, keyset paging on id, within the window.
PAGE = """
SELECT a.id FROM (
    SELECT id FROM alerts
    WHERE organisation_id = %(org)s AND id >= %(floor)s AND id < %(before)s
      AND ({bloom})
    ORDER BY id DESC
) c
CROSS JOIN LATERAL (
    SELECT * FROM alerts a WHERE a.organisation_id = %(org)s AND a.id = c.id AND {exact}
) a
ORDER BY c.id DESC LIMIT %(size)s
"""


# The rare-filter page: the rows whose tenant keys hold one of each filter
# key's keys (GIN on the bigint[] column finds them: a bitmap scan, then the
# few matches sorted), the exact check, newest first.
KEYS_PAGE = """
SELECT id FROM alerts a
WHERE organisation_id = %(org)s AND id >= %(floor)s AND id < %(before)s
  AND {keys} AND {exact}
ORDER BY id DESC LIMIT %(size)s
"""
WEEK = timedelta(weeks=1)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def week_starts(lo_id, hi_id):
    """The start of every week from the week of id lo_id to that of hi_id
    (a key's week is the ULID's milliseconds divided by a week's)."""
    def week(i):
        ms = 0
        for ch in i[:10].upper():
            ms = ms * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(ch)
        return ms // 604800000
    return [EPOCH + WEEK * w for w in range(week(lo_id), week(hi_id) + 1)]


def filter_keys(org, key, values, weeks):
    """The keys a row of tenant org holding key: value (any of values) has
    in any of these weeks, and without a week (an id that is not a ULID)."""
    out = set()
    for v in values:
        for w in weeks:
            out.update(keys(org, ulid_floor(w), {key: v}))
        out.update(keys(org, "not-a-ulid", {key: v}))
    return sorted(out)


def attrs_of(i):
    a = {"team": f"t{rng.randrange(5)}", "env": rng.choice(["prod", "staging", "dev"]),
         "feature": rng.sample(["alerts", "billing", "search", "auth"], rng.randint(1, 3)),
         "sev": rng.choice([1, 2, 3]), "ratio": rng.choice(["1.50", "2", "0.25"])}
    if i % 700 == 0:
        a["rare"] = "yes"
    return "{" + ", ".join(f'"{k}": {v if k == "ratio" else json.dumps(v)}' for k, v in a.items()) + "}"


def matches(attrs, filt):
    """The filter semantics, independently: each key holds one of its values,
    an attribute equal to it or an array holding it; numbers by value."""
    def same(x, y):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) and not isinstance(y, bool):
            return float(x) == float(y)
        return type(x) is type(y) and x == y
    for k, want in filt.items():
        vals = want if isinstance(want, list) else [want]
        have = attrs.get(k)
        items = have if isinstance(have, list) else [have]
        if not any(same(i, v) for i in items for v in vals):
            return False
    return True


def portable_sql(filt):
    """The query's bloom test and exact check for a filter: one mask per
    value, OR'ed within a key; the exact check per key and value,
    `(attribute_values -> key) @> value` (an equal scalar, or an array
    holding it)."""
    blooms, exacts, params = [], [], {}
    for n, (k, want) in enumerate(filt.items()):
        vals = want if isinstance(want, list) else [want]
        b, e = [], []
        for m, v in enumerate(vals):
            params[f"m{n}_{m}"] = mask({k: v}, BITS)
            params[f"k{n}"] = k
            params[f"v{n}_{m}"] = json.dumps(v)
            b.append(f"attribute_values_bitmap & %(m{n}_{m})s::bit({BITS}) = %(m{n}_{m})s::bit({BITS})")
            e.append(f"(a.attribute_values -> %(k{n})s) @> %(v{n}_{m})s::jsonb")
        blooms.append("(" + " OR ".join(b) + ")")
        exacts.append("(" + " OR ".join(e) + ")")
    return " AND ".join(blooms) or "true", " AND ".join(exacts) or "true", params


FILTERS = [{}, {"team": "t1"}, {"env": "prod"}, {"feature": "billing"}, {"sev": 2}, {"sev": 2.0}, {"ratio": 1.5},
           {"ratio": 2}, {"team": "t1", "env": "dev"}, {"feature": "auth", "sev": 3}, {"team": ["t1", "t2"]},
           {"feature": ["search", "auth"], "env": "prod"}, {"rare": "yes"}, {"rare": "yes", "team": "t0"},
           {"team": "none"}, {"sev": "2"}, {"feature": "alerts", "team": "t4", "env": "staging"}]


def pages(conn, org, filt, floor, size, most=None):
    """The portable query's pages, every one (or the first `most`)."""
    bloom_sql, exact_sql, params = portable_sql(filt)
    got, before = [], "8"  # '8' sorts after every ULID: the first page
    while most is None or len(got) < most:
        rows = [r[0] for r in conn.execute(PAGE.format(bloom=bloom_sql, exact=exact_sql),
                                           dict(params, org=org, floor=floor, before=before, size=size))]
        got.append(rows)
        if len(rows) < size:
            break
        before = rows[-1]
    return got


def keys_pages(conn, org, filt, floor, size, most=None):
    """The rare-filter form's pages: a filter key's keys over the weeks from
    the window's floor to the newest row of the tenant below the cursor."""
    _, exact_sql, params = portable_sql(filt)
    got, before = [], "8"
    while most is None or len(got) < most:
        newest = conn.execute("SELECT max(id) FROM alerts WHERE organisation_id = %s AND id >= %s AND id < %s",
                              (org, floor, before)).fetchone()[0]
        if newest is None:
            got.append([])
            break
        weeks = week_starts(floor, newest)
        tests = []
        for n, (k, want) in enumerate(filt.items()):
            params[f"keys{n}"] = filter_keys(org, k, want if isinstance(want, list) else [want], weeks)
            tests.append(f"attribute_keys && %(keys{n})s::bigint[]")
        rows = [r[0] for r in conn.execute(KEYS_PAGE.format(keys=" AND ".join(tests) or "true", exact=exact_sql),
                                           dict(params, org=org, floor=floor, before=before, size=size))]
        got.append(rows)
        if len(rows) < size:
            break
        before = rows[-1]
    return got


def main():
    with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB}")
        c.execute(f"CREATE DATABASE {DB}")
    conn = psycopg.connect(dbname=DB, autocommit=True, **ADMIN)
    assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'alerts'").fetchone()[0] == 0
    conn.execute(f"""CREATE TABLE alerts (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL,
                                          attribute_values jsonb NOT NULL, attribute_values_bitmap bit({BITS}) NOT NULL,
                                          attribute_keys bigint[] NOT NULL)""")
    conn.execute("CREATE INDEX alerts_page ON alerts (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)")
    conn.execute("CREATE INDEX alerts_keys_gin ON alerts USING gin (attribute_keys)")
    rows = []
    for i in range(20000):
        text = attrs_of(i)
        id_, org = ulid(NOW - timedelta(minutes=rng.randrange(60 * 24 * 60))), f"org{i % 3}"
        rows.append((id_, org, text, bloom(text, BITS), keys(org, id_, text)))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO alerts VALUES (%s, %s, %s::jsonb, %s::bit(128), %s)", rows)
    conn.execute("VACUUM ANALYZE alerts")
    data = {r[0]: (r[1], json.loads(r[2])) for r in rows}

    floor = ulid_floor(NOW - timedelta(days=30))
    checked = wrong = kchecked = keys_wrong = 0
    for org in ("org0", "org1", "org2"):
        for filt in FILTERS:
            want_all = sorted((i for i, (o, a) in data.items() if o == org and i >= floor and matches(a, filt)),
                              reverse=True)
            # pages of 1 row: the first 60 (a frequent filter has thousands)
            for size, most in ((1, 60), (50, None), (500, None)):
                got = pages(conn, org, filt, floor, size, most)
                want = want_all if most is None else want_all[:size * most]
                checked += len(got)
                if [i for p in got for i in p] != want or any(len(p) > size for p in got):
                    wrong += 1
                    print(f"  DIFFERENT: {org} {filt} pages of {size}: {sum(map(len, got))} rows, want {len(want)}")
            # the rare-filter form (any filter: the keys only narrow, the
            # exact check decides), pages of 50
            kgot = keys_pages(conn, org, filt, floor, 50)
            if [i for p in kgot for i in p] != want_all or any(len(p) > 50 for p in kgot):
                keys_wrong += 1
                print(f"  DIFFERENT (keys): {org} {filt}")
            kchecked += 1
    absent = conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'alerts'").fetchone()[0] == 0
    print(f"  portable query: {checked} pages of {len(FILTERS)} filters x 3 tenants x 3 sizes, {wrong} differ "
          f"(extension absent: {absent})")
    print(f"  rare-filter form (tenant keys in bigint[], GIN): {kchecked} tenant x filter pairs paged by 50, "
          f"{keys_wrong} differ")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN " + KEYS_PAGE.format(keys="attribute_keys && %(k)s::bigint[]", exact="true"),
        dict(org="org0", floor=floor, before="8", size=50, k=filter_keys("org0", "rare", ["yes"], week_starts(floor, max(data))))))
    uses_gin = "alerts_keys_gin" in plan
    print(f"  the rare filter's plan reads the keys' GIN index: {uses_gin}")
    if wrong or keys_wrong or not uses_gin:
        sys.exit("FAIL: the portable query's pages differ from the exact filter, or the keys' GIN index is unused")

    # The extension arrives: alerts_enable adopts the client's bitmaps.
    spoiled = [r[0] for r in rows[100:107]]
    conn.execute("UPDATE alerts SET attribute_values_bitmap = B'" + "1" * BITS + "' WHERE id = ANY(%s)", (spoiled,))
    before = dict(conn.execute("SELECT id, xmin::text FROM alerts").fetchall())
    conn.execute("CREATE EXTENSION alerts")
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("CALL alerts_enable('alerts')")
    after = dict(conn.execute("SELECT id, xmin::text FROM alerts").fetchall())
    rewritten = sorted(i for i in after if after[i] != before[i])
    print("  alerts_enable: " + " | ".join(n for n in notices if "written" in n or "ready" in n))
    if rewritten != sorted(spoiled):
        sys.exit(f"FAIL: alerts_enable rewrote {len(rewritten)} rows, want the {len(spoiled)} spoiled ones")
    if not any(f"{len(spoiled)} bitmaps written" in n for n in notices):
        sys.exit(f"FAIL: alerts_enable did not report {len(spoiled)} bitmaps written: {notices}")
    wrong = conn.execute("SELECT count(*) FROM alerts WHERE attribute_values_bitmap <> alerts_bloom(attribute_values, 128)").fetchone()[0]
    # the client's keys are the server's: the column can give way to the
    # extension's expression index (docs/managed-postgres.md)
    keys_differ = conn.execute("SELECT count(*) FROM alerts WHERE attribute_keys <> alerts_keys(organisation_id, id, attribute_values)").fetchone()[0]
    print(f"  the client's tenant keys differ from alerts_keys on {keys_differ} of {len(rows)} rows")
    wrong += keys_differ
    same = 0
    for org in ("org0", "org1", "org2"):
        for filt in FILTERS:
            ext = [r[0] for r in conn.execute(
                "SELECT id FROM alerts_search(NULL::alerts, %s, %s::jsonb, %s::timestamptz, NULL, 10000)",
                (org, json.dumps(filt), NOW - timedelta(days=30)))]
            port = [i for p in pages(conn, org, filt, floor, 10000) for i in p]
            same += ext == port
    print(f"  after adoption: {len(rewritten)} rows rewritten (the spoiled ones), {wrong} wrong bitmaps, "
          f"alerts_search equal to the portable query for {same} of {3 * len(FILTERS)} tenant x filter pairs")
    if wrong or same != 3 * len(FILTERS):
        sys.exit("FAIL: after alerts_enable, bitmaps or pages differ")
    conn.close()
    with psycopg.connect(dbname="postgres", autocommit=True, **ADMIN) as c:
        c.execute(f"DROP DATABASE {DB}")
    print("portable: ok")


if __name__ == "__main__":
    main()
