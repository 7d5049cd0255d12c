//! Building blocks of tools/list entries, so every descriptor is closed and
//! annotated the same way.

use serde_json::{json, Map, Value};

/// A closed input schema (`additionalProperties: false`) naming exactly
/// `properties`; `required` lists the required ones (omitted when none).
pub fn closed_object(properties: Map<String, Value>, required: &[&str]) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A string argument.
pub fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// An array-of-strings argument.
pub fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// A string argument with its default.
pub fn string_with_default(default: &str, description: &str) -> Value {
    json!({"type": "string", "default": default, "description": description})
}

/// An integer argument with its default (no maximum: larger values are
/// clamped, not refused).
pub fn integer(default: i64, description: &str) -> Value {
    json!({"type": "integer", "default": default, "description": description})
}

/// A boolean argument with its default.
pub fn boolean(default: bool, description: &str) -> Value {
    json!({"type": "boolean", "default": default, "description": description})
}

/// The annotations of a tool that changes nothing.
pub fn read_only() -> Value {
    json!({ "readOnlyHint": true })
}

/// The annotations of subscribe and unsubscribe: they change only the
/// subscriptions, never IRC, and repeating one is not a no-op.
pub fn changes_subscriptions() -> Value {
    json!({ "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false })
}

/// A tools/list entry.
pub fn descriptor(name: &str, description: &str, input_schema: Value, annotations: Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
        "annotations": annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_closed() {
        let mut props = Map::new();
        props.insert("session".into(), json!({"type": "string"}));
        let s = closed_object(props, &["session"]);
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["required"], json!(["session"]));
        let empty = closed_object(Map::new(), &[]);
        assert_eq!(
            empty,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }
}
