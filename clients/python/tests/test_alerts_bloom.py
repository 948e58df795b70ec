"""The client against the golden vectors the server computed
(tests/vectors/v1.jsonl at the repository's root, or ALERTS_VECTORS), and
the parsed-input forms against the text form. Run: python -m unittest
discover -s tests (from clients/python, with the package installed)."""
import json
import os
import unittest
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import alerts_bloom
from alerts_bloom import AlertsBloomError, bloom, keys, mask, ulid, ulid_floor

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("ALERTS_VECTORS", os.path.join(HERE, "..", "..", "..", "tests", "vectors", "v1.jsonl"))
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def hex_of(bits_text):
    return format(int(bits_text, 2), f"0{len(bits_text) // 4}x")


# alerts_keys(organisation_id, id, attrs) as the server computed them
KEYS = [
    ("org1", "01JTGTJE40F5F8590CD58A54E9", '{"team":"t1","sev":[1,2,null]}',
     [-1386791580509716685, 1522092769654227239, 6757988607651709813]),
    ("org1", "01jtgtje40f5f8590cd58a54e9", '{"team":"t1","sev":[1,2,null]}',
     [-7262823970784910525, -5492375520806901456, 5173735072742916389]),
    ("\u00e9", "01JTGTJE40F5F8590CD58A54E9", '{"n":{"b":1,"a":[1.50]}}', [-3103350319466388079]),
    ("org1", "01JTGTJE40F5F8590CD58A54E9", "{}", []),
]


class Keys(unittest.TestCase):
    def test_server_keys(self):
        for org, id_, attrs, want in KEYS:
            with self.subTest(org=org, id=id_, attrs=attrs):
                self.assertEqual(keys(org, id_, attrs), want)
                self.assertEqual(keys(org, id_, json.loads(attrs)), want)

    def test_refused(self):
        with self.assertRaises(AlertsBloomError):
            keys(1, "01JTGTJE40F5F8590CD58A54E9", "{}")


class Vectors(unittest.TestCase):
    def test_every_vector(self):
        with open(VECTORS, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        self.assertGreater(len(rows), 200)
        checked = 0
        for r in rows:
            with self.subTest(fn=r["fn"], input=r["input"][:80], bits=r.get("bits")):
                if r["fn"] in ("bloom", "mask"):
                    fn = bloom if r["fn"] == "bloom" else mask
                    if "error" in r:
                        with self.assertRaises(AlertsBloomError):
                            fn(r["input"], r["bits"])
                    else:
                        self.assertEqual(hex_of(fn(r["input"], r["bits"])), r["output"])
                else:
                    ms = r["ms"]
                    when = EPOCH + timedelta(milliseconds=ms) if ms < 253402300800000 else ms // 1000 + 1
                    if "error" in r:
                        with self.assertRaises(AlertsBloomError):
                            ulid_floor(when)
                    elif isinstance(when, datetime):
                        self.assertEqual(ulid_floor(when), r["output"])
                checked += 1
        self.assertEqual(checked, len(rows))


class Forms(unittest.TestCase):
    def test_parsed_equals_text(self):
        for parsed, text in [
            ({"team": "t1", "feature": ["alerts", "billing"], "sev": 2},
             '{"team": "t1", "feature": ["alerts", "billing"], "sev": 2}'),
            ({"n": Decimal("1.50")}, '{"n": 1.5}'),
            ({"n": 1.0}, '{"n": 1}'),
            ({"n": 100.0}, '{"n": 1e2}'),
            ({"n": -0.0}, '{"n": 0}'),
            ({"n": 12345678901234567890}, '{"n": 12345678901234567890}'),
            ({"o": {"b": 1, "a": [2, None]}}, '{"o": {"a": [2, null], "b": 1}}'),
            ({"t": (1, 2)}, '{"t": [1, 2]}'),
        ]:
            for bits in (512, 256, 128):
                self.assertEqual(bloom(parsed, bits), bloom(text, bits), parsed)
        self.assertEqual(bloom(b'{"a": 1}'), bloom('{"a": 1}'))
        self.assertEqual(mask({"team": "t1"}), mask('{"team": "t1"}'))

    def test_text_keeps_digits_a_float_loses(self):
        self.assertNotEqual(bloom('{"n": 12345678901234567890.5}'), bloom({"n": 12345678901234567890.5}))

    def test_refused(self):
        for bad in [float("nan"), float("inf"), Decimal("NaN")]:
            with self.assertRaises(AlertsBloomError):
                bloom({"n": bad})
        for attrs in ([], '"x"', "null", 1, "[]"):
            with self.assertRaisesRegex(AlertsBloomError, "must be a JSON object"):
                bloom(attrs)
        with self.assertRaisesRegex(AlertsBloomError, "one-of array"):
            mask({"team": ["a", "b"]})
        with self.assertRaisesRegex(AlertsBloomError, "is null"):
            mask({"team": None})
        with self.assertRaisesRegex(AlertsBloomError, "width"):
            bloom({}, 64)
        with self.assertRaisesRegex(AlertsBloomError, "not valid JSON"):
            bloom("{bad")
        with self.assertRaisesRegex(AlertsBloomError, "surrogate"):
            bloom({"s": "\ud800"})
        with self.assertRaisesRegex(AlertsBloomError, "time zone"):
            ulid_floor(datetime(2026, 1, 1))

    def test_ulid(self):
        self.assertEqual(alerts_bloom.FORMAT_VERSION, 1)
        t = datetime(2026, 11, 26, 1, 2, 3, 456000, tzinfo=timezone.utc)
        u = ulid(t)
        self.assertEqual(len(u), 26)
        self.assertEqual(u[:10], ulid_floor(t)[:10])
        self.assertTrue(ulid_floor(t) <= u < ulid_floor(t + timedelta(milliseconds=1)))
        self.assertNotEqual(ulid(t), ulid(t))
        self.assertEqual(ulid_floor(datetime(1960, 1, 1, tzinfo=timezone.utc)), "0" * 26)


if __name__ == "__main__":
    unittest.main()
