//! Message objects as the read tools return them.

use super::result::time;
use rete_engine::row::Row;
use serde_json::{json, Map, Value};

/// `{"seq","id?","time","from","kind","payload","untrusted"}` for one row.
/// The payload is the engine's structured payload (with its `caseName`),
/// never display text.
pub(crate) fn message_json(row: &Row) -> Value {
    let mut m = Map::new();
    m.insert("seq".into(), json!(row.seq));
    if let Some(id) = &row.msgid {
        m.insert("id".into(), json!(id));
    }
    m.insert("time".into(), time(row.time));
    m.insert("from".into(), json!(row.from));
    m.insert("kind".into(), json!(row.kind().as_str()));
    m.insert(
        "payload".into(),
        serde_json::to_value(&row.payload).unwrap_or(Value::Null),
    );
    m.insert("untrusted".into(), Value::Bool(true));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::Payload;

    #[test]
    fn shape_matches_the_contract() {
        let row = Row {
            seq: 42,
            time: UnixMillis(1_790_769_600_999),
            msgid: Some("msgid-123".into()),
            from: "alice".into(),
            history: false,
            payload: Payload::Privmsg { text: "hi".into() },
        };
        assert_eq!(
            super::super::result::encode(&message_json(&row)),
            r#"{"from":"alice","id":"msgid-123","kind":"privmsg","payload":{"caseName":"privmsg","text":"hi"},"seq":42,"time":"2026-09-30T12:00:00Z","untrusted":true}"#
        );
    }
}
