//! Log lines on the way out, as read_log (and log subscriptions) return
//! them: the line object, the screen every line passes, the session secrets
//! a read scans for, and the error for a level or category that does not
//! exist.

use crate::debug::log::line::LogLine;
use crate::read::args::{cut_utf8, json_string, ArgError, ECHO_CAP};
use crate::read::result::time;
use rete_actors::ReadOnlySessions;
use rete_redact::SecretSet;
use serde_json::{json, Value};
use std::time::Duration;

/// How long a session may take to hand over its secrets before the read
/// counts them as unreadable. A session answers between two inputs, so only
/// a session that is restarting or swamped takes longer.
pub(crate) const SECRETS_TIMEOUT: Duration = Duration::from_secs(1);

/// Every running session's id and secrets, read at once; None for a
/// session whose secrets could not be read within [`SECRETS_TIMEOUT`]. Log
/// subscriptions' polls read them the same way.
pub(crate) async fn session_secrets(
    sessions: &ReadOnlySessions,
) -> Vec<(String, Option<SecretSet>)> {
    let mut reads = tokio::task::JoinSet::new();
    for session in sessions.sessions() {
        reads.spawn(async move {
            let id = session.id().as_str().to_owned();
            let read = session.read(|view| view.secrets().clone());
            let secrets = tokio::time::timeout(SECRETS_TIMEOUT, read)
                .await
                .ok()
                .and_then(Result::ok);
            (id, secrets)
        });
    }
    let mut out = Vec::new();
    while let Some(done) = reads.join_next().await {
        // A read task cannot panic; were it lost, its session is unknown
        // here, and with no session listed the read stalls.
        if let Ok(pair) = done {
            out.push(pair);
        }
    }
    out
}

/// True when `line` must not be returned: it holds a secret, or its cut
/// fell inside one (what was kept ends with four or more of its bytes).
pub(crate) fn withholds(scan: &SecretSet, line: &LogLine) -> bool {
    scan.contains_secret(&line.text)
        || (line.kept.is_some() && scan.cut_ends_in_secret(line.kept_text()))
}

/// A line as the contract shows it.
pub(crate) fn line_object(line: &LogLine) -> Value {
    json!({
        "category": line.category.as_str(),
        "level": line.level.as_str(),
        "seq": line.seq,
        "text": &*line.text,
        "time": time(line.time),
        "untrusted": true,
    })
}

/// `unknown level: "<name>"`, the name cut to 64 bytes and JSON-escaped
/// (subscribe's log filter words its errors the same way).
pub(crate) fn unknown_name(what: &str, name: &str) -> ArgError {
    ArgError::new(format!(
        "unknown {what}: {}",
        json_string(cut_utf8(name, ECHO_CAP))
    ))
}
