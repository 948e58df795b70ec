//! The GIN form of a filter: one jsonpath predicate a GIN index on the
//! attributes (`jsonb_ops` or `jsonb_path_ops`) answers with one scan
//! (see [`crate::filter::Filter::gin_jsonpath`]).

use serde_json::Value;

use crate::encoding::EncodedValue;

/// The predicate of a filter's clauses, each a key and its values (a
/// filter that can match, not `{}`):
/// `$."k" == v` per value, `||` within a key, `&&` across keys. None when
/// no such form exists: no clause, a nested value, or a number whose
/// canonical text is not a plain decimal.
pub fn gin_jsonpath<'a>(
    clauses: impl ExactSizeIterator<Item = (&'a str, &'a [EncodedValue])>,
) -> Option<String> {
    if clauses.len() == 0 {
        return None;
    }
    let mut out = String::new();
    for (i, (k, values)) in clauses.enumerate() {
        if i > 0 {
            out.push_str(" && ");
        }
        let key = Value::String(k.to_string()).to_string();
        out.push('(');
        for (j, v) in values.iter().enumerate() {
            if j > 0 {
                out.push_str(" || ");
            }
            let text = std::str::from_utf8(&v.bytes).ok()?;
            let literal = match v.tag {
                b's' => Value::String(text.to_string()).to_string(),
                b'b' if text == "true" || text == "false" => text.to_string(),
                b'n' if is_plain_decimal(text) => text.to_string(),
                _ => return None,
            };
            out.push_str("$.");
            out.push_str(&key);
            out.push_str(" == ");
            out.push_str(&literal);
        }
        out.push(')');
    }
    Some(out)
}

/// `-?digits(.digits)?`: a number jsonpath reads as one constant (a leading
/// minus is folded into the literal), with the value numeric gives it.
fn is_plain_decimal(s: &str) -> bool {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    digits(int) && frac.is_none_or(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals() {
        assert!(is_plain_decimal("-0.001") && is_plain_decimal("10"));
        assert!(
            !is_plain_decimal("1e5")
                && !is_plain_decimal("-")
                && !is_plain_decimal("1.")
                && !is_plain_decimal(".5")
        );
    }
}
