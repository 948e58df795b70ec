// The client against the golden vectors the server computed
// (tests/vectors/v1.jsonl at the repository's root, or ALERTS_VECTORS), and
// the parsed-input forms against the text form. Run: npm test.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("fs");
const path = require("path");
const { bloom, keys, mask, ulid, ulidFloor, AlertsBloomError, FORMAT_VERSION, JsonNumber } = require("..");

const VECTORS = process.env.ALERTS_VECTORS || path.join(__dirname, "..", "..", "..", "tests", "vectors", "v1.jsonl");
const hexOf = (bits) => BigInt("0b" + bits).toString(16).padStart(bits.length / 4, "0");

test("every golden vector", () => {
  const rows = fs.readFileSync(VECTORS, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(rows.length > 200);
  for (const r of rows) {
    const what = `${r.fn}(${r.input.slice(0, 80)}, ${r.bits})`;
    if (r.fn === "bloom" || r.fn === "mask") {
      const fn = r.fn === "bloom" ? bloom : mask;
      if ("error" in r) assert.throws(() => fn(r.input, r.bits), AlertsBloomError, what);
      else assert.equal(hexOf(fn(r.input, r.bits)), r.output, what);
    } else if ("error" in r) {
      assert.throws(() => ulidFloor(r.ms), AlertsBloomError, what);
    } else {
      assert.equal(ulidFloor(r.ms), r.output, what);
      if (Math.abs(r.ms) < 8.64e15) assert.equal(ulidFloor(new Date(r.ms)), r.output, what);
    }
  }
});

test("parsed input equals the text form", () => {
  const cases = [
    [{ team: "t1", feature: ["alerts", "billing"], sev: 2 }, '{"team": "t1", "feature": ["alerts", "billing"], "sev": 2}'],
    [{ n: 1.5 }, '{"n": 1.50}'],
    [{ n: 100 }, '{"n": 1e2}'],
    [{ n: -0 }, '{"n": 0}'],
    [{ n: 12345678901234567890n }, '{"n": 12345678901234567890}'],
    [{ n: new JsonNumber("1e400") }, '{"n": 1e400}'],
    [{ o: { b: 1, a: [2, null] } }, '{"o": {"a": [2, null], "b": 1}}'],
    [new Map([["__proto__", "x"]]), '{"__proto__": "x"}'],
  ];
  for (const [parsed, text] of cases) {
    for (const bits of [512, 256, 128]) assert.equal(bloom(parsed, bits), bloom(text, bits), text);
  }
  assert.equal(bloom(Buffer.from('{"a": 1}')), bloom('{"a": 1}'));
  assert.equal(mask({ team: "t1" }), mask('{"team": "t1"}'));
  // a JavaScript number cannot hold these digits; the text form keeps them
  assert.notEqual(bloom('{"n": 12345678901234567890}'), bloom({ n: 12345678901234567890 }));
});

test("refused input", () => {
  assert.throws(() => bloom({ n: NaN }), AlertsBloomError);
  assert.throws(() => bloom({ n: Infinity }), AlertsBloomError);
  for (const v of ["[]", '"x"', "null", "1"]) assert.throws(() => bloom(v), /must be a JSON object/);
  assert.throws(() => mask({ team: ["a", "b"] }), /one-of array/);
  assert.throws(() => mask({ team: null }), /is null/);
  assert.throws(() => bloom({}, 64), /width/);
  assert.throws(() => bloom("{bad"), /not valid JSON/);
  assert.throws(() => bloom({ s: "\ud800" }), /surrogate/);
});

// alerts_keys(organisation_id, id, attrs) as the server computed them
const KEYS = [
  ["org1", "01JTGTJE40F5F8590CD58A54E9", '{"team":"t1","sev":[1,2,null]}', [-1386791580509716685n, 1522092769654227239n, 6757988607651709813n]],
  ["org1", "01jtgtje40f5f8590cd58a54e9", '{"team":"t1","sev":[1,2,null]}', [-7262823970784910525n, -5492375520806901456n, 5173735072742916389n]],
  ["\u00e9", "01JTGTJE40F5F8590CD58A54E9", '{"n":{"b":1,"a":[1.50]}}', [-3103350319466388079n]],
  ["org1", "01JTGTJE40F5F8590CD58A54E9", "{}", []],
];

test("tenant keys equal the server's alerts_keys", () => {
  for (const [org, id, attrs, want] of KEYS) {
    assert.deepEqual(keys(org, id, attrs), want);
    assert.deepEqual(keys(org, id, JSON.parse(attrs)), want);
  }
  assert.throws(() => keys(1, "01JTGTJE40F5F8590CD58A54E9", "{}"), AlertsBloomError);
});

test("ulid", () => {
  assert.equal(FORMAT_VERSION, 1);
  const t = Date.UTC(2026, 10, 26, 1, 2, 3, 456);
  const u = ulid(t);
  assert.equal(u.length, 26);
  assert.ok(ulidFloor(t) <= u && u < ulidFloor(t + 1));
  assert.notEqual(ulid(t), ulid(t));
  assert.equal(ulidFloor(Date.UTC(1960, 0, 1)), "0".repeat(26));
});

test("loads with require() and with import", async () => {
  const esm = await import("alerts-bloom");
  assert.equal(esm.bloom('{"a": 1}'), bloom('{"a": 1}'));
  assert.equal(typeof require("alerts-bloom").mask, "function");
});
