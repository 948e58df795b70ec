//! Element encoding: how one `(attribute, value)` pair becomes the bytes that
//! are hashed. Part of the on-disk format (version 1).
//!
//! ```text
//! element = tag (1 byte) ‖ len(key) as u32 big-endian ‖ key (UTF-8) ‖ value bytes
//! tag     = 's' string   value bytes = the string's UTF-8
//!           'n' number   value bytes = canonical decimal (see canonical_number)
//!           'b' boolean  value bytes = "true" | "false"
//!           'j' object or array (opaque)  value bytes = canonical JSON
//! ```
//!
//! The fixed-width key length makes the encoding injective: no two different
//! `(key, value)` pairs, whatever `:` or other bytes they contain, produce the
//! same element bytes. The tag keeps `"1"`, `1` and `true` apart.

use crate::error::{json_type_name, Error, ErrorKind};
use serde_json::{Map, Value};

/// Largest canonical number we will expand. Postgres numerics are at most
/// 131072 digits before and 16383 after the point; anything bigger cannot come
/// out of a `jsonb`, so refusing it costs nothing and bounds memory.
const MAX_NUMBER_CHARS: usize = 131_072 + 16_383 + 2;

/// One attribute value as it is hashed: the tag and the value bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EncodedValue {
    pub tag: u8,
    pub bytes: Vec<u8>,
}

/// Writes the element bytes of `(key, value)` into `out` (cleared first).
pub fn write_element(out: &mut Vec<u8>, key: &str, tag: u8, value: &[u8]) {
    write_element_bytes(out, key.as_bytes(), tag, value)
}

/// [`write_element`] with the key as its UTF-8 bytes.
pub fn write_element_bytes(out: &mut Vec<u8>, key: &[u8], tag: u8, value: &[u8]) {
    out.clear();
    out.reserve(5 + key.len() + value.len());
    out.push(tag);
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Encodes a JSON value that is one attribute value. `None` for `null`, which
/// gives no element.
pub fn encode_value(v: &Value) -> Result<Option<EncodedValue>, Error> {
    Ok(Some(match v {
        Value::Null => return Ok(None),
        Value::Bool(b) => EncodedValue {
            tag: b'b',
            bytes: if *b {
                b"true".to_vec()
            } else {
                b"false".to_vec()
            },
        },
        Value::Number(n) => EncodedValue {
            tag: b'n',
            bytes: canonical_number(&n.to_string())?.into_bytes(),
        },
        Value::String(s) => EncodedValue {
            tag: b's',
            bytes: s.as_bytes().to_vec(),
        },
        Value::Array(_) | Value::Object(_) => {
            let mut s = String::new();
            canonical_json(v, &mut s)?;
            EncodedValue {
                tag: b'j',
                bytes: s.into_bytes(),
            }
        }
    }))
}

/// The JSON value an encoded value stands for (equal, under the filter
/// semantics, to the value it was encoded from).
pub fn decode_value(e: &EncodedValue) -> Result<Value, Error> {
    let text = std::str::from_utf8(&e.bytes).map_err(|_| {
        Error::new(
            ErrorKind::InvalidParameter,
            "encoded value is not UTF-8",
            "report this as a bug",
        )
    })?;
    Ok(match e.tag {
        b's' => Value::String(text.to_string()),
        b'b' => Value::Bool(text == "true"),
        b'n' | b'j' => serde_json::from_str(text).map_err(|err| {
            Error::new(
                ErrorKind::InvalidParameter,
                format!("encoded value is not JSON: {err}"),
                "report this as a bug",
            )
        })?,
        other => {
            return Err(Error::new(
                ErrorKind::InvalidParameter,
                format!("unknown element tag {other}"),
                "report this as a bug",
            ))
        }
    })
}

/// Calls `f(key, value)` for every element of an attributes object, in the
/// object's key order: a scalar gives one element, an array one per non-null
/// item, `null` none, a nested object (or an array inside an array) one
/// opaque element.
pub fn for_each_element(
    attrs: &Value,
    mut f: impl FnMut(&str, &EncodedValue),
) -> Result<(), Error> {
    let obj = attributes_object(attrs)?;
    for (key, v) in obj {
        match v {
            Value::Array(items) => {
                for item in items {
                    if let Some(e) = encode_value(item)? {
                        f(key, &e);
                    }
                }
            }
            other => {
                if let Some(e) = encode_value(other)? {
                    f(key, &e);
                }
            }
        }
    }
    Ok(())
}

/// The attributes must be a JSON object; anything else is a clear error.
pub fn attributes_object(attrs: &Value) -> Result<&Map<String, Value>, Error> {
    match attrs {
        Value::Object(m) => Ok(m),
        other => Err(Error::new(
            ErrorKind::InvalidParameter,
            format!("alert attributes must be a JSON object, got a JSON {}", json_type_name(other)),
            "store attributes as {\"<attribute>\": \"<value>\" or [\"<value>\", ...]}; use '{}' for none",
        )),
    }
}

/// Canonical decimal text of a JSON number: equal numbers give equal text.
///
/// It is what Postgres' `numeric_normalize` prints for the same value: plain
/// decimal (no exponent), no leading zeros, no trailing zeros after the point
/// and no trailing point, `0` for any zero (never `-0`). So `1`, `1.0`,
/// `1.00` and `1e0` all encode as `1`, and `-0.50` as `-0.5`.
pub fn canonical_number(text: &str) -> Result<String, Error> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("\"{}\" is not a JSON number", truncate(text, 40)),
            "numbers must follow JSON syntax, for example 12, -0.5 or 1e3",
        )
    };
    let b = text.as_bytes();
    let mut i = 0;
    let neg = b.first() == Some(&b'-');
    if neg {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = &text[int_start..i];
    if int_digits.is_empty() {
        return Err(bad());
    }
    let mut frac_digits = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = &text[s..i];
        if frac_digits.is_empty() {
            return Err(bad());
        }
    }
    let mut exp: i64 = 0;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let mut eneg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            eneg = b[i] == b'-';
            i += 1;
        }
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            // Clamp: anything this large is refused below anyway, and the
            // clamp keeps the arithmetic on `point` from overflowing (found
            // by the `encode` fuzz target: 1e2044444444444444444444...).
            exp = (exp * 10 + (b[i] - b'0') as i64).min(1 << 40);
            i += 1;
        }
        if s == i {
            return Err(bad());
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return Err(bad());
    }
    // digits = int ‖ frac, with the decimal point after `point` digits.
    let digits: Vec<u8> = int_digits.bytes().chain(frac_digits.bytes()).collect();
    let mut point: i64 = int_digits.len() as i64 + exp;
    let lead = digits.iter().take_while(|&&d| d == b'0').count();
    if lead == digits.len() {
        return Ok("0".to_string());
    }
    let trail = digits.iter().rev().take_while(|&&d| d == b'0').count();
    let sig = &digits[lead..digits.len() - trail];
    point -= lead as i64;
    let width = if point <= 0 {
        2 + (-point) as u64 + sig.len() as u64
    } else {
        (point as u64).max(sig.len() as u64) + 1
    };
    if width > MAX_NUMBER_CHARS as u64 {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            format!("number {} is out of the range Postgres jsonb can store", truncate(text, 40)),
            "use a number with at most 131072 digits before and 16383 after the decimal point, or store it as a string",
        ));
    }
    let mut out = String::with_capacity(width as usize + 1);
    if neg {
        out.push('-');
    }
    let sig = std::str::from_utf8(sig).expect("ascii digits");
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(sig);
    } else if point as usize >= sig.len() {
        out.push_str(sig);
        out.extend(std::iter::repeat_n('0', point as usize - sig.len()));
    } else {
        out.push_str(&sig[..point as usize]);
        out.push('.');
        out.push_str(&sig[point as usize..]);
    }
    Ok(out)
}

/// Canonical JSON of a nested value: compact, object keys sorted by their
/// UTF-8 bytes, numbers canonical, strings escaped as serde_json escapes them
/// (`"`, `\` and control characters only).
pub fn canonical_json(v: &Value, out: &mut String) -> Result<(), Error> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&canonical_number(&n.to_string())?),
        Value::String(s) => out.push_str(&serde_json::to_string(s).expect("string serialises")),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("string serialises"));
                out.push(':');
                canonical_json(&m[k], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_canonical() {
        for (input, want) in [
            ("1", "1"),
            ("1.0", "1"),
            ("1.50", "1.5"),
            ("100", "100"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("0.001", "0.001"),
            ("1e2", "100"),
            ("1.5e1", "15"),
            ("15e-3", "0.015"),
            ("-2.5E+0", "-2.5"),
            ("007", "7"),
            ("12345678901234567890123", "12345678901234567890123"),
        ] {
            assert_eq!(canonical_number(input).unwrap(), want, "{input}");
        }
        for bad in ["", "-", "1.", ".5", "1e", "1x", "NaN", "Infinity", "+1"] {
            assert!(canonical_number(bad).is_err(), "{bad}");
        }
        assert_eq!(
            canonical_number("1e999999999999").unwrap_err().kind,
            ErrorKind::OutOfRange
        );
        assert_eq!(
            canonical_number("1e-999999999999").unwrap_err().kind,
            ErrorKind::OutOfRange
        );
        // exponents beyond i64 (found by the encode fuzz target: overflowed)
        for huge in [
            "-1e20444444444444444444444",
            "1e-20444444444444444444444",
            "0.5E+99999999999999999999",
        ] {
            assert_eq!(
                canonical_number(huge).unwrap_err().kind,
                ErrorKind::OutOfRange,
                "{huge}"
            );
        }
        assert_eq!(canonical_number("0e99999999999999999999").unwrap(), "0");
    }

    #[test]
    fn decode_inverts_encode() {
        for v in [
            json!("x"),
            json!(1.50),
            json!(-0),
            json!(true),
            json!({"b": [1, {"c": null}], "a": "z"}),
            json!([1, "2"]),
        ] {
            let e = encode_value(&v).unwrap().unwrap();
            let back = decode_value(&e).unwrap();
            assert_eq!(encode_value(&back).unwrap().unwrap(), e, "{v}");
        }
    }

    #[test]
    fn encoding_is_injective_on_tricky_pairs() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        write_element(&mut a, "a:b", b's', b"c");
        write_element(&mut b, "a", b's', b"b:c");
        assert_ne!(a, b);
        write_element(&mut a, "k", b's', b"1");
        write_element(&mut b, "k", b'n', b"1");
        assert_ne!(a, b);
    }

    #[test]
    fn elements_follow_the_documented_rules() {
        let attrs = json!({"t": "x", "f": ["a", null, 1, {"z": 1, "a": [2.0]}], "n": null, "o": {"b": true}});
        let mut seen = Vec::new();
        for_each_element(&attrs, |k, e| {
            seen.push((
                k.to_string(),
                e.tag,
                String::from_utf8(e.bytes.clone()).unwrap(),
            ))
        })
        .unwrap();
        seen.sort();
        assert_eq!(
            seen,
            vec![
                ("f".into(), b'j', r#"{"a":[2],"z":1}"#.into()),
                ("f".into(), b'n', "1".into()),
                ("f".into(), b's', "a".into()),
                ("o".into(), b'j', r#"{"b":true}"#.into()),
                ("t".into(), b's', "x".into()),
            ]
        );
        assert!(for_each_element(&json!([1]), |_, _| {}).is_err());
        assert!(for_each_element(&json!("s"), |_, _| {}).is_err());
    }
}
