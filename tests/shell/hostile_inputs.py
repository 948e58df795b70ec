#!/usr/bin/env python3
"""Hostile and malformed input sweep.

Generates ALERTS_HOSTILE_CASES (default 12000) deterministic malformed or
extreme inputs for every SQL function of the extension (wrong JSON types,
empty and huge keys, 100k-element arrays, deep nesting, invalid ULIDs,
NaN-like and extreme numbers, unicode edge cases, wrong bitmap lengths, bad
search arguments, trigger inserts), runs them through one psql session and
checks that:
  - the server never lost the connection (no crashed backend) and the
    postmaster was not restarted;
  - every error is a clean ERROR: either the extension's own (its message
    starts with the function's name) or Postgres' own input errors for the
    literal (invalid json, invalid bit string, ...), from a known list;
  - the trigger never stored a row whose bitmap differs from alerts_bloom of
    its attributes.
Prints a summary of the outcomes. Needs the scratch cluster and the extension.
"""
import collections
import json
import os
import random
import re
import subprocess
import sys

for var, default in (("PGHOST", "/tmp"), ("PGPORT", "5415"), ("PGUSER", "postgres")):
    os.environ.setdefault(var, default)
CASES = int(os.environ.get("ALERTS_HOSTILE_CASES", "12000"))
DB = "alerts_hostile"
rng = random.Random(20261122)

# Errors Postgres itself raises while parsing a literal or a cast, before or
# around our code. Anything else must come from the extension.
POSTGRES_ERRORS = [
    r"invalid input syntax for type (json|bit|timestamp with time zone|integer)",
    r"unsupported Unicode escape sequence",
    r"bit string length \d+ does not match type bit\(512\)",
    r"bit string too long for type bit\(512\)",
    r'".*" is not a valid binary digit',
    r"value \S+ is out of range for type integer",
    r"integer out of range",
    r"stack depth limit exceeded",
    r"timestamp out of range",
    r"date/time field value out of range",
    r"number of jsonb (array elements|object pairs) exceeds",
    r"total size of jsonb (array elements|object) elements exceeds",
    r"string too long to represent as jsonb string",
    r"invalid byte sequence for encoding",
    r"could not determine polymorphic type",
    r"function alerts_search\(.*\) does not exist",  # page_size beyond integer
    r"a column definition list is required for functions returning \"record\"",
]
OWN_PREFIX = re.compile(r"^(alerts_\w+|alerts)[: ]")


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def jlit(text):
    return sql_str(text) + "::jsonb"


def rand_key():
    if rng.random() < 0.0005:
        return "x" * 100_000
    return rng.choice([
        "", " ", "env", "ENV", "k" * rng.randint(1, 40), "é", "e\u0301", "\u202eevil",
        "😀", "\ud7ff", "\ufffd", "\\u0000", "a\"b", "a'b", "a:b", "a=b", "a\nb", "\t", "null", "[]", "{}",
        str(rng.randint(-10**6, 10**6)),
    ])


def rand_scalar():
    return rng.choice([
        "1", "-0", "0.0", "1e308", "-1e308", "1e-400", "1e400", "123456789012345678901234567890.123456789",
        "0.1", "1.0", "1e0", "true", "false", "null", '""', '"x"', '"NaN"', '"Infinity"', '"-Infinity"',
        json.dumps("s" * rng.randint(0, 300)), json.dumps("\u0000"[:0] + "😀" * 3), json.dumps("e\u0301"),
        json.dumps("\u202e"), '"\\ud83d\\ude00"',
    ]) if rng.random() > 0.01 else rng.choice([  # not JSON, or not storable in jsonb
        '"\\ud800"', '"\\u0000"', "NaN", "Infinity", "-", "01", "1.", ".5", "+1", "0x10",
    ])


def rand_value(depth=0):
    r = rng.random()
    if r < 0.55 or depth > 3:
        return rand_scalar()
    if r < 0.75:
        n = rng.choice([0, 1, 2, 5, 100] if depth == 0 else [0, 1, 2, 3])
        return "[" + ", ".join(rand_value(depth + 1) for _ in range(n)) + "]"
    if r < 0.9:
        n = rng.choice([0, 1, 3])
        return "{" + ", ".join(json.dumps(rand_key()) + ": " + rand_value(depth + 1) for _ in range(n)) + "}"
    return rng.choice(["[" * 200 + "]" * 200, '{"a": ' * 100 + "1" + "}" * 100, "[1, [2, [3]]]", "[[[]]]", '{"": {"": {}}}'])


def rand_doc():
    r = rng.random()
    if r < 0.7:
        n = rng.choice([0, 1, 2, 3, 10, 60, 200])
        value = rand_value if n <= 10 else rand_scalar
        return "{" + ", ".join(json.dumps(rand_key()) + ": " + value() for _ in range(n)) + "}"
    return rand_value()


def huge_docs():
    # a few very large ones, built once
    yield '{"k": [' + ", ".join(str(i) for i in range(100_000)) + "]}"
    yield "{" + ", ".join('"k%d": %d' % (i, i) for i in range(100_000)) + "}"
    yield "[" + ", ".join('"%d"' % i for i in range(100_000)) + "]"
    yield '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    yield '{"a": ' + '{"b": ' * 3000 + "1" + "}" * 3000 + "}"
    yield json.dumps({"k": "v" * 1_000_000})
    yield json.dumps({"k" * 1_000_000: 1})


def rand_ulid():
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijklmnopqrstuvwxyzILOU-_ é😀"
    n = rng.choice([0, 1, 25, 26, 26, 26, 27, 100])
    s = "".join(rng.choice(alphabet) for _ in range(n))
    return rng.choice([s, "8" + s[1:], "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "00000000000000000000000000", s.upper()])


def rand_ts():
    return rng.choice(["'infinity'", "'-infinity'", "'1969-12-31 23:59:59.999+00'", "'1970-01-01'", "'4713-01-01 BC'",
                       "'294276-12-31'", "'10889-08-02 05:31:50.655+00'", "'10889-08-02 05:31:50.656+00'",
                       "'2026-01-01'", "'epoch'", "'now'", "'nonsense'", "NULL"]) + "::timestamptz"


def rand_bits():
    n = rng.choice([0, 1, 127, 128, 256, 511, 512, 512, 513, 1024, 100_000])
    if rng.random() < 0.1:
        return "B'" + "".join(rng.choice("012") for _ in range(n)) + "'"
    return "B'" + "".join(rng.choice("01") for _ in range(n)) + "'"


def rand_columns():
    """A column filter argument: NULL, a random document, or the table's
    columns with random values (numbers out of range, strings that are not
    numbers, nulls, nested values)."""
    r = rng.random()
    if r < 0.3:
        return "NULL"
    if r < 0.6:
        return jlit(rand_doc())
    col = rng.choice(["prio", "state", "id", "organisation_id", "attribute_values", "nope", "", "PRIO"])
    vals = [rand_value() if rng.random() < 0.3 else rand_scalar() for _ in range(rng.choice([0, 1, 3, 200]))]
    return jlit("{%s: [%s]}" % (json.dumps(col), ", ".join(vals)))


def statements():
    yield "CREATE TABLE hostile (id text COLLATE \"C\" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb, attribute_values_bitmap bit(512), prio int, state text);"
    yield "CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON hostile FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();"
    yield "INSERT INTO hostile SELECT alerts_ulid(), 'o', jsonb_build_object('k', g % 10) FROM generate_series(1, 2000) g;"
    # The tenant-keys index: every insert and update computes alerts_keys,
    # and rare-filter searches read it.
    yield "CREATE INDEX hostile_keys ON hostile USING gin (alerts_keys(organisation_id, id, attribute_values));"
    yield "CREATE INDEX hostile_page ON hostile (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);"
    for d in huge_docs():
        for f in ("alerts_bloom", "alerts_bloom_elements", "alerts_mask"):
            yield "SELECT length(%s(%s)::text);" % (f, jlit(d))
    for i in range(CASES):
        kind = rng.randrange(15)
        d = rand_doc()
        if kind in (0, 1):
            # the 512-bit form, or a width argument (the narrower columns')
            width = rng.choice(["", "", ", 512", ", 256", ", 128", ", 0", ", -1", ", 64", ", 2147483647", ", NULL"])
            yield "SELECT %s(%s%s) IS NOT NULL;" % ("alerts_bloom" if kind == 0 else "alerts_mask", jlit(d), width)
        elif kind == 2:
            yield "SELECT alerts_bloom_match(alerts_bloom(%s), %s);" % (jlit(rand_doc()), jlit(d))
        elif kind == 3:
            yield "SELECT alerts_attrs_match(%s, %s);" % (jlit(rand_doc()), jlit(d))
        elif kind == 4:
            yield "SELECT alerts_bloom_elements(%s);" % jlit(d)
        elif kind == 5:
            yield "SELECT alerts_bloom_match(%s, %s);" % (rand_bits(), jlit(d))
        elif kind == 6:
            yield "SELECT alerts_ulid_time(%s);" % sql_str(rand_ulid())
        elif kind == 7:
            yield "SELECT alerts_ulid_floor(%s), length(alerts_ulid(%s));" % (rand_ts(), rand_ts())
        elif kind == 8:
            size = rng.choice(["0", "-1", "1", "50", "2147483647", "NULL", "2147483648"])
            before = rng.choice(["NULL", sql_str(rand_ulid()), "''", sql_str("Z" * 10000)])
            yield "SELECT count(*) FROM alerts_search(NULL::hostile, %s, %s, %s, %s, %s, %s);" % (
                rng.choice(["'o'", "NULL", "''"]), jlit(d), rand_ts(), before, size, rand_columns())
        elif kind == 9:
            rel = rng.choice(["NULL::int", "NULL::text", "NULL::record", "1", "NULL::hostile"])
            yield "SELECT count(*) FROM alerts_search(%s, 'o', %s);" % (rel, jlit(d))
        elif kind == 12:
            yield "SELECT cardinality(alerts_keys(%s, %s, %s));" % (
                rng.choice(["'o'", "''", sql_str("x" * 5000)]), sql_str(rand_ulid()), jlit(d))
        elif kind == 13:
            yield "SELECT %s::jsonb @@ alerts_filter_jsonpath(%s);" % (jlit(rand_doc()), jlit(d))
        elif kind == 14:
            yield "SELECT alerts_search_probe(%s, %s, %s);" % (
                rng.choice(["NULL", sql_str(rand_ulid())]), rng.choice(["NULL", rand_bits()]), jlit(d))
        elif kind == 10:
            yield "INSERT INTO hostile (id, organisation_id, attribute_values) VALUES (%s, 'o', %s);" % (
                sql_str("H%05d" % i), jlit(d))
        else:
            yield "UPDATE hostile SET attribute_values = %s, attribute_values_bitmap = %s WHERE id = (SELECT min(id) FROM hostile);" % (
                jlit(d), rng.choice(["NULL", "B'" + "1" * 512 + "'", "attribute_values_bitmap"]))
    yield "SELECT 'wrong bitmaps: ' || count(*) FROM hostile WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values);"
    yield "SELECT 'rows: ' || count(*) FROM hostile;"


def psql(*args, **kw):
    return subprocess.run(["psql", "-X", "-q", "-At", *args], capture_output=True, text=True, **kw)


def main():
    subprocess.run(["dropdb", "--if-exists", DB], capture_output=True)
    subprocess.run(["createdb", DB], check=True)
    psql("-d", DB, "-c", "CREATE EXTENSION alerts", check=True)
    start = psql("-d", DB, "-c", "SELECT pg_postmaster_start_time()").stdout.strip()
    script = "\\set ON_ERROR_STOP 0\n\\set VERBOSITY terse\n" + "\n".join(statements()) + "\n"
    n_statements = script.count("\n") - 2
    res = psql("-d", DB, input=script)
    out, err = res.stdout, res.stderr
    problems = []
    if re.search(r"connection to server was lost|server closed the connection|terminated abnormally", err):
        problems.append("the connection was lost: a backend crashed")
    if psql("-d", DB, "-c", "SELECT pg_postmaster_start_time()").stdout.strip() != start:
        problems.append("the postmaster restarted (crash recovery)")
    outcomes = collections.Counter()
    for line in err.splitlines():
        m = re.match(r"^(?:psql:<stdin>:\d+: )?ERROR:\s+(.*)$", line)
        if not m:
            continue
        msg = re.sub(r" at character \d+$", "", m.group(1))
        if OWN_PREFIX.match(msg):
            key = re.sub(r"[\"'].*", "...", msg)[:90]
        elif any(re.search(p, msg) for p in POSTGRES_ERRORS):
            key = "postgres: " + re.sub(r"[\"'].*", "...", msg)[:70]
        else:
            problems.append("unexpected error: " + msg[:200])
            continue
        outcomes[key] += 1
    m = re.search(r"^wrong bitmaps: (\d+)$", out, re.M)
    if not m:
        problems.append("the final check did not run")
    elif m.group(1) != "0":
        problems.append("%s rows stored with a wrong bitmap" % m.group(1))
    rows = re.search(r"^rows: (\d+)$", out, re.M)
    errors = sum(outcomes.values())
    print("hostile inputs: %d statements, %d clean ERRORs, %d returned a result; %s rows stored by the trigger, all with the right bitmap"
          % (n_statements, errors, n_statements - errors, rows.group(1) if rows else "?"))
    for key, n in outcomes.most_common(25):
        print("  %6d  %s" % (n, key))
    subprocess.run(["dropdb", DB], capture_output=True)
    if problems:
        for p in problems[:20]:
            print("FAIL: " + p)
        sys.exit(1)


if __name__ == "__main__":
    main()
