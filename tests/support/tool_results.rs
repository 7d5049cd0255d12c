//! Reading a tool's JSON result: the fields several suites look at.

use serde_json::Value;

/// The result's `withheld` count (0 when absent).
pub fn withheld(v: &Value) -> u64 {
    v.get("withheld").and_then(Value::as_u64).unwrap_or(0)
}

/// Every string in `v`, keys included, appended to `out`.
pub fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out)
        }),
        _ => {}
    }
}

/// The cursor the result holds under `key` (empty when absent).
pub fn cursor_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}
