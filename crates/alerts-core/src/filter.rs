//! Filters: `{"team": "t1", "feature": ["a", "b"]}` means team is t1 AND
//! feature is a or b. Compiled once per query into bloom masks (for the
//! probabilistic per-row test) and encoded values (for the exact test).
//!
//! Semantics, identical in the bloom test and the exact test:
//! - a key with a scalar or object value: the row's attribute equals it, or is
//!   an array that contains it;
//! - a key with an array value: at least one of the array's items holds as
//!   above (an empty array matches no row);
//! - several keys: all must hold; `{}` matches every row.
//! - `null` in a filter, and arrays inside a one-of array, are errors.

use std::sync::Arc;

use serde_json::Value;

use crate::bloom::{words_of, Bitmap, BITMAP_BYTES};
use crate::encoding::{attributes_object, encode_value, write_element, EncodedValue};
use crate::error::{json_type_name, Error, ErrorKind};
use crate::jsonpath::gin_jsonpath;

type Words = [u64; BITMAP_BYTES / 8];

/// One key of a filter with its accepted values.
#[derive(Debug, Clone)]
pub struct Clause {
    pub key: String,
    pub values: Vec<EncodedValue>,
}

impl Clause {
    /// The clause accepts the encoded value `(tag, bytes)`. Allocation-free.
    #[inline]
    pub fn contains(&self, tag: u8, bytes: &[u8]) -> bool {
        self.values
            .binary_search_by(|e| (e.tag, e.bytes.as_slice()).cmp(&(tag, bytes)))
            .is_ok()
    }
}

/// A compiled filter.
#[derive(Debug, Clone)]
pub struct Filter {
    pub clauses: Vec<Clause>,
    /// Union of the masks of every clause with exactly one value.
    all: Words,
    /// Masks of clauses with two or more values: one of each must be present.
    any: Vec<Vec<Words>>,
    /// A clause with no values: nothing matches.
    never: bool,
    /// [`Filter::gin_jsonpath`], made once when compiled: a search reads
    /// it for every partition or shard of a call.
    gin_path: Option<Arc<str>>,
    /// [`Filter::gin_clause_jsonpaths`], made with it.
    gin_clause_paths: Vec<Arc<str>>,
}

impl Filter {
    /// Compiles a filter object.
    pub fn compile(filter: &Value) -> Result<Filter, Error> {
        let obj = match filter {
            Value::Object(m) => m,
            other => {
                return Err(Error::new(
                    ErrorKind::InvalidParameter,
                    format!("the filter must be a JSON object, got a JSON {}", json_type_name(other)),
                    "write filters as {\"<attribute>\": \"<value>\"} or {\"<attribute>\": [\"<value>\", ...]} for one of several values; '{}' matches every row",
                ))
            }
        };
        let mut clauses = Vec::with_capacity(obj.len());
        for (key, v) in obj {
            let values = match v {
                Value::Array(items) => {
                    let mut vals = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            Value::Array(_) => {
                                return Err(Error::new(
                                    ErrorKind::InvalidParameter,
                                    format!("the filter value for \"{}\" is an array inside a one-of array", key_for_msg(key)),
                                    "a one-of array lists single values, for example {\"feature\": [\"a\", \"b\"]}; nested arrays are not supported",
                                ))
                            }
                            Value::Null => return Err(null_error(key)),
                            _ => vals.push(encode_value(item)?.expect("non-null encodes")),
                        }
                    }
                    vals.sort();
                    vals.dedup();
                    vals
                }
                Value::Null => return Err(null_error(key)),
                _ => vec![encode_value(v)?.expect("non-null encodes")],
            };
            clauses.push(Clause {
                key: key.clone(),
                values,
            });
        }
        let mut f = Filter {
            clauses,
            all: [0; 8],
            any: Vec::new(),
            never: false,
            gin_path: None,
            gin_clause_paths: Vec::new(),
        };
        let mut buf = Vec::with_capacity(64);
        let mut all = Bitmap::default();
        for c in &f.clauses {
            match c.values.len() {
                0 => f.never = true,
                1 => all.union_with(&value_mask(&mut buf, &c.key, &c.values[0])),
                _ => f.any.push(
                    c.values
                        .iter()
                        .map(|v| value_mask(&mut buf, &c.key, v).words())
                        .collect(),
                ),
            }
        }
        f.all = all.words();
        f.gin_path = if f.never {
            None
        } else {
            gin_jsonpath(
                f.clauses
                    .iter()
                    .map(|c| (c.key.as_str(), c.values.as_slice())),
            )
            .map(Arc::from)
        };
        if f.gin_path.is_some() {
            let one = |c: &Clause| gin_jsonpath(std::iter::once((c.key.as_str(), &c.values[..])));
            f.gin_clause_paths = f.clauses.iter().filter_map(one).map(Arc::from).collect();
        }
        Ok(f)
    }

    /// The single mask of a filter whose every key has one value (`alerts_mask`).
    pub fn single_mask(filter: &Value) -> Result<Bitmap, Error> {
        if let Value::Object(m) = filter {
            if let Some((k, _)) = m.iter().find(|(_, v)| v.is_array()) {
                return Err(Error::new(
                    ErrorKind::InvalidParameter,
                    format!("alerts_mask: the value of \"{}\" is a one-of array, which one mask cannot express", key_for_msg(k)),
                    "use alerts_bloom_match(bitmap, filter) for one-of filters, or build one mask per value and OR the tests",
                ));
            }
        }
        let f = Filter::compile(filter)?;
        let mut buf = Vec::new();
        let mut all = Bitmap::default();
        for c in &f.clauses {
            all.union_with(&value_mask(&mut buf, &c.key, &c.values[0]));
        }
        Ok(all)
    }

    /// True when a key of the filter has no values (`[]`): no row matches.
    pub fn matches_nothing(&self) -> bool {
        self.never
    }

    /// True when the filter is `{}`.
    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }

    /// A jsonpath predicate `p` such that every attributes object this filter
    /// matches satisfies `attributes @@ p` (the converse need not hold: it
    /// selects candidates, the exact test decides), in a form a GIN index on
    /// the attributes (`jsonb_ops` or `jsonb_path_ops`) answers with one scan:
    /// `$."k" == v` per value, `||` within a key, `&&` across keys. Lax mode
    /// compares an array's items with `v`, which is the filter's "equals or
    /// contains". None when no such form exists: `{}` (every row), a key with
    /// no values (no row), a nested value, or a number whose canonical text is
    /// not a plain decimal.
    pub fn gin_jsonpath(&self) -> Option<Arc<str>> {
        self.gin_path.clone()
    }

    /// [`Filter::gin_jsonpath`] of each clause alone, in the clauses'
    /// order (empty when the filter has none): a row the filter matches
    /// satisfies each, so the candidates GIN gives for any one of them
    /// hold every match (the rarest is the cheapest to read).
    pub fn gin_clause_jsonpaths(&self) -> &[Arc<str>] {
        &self.gin_clause_paths
    }

    /// The probabilistic test: false means the row cannot match; true means it
    /// may. Allocation-free.
    #[inline]
    pub fn bloom_match_words(&self, w: &Words) -> bool {
        if self.never {
            return false;
        }
        covers(w, &self.all)
            && self
                .any
                .iter()
                .all(|alts| alts.iter().any(|m| covers(w, m)))
    }

    /// The probabilistic test on the 64 bitmap bytes.
    #[inline]
    pub fn bloom_match(&self, bytes: &[u8; BITMAP_BYTES]) -> bool {
        self.bloom_match_words(&words_of(bytes))
    }

    /// The probabilistic test on a bitmap of any width a column may have
    /// (64, 32 or 16 bytes: `bit(512)`, or folded to `bit(256)` or
    /// `bit(128)`), the masks folded to it. Allocation-free.
    #[inline]
    pub fn bloom_match_bytes(&self, bytes: &[u8]) -> bool {
        if let Ok(full) = <&[u8; BITMAP_BYTES]>::try_from(bytes) {
            return self.bloom_match(full);
        }
        if self.never {
            return false;
        }
        let n = bytes.len() / 8;
        debug_assert!(n > 0 && BITMAP_BYTES / 8 % n == 0 && bytes.len() % 8 == 0);
        let words = words_of(bytes);
        let w = &words[..n];
        covers_folded(w, &self.all)
            && self
                .any
                .iter()
                .all(|alts| alts.iter().any(|m| covers_folded(w, m)))
    }

    /// The exact test on an attributes object.
    pub fn exact_match(&self, attrs: &Value) -> Result<bool, Error> {
        let obj = attributes_object(attrs)?;
        for c in &self.clauses {
            let Some(v) = obj.get(&c.key) else {
                return Ok(false);
            };
            let hit = match v {
                Value::Array(items) => {
                    let mut hit = false;
                    for item in items {
                        if let Some(e) = encode_value(item)? {
                            if c.values.binary_search(&e).is_ok() {
                                hit = true;
                                break;
                            }
                        }
                    }
                    hit
                }
                other => match encode_value(other)? {
                    Some(e) => c.values.binary_search(&e).is_ok(),
                    None => false,
                },
            };
            if !hit {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Every bit of `mask` is set in `w`.
#[inline(always)]
fn covers(w: &Words, mask: &Words) -> bool {
    w.iter().zip(mask).all(|(a, m)| a & m == *m)
}

/// Every bit of `mask` folded to `w.len()` words is set in `w`. Words are
/// whole 8-byte slices, so folding words is folding bytes.
#[inline(always)]
fn covers_folded(w: &[u64], mask: &Words) -> bool {
    let n = w.len();
    w.iter().enumerate().all(|(i, a)| {
        let m = mask.iter().skip(i).step_by(n).fold(0, |acc, x| acc | x);
        a & m == m
    })
}

fn value_mask(buf: &mut Vec<u8>, key: &str, v: &EncodedValue) -> Bitmap {
    let mut m = Bitmap::default();
    write_element(buf, key, v.tag, &v.bytes);
    m.add_element(buf);
    m
}

fn null_error(key: &str) -> Error {
    Error::new(
        ErrorKind::InvalidParameter,
        format!("the filter value for \"{}\" is null", key_for_msg(key)),
        "filters select values; drop the key to not filter on it (null attributes are stored as no value)",
    )
}

fn key_for_msg(k: &str) -> String {
    crate::encoding::truncate(k, 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::bloom;
    use serde_json::json;

    fn both(attrs: Value, filter: Value) -> (bool, bool) {
        let f = Filter::compile(&filter).unwrap();
        let bm = bloom(&attrs).unwrap();
        (f.bloom_match(&bm.0), f.exact_match(&attrs).unwrap())
    }

    #[test]
    fn semantics() {
        let a = json!({"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "n": null, "o": {"x": 1}});
        for (f, want) in [
            (json!({}), true),
            (json!({"team": "t1"}), true),
            (json!({"team": "t2"}), false),
            (json!({"team": ["t2", "t1"]}), true),
            (json!({"team": []}), false),
            (json!({"feature": "a"}), true),
            (json!({"feature": ["c", "b"]}), true),
            (json!({"feature": "c"}), false),
            (json!({"team": "t1", "feature": "b"}), true),
            (json!({"team": "t1", "feature": "c"}), false),
            (json!({"sev": 2}), true),
            (json!({"sev": 2.0}), true),
            (json!({"sev": "2"}), false),
            (json!({"flag": true}), true),
            (json!({"flag": "true"}), false),
            (json!({"o": {"x": 1.0}}), true),
            (json!({"o": {"x": 2}}), false),
            (json!({"missing": "x"}), false),
            (json!({"n": "x"}), false),
        ] {
            let (bloom_says, exact) = both(a.clone(), f.clone());
            assert_eq!(exact, want, "{f}");
            assert!(bloom_says || !exact, "false negative for {f}");
        }
    }

    #[test]
    fn bad_filters() {
        for f in [
            json!([]),
            json!("x"),
            json!(1),
            json!(null),
            json!({"a": null}),
            json!({"a": [[1]]}),
            json!({"a": [null]}),
        ] {
            let e = Filter::compile(&f).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidParameter, "{f}");
        }
        let e = Filter::single_mask(&json!({"a": ["x"]})).unwrap_err();
        assert!(e.hint.contains("alerts_bloom_match"));
    }

    #[test]
    fn folded_tests_agree_with_folded_masks() {
        // At every width: no false negative, and the test is exactly
        // "the folded bitmap covers the folded mask" (of each clause).
        let rows = [
            json!({"team": "t1", "feature": ["a", "b"], "sev": 2}),
            json!({"team": "t2", "feature": "c"}),
            json!({}),
        ];
        let filters = [
            json!({"team": "t1"}),
            json!({"team": "t1", "feature": "b"}),
            json!({"feature": ["x", "b"]}),
            json!({"team": "t9"}),
            json!({"team": []}),
            json!({}),
        ];
        for attrs in &rows {
            let bm = bloom(attrs).unwrap();
            for filter in &filters {
                let f = Filter::compile(filter).unwrap();
                let exact = f.exact_match(attrs).unwrap();
                assert_eq!(f.bloom_match_bytes(&bm.0), f.bloom_match(&bm.0));
                for bits in [128usize, 256] {
                    let folded = bm.folded(bits);
                    let says = f.bloom_match_bytes(&folded);
                    assert!(
                        says || !exact,
                        "false negative at {bits} for {filter} on {attrs}"
                    );
                    assert!(says || !f.bloom_match(&bm.0), "folding only adds maybes");
                    if !filter.as_object().unwrap().values().any(|v| v.is_array()) {
                        let m = Filter::single_mask(filter).unwrap().folded(bits);
                        let covers = folded.iter().zip(&m).all(|(a, m)| a & m == *m);
                        assert_eq!(
                            says,
                            covers && !f.matches_nothing(),
                            "{bits} {filter} {attrs}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn single_mask_matches_bitmap_subset() {
        let attrs = json!({"team": "t1", "feature": ["a", "b"]});
        let bm = bloom(&attrs).unwrap();
        let m = Filter::single_mask(&json!({"team": "t1", "feature": "b"})).unwrap();
        assert!(bm.contains(&m));
        assert_eq!(Filter::single_mask(&json!({})).unwrap(), Bitmap::default());
    }

    #[test]
    fn gin_jsonpath_forms() {
        let p = |f: serde_json::Value| Filter::compile(&f).unwrap().gin_jsonpath();
        assert_eq!(
            p(json!({"team": "t\"1", "n": [-1.50, 2, true]})).as_deref(),
            Some(r#"($."n" == true || $."n" == -1.5 || $."n" == 2) && ($."team" == "t\"1")"#)
        );
        assert_eq!(
            p(json!({"": "a\u{0001}"})).as_deref(),
            Some(r#"($."" == "a\u0001")"#)
        );
        assert_eq!(p(json!({})), None);
        assert_eq!(p(json!({"a": "x", "b": []})), None);
        assert_eq!(p(json!({"o": {"x": 1}})), None);
        let each = |f: serde_json::Value| {
            let f = Filter::compile(&f).unwrap();
            f.gin_clause_jsonpaths()
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            each(json!({"team": "t1", "n": [1, 2]})),
            [r#"($."n" == 1 || $."n" == 2)"#, r#"($."team" == "t1")"#]
        );
        assert!(each(json!({})).is_empty());
        assert!(each(json!({"a": "x", "o": {"x": 1}})).is_empty());
    }
}
