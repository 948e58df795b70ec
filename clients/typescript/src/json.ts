/**
 * A strict JSON parser (RFC 8259, as PostgreSQL's jsonb input reads it) that
 * keeps what `JSON.parse` loses: every number as its text (`JsonNumber`), so
 * that 12345678901234567890 and 1e400 hash as jsonb stores them; objects as
 * `Map`s (a key `__proto__` is a key like any other; a repeated key keeps its
 * last value, as jsonb does).
 */

/** Input the server refuses too: the message names the problem and the fix. */
export class AlertsBloomError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AlertsBloomError";
  }
}

/** A JSON number kept as its text. */
export class JsonNumber {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type JsonValue = null | boolean | string | number | bigint | JsonNumber | JsonValue[] | Map<string, JsonValue>;

/** Deeper than any value the server can index; bounds the recursion. */
const MAX_PARSE_DEPTH = 1000;

export function parseJson(text: string, what = "the value"): JsonValue {
  let i = 0;
  const fail = (msg: string): never => {
    throw new AlertsBloomError(`${what} is not valid JSON: ${msg} at character ${i + 1}`);
  };
  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const str = (): string => {
    i++; // the opening quote
    let out = "";
    for (;;) {
      if (i >= text.length) fail("an unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return out;
      }
      if (c < 0x20) fail("a control character inside a string");
      if (c !== 0x5c) {
        out += text[i++];
        continue;
      }
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"': out += '"'; break;
        case "\\": out += "\\"; break;
        case "/": out += "/"; break;
        case "b": out += "\b"; break;
        case "f": out += "\f"; break;
        case "n": out += "\n"; break;
        case "r": out += "\r"; break;
        case "t": out += "\t"; break;
        case "u": {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("a \\u escape without four hex digits");
          i += 4;
          const u = parseInt(hex, 16);
          if (u === 0) {
            throw new AlertsBloomError(`${what}: \\u0000 cannot be stored in jsonb`);
          }
          if (u >= 0xd800 && u <= 0xdbff) {
            const low = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(text.slice(i, i + 6));
            if (!low) throw new AlertsBloomError(`${what}: a Unicode high surrogate must be followed by a low surrogate`);
            out += String.fromCharCode(u, parseInt(low[1], 16));
            i += 6;
          } else if (u >= 0xdc00 && u <= 0xdfff) {
            throw new AlertsBloomError(`${what}: a Unicode low surrogate must follow a high surrogate`);
          } else {
            out += String.fromCharCode(u);
          }
          break;
        }
        default:
          i -= 1;
          fail("an unknown escape");
      }
    }
  };
  const num = (): JsonNumber => {
    const m = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400000));
    if (!m || m[0] === "-" || m[0] === "") fail("a malformed number");
    i += m![0].length;
    return new JsonNumber(m![0]);
  };
  const value = (depth: number): JsonValue => {
    if (depth > MAX_PARSE_DEPTH) {
      throw new AlertsBloomError(`${what}: a nested value is too deep to index; values nested more than 127 levels deep are not supported`);
    }
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const m = new Map<string, JsonValue>();
      ws();
      if (text[i] === "}") {
        i++;
        return m;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("an object key that is not a string");
        const k = str();
        ws();
        if (text[i] !== ":") fail("a missing ':'");
        i++;
        m.delete(k); // the last of repeated keys wins
        m.set(k, value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return m;
        }
        fail("a missing ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const a: JsonValue[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return a;
      }
      for (;;) {
        a.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return a;
        }
        fail("a missing ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return num();
    return fail(c === undefined ? "an unexpected end" : `an unexpected '${c}'`);
  };
  const v = value(0);
  ws();
  if (i !== text.length) fail("text after the value");
  return v;
}
