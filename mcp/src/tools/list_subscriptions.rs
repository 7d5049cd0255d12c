//! list_subscriptions: every live subscription, oldest first, with its
//! counts and whether what it names is there.
//!
//! The registry answers what it holds; the state (session_disconnected,
//! buffer_gone, active) needs the sessions, so it is worked out here, with
//! one read of each session and only when some subscription names one.

use crate::read::result::{encoded_len, time, ToolOutcome, BUDGET};
use crate::tools::context::ToolContext;
use crate::tools::registry::{outcome_of, Declared, Tier, ToolResult};
use crate::tools::spec::{Effect, ToolSpec};
use crate::tools::updates_call::asked;
use crate::updates::registry::Listed;
use crate::updates::Owner;
use rete_engine::event::ConnState;
use rete_engine::ids::{BufferId, SessionId};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

const NAME: &str = "list_subscriptions";

const DESCRIPTION: &str = "Every live subscription, oldest first: its filters, when it was made \
and last read, how many events are pending and dropped, and its state (session_disconnected, \
buffer_gone or active); a raw or log subscription shows paused: \"debug off\" while control.debug \
is off. Listing does not count as reading: it does not keep a subscription from expiring.";

/// The list_subscriptions tool, declared.
pub(crate) const TOOL: Declared = Declared {
    spec: ToolSpec {
        name: NAME,
        tier: Tier::Release,
        description: DESCRIPTION,
        effect: Effect::ReadOnly,
        args: &[],
    },
    run: |ctx, _args| outcome_of(run(ctx)),
};

/// What a session shows of itself for the states: None when it has no
/// running engine (gone, or its actor is being restarted).
type Sessions = HashMap<SessionId, Option<(ConnState, HashSet<BufferId>)>>;

async fn run(ctx: &ToolContext) -> ToolResult {
    let listed = ctx
        .updates
        .list_as(Owner::of(&ctx.principal), &ctx.cancel)
        .await
        .map_err(asked)?;
    let names_any = listed
        .iter()
        .any(|l| !l.sessions.is_empty() || !l.buffers.is_empty());
    let sessions = if names_any {
        read_sessions(ctx).await?
    } else {
        Sessions::new()
    };
    let mut entries = Vec::new();
    let mut size = encoded_len(&json!({"subscriptions": [], "truncated": true}));
    let mut truncated = false;
    // Raw and log subscriptions collect only while the capture is on.
    let paused = !ctx.settings.debug || !ctx.capture.is_on();
    for l in &listed {
        let mut entry = entry(l, state(l, &sessions));
        if paused && l.debug {
            entry["paused"] = Value::from(PAUSED);
        }
        let len = encoded_len(&entry) + 1;
        if size + len > BUDGET {
            truncated = true;
            break;
        }
        size += len;
        entries.push(entry);
    }
    let mut out = json!({ "subscriptions": entries });
    if truncated {
        out["truncated"] = Value::Bool(true);
    }
    Ok(out)
}

async fn read_sessions(ctx: &ToolContext) -> Result<Sessions, ToolOutcome> {
    let mut out = Sessions::new();
    for reader in ctx.sessions.sessions() {
        // Out of reach is absent: a subscription naming such a session or
        // buffer shows the state an unknown id would.
        let reach = ctx.reach.clone();
        let read = reader.read(move |view| {
            reach.session(&view).then(|| {
                (
                    view.state(),
                    view.buffers()
                        .filter(|b| reach.buffer(&view, b))
                        .map(|b| b.id().clone())
                        .collect(),
                )
            })
        });
        let shown = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolOutcome::Cancelled),
            r = read => r.ok(),
        };
        match shown {
            Some(None) => {}
            Some(Some(shown)) => {
                out.insert(reader.id().clone(), Some(shown));
            }
            None => {
                out.insert(reader.id().clone(), None);
            }
        }
    }
    Ok(out)
}

/// The contract's states, in its order.
fn state(l: &Listed, sessions: &Sessions) -> &'static str {
    let running = |s: &SessionId| {
        sessions
            .get(s)
            .and_then(Option::as_ref)
            .is_some_and(|(state, _)| *state != ConnState::Disconnected)
    };
    let holder = |b: &BufferId| {
        sessions.iter().find_map(|(id, shown)| {
            shown
                .as_ref()
                .filter(|(_, buffers)| buffers.contains(b))
                .map(|_| id)
        })
    };
    let session_down = l.sessions.iter().any(|s| !running(s))
        || l.buffers
            .iter()
            .any(|b| holder(b).is_some_and(|s| !running(s)));
    if session_down {
        return "session_disconnected";
    }
    let listed_by_connected = |b: &BufferId| {
        sessions
            .values()
            .flatten()
            .any(|(state, buffers)| *state != ConnState::Disconnected && buffers.contains(b))
    };
    if l.buffers.iter().any(|b| !listed_by_connected(b)) {
        return "buffer_gone";
    }
    "active"
}

/// `paused` on a raw or log subscription while control.debug is off.
const PAUSED: &str = "debug off";

fn entry(l: &Listed, state: &str) -> Value {
    let mut e = json!({
        "id": l.id.as_str(),
        "filters": l.filters,
        "created": time(l.created),
        "pending": l.pending,
        "dropped": l.dropped,
        "state": state,
    });
    if let Some(read) = l.last_read {
        e["last_read"] = time(read);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::SubId;
    use rete_engine::clock::UnixMillis;

    const S1: &str = "6A1E9D4C-0000-4000-8000-000000000001";
    const S2: &str = "6A1E9D4C-0000-4000-8000-000000000002";
    const B1: &str = "0B0B0B0B-0000-5000-8000-000000000001";

    fn listed(sessions: &[&str], buffers: &[&str]) -> Listed {
        Listed {
            id: SubId::from_bits(1),
            filters: json!({}),
            created: UnixMillis(0),
            last_read: None,
            pending: 0,
            dropped: 0,
            sessions: sessions
                .iter()
                .map(|s| SessionId::parse(s).unwrap())
                .collect(),
            buffers: buffers.iter().map(|b| BufferId::from_client(b)).collect(),
            debug: false,
        }
    }

    fn shown(state: ConnState, buffers: &[&str]) -> Option<(ConnState, HashSet<BufferId>)> {
        Some((
            state,
            buffers.iter().map(|b| BufferId::from_client(b)).collect(),
        ))
    }

    #[test]
    fn states_follow_the_contract_order() {
        let mut sessions = Sessions::new();
        let s1 = SessionId::parse(S1).unwrap();
        sessions.insert(s1.clone(), shown(ConnState::Connected, &[B1]));
        assert_eq!(state(&listed(&[], &[]), &sessions), "active");
        assert_eq!(state(&listed(&[S1], &[B1]), &sessions), "active");
        assert_eq!(
            state(&listed(&[S2], &[]), &sessions),
            "session_disconnected"
        );
        assert_eq!(
            state(
                &listed(&[], &["0B0B0B0B-0000-5000-8000-0000000000FF"]),
                &sessions
            ),
            "buffer_gone"
        );
        assert_eq!(
            state(
                &listed(&[S2], &["0B0B0B0B-0000-5000-8000-0000000000FF"]),
                &sessions
            ),
            "session_disconnected",
            "session_disconnected comes before buffer_gone"
        );
        sessions.insert(s1.clone(), shown(ConnState::Disconnected, &[B1]));
        assert_eq!(
            state(&listed(&[], &[B1]), &sessions),
            "session_disconnected"
        );
        sessions.insert(s1.clone(), shown(ConnState::Reconnecting, &[B1]));
        assert_eq!(
            state(&listed(&[S1], &[B1]), &sessions),
            "active",
            "reconnecting counts as active"
        );
        sessions.insert(s1, None);
        assert_eq!(
            state(&listed(&[S1], &[]), &sessions),
            "session_disconnected"
        );
    }

    #[test]
    fn an_entry_leaves_out_last_read_until_a_read() {
        let mut l = listed(&[], &[]);
        let e = crate::read::result::encode(&entry(&l, "active"));
        assert!(!e.contains("last_read"));
        l.last_read = Some(UnixMillis(1_790_769_600_000));
        let e = crate::read::result::encode(&entry(&l, "active"));
        assert!(e.contains(r#""last_read":"2026-09-30T12:00:00Z""#), "{e}");
    }
}
