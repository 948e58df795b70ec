//! Errors a user can cause. Each names the problem and the fix, because the
//! glue turns them into Postgres ERRORs that reach the application verbatim.

use std::fmt;

/// A user-facing error: `message` says what is wrong, `hint` what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: String,
}

/// Coarse classes, mapped to SQLSTATEs by the glue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The JSON is valid but has the wrong shape (22023 invalid_parameter_value).
    InvalidParameter,
    /// Text that should be a ULID is not one (22P02 invalid_text_representation).
    InvalidText,
    /// A value outside what the format can hold (22003 numeric_value_out_of_range / 22008).
    OutOfRange,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (hint: {})", self.message, self.hint)
    }
}

impl std::error::Error for Error {}

/// The JSON type name Postgres' `jsonb_typeof` would print, for messages.
pub fn json_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
