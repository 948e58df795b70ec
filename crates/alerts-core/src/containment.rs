//! A filter for SQL's `attribute_values @> value`: the widest filter whose
//! matches include every row the containment holds for, so that a search by
//! it, followed by the containment itself on each row it returns, is exact.
//!
//! `@>` and a filter agree on most objects but not all:
//! - a scalar (`{"team": "a"}`): `@>` holds when the row's `team` is `"a"`;
//!   the filter also accepts an array holding `"a"` (wider: kept);
//! - an array of scalars (`{"tags": ["a", "b"]}`): `@>` wants an array
//!   holding both; the filter wants one of them (wider: kept);
//! - an empty array: `@>` holds for any array, the filter for no row; an
//!   object, or an array holding objects or arrays: `@>` holds for values
//!   that contain them, the filter for equal ones; `null`: the filter
//!   refuses it. These keys are left out (wider: every row passes them);
//! - a value that is not an object: no key constrains the filter (`{}`).
//!
//! Several containments (`@> a AND @> b`) and filters of the exact form
//! (`alerts_attrs_match(attribute_values, f)`) are merged: each key's first
//! clause is kept, which is implied by the conjunction of all of them.
//!
//! Containments OR'ed (`@> '{"team": "a"}' OR @> '{"team": "b"}'`) give
//! the keys every alternative constrains, each with the values of all of
//! them as one of several (`{"team": ["a", "b"]}`): a row one alternative
//! holds for passes its own clause, so it passes the union.

use serde_json::{Map, Value};

/// What a condition on the attributes says.
pub enum Condition<'a> {
    /// `attribute_values @> value`.
    Contains(&'a Value),
    /// `alerts_attrs_match(attribute_values, filter)`: the filter's own
    /// semantics, kept as they are.
    Filter(&'a Value),
    /// `attribute_values @> a OR attribute_values @> b ...` (at least one
    /// alternative).
    AnyOf(Vec<&'a Value>),
}

/// The widest filter implied by every condition (see the module comment).
pub fn implied_filter(conditions: &[Condition]) -> Value {
    let mut out = Map::new();
    for c in conditions {
        let union;
        let (m, exact) = match c {
            Condition::Contains(Value::Object(m)) => (m, false),
            Condition::Filter(Value::Object(m)) => (m, true),
            Condition::AnyOf(alternatives) => {
                union = any_of(alternatives);
                (&union, true)
            }
            _ => continue,
        };
        for (key, value) in m {
            if out.contains_key(key) || !(exact || kept(value)) {
                continue;
            }
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// The keys at which the implied filter `implied` tests exactly what the
/// containments among `conditions` ask, but for one difference: the filter
/// also accepts an array holding the value. Some(keys) when every
/// containment is an object of strings and booleans, each the filter's
/// whole clause at its key, and every filter condition is an object whose
/// clauses the implied filter kept as they are: a row the filter accepts,
/// whose value at each of these keys is not an array, holds every
/// containment (`@>` compares strings byte by byte, as the filter does)
/// and every filter. None when a condition asks more than that (a number,
/// an array, an object, a key another condition set first), and the
/// condition itself must decide. OR'ed containments are not looked at:
/// their own test decides them.
pub fn whole_keys(conditions: &[Condition], implied: &Value) -> Option<Vec<String>> {
    let mut keys = Vec::new();
    for c in conditions {
        let value = match c {
            Condition::Contains(value) => value,
            Condition::Filter(Value::Object(m)) => {
                if m.iter().any(|(key, v)| implied.get(key) != Some(v)) {
                    return None;
                }
                continue;
            }
            Condition::Filter(_) => return None,
            Condition::AnyOf(_) => continue,
        };
        let Value::Object(m) = value else {
            return None;
        };
        for (key, v) in m {
            let plain = matches!(v, Value::String(_) | Value::Bool(_));
            if !plain || implied.get(key) != Some(v) {
                return None;
            }
            keys.push(key.clone());
        }
    }
    keys.sort();
    keys.dedup();
    Some(keys)
}

/// The filter implied by containments OR'ed: the keys each alternative's
/// own filter has, each with every alternative's values (see the module
/// comment).
fn any_of(alternatives: &[&Value]) -> Map<String, Value> {
    let filters: Vec<Value> = alternatives
        .iter()
        .map(|v| implied_filter(&[Condition::Contains(v)]))
        .collect();
    let mut out = Map::new();
    let Some(Value::Object(first)) = filters.first() else {
        return out;
    };
    'keys: for key in first.keys() {
        let mut values: Vec<Value> = Vec::new();
        for f in &filters {
            let Some(v) = f.get(key) else {
                continue 'keys;
            };
            let items = match v {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for item in items {
                if !values.contains(&item) {
                    values.push(item);
                }
            }
        }
        let clause = if values.len() == 1 {
            values.remove(0)
        } else {
            Value::Array(values)
        };
        out.insert(key.clone(), clause);
    }
    out
}

/// Whether a containment's value at one key means, as a filter clause, a
/// condition at least as wide.
fn kept(value: &Value) -> bool {
    match value {
        Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| kept(i) && !i.is_array()),
        Value::Null | Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Filter;
    use serde_json::json;

    fn contains(v: &Value) -> Value {
        implied_filter(&[Condition::Contains(v)])
    }

    #[test]
    fn scalars_and_arrays_of_scalars_are_kept() {
        let v = json!({"team": "a", "n": 1.5, "ok": true, "tags": ["x", 2]});
        assert_eq!(contains(&v), v);
    }

    #[test]
    fn values_a_filter_reads_differently_are_left_out() {
        let v =
            json!({"team": "a", "e": [], "o": {"x": 1}, "z": null, "ao": [{"x": 1}], "aa": [[1]]});
        assert_eq!(contains(&v), json!({"team": "a"}));
    }

    #[test]
    fn not_an_object_constrains_nothing() {
        assert_eq!(contains(&json!(["a"])), json!({}));
        assert_eq!(contains(&json!("a")), json!({}));
    }

    #[test]
    fn merged_first_clause_wins_and_filters_stay_exact() {
        let a = json!({"team": "a", "o": {"x": 1}});
        let b = json!({"team": "b", "env": "prod"});
        let f = json!({"o": ["p", "q"], "sev": []});
        let got = implied_filter(&[
            Condition::Contains(&a),
            Condition::Contains(&b),
            Condition::Filter(&f),
        ]);
        assert_eq!(
            got,
            json!({"team": "a", "env": "prod", "o": ["p", "q"], "sev": []})
        );
    }

    /// The property itself, on rows: whenever `row @> value` (as Postgres
    /// defines it, modelled here for the shapes kept), the implied filter
    /// matches the row.
    #[test]
    fn implied_filter_accepts_every_containing_row() {
        let rows = [
            json!({"team": "a", "tags": ["x", "y", 2], "n": 1.0}),
            json!({"team": ["a", "b"], "tags": ["x"], "n": 1}),
            json!({"team": "a", "tags": ["y", "x", 2], "n": 1, "o": {"x": 1, "y": 2}}),
        ];
        let values = [
            json!({"team": "a"}),
            json!({"tags": ["x", 2]}),
            json!({"n": 1}),
            json!({"o": {"x": 1}, "team": "a"}),
            json!({"tags": [], "n": 1.00}),
        ];
        for row in &rows {
            for value in &values {
                if contains_json(row, value) {
                    let f = Filter::compile(&contains(value)).unwrap();
                    assert!(
                        f.exact_match(row).unwrap(),
                        "{row} @> {value} but the filter refuses it"
                    );
                }
            }
        }
    }

    /// jsonb's `@>` for objects, arrays and scalars (numbers by value).
    fn contains_json(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => y
                .iter()
                .all(|(k, v)| x.get(k).is_some_and(|w| contains_json(w, v))),
            (Value::Array(x), Value::Array(y)) => {
                y.iter().all(|v| x.iter().any(|w| contains_json(w, v)))
            }
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (x, y) => x == y,
        }
    }

    #[test]
    fn alternatives_give_the_keys_they_share_with_all_their_values() {
        let (a, b, c) = (
            json!({"team": "a", "env": "prod"}),
            json!({"team": ["b", "a"]}),
            json!({"team": "c", "o": {"x": 1}}),
        );
        assert_eq!(
            implied_filter(&[Condition::AnyOf(vec![&a, &b, &c])]),
            json!({"team": ["a", "b", "c"]})
        );
        // a key one alternative leaves free: every row passes it
        let d = json!({"env": "prod"});
        assert_eq!(
            implied_filter(&[Condition::AnyOf(vec![&a, &d])]),
            json!({"env": "prod"})
        );
        assert_eq!(implied_filter(&[Condition::AnyOf(vec![&b, &d])]), json!({}));
        // beside a containment, each key's first clause
        assert_eq!(
            implied_filter(&[Condition::AnyOf(vec![&a, &b]), Condition::Contains(&d)]),
            json!({"team": ["a", "b"], "env": "prod"})
        );
    }

    #[test]
    fn the_union_holds_for_every_row_an_alternative_holds_for() {
        let alternatives = [
            json!({"team": "a"}),
            json!({"team": ["b", "c"], "sev": 2}),
            json!({"team": "d", "sev": [2, 3]}),
        ];
        let refs: Vec<&Value> = alternatives.iter().collect();
        let f = Filter::compile(&implied_filter(&[Condition::AnyOf(refs)])).unwrap();
        let rows = [
            json!({"team": "a"}),
            json!({"team": ["b", "c", "x"], "sev": 2}),
            json!({"team": "d", "sev": [3, 2]}),
            json!({"team": "a", "sev": 9, "x": [1]}),
        ];
        for row in &rows {
            let holds = alternatives.iter().any(|alt| contains_json(row, alt));
            assert!(holds, "{row} is one of the alternatives' rows");
            assert!(f.exact_match(row).unwrap(), "{row} passes the union");
        }
    }

    #[test]
    fn whole_keys_only_where_the_filter_is_the_containment() {
        let whole = |cs: &[Condition]| whole_keys(cs, &implied_filter(cs));
        let (a, b) = (json!({"team": "a", "ok": true}), json!({"env": "prod"}));
        assert_eq!(
            whole(&[Condition::Contains(&a), Condition::Contains(&b)]),
            Some(vec!["env".into(), "ok".into(), "team".into()])
        );
        assert_eq!(whole(&[Condition::Contains(&json!({}))]), Some(vec![]));
        // a filter kept whole needs nothing more; OR'ed containments keep
        // their own test
        let f = json!({"sev": ["1", "2"]});
        assert_eq!(
            whole(&[Condition::Filter(&f), Condition::Contains(&b)]),
            Some(vec!["env".into()])
        );
        assert_eq!(whole(&[Condition::Filter(&f)]), Some(vec![]));
        assert_eq!(whole(&[Condition::Filter(&json!({}))]), Some(vec![]));
        assert_eq!(whole(&[Condition::Filter(&json!(["a"]))]), None);
        let either = [json!({"team": "a"}), json!({"team": "b"})];
        let alts: Vec<&Value> = either.iter().collect();
        assert_eq!(whole(&[Condition::AnyOf(alts)]), Some(vec![]));
        for v in [
            json!({"n": 1}),
            json!({"tags": ["x"]}),
            json!({"o": {"x": "y"}}),
            json!({"e": []}),
            json!({"z": null}),
            json!(["a"]),
            json!("a"),
        ] {
            assert_eq!(whole(&[Condition::Contains(&v)]), None, "{v}");
        }
        // a key another condition set first, to another clause
        let first = json!({"team": ["a", "b"]});
        let c = json!({"team": "a"});
        assert_eq!(
            whole(&[Condition::Filter(&first), Condition::Contains(&c)]),
            None
        );
        // ... or a filter whose clause another condition set first
        assert_eq!(
            whole(&[Condition::Contains(&c), Condition::Filter(&first)]),
            None
        );
        assert_eq!(
            whole(&[Condition::Filter(&c), Condition::Filter(&first)]),
            None
        );
        let d = json!({"team": "b"});
        assert_eq!(
            whole(&[Condition::Contains(&c), Condition::Contains(&d)]),
            None
        );
        assert_eq!(
            whole(&[Condition::Contains(&c), Condition::Contains(&c)]),
            Some(vec!["team".into()])
        );
    }

    /// The property itself: a row the filter accepts, with no array at a
    /// whole key, holds every containment.
    #[test]
    fn whole_keys_and_the_filter_imply_every_containment() {
        let values = [
            json!({"team": "a"}),
            json!({"team": "a", "ok": false}),
            json!({"env": "prod", "team": "a"}),
        ];
        let rows = [
            json!({"team": "a", "ok": false, "env": "prod"}),
            json!({"team": ["a"], "ok": false, "env": "prod"}),
            json!({"team": "a", "ok": [false], "env": ["prod", "x"]}),
            json!({"team": "b", "ok": false}),
            json!({"team": {"a": 1}, "ok": "false"}),
        ];
        for v in &values {
            let cs = [Condition::Contains(v)];
            let implied = implied_filter(&cs);
            let keys = whole_keys(&cs, &implied).expect("strings and booleans");
            let f = Filter::compile(&implied).unwrap();
            for row in &rows {
                let no_array = keys.iter().all(|k| !row[k.as_str()].is_array());
                let kept = f.exact_match(row).unwrap() && no_array;
                assert_eq!(kept, contains_json(row, v), "{row} @> {v}");
            }
        }
    }

    /// The same for filters beside containments: a row the implied filter
    /// accepts, with no array at a whole key, passes every filter.
    #[test]
    fn whole_keys_and_the_filter_imply_every_filter() {
        let filters = [
            json!({"team": ["a", "b"]}),
            json!({"env": "prod", "ok": false}),
            json!({}),
        ];
        let rows = [
            json!({"team": "a", "ok": false, "env": "prod"}),
            json!({"team": ["b"], "ok": [false], "env": "prod"}),
            json!({"team": "c", "ok": false, "env": ["prod"]}),
            json!({"ok": true}),
        ];
        let contain = json!({"ok": false});
        for f in &filters {
            for cs in [
                vec![Condition::Filter(f)],
                vec![Condition::Contains(&contain), Condition::Filter(f)],
                vec![Condition::Filter(f), Condition::Contains(&contain)],
            ] {
                let implied = implied_filter(&cs);
                let Some(keys) = whole_keys(&cs, &implied) else {
                    continue;
                };
                let all = Filter::compile(&implied).unwrap();
                let own = Filter::compile(f).unwrap();
                for row in &rows {
                    let no_array = keys.iter().all(|k| !row[k.as_str()].is_array());
                    if all.exact_match(row).unwrap() && no_array {
                        assert!(own.exact_match(row).unwrap(), "{row} passes {f}");
                        assert!(
                            contains_json(row, &contain) || cs.len() == 1,
                            "{row} @> {contain}"
                        );
                    }
                }
            }
        }
    }
}
