/**
 * Client encoder for the `alerts` PostgreSQL extension's bloom bitmaps
 * (hash format version 1), byte-identical to the server's `alerts_bloom`,
 * `alerts_mask` and `alerts_ulid_floor`, for databases where the extension
 * cannot be installed (managed PostgreSQL) or for applications that compute
 * bitmaps before they insert.
 *
 * `bloom` and `mask` return the bitmap as the text PostgreSQL prints for a
 * `bit(n)` value ('0101...'), to pass as a parameter cast to `bit(n)`.
 * Attributes and filters may be given parsed or as JSON text. Give JSON text
 * where numbers must keep every digit: a JavaScript number cannot hold
 * 12345678901234567890 or 1e400, and the text form keeps them exactly as
 * jsonb does (this package parses JSON text itself for that reason).
 */
import { randomBytes } from "crypto";
import { xxh3 } from "@node-rs/xxhash";
import { AlertsBloomError, JsonNumber, JsonValue, parseJson } from "./json";

export { AlertsBloomError, JsonNumber, parseJson };
export type { JsonValue };

/** The hash format this encoder writes; `alerts_format_version()` on the server. */
export const FORMAT_VERSION = 1;
/** The bitmap widths a column may have: the 512-bit bitmap, or folded. */
export const WIDTHS: readonly number[] = [512, 256, 128];

const HASHES = 7;
const BYTES = 64;
/** The deepest nesting the server's parser takes: 128 containers are refused. */
const MAX_DEPTH = 127;
/** The widest number a jsonb numeric can hold, as canonical text. */
const MAX_NUMBER_CHARS = 131072 + 16383 + 2;
const ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ULID_MAX_MS = 2 ** 48 - 1;
const TOO_DEEP =
  "a nested value is too deep to index; values nested more than 127 levels deep are not supported; flatten the attribute";

/** Attributes or a filter: parsed (plain objects or Maps, arrays, strings,
 * numbers, bigints, booleans, null, JsonNumber) or JSON text. */
export type Input = string | Uint8Array | JsonValue | Record<string, unknown>;

function input(x: unknown, what: string): unknown {
  if (typeof x === "string") return parseJson(x, what);
  if (x instanceof Uint8Array) {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(x);
    } catch {
      throw new AlertsBloomError(`${what} is not valid UTF-8`);
    }
    return parseJson(text, what);
  }
  return x;
}

function typeName(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "number" || typeof v === "bigint" || v instanceof JsonNumber) return "number";
  if (typeof v === "string") return "string";
  if (Array.isArray(v)) return "array";
  return "object";
}

function isObject(v: unknown): v is Map<string, unknown> | Record<string, unknown> {
  return (
    v instanceof Map ||
    (typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber) && !(v instanceof Uint8Array))
  );
}

function entries(o: Map<string, unknown> | Record<string, unknown>): [string, unknown][] {
  return o instanceof Map ? [...o.entries()] : Object.entries(o);
}

function numberText(v: unknown): string {
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (!Number.isFinite(v)) {
      throw new AlertsBloomError(`${v} is not a JSON number: JSON has no NaN or Infinity; store it as a string`);
    }
    return String(v);
  }
  throw new TypeError(String(v));
}

/** Canonical decimal text of a JSON number, as the server's
 * `numeric_normalize`: no exponent, no leading zeros, no trailing zeros after
 * the point, "0" for any zero. 1.50 -> 1.5, 1e2 -> 100, -0 -> 0. */
export function canonicalNumber(text: string): string {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$/.exec(text);
  if (!m) throw new AlertsBloomError(`"${text.slice(0, 40)}" is not a JSON number`);
  const [, neg, intDigits, frac = "", eSign, eDigits] = m;
  let exp = 0;
  if (eDigits !== undefined) {
    exp = eDigits.length > 15 ? 2 ** 40 : Math.min(Number(eDigits), 2 ** 40);
    if (eSign === "-") exp = -exp;
  }
  const digits = intDigits + frac;
  let point = intDigits.length + exp;
  const stripped = digits.replace(/^0+/, "");
  if (stripped === "") return "0";
  const lead = digits.length - stripped.length;
  const sig = stripped.replace(/0+$/, "");
  point -= lead;
  const width = point <= 0 ? 2 - point + sig.length : Math.max(point, sig.length) + 1;
  if (width > MAX_NUMBER_CHARS) {
    throw new AlertsBloomError(
      `number ${text.slice(0, 40)} is out of the range Postgres jsonb can store; store it as a string`
    );
  }
  const sign = neg ? "-" : "";
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${sig}`;
  if (point >= sig.length) return sign + sig + "0".repeat(point - sig.length);
  return `${sign}${sig.slice(0, point)}.${sig.slice(point)}`;
}

function stringBytes(s: string): Buffer {
  if (s.includes("\u0000")) throw new AlertsBloomError("a string holds \\u0000, which jsonb cannot store");
  // String.prototype.isWellFormed is Node 20's; the pattern is the same test
  const wellFormed =
    typeof s.isWellFormed === "function"
      ? s.isWellFormed()
      : !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
  if (!wellFormed) {
    throw new AlertsBloomError(
      "a string holds a lone surrogate (an unpaired \\ud800-\\udfff), which is not Unicode text and which jsonb refuses"
    );
  }
  return Buffer.from(s, "utf8");
}

function key(k: unknown): Buffer {
  if (typeof k !== "string") throw new AlertsBloomError(`object keys must be strings, got ${typeName(k)}`);
  return stringBytes(k);
}

/** A string as serde_json writes it: only ", \ and control characters escaped. */
function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (c === 8) out += "\\b";
    else if (c === 12) out += "\\f";
    else if (c === 10) out += "\\n";
    else if (c === 13) out += "\\r";
    else if (c === 9) out += "\\t";
    else if (c < 0x20) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

/** `v` at nesting `depth` (the containers around it, itself included when it is one). */
function canonicalJson(v: unknown, depth: number): string {
  if ((Array.isArray(v) || isObject(v)) && depth > MAX_DEPTH) throw new AlertsBloomError(TOO_DEEP);
  if (v === null || v === undefined) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "number" || typeof v === "bigint" || v instanceof JsonNumber) return canonicalNumber(numberText(v));
  if (typeof v === "string") {
    stringBytes(v);
    return quote(v);
  }
  if (Array.isArray(v)) return "[" + v.map((x) => canonicalJson(x, depth + 1)).join(",") + "]";
  if (isObject(v)) {
    const es = entries(v)
      .map(([k, x]) => [k, key(k), x] as const)
      .sort((a, b) => Buffer.compare(a[1], b[1]));
    return "{" + es.map(([k, , x]) => quote(k) + ":" + canonicalJson(x, depth + 1)).join(",") + "}";
  }
  throw new AlertsBloomError(`a ${typeof v} is not a JSON value`);
}

function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((m: number, x) => Math.max(m, depthOf(x)), 0);
  if (isObject(v)) return 1 + entries(v).reduce((m: number, [, x]) => Math.max(m, depthOf(x)), 0);
  return 0;
}

/** [tag, value bytes] of one attribute value; null for null. */
function encode(v: unknown): [number, Buffer] | null {
  if (v === null || v === undefined) return null;
  if (v === true || v === false) return [0x62, Buffer.from(v ? "true" : "false")];
  if (typeof v === "number" || typeof v === "bigint" || v instanceof JsonNumber) {
    return [0x6e, Buffer.from(canonicalNumber(numberText(v)))];
  }
  if (typeof v === "string") return [0x73, stringBytes(v)];
  if (Array.isArray(v) || isObject(v)) return [0x6a, Buffer.from(canonicalJson(v, 1), "utf8")];
  throw new AlertsBloomError(`a ${typeof v} is not a JSON value`);
}

/** One element's bytes: tag, the key's length (u32 BE), key, value. */
function element(k: string, [tag, value]: [number, Buffer]): Buffer {
  const kb = key(k);
  const head = Buffer.alloc(5);
  head[0] = tag;
  head.writeUInt32BE(kb.length, 1);
  return Buffer.concat([head, kb, value]);
}

function set(bitmap: Uint8Array, el: Buffer): void {
  const h = xxh3.xxh64(el);
  for (let i = 0; i < HASHES; i++) {
    const p = Number((h >> BigInt(9 * i)) & 511n);
    bitmap[p >> 3] |= 0x80 >> (p & 7);
  }
}

function checkWidth(bits: number): void {
  if (!WIDTHS.includes(bits)) {
    throw new AlertsBloomError(`the bitmap width must be 512, 256 or 128, got ${bits}`);
  }
}

function text(bitmap: Uint8Array, bits: number): string {
  const width = bits / 8;
  const folded = new Uint8Array(width);
  for (let start = 0; start < BYTES; start += width) {
    for (let i = 0; i < width; i++) folded[i] |= bitmap[start + i];
  }
  return Array.from(folded, (b) => b.toString(2).padStart(8, "0")).join("");
}

function object(v: unknown, what: string, fix: string): [string, unknown][] {
  if (!isObject(v)) throw new AlertsBloomError(`${what} must be a JSON object, got a JSON ${typeName(v)}; ${fix}`);
  return entries(v);
}

/** The elements of an attributes object (see `bloom`), as their bytes. */
function elements(attrs: Input): Buffer[] {
  const es = object(
    input(attrs, "the attributes"),
    "alert attributes",
    'store attributes as {"<attribute>": "<value>" or ["<value>", ...]}; use {} for none'
  );
  const out: Buffer[] = [];
  for (const [k, v] of es) {
    key(k);
    for (const item of Array.isArray(v) ? v : [v]) {
      if ((Array.isArray(item) || isObject(item)) && depthOf(item) > MAX_DEPTH) throw new AlertsBloomError(TOO_DEEP);
      const e = encode(item);
      if (e) out.push(element(k, e));
    }
  }
  return out;
}

/**
 * The bitmap of an alert's attributes (a JSON object), as the text of a
 * `bit(bits)` value: what the server's trigger and `alerts_bloom(attrs,
 * bits)` store. A string or number is one element, an array one per item
 * (null items none), null none, a nested object or array one opaque value.
 */
export function bloom(attrs: Input, bits = 512): string {
  checkWidth(bits);
  const bitmap = new Uint8Array(BYTES);
  for (const el of elements(attrs)) set(bitmap, el);
  return text(bitmap, bits);
}

const WEEK_MS = 7n * 24n * 3600n * 1000n;
const NO_WEEK = 2n ** 64n - 1n;

/** The week bucket of an id: its first 10 characters as a ULID time when
 * they are all uppercase Crockford base32, else the last bucket. */
function week(id: Buffer): bigint {
  if (id.length < 10) return NO_WEEK;
  let ms = 0n;
  for (let i = 0; i < 10; i++) {
    const d = ULID_ALPHABET.indexOf(String.fromCharCode(id[i]));
    if (d < 0) return NO_WEEK;
    ms = ms * 32n + BigInt(d);
  }
  return ms / WEEK_MS;
}

/**
 * The tenant keys of a row, as the server's `alerts_keys(organisation_id,
 * id, attrs)` computes them: each element of the attributes hashed with the
 * tenant and the week of the row's ULID, as signed 64-bit integers
 * (`bigint`), sorted and without duplicates. Store them in a `bigint[]`
 * column with a GIN index to find a tenant's rare values without the
 * extension (docs/managed-postgres.md).
 */
export function keys(organisationId: string, id: string, attrs: Input): bigint[] {
  for (const [name, v] of [["organisationId", organisationId], ["id", id]] as const) {
    if (typeof v !== "string") throw new AlertsBloomError(`${name} must be a string (text), got ${typeName(v)}`);
  }
  const tenant = stringBytes(organisationId);
  const head = Buffer.alloc(4 + tenant.length + 8);
  head.writeUInt32BE(tenant.length, 0);
  tenant.copy(head, 4);
  head.writeBigUInt64BE(week(stringBytes(id)), 4 + tenant.length);
  const out = new Set<bigint>();
  for (const el of elements(attrs)) out.add(BigInt.asIntN(64, xxh3.xxh64(Buffer.concat([head, el]))));
  return [...out].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The mask of a filter whose every attribute has one value (an AND of single
 * values), as the text of a `bit(bits)` value: a row may match when `bitmap
 * & mask = mask`; what the server's `alerts_mask(filter, bits)` returns.
 * One-of arrays and nulls are refused, as there.
 */
export function mask(filter: Input, bits = 512): string {
  checkWidth(bits);
  const f = input(filter, "the filter");
  if (isObject(f) && depthOf(f) > MAX_DEPTH) {
    throw new AlertsBloomError("a nested value is too deep to index; values nested more than 127 levels deep are not supported");
  }
  const es = object(f, "the filter", 'write filters as {"<attribute>": "<value>"}; {} matches every row');
  for (const [k, v] of es) {
    key(k);
    if (Array.isArray(v)) {
      throw new AlertsBloomError(
        `the value of "${k.slice(0, 60)}" is a one-of array, which one mask cannot express: build one mask per value and OR the tests`
      );
    }
    if (v === null || v === undefined) {
      throw new AlertsBloomError(`the filter value for "${k.slice(0, 60)}" is null: drop the key to not filter on it`);
    }
  }
  const bitmap = new Uint8Array(BYTES);
  for (const [k, v] of es) set(bitmap, element(k, encode(v)!));
  return text(bitmap, bits);
}

function unixMs(t: Date | number): number {
  if (t instanceof Date) {
    const ms = t.getTime();
    if (Number.isNaN(ms)) throw new AlertsBloomError("an invalid Date has no time");
    return ms;
  }
  if (typeof t === "number" && Number.isFinite(t)) return Math.floor(t);
  throw new AlertsBloomError(`a time is a Date or Unix milliseconds, got ${typeName(t)}`);
}

function ulidText(ms: number, rand: bigint): string {
  const v = (BigInt(ms) << 80n) | rand;
  let out = "";
  for (let i = 0; i < 26; i++) out += ULID_ALPHABET[Number((v >> BigInt(5 * (25 - i))) & 31n)];
  return out;
}

/**
 * The smallest ULID of the millisecond of `t` (a Date, or Unix
 * milliseconds): `alerts_ulid_floor(t)`, the window's lower bound. Times
 * before 1970 give all zeros.
 */
export function ulidFloor(t: Date | number): string {
  const ms = unixMs(t);
  if (ms > ULID_MAX_MS) {
    throw new AlertsBloomError(
      "the time is after the last time a ULID can hold (10889-08-02 05:31:50.655 UTC): pass an earlier one"
    );
  }
  return ulidText(Math.max(ms, 0), 0n);
}

/** A new ULID (48-bit milliseconds, 80 random bits), as `alerts_ulid()`: the time of `t`, or now. */
export function ulid(t?: Date | number): string {
  const ms = t === undefined ? Date.now() : unixMs(t);
  if (ms < 0 || ms > ULID_MAX_MS) throw new AlertsBloomError("a ULID holds times from 1970 to 10889-08-02");
  return ulidText(ms, BigInt("0x" + randomBytes(10).toString("hex")));
}
