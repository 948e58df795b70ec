//! Column filters: `{"priority_id": [1, 2], "status": "open"}` means the
//! row's `priority_id` is 1 or 2 AND its `status` is 'open', compared with
//! each column type's own equality, as `priority_id IN (1, 2) AND status =
//! 'open'` would. They are a separate argument from the attribute filter
//! (`columns => ...`), so a column is never confused with an attribute key.
//!
//! This module only checks the shape and turns each value into the text the
//! column type's input function reads; the glue resolves the names against
//! the table and converts the values.
//!
//! - a scalar: the column equals it (strings as they are, numbers as
//!   written, `true`/`false`);
//! - an array of scalars: the column equals one of them (`[]` matches no
//!   row);
//! - `null`, alone or in an array: the column IS NULL;
//! - `{}` matches every row; objects and nested arrays are errors.

use serde_json::Value;

use crate::error::{json_type_name, Error, ErrorKind};

/// Columns a column filter may not name, with what to do instead.
const RESERVED: [(&str, &str); 3] = [
    (
        "organisation_id",
        "the tenant is alerts_search's second argument",
    ),
    (
        "attribute_values",
        "attributes go in the filter argument: filter => '{\"service\": \"api\"}'",
    ),
    (
        "attribute_values_bitmap",
        "the bitmap is derived from the attributes; filter on attributes in the filter argument",
    ),
];

/// One column of a column filter and the values it accepts, each as the
/// text for the column type's input function (None: SQL NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnClause {
    pub column: String,
    pub values: Vec<Option<String>>,
}

const SHAPE_HINT: &str = "write column filters as columns => '{\"priority_id\": [1, 2], \"status\": \"open\"}': a column name and one value, or an array of values for one of several";

/// Parses a column filter object into its clauses, in the object's key
/// order.
pub fn parse(columns: &Value) -> Result<Vec<ColumnClause>, Error> {
    let Value::Object(map) = columns else {
        return Err(Error::new(
            ErrorKind::InvalidParameter,
            format!(
                "columns must be a JSON object of column names and values, got a JSON {}",
                json_type_name(columns)
            ),
            SHAPE_HINT,
        ));
    };
    map.iter()
        .map(|(column, v)| {
            if let Some((_, why)) = RESERVED.iter().find(|(name, _)| name == column) {
                return Err(Error::new(
                    ErrorKind::InvalidParameter,
                    format!("columns cannot filter on column \"{column}\""),
                    *why,
                ));
            }
            let values = match v {
                Value::Array(items) => items
                    .iter()
                    .map(|item| scalar_text(column, item, true))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![scalar_text(column, other, false)?],
            };
            Ok(ColumnClause {
                column: column.clone(),
                values,
            })
        })
        .collect()
}

/// The input-function text of one value of column `column`.
fn scalar_text(column: &str, v: &Value, in_array: bool) -> Result<Option<String>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Array(_) | Value::Object(_) => Err(Error::new(
            ErrorKind::InvalidParameter,
            format!(
                "columns: the value of column \"{column}\" is a JSON {}{}",
                json_type_name(v),
                if in_array { " inside an array" } else { "" }
            ),
            "give a column one value (a string, number, boolean or null) or an array of them; write other values as strings in the column type's input format, e.g. \"{1,2}\" for an array column",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn clause(column: &str, values: &[Option<&str>]) -> ColumnClause {
        ColumnClause {
            column: column.into(),
            values: values.iter().map(|v| v.map(String::from)).collect(),
        }
    }

    #[test]
    fn scalars_arrays_and_null() {
        let parsed = parse(
            &json!({"priority_id": [1, 2], "status": "open", "acked": false, "closed_at": null}),
        )
        .unwrap();
        let mut parsed = parsed;
        parsed.sort_by(|a, b| a.column.cmp(&b.column));
        assert_eq!(
            parsed,
            vec![
                clause("acked", &[Some("false")]),
                clause("closed_at", &[None]),
                clause("priority_id", &[Some("1"), Some("2")]),
                clause("status", &[Some("open")]),
            ]
        );
    }

    #[test]
    fn numbers_keep_their_text() {
        let v: Value = serde_json::from_str(r#"{"score": [1.50, 1000, -0]}"#).unwrap();
        assert_eq!(
            parse(&v).unwrap(),
            vec![clause("score", &[Some("1.50"), Some("1000"), Some("-0")])]
        );
    }

    #[test]
    fn empty_object_and_empty_array() {
        assert!(parse(&json!({})).unwrap().is_empty());
        assert_eq!(
            parse(&json!({"status": []})).unwrap(),
            vec![clause("status", &[])]
        );
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let e = parse(&json!([1])).unwrap_err();
        assert!(e.message.contains("got a JSON array"), "{}", e.message);
        let e = parse(&json!({"status": {"a": 1}})).unwrap_err();
        assert!(
            e.message.contains("\"status\" is a JSON object"),
            "{}",
            e.message
        );
        let e = parse(&json!({"status": [[1]]})).unwrap_err();
        assert!(e.message.contains("array inside an array"), "{}", e.message);
    }

    #[test]
    fn reserved_columns_are_refused_with_the_right_argument() {
        for (name, hint) in [
            ("organisation_id", "second argument"),
            ("attribute_values", "filter argument"),
        ] {
            let e = parse(&json!({ name: "x" })).unwrap_err();
            assert!(e.message.contains(name) && e.hint.contains(hint), "{e}");
        }
    }
}
