#!/usr/bin/env python3
"""The client encoders against the server: ALERTS_CLIENT_CASES (default
100,000) generated attribute sets and filters, with the hostile suite's
strings and values (tests/shell/hostile_inputs.py: unicode escapes, long
keys, deep nesting, huge and tiny numbers, empty arrays) and more (repeated
keys, nesting at the server's limit, numbers a double cannot hold, text
that is not JSON), each sent as JSON text to the server's alerts_bloom
(attribute sets) or alerts_mask (filters) at 512, 256 and 128 bits, to the
Python client (clients/python), to the TypeScript client
(clients/typescript, built) and to the Go client (clients/go, through its
cmd/alertsbloom-lines). Passes when all four give the same bitmap for every
call, or all four refuse it; prints the first differences else.

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


def node_outputs(cases):
    """The TypeScript client's answers: one JSON array per case."""
    script = r"""
const { bloom, mask } = require(process.argv[1]);
const rl = require("readline").createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
rl.on("line", (line) => {
  const c = JSON.parse(line);
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


def python_outputs(cases):
    out = []
    for c in cases:
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
        c.execute("CREATE TABLE cases (n int, kind text, t text)")
        # one call, its ERROR as 'ERROR' (a subtransaction per call that fails only)
        c.execute("""CREATE FUNCTION try(kind text, t text, bits int) RETURNS text LANGUAGE plpgsql AS $$
                     BEGIN
                       RETURN CASE kind WHEN 'bloom' THEN alerts_bloom(t::jsonb, bits)::text
                                        ELSE alerts_mask(t::jsonb, bits)::text END;
                     EXCEPTION WHEN OTHERS THEN RETURN 'ERROR';
                     END $$""")
        with c.cursor() as cur:
            with cur.copy("COPY cases (n, kind, t) FROM STDIN") as copy:
                for i, case in enumerate(cases):
                    copy.write_row((i, case["kind"], case["text"]))
        rows = c.execute("SELECT n, try(kind, t, 512), try(kind, t, 256), try(kind, t, 128) FROM cases ORDER BY n").fetchall()
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as c:
        c.execute(f"DROP DATABASE {DB}")
    return [list(r[1:]) for r in rows]


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
    # the generator's strings are all UTF-8 (escapes such as \ud800 stay escapes)
    assert all(is_utf8(c["text"]) for c in cases)
    server = server_outputs(cases)
    t1 = time.time()
    py = python_outputs(cases)
    t2 = time.time()
    ts = node_outputs(cases)
    t3 = time.time()
    go = go_outputs(cases)
    t4 = time.time()
    calls = 3 * len(cases)
    refused = sum(r.count("ERROR") for r in server)
    diffs = []
    for i, (s, p, n, g) in enumerate(zip(server, py, ts, go)):
        for w, (a, b, c, d) in enumerate(zip(s, p, n, g)):
            if not a == b == c == d:
                diffs.append((i, WIDTHS[w], cases[i], a[:24], b[:24], c[:24], d[:24]))
    print(f"  {len(cases)} inputs ({sum(c['kind'] == 'bloom' for c in cases)} attribute sets, "
          f"{sum(c['kind'] == 'mask' for c in cases)} filters) x 3 widths = {calls} calls; "
          f"{refused} refused by the server; server {t1 - t0:.0f} s, Python {t2 - t1:.0f} s, TypeScript {t3 - t2:.0f} s, "
          f"Go {t4 - t3:.0f} s")
    for d in diffs[:10]:
        print(f"    DIFFERENT case {d[0]} at bit({d[1]}): {d[2]['kind']}({d[2]['text'][:120]!r}): "
              f"server {d[3]}, python {d[4]}, typescript {d[5]}, go {d[6]}")
    if len(server) != len(cases) or len(ts) != len(cases) or len(go) != len(cases) or diffs:
        sys.exit(f"FAIL: {len(diffs)} calls differ between the server and the clients")
    print(f"clients: 0 differences in {calls} calls")


if __name__ == "__main__":
    main()
