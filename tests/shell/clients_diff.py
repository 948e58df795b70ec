#!/usr/bin/env python3
"""The client encoders against the server: ALERTS_CLIENT_CASES (default
100,000) generated attribute sets and filters, with the hostile suite's
strings and values (tests/shell/hostile_inputs.py: unicode escapes, long
keys, deep nesting, huge and tiny numbers, empty arrays) and more (repeated
keys, nesting at the server's limit, numbers a double cannot hold, text
that is not JSON), each sent as JSON text to the server's alerts_bloom
(attribute sets) or alerts_mask (filters) at 512, 256 and 128 bits, to the
Python client (clients/python), to the TypeScript client
(clients/typescript, built), to the Go client (clients/go, through its
cmd/alertsbloom-lines) and to the Java client (clients/java, through its
test class alerts.bloom.Lines). Passes when all five give the same bitmap
for every call, or all five refuse it; prints the first differences else.
Then ALERTS_CLIENT_CASES / 2 rows (a tenant, an id, attributes: ULIDs of
many times, lowercase and short ids, ids with letters outside Crockford's
alphabet, hostile tenants) to the server's alerts_keys and every client's
keys: the same tenant keys, or all refuse the attributes.

    target/pyenv/bin/python tests/shell/clients_diff.py    # ALERTS_PG's scratch cluster
"""
import json
import os
import random
import subprocess
import sys
import time

import psycopg

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "shell"))
import alerts_bloom  # noqa: E402
import hostile_inputs as hostile  # noqa: E402

CASES = int(os.environ.get("ALERTS_CLIENT_CASES", "100000"))
WIDTHS = (512, 256, 128)
DB = "alerts_clients"
rng = random.Random(20261126)
hostile.rng = rng


def number():
    return rng.choice([
        "0", "-0", "1", "1.0", "1.50", "1e2", "1E+2", "-2.5e-3", "12345678901234567890", "-12345678901234567890.5",
        "1e400", "1e-400", "0.000000000000000000001", "9007199254740993", "1.7976931348623157e308", "5e-324",
        str(rng.randint(-10**30, 10**30)), f"{rng.random() * 10 ** rng.randint(-20, 20):.{rng.randint(0, 17)}g}",
    ])


def value(depth=0):
    r = rng.random()
    if r < 0.3:
        return number()
    if r < 0.75 or depth > 2:
        return hostile.rand_scalar()
    if r < 0.85:
        return "[" + ", ".join(value(depth + 1) for _ in range(rng.choice([0, 1, 2, 3]))) + "]"
    if r < 0.95:
        keys = [hostile.rand_key() for _ in range(rng.choice([0, 1, 2, 3]))]
        if keys and rng.random() < 0.3:
            keys.append(keys[0])  # a repeated key: jsonb keeps the last
        return "{" + ", ".join(json.dumps(k) + ": " + value(depth + 1) for k in keys) + "}"
    n = rng.choice([125, 126, 127, 128, 129])  # around the server's nesting limit
    return rng.choice(["[" * n + "]" * n, '{"a": ' * n + "1" + "}" * n])


def attrs():
    r = rng.random()
    if r < 0.9:
        keys = [hostile.rand_key() if rng.random() < 0.5 else rng.choice(["team", "env", "svc", "feature"])
                for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 20]))]
        if keys and rng.random() < 0.1:
            keys.append(rng.choice(keys))
        return "{" + ", ".join(json.dumps(k) + ": " + value() for k in keys) + "}"
    if r < 0.95:
        return hostile.rand_doc()
    return rng.choice(["[]", '"x"', "1", "null", "{", '{"a": }', '{"a": 1,}', "", "{'a': 1}", '{"a": 01}'])


def filter_():
    r = rng.random()
    if r < 0.9:
        keys = [rng.choice(["team", "env", "svc"]) if rng.random() < 0.6 else hostile.rand_key()
                for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        vals = [value(1) if rng.random() < 0.2 else (number() if rng.random() < 0.3 else hostile.rand_scalar())
                for _ in keys]
        return "{" + ", ".join(json.dumps(k) + ": " + v for k, v in zip(keys, vals)) + "}"
    return attrs()


ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid_of(ms):
    v = (ms << 80) | rng.getrandbits(80)
    return "".join(ULID_ALPHABET[(v >> (5 * (25 - i))) & 31] for i in range(26))


def row_id():
    r = rng.random()
    ms = rng.choice([0, 1, 7 * 24 * 3600 * 1000 - 1, 7 * 24 * 3600 * 1000, (1 << 48) - 1,
                     rng.randint(1_600_000_000_000, 1_900_000_000_000), rng.randint(0, (1 << 48) - 1)])
    if r < 0.6:
        return ulid_of(ms)
    if r < 0.7:
        return ulid_of(ms).lower()
    if r < 0.8:  # a letter outside the alphabet in the time part
        u = list(ulid_of(ms))
        u[rng.randint(0, 9)] = rng.choice("ILOU!é ")
        return "".join(u)
    return rng.choice(["", "1", "order-17", "0123456789", "012345678", "ZZZZZZZZZZ", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
                       "😀" * 5, "a" * rng.randint(0, 40), ulid_of(ms)[:rng.randint(0, 26)]])


def tenant():
    t = rng.choice(["org1", "acme", "", "é", "e\u0301", "😀", "t" * rng.randint(1, 300), str(rng.randint(0, 10**9))])
    return t if rng.random() < 0.9 else hostile.rand_key()[:1000]


def storable(t):
    return is_utf8(t) and "\x00" not in t


def node_outputs(cases):
    """The TypeScript client's answers: one JSON array per case."""
    script = r"""
const { bloom, mask, keys } = require(process.argv[1]);
const rl = require("readline").createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
rl.on("line", (line) => {
  const c = JSON.parse(line);
  if (c.kind === "keys") {
    let s; try { s = keys(c.org, c.id, c.text).join(","); } catch (e) { s = "ERROR"; }
    out.push(JSON.stringify([s]));
    return;
  }
  const fn = c.kind === "bloom" ? bloom : mask;
  out.push(JSON.stringify([512, 256, 128].map((b) => { try { return fn(c.text, b); } catch (e) { return "ERROR"; } })));
});
rl.on("close", () => process.stdout.write(out.join("\n") + "\n"));
"""
    dist = os.path.join(ROOT, "clients", "typescript", "dist", "index.js")
    data = "".join(json.dumps(c, ensure_ascii=True) + "\n" for c in cases)
    p = subprocess.run(["node", "-e", script, dist], input=data, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def go_outputs(cases):
    """The Go client's answers: one JSON array per case."""
    src = os.path.join(ROOT, "clients", "go")
    binary = os.path.join(ROOT, "target", "alertsbloom-lines")
    subprocess.run(["go", "build", "-o", binary, "./cmd/alertsbloom-lines"], cwd=src, check=True)
    data = "".join(json.dumps(c, ensure_ascii=True) + "\n" for c in cases)
    p = subprocess.run([binary], input=data, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def java_outputs(cases):
    """The Java client's answers: one JSON array per case (built by mvn)."""
    src = os.path.join(ROOT, "clients", "java")
    cp_file = os.path.join(ROOT, "target", "alerts-java.classpath")
    subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "test-compile", "dependency:build-classpath",
                    f"-Dmdep.outputFile={cp_file}"], cwd=src, check=True)
    with open(cp_file) as f:
        deps = f.read().strip()
    cp = os.pathsep.join([os.path.join(src, "target", "classes"), os.path.join(src, "target", "test-classes"), deps])
    data = "".join(json.dumps(c, ensure_ascii=True) + "\n" for c in cases)
    p = subprocess.run(["java", "-cp", cp, "alerts.bloom.Lines"], input=data, capture_output=True,
                       text=True, encoding="utf-8", check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def python_outputs(cases):
    out = []
    for c in cases:
        if c["kind"] == "keys":
            try:
                out.append([",".join(map(str, alerts_bloom.keys(c["org"], c["id"], c["text"])))])
            except alerts_bloom.AlertsBloomError:
                out.append(["ERROR"])
            continue
        fn = alerts_bloom.bloom if c["kind"] == "bloom" else alerts_bloom.mask
        row = []
        for bits in WIDTHS:
            try:
                row.append(fn(c["text"], bits))
            except alerts_bloom.AlertsBloomError:
                row.append("ERROR")
        out.append(row)
    return out


def server_outputs(cases):
    admin = dict(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"])
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB}")
        c.execute(f"CREATE DATABASE {DB} ENCODING 'UTF8' TEMPLATE template0")
    with psycopg.connect(dbname=DB, autocommit=True, **admin) as c:
        c.execute("CREATE EXTENSION alerts")
        c.execute("CREATE TABLE cases (n int, kind text, t text, org text, id text)")
        # one call, its ERROR as 'ERROR' (a subtransaction per call that fails only)
        c.execute("""CREATE FUNCTION try(kind text, t text, bits int) RETURNS text LANGUAGE plpgsql AS $$
                     BEGIN
                       RETURN CASE kind WHEN 'bloom' THEN alerts_bloom(t::jsonb, bits)::text
                                        ELSE alerts_mask(t::jsonb, bits)::text END;
                     EXCEPTION WHEN OTHERS THEN RETURN 'ERROR';
                     END $$""")
        c.execute("""CREATE FUNCTION try_keys(org text, id text, t text) RETURNS text LANGUAGE plpgsql AS $$
                     BEGIN
                       RETURN array_to_string(alerts_keys(org, id, t::jsonb), ',');
                     EXCEPTION WHEN OTHERS THEN RETURN 'ERROR';
                     END $$""")
        with c.cursor() as cur:
            with cur.copy("COPY cases (n, kind, t, org, id) FROM STDIN") as copy:
                for i, case in enumerate(cases):
                    copy.write_row((i, case["kind"], case["text"], case.get("org"), case.get("id")))
        rows = c.execute("""SELECT n, CASE kind WHEN 'keys' THEN ARRAY[try_keys(org, id, t)]
                                     ELSE ARRAY[try(kind, t, 512), try(kind, t, 256), try(kind, t, 128)] END
                            FROM cases ORDER BY n""").fetchall()
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as c:
        c.execute(f"DROP DATABASE {DB}")
    return [list(r[1]) for r in rows]


def is_utf8(s):
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def main():
    t0 = time.time()
    cases = [{"kind": "bloom", "text": attrs()} if i % 2 == 0 else {"kind": "mask", "text": filter_()}
             for i in range(CASES)]
    rows = 0
    while rows < CASES // 2:
        org, rid = tenant(), row_id()
        if storable(org) and storable(rid):
            cases.append({"kind": "keys", "org": org, "id": rid, "text": attrs()})
            rows += 1
    # the generator's strings are all UTF-8 (escapes such as \ud800 stay escapes)
    assert all(is_utf8(c["text"]) for c in cases)
    server = server_outputs(cases)
    timings = [f"server {time.time() - t0:.0f} s"]
    clients = {}
    for name, fn in (("python", python_outputs), ("typescript", node_outputs), ("go", go_outputs),
                     ("java", java_outputs)):
        t = time.time()
        clients[name] = fn(cases)
        timings.append(f"{name} {time.time() - t:.0f} s")
    calls = sum(len(r) for r in server)
    refused = sum(r.count("ERROR") for r in server)
    keys_calls = sum(c["kind"] == "keys" for c in cases)
    diffs = []
    short = [name for name, out in clients.items() if len(out) != len(cases)]
    for i, s in enumerate(server):
        for w, a in enumerate(s):
            got = {name: (out[i][w] if i < len(out) else None) for name, out in clients.items()}
            if any(g != a for g in got.values()):
                diffs.append((i, "keys" if cases[i]["kind"] == "keys" else f"bit({WIDTHS[w]})", cases[i], a, got))
    print(f"  {len(cases) - keys_calls} inputs ({sum(c['kind'] == 'bloom' for c in cases)} attribute sets, "
          f"{sum(c['kind'] == 'mask' for c in cases)} filters) x 3 widths, and {keys_calls} rows' tenant keys "
          f"= {calls} calls; {refused} refused by the server; " + ", ".join(timings))
    for i, where, case, a, got in diffs[:10]:
        row = f"{case['org'][:40]!r}, {case['id'][:30]!r}, " if case["kind"] == "keys" else ""
        print(f"    DIFFERENT case {i} at {where}: {case['kind']}({row}{case['text'][:120]!r}): server {a[:24]}, "
              + ", ".join(f"{name} {(g or '-')[:24]}" for name, g in got.items()))
    if len(server) != len(cases) or short or diffs:
        sys.exit(f"FAIL: {len(diffs)} calls differ between the server and the clients"
                 + (f"; short output from {', '.join(short)}" if short else ""))
    print(f"clients: 0 differences in {calls} calls")


if __name__ == "__main__":
    main()
