#!/usr/bin/env python3
"""Writes tests/vectors/v1.jsonl: golden vectors of hash format 1, computed
by a server with the extension (alerts_bloom, alerts_mask at 512, 256 and
128 bits; alerts_ulid_floor), for the clients' tests and the extension's
own (tests/sql/vectors.sql). Each line is one call: its function, its input
as JSON text (or a timestamp), the width, and the server's answer (the
bitmap in hex, or the text) or its ERROR message.

    target/pyenv/bin/python tests/vectors/generate.py   # against ALERTS_PG's scratch cluster

Run it again only when the format changes (which bumps FORMAT_VERSION)."""
import json
import os
import sys

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))

ATTRS = [
    '{}',
    '{"team": "t1"}',
    '{"team": "t1", "feature": ["alerts", "billing"], "sev": 2}',
    '{"a:b": "c"}', '{"a": "b:c"}',
    '{"n": 1}', '{"n": 1.0}', '{"n": 1.50}', '{"n": 1e2}', '{"n": -0}', '{"n": -0.0}', '{"n": 0.001}',
    '{"n": 12345678901234567890}', '{"n": 12345678901234567890.123456789}', '{"n": 1e400}', '{"n": 1e-400}',
    '{"n": -2.5E+0}', '{"n": 15e-3}', '{"n": 100000000000000000000000000000000000001}',
    '{"s": "1"}', '{"b": true}', '{"b": false}', '{"b": "true"}',
    '{"x": null}', '{"x": [null, "a", null]}', '{"x": []}', '{"x": [[]]}', '{"x": [[1, 2], 3]}',
    '{"o": {"b": 1, "a": [2, {"d": null, "c": "é"}]}}', '{"o": {}}', '{"o": {"k": 1.50}}',
    '{"o": {"a": 1, "a": 2}}', '{"dup": 1, "dup": 2}',
    '{"u": "é", "ü": "日本語", "emoji": "🙂"}', '{"esc": "line\\nbreak\\ttab \\" quote \\\\ back \\u001f"}',
    '{"esc": {"k": "\\u0001\\b\\f\\n\\r\\t\\u007f"}}',
    '{"": ""}', '{"long": "' + "x" * 2000 + '"}', '{"' + "k" * 300 + '": "v"}',
    '{"many": [' + ", ".join(f'"v{i}"' for i in range(60)) + ']}',
    '{"mixed": ["1", 1, true, null, {"a": 1}, [1]]}',
    '{"deep127": ' + "[" * 127 + "]" * 127 + '}', '{"deep128": ' + "[" * 128 + "]" * 128 + '}',
    '{"deepin": [' + "[" * 127 + "]" * 127 + ']}', '{"deepin": [' + "[" * 128 + "]" * 128 + ']}',
    '{"obj127": ' + '{"a": ' * 127 + '1' + '}' * 127 + '}', '{"obj128": ' + '{"a": ' * 128 + '1' + '}' * 128 + '}',
    '[]', '"text"', '1', 'null', 'true',
    '{"z": "\\u0000"}', '{"z": "\\ud800"}', '{"z": "\\udc00x"}', '{"n": NaN}', '{"n": Infinity}', '{"n": 1e999999}',
    '{"n": 007}', '{bad}', '',
]
FILTERS = [
    '{}', '{"team": "t1"}', '{"team": "t1", "sev": 2}', '{"a:b": "c"}', '{"n": 1.50}', '{"n": 1e2}',
    '{"n": 12345678901234567890}', '{"n": 1e400}', '{"b": false}', '{"o": {"b": 1, "a": [2]}}',
    '{"u": "🙂"}', '{"esc": "\\u001f"}',
    '{"deep": ' + "[" * 126 + "]" * 126 + '}', '{"deep": ' + "[" * 127 + "]" * 127 + '}',
    '{"obj": ' + '{"a": ' * 125 + '1' + '}' * 125 + '}', '{"obj": ' + '{"a": ' * 126 + '1' + '}' * 126 + '}',
    '{"obj": ' + '{"a": ' * 127 + '1' + '}' * 127 + '}', '{"obj": ' + '{"a": ' * 128 + '1' + '}' * 128 + '}',
    '{"team": ["t1", "t2"]}', '{"team": []}', '{"team": null}', '[]', '"x"', '{"z": "\\u0000"}', '{bad',
]
TIMES = [
    "1969-12-31 23:59:59.999+00", "1970-01-01 00:00:00+00", "1970-01-01 00:00:00.001+00",
    "2026-01-01 12:00:00+00", "2026-11-26 01:02:03.456789+00", "2026-11-26 01:02:03.4569+00",
    "10889-08-02 05:31:50.655+00", "10889-08-02 05:31:50.656+00",
]


def main():
    conn = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=os.environ["PGUSER"],
                           dbname=os.environ.get("ALERTS_VECTORS_DB", "postgres"), autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS alerts")
    out = []

    def call(fn, sql, arg, bits=None):
        row = {"fn": fn, "input": arg}
        if bits is not None:
            row["bits"] = bits
        try:
            with conn.transaction():
                v = conn.execute(sql, (arg,) if bits is None else (arg, bits)).fetchone()[0]
            row["output"] = format(int(v, 2), f"0{len(v) // 4}x") if fn != "ulid_floor" else v
        except psycopg.Error as e:
            row["error"] = str(e).splitlines()[0]
        out.append(row)

    for a in ATTRS:
        for bits in (512, 256, 128):
            call("bloom", "SELECT alerts_bloom(%s::jsonb, %s)::text", a, bits)
    for f in FILTERS:
        for bits in (512, 256, 128):
            call("mask", "SELECT alerts_mask(%s::jsonb, %s)::text", f, bits)
    for bits in (0, 64, 1024):
        call("bloom", "SELECT alerts_bloom(%s::jsonb, %s)::text", '{"a": 1}', bits)
    for t in TIMES:
        call("ulid_floor", "SELECT alerts_ulid_floor(%s::timestamptz)", t)
        # the same instant in Unix milliseconds (floored), which the clients take
        out[-1]["ms"] = conn.execute("SELECT floor(extract(epoch FROM %s::timestamptz) * 1000)::bigint", (t,)).fetchone()[0]
    with open(os.path.join(HERE, "v1.jsonl"), "w", encoding="utf-8") as f:
        for row in out:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"vectors: {len(out)} calls, {sum('error' in r for r in out)} errors -> tests/vectors/v1.jsonl", file=sys.stderr)


if __name__ == "__main__":
    main()
