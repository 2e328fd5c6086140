//! Tolerant arguments: what a model sent, conformed to the tool's own input
//! schema where only one reading is possible, with a note for each thing
//! that was understood. The schema the model sees stays exact; this only
//! widens what is accepted.
//!
//! Accepted, where the schema names one type for the field:
//! - a number or boolean sent as a string (`"50"` for an integer, `"true"`);
//! - a whole number written as a float (`3.0` for an integer);
//! - `null` for an optional field that does not allow `null` (as absent);
//! - a list or object sent as a JSON string (`"[{…}]"`);
//! - a single value where a list of that kind of value is expected.
//!
//! Anything else is left as it is, for validation to report.

use serde_json::Value;

/// How deep nested objects and lists are followed.
const MAX_DEPTH: usize = 6;
/// Items of one list looked at, at most.
const MAX_ITEMS: usize = 1000;
/// Notes shown at most; the rest are counted.
const MAX_NOTES: usize = 6;
/// Characters of an original value quoted in a note.
const MAX_QUOTE: usize = 40;

/// Conform `input` to `schema` (a JSON-Schema object), returning what was
/// understood, one short phrase each (`` `limit: "50"` as 50 ``).
pub fn conform_to_schema(schema: &Value, input: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    conform_object(schema, input, "", 0, &mut notes);
    notes
}

/// The one line a tool result carries about what was understood, if
/// anything was: `Note: understood … ; … .`, bounded.
pub fn understood_note(notes: &[String]) -> Option<String> {
    if notes.is_empty() {
        return None;
    }
    let shown: Vec<&str> = notes.iter().take(MAX_NOTES).map(String::as_str).collect();
    let more = notes.len().saturating_sub(MAX_NOTES);
    let tail = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    Some(format!("[Note: understood {}{tail}.]", shown.join("; ")))
}

fn conform_object(schema: &Value, value: &mut Value, at: &str, depth: usize, notes: &mut Vec<String>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let Some(obj) = value.as_object_mut() else { return };
    // Sorted: the notes read the same whatever order the map keeps.
    let mut keys: Vec<String> = obj.keys().filter(|k| props.contains_key(*k)).cloned().collect();
    keys.sort();
    for key in keys {
        let field = &props[&key];
        let name = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
        if obj.get(&key).is_some_and(Value::is_null) && !required.contains(&key.as_str()) && !allows_null(field) {
            obj.remove(&key);
            notes.push(format!("`{name}: null` as not given"));
            continue;
        }
        if let Some(v) = obj.get_mut(&key) {
            conform_value(field, v, &name, depth + 1, notes);
        }
    }
}

fn conform_value(schema: &Value, v: &mut Value, name: &str, depth: usize, notes: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(ty) = single_type(schema) else { return };
    if let Some((new, how)) = coerce(ty, schema, v) {
        notes.push(match how {
            How::Value => format!("`{name}: {}` as {}", quote(v), quote(&new)),
            How::JsonText => format!("`{name}` sent as JSON text, as that {ty}"),
            How::OneItem => format!("`{name}: {}` as a one-item list", quote(v)),
        });
        *v = new;
    }
    match (ty, v) {
        ("object", v @ Value::Object(_)) => conform_object(schema, v, name, depth, notes),
        ("array", Value::Array(items)) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().take(MAX_ITEMS).enumerate() {
                    if item.is_null() {
                        continue;
                    }
                    conform_value(item_schema, item, &format!("{name}[{i}]"), depth + 1, notes);
                }
            }
        }
        _ => {}
    }
}

/// How a value was read.
enum How {
    /// As another value of the right type.
    Value,
    /// As the list or object its JSON text spells.
    JsonText,
    /// As a list of one.
    OneItem,
}

/// The value `v` unambiguously means for a field of type `ty`, if it is not one already.
fn coerce(ty: &str, schema: &Value, v: &Value) -> Option<(Value, How)> {
    match (ty, v) {
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(|n| (Value::from(n), How::Value)),
        ("integer", Value::Number(n)) if !n.is_i64() && !n.is_u64() => {
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| (Value::from(f as i64), How::Value))
        }
        ("number", Value::String(s)) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<i64>() {
                return Some((Value::from(n), How::Value));
            }
            let f = s.parse::<f64>().ok().filter(|f| f.is_finite())?;
            serde_json::Number::from_f64(f).map(|n| (Value::Number(n), How::Value))
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some((Value::Bool(true), How::Value)),
            "false" => Some((Value::Bool(false), How::Value)),
            _ => None,
        },
        ("array", Value::String(s)) if s.trim_start().starts_with('[') => {
            serde_json::from_str::<Value>(s).ok().filter(Value::is_array).map(|a| (a, How::JsonText))
        }
        ("object", Value::String(s)) if s.trim_start().starts_with('{') => {
            serde_json::from_str::<Value>(s).ok().filter(Value::is_object).map(|o| (o, How::JsonText))
        }
        ("array", Value::Array(_) | Value::Null) => None,
        ("array", single) => {
            let item_type = schema.get("items").and_then(single_type)?;
            json_type_fits(item_type, single).then(|| (Value::Array(vec![single.clone()]), How::OneItem))
        }
        _ => None,
    }
}

/// The field's type when the schema names exactly one besides `null`.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => {
            let mut named = types.iter().filter_map(Value::as_str).filter(|t| *t != "null");
            let first = named.next()?;
            named.next().is_none().then_some(first)
        }
        _ => None,
    }
}

fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        // No single type named: null may be meant; leave it to validation.
        _ => true,
    }
}

fn json_type_fits(ty: &str, v: &Value) -> bool {
    match (ty, v) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        ("object", Value::Object(_)) => true,
        _ => false,
    }
}

/// A value as a note quotes it: its JSON, cut to [`MAX_QUOTE`] characters.
fn quote(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= MAX_QUOTE {
        return text;
    }
    let cut: String = text.chars().take(MAX_QUOTE).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "all": {"type": "boolean"},
                "maybe": {"type": ["string", "null"]},
                "ignore": {"type": "array", "items": {"type": "string"}},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"old": {"type": "string"}, "all": {"type": "boolean"}},
                        "required": ["old"]
                    }
                }
            },
            "required": ["path"]
        })
    }

    #[test]
    fn strings_floats_and_nulls_become_what_the_schema_says() {
        let mut v = json!({
            "path": "a", "offset": " 5 ", "limit": null, "ratio": "0.5", "all": "True", "maybe": null, "extra": "7"
        });
        let notes = conform_to_schema(&schema(), &mut v);
        assert_eq!(v, json!({"path": "a", "offset": 5, "ratio": 0.5, "all": true, "maybe": null, "extra": "7"}));
        assert_eq!(
            notes,
            vec![
                "`all: \"True\"` as true".to_string(),
                "`limit: null` as not given".into(),
                "`offset: \" 5 \"` as 5".into(),
                "`ratio: \"0.5\"` as 0.5".into(),
            ]
        );
        let mut v = json!({"path": "a", "limit": 3.0});
        assert_eq!(conform_to_schema(&schema(), &mut v), vec!["`limit: 3.0` as 3".to_string()]);
        assert_eq!(v, json!({"path": "a", "limit": 3}));
    }

    #[test]
    fn lists_from_json_text_or_one_item_and_their_items() {
        let mut v = json!({"path": "a", "ignore": "target", "edits": "[{\"old\": \"x\", \"all\": \"false\"}]"});
        let notes = conform_to_schema(&schema(), &mut v);
        assert_eq!(v, json!({"path": "a", "ignore": ["target"], "edits": [{"old": "x", "all": false}]}));
        assert_eq!(
            notes,
            vec![
                "`edits` sent as JSON text, as that array".to_string(),
                "`edits[0].all: \"false\"` as false".into(),
                "`ignore: \"target\"` as a one-item list".into(),
            ]
        );
        let mut single = json!({"path": "a", "edits": {"old": "x"}});
        conform_to_schema(&schema(), &mut single);
        assert_eq!(single, json!({"path": "a", "edits": [{"old": "x"}]}));
    }

    #[test]
    fn what_has_no_single_reading_is_left_for_validation() {
        let original = json!({
            "path": null, "offset": "five", "limit": 2.5, "all": "yes", "ignore": 3, "edits": "not json", "ratio": "NaN"
        });
        let mut v = original.clone();
        assert_eq!(conform_to_schema(&schema(), &mut v), Vec::<String>::new());
        assert_eq!(v, original);
    }

    #[test]
    fn the_note_is_bounded() {
        assert_eq!(understood_note(&[]), None);
        let many: Vec<String> = (0..9).map(|i| format!("n{i}")).collect();
        assert_eq!(understood_note(&many).unwrap(), "[Note: understood n0; n1; n2; n3; n4; n5 (and 3 more).]");
    }
}
