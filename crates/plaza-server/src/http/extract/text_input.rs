//! The rule every text a client sends keeps, whatever carries it: it holds
//! no NUL byte. PostgreSQL cannot store one in a text, and no field of
//! Plaza has a use for one, so a NUL is refused before any handler runs,
//! naming the field, in the answering surface's validation shape (422, or
//! 400 where the surface answers invalid input with 400).
//!
//! Query strings are checked for every route by the request layer
//! ([`refuse_nul_in_query`]); bodies by the extractors that read them:
//! JSON ([`json_field_with_nul`], in [`parse_json`](super::json::parse_json)),
//! URL-encoded forms ([`refuse_nul_in_form`], in [`AppForm`](super::AppForm))
//! and the text fields of multipart forms ([`refuse_nul_in_field`]); a path
//! parameter that is a name by [`TextPath`](super::TextPath). Id path
//! parameters are digits only, so a NUL there is a path that names nothing
//! (404).

use memchr::memmem;
use serde_json::Value;

use crate::http::error::{AppError, FieldError};

/// What a field holding a NUL byte is told.
const REASON: &str = "must not contain a NUL byte";

/// The problem of `field`, which holds a NUL byte.
pub fn nul_field(field: impl Into<String>) -> FieldError {
    FieldError::new(field, REASON).with_kind(
        "invalid_string",
        "text without NUL bytes",
        "text with a NUL byte",
    )
}

/// The refusal of `field`, which holds a NUL byte.
pub fn nul_refusal(field: impl Into<String>) -> AppError {
    let field = nul_field(field);
    AppError::Validation {
        message: format!("invalid {}: {REASON}", field.field),
        fields: vec![field],
    }
}

/// Refuses `value` of the field `name` when it holds a NUL byte.
pub fn refuse_nul_in_field(name: &str, value: &[u8]) -> Result<(), AppError> {
    match memchr::memchr(0, value) {
        Some(_) => Err(nul_refusal(shown(name))),
        None => Ok(()),
    }
}

/// Refuses a query string with a parameter whose name or value holds a NUL
/// byte. A URI cannot carry a raw NUL, so only `%00` decodes to one, and a
/// query without it passes at the cost of one search.
pub fn refuse_nul_in_query(query: &str) -> Result<(), AppError> {
    if memmem::find(query.as_bytes(), b"%00").is_none() {
        return Ok(());
    }
    refuse_nul_in_form(query.as_bytes())
}

/// Refuses URL-encoded pairs (a query string or a form body) with a name or
/// value holding a NUL byte, naming the first such parameter.
pub fn refuse_nul_in_form(encoded: &[u8]) -> Result<(), AppError> {
    for (name, value) in url::form_urlencoded::parse(encoded) {
        if name.contains('\0') || value.contains('\0') {
            return Err(nul_refusal(shown(&name)));
        }
    }
    Ok(())
}

/// The field of the JSON `body` holding a NUL byte, as parse errors name
/// fields (`tags.2`, `metadata.note`; `body` for the whole), if one does:
/// a key or a string value. JSON carries a NUL only as the escape `\u0000`
/// (a raw control character is malformed), so a body without that escape
/// passes at the cost of one search. A body that does not parse is left to
/// its parser, which refuses it.
pub fn json_field_with_nul(body: &[u8]) -> Option<String> {
    if !has_nul_escape(body) {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    Some(nul_path(&value, "").unwrap_or_else(|| "body".to_owned()))
}

/// Whether `body` holds `\u0000` as an escape: its backslash is not itself
/// escaped, that is, an odd number of backslashes runs up to the `u`.
fn has_nul_escape(body: &[u8]) -> bool {
    memmem::find_iter(body, b"\\u0000").any(|at| {
        let backslashes = body[..=at]
            .iter()
            .rev()
            .take_while(|byte| **byte == b'\\')
            .count();
        backslashes % 2 == 1
    })
}

/// The path, below `path`, of the first key or string in `value` holding
/// a NUL byte.
fn nul_path(value: &Value, path: &str) -> Option<String> {
    let named = |path: &str| {
        if path.is_empty() {
            "body".to_owned()
        } else {
            path.to_owned()
        }
    };
    match value {
        Value::String(text) => text.contains('\0').then(|| named(path)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| nul_path(item, &format!("{}.{index}", named(path)))),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            let inner = if path.is_empty() {
                shown(key)
            } else {
                format!("{path}.{}", shown(key))
            };
            if key.contains('\0') {
                Some(inner)
            } else {
                nul_path(item, &inner)
            }
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

/// A field name as a refusal shows it: a NUL in it written `\0`.
fn shown(name: &str) -> String {
    name.replace('\0', "\\0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(error: AppError) -> String {
        match error {
            AppError::Validation { fields, .. } => fields[0].field.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_names_the_field_holding_an_escaped_nul() {
        assert_eq!(
            json_field_with_nul(br#"{"name": "a\u0000b"}"#).as_deref(),
            Some("name")
        );
        assert_eq!(
            json_field_with_nul(br#"{"a": {"tags": ["x", "\u0000"]}}"#).as_deref(),
            Some("a.tags.1")
        );
        assert_eq!(
            json_field_with_nul(br#"{"k\u0000": 1}"#).as_deref(),
            Some("k\\0")
        );
        assert_eq!(
            json_field_with_nul(br#"["\\\u0000"]"#).as_deref(),
            Some("body.0")
        );
        assert_eq!(json_field_with_nul(br#""\u0000""#).as_deref(), Some("body"));
    }

    #[test]
    fn json_without_a_nul_passes() {
        assert_eq!(json_field_with_nul(br#"{"name": "a\\u0000b"}"#), None);
        assert_eq!(json_field_with_nul(br#"{"name": "\\\\u0000"}"#), None);
        assert_eq!(json_field_with_nul(br#"{"name": "\u0001"}"#), None);
        assert_eq!(
            json_field_with_nul(br#"{"name": "\u0000"#),
            None,
            "malformed"
        );
    }

    #[test]
    fn queries_and_forms_name_the_parameter_holding_a_nul() {
        assert!(refuse_nul_in_query("a=1&b=%2500&c=%E2%80%AE").is_ok());
        assert_eq!(
            field_of(refuse_nul_in_query("a=1&search=x%00y").unwrap_err()),
            "search"
        );
        assert_eq!(field_of(refuse_nul_in_query("a%00=1").unwrap_err()), "a\\0");
        assert_eq!(
            field_of(refuse_nul_in_form(b"email=a\0b&password=x").unwrap_err()),
            "email"
        );
        assert_eq!(
            field_of(refuse_nul_in_field("category", b"a\0").unwrap_err()),
            "category"
        );
    }
}
