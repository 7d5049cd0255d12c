//! One poll of the rings raw and log subscriptions cover, and the reads of
//! a new subscription's starting points in them: the reads only.
//! It runs as a task beside the registry actor, which sends it a
//! [`PollPlan`] and gets the [`PollData`] back as a message, so the actor
//! never awaits. A raw tap is read with the session's secret scan, as
//! raw_since reads it; the log ring with every session's secrets, as
//! read_log reads it (stalled when they cannot be read).

use super::feed::Starts;
use super::registry::{LogPoll, PollData, PollPlan, TapPoll};
use crate::debug::attribution::SessionFacts;
use crate::debug::log::ring::ReadRequest;
use crate::debug::Capture;
use crate::read::log::{session_secrets, SECRETS_TIMEOUT};
use crate::read::withheld::Withholder;
use rete_actors::ReadOnlySessions;
use rete_engine::ids::SessionId;

/// Reads what `plan` asks for. A session that is gone, or whose secrets or
/// tap do not answer in time, is read as None; a log ring the capture no
/// longer holds is not read.
pub(crate) async fn read(plan: PollPlan, capture: Capture, sessions: ReadOnlySessions) -> PollData {
    let mut data = PollData::default();
    let readers = sessions.sessions();
    for (id, after) in plan.raw {
        let read = async {
            let session = readers.iter().find(|s| s.id() == &id)?;
            let taps = capture.raw()?;
            let scan = session.read(|view| (Withholder::for_view(&view), SessionFacts::of(&view)));
            let (withhold, facts) = tokio::time::timeout(SECRETS_TIMEOUT, scan)
                .await
                .ok()?
                .ok()?;
            let window = taps.read(&id, after, usize::MAX).await.ok()?;
            Some(((withhold, window.lines, window.dropped_through), facts))
        };
        let (read, facts) = match read.await {
            Some((read, facts)) => (Some(read), Some(facts)),
            None => (None, None),
        };
        data.raw.push(TapPoll {
            session: id,
            after,
            read,
            facts,
        });
    }
    if let (Some(after), Some(floor)) = (plan.log, capture.log().window_start()) {
        let request = ReadRequest {
            after: after.max(floor),
            sessions: session_secrets(&sessions).await,
        };
        if let Ok(snapshot) = crate::debug::log::snapshot(request).await {
            data.log = Some(LogPoll {
                planned: after,
                after: after.max(floor),
                snapshot,
            });
        }
    }
    data
}

/// Reads where a new subscription starts: the end of each of the `raw`
/// sessions' taps, and, when `log`, the log ring's end. A tap that does not
/// answer within `SECRETS_TIMEOUT` is read as None, and so is the log
/// ring when its read could not scan (a session's secrets could not be
/// read and none were known, or no session is running): those positions
/// are taken by the first poll that can read them, as the contract's
/// fallback says.
pub(crate) async fn read_starts(
    raw: Vec<SessionId>,
    log: bool,
    capture: Capture,
    sessions: ReadOnlySessions,
) -> Starts {
    let mut starts = Starts {
        clears: capture.clears(),
        ..Starts::default()
    };
    for id in raw {
        let end = match capture.raw() {
            Some(taps) => tokio::time::timeout(SECRETS_TIMEOUT, taps.end(&id))
                .await
                .ok()
                .and_then(Result::ok),
            None => None,
        };
        starts.raw.push((id, end));
    }
    if log {
        starts.log = log_end(&capture, &sessions).await;
    }
    starts
}

/// The log ring's end, when a read there can scan for secrets.
async fn log_end(capture: &Capture, sessions: &ReadOnlySessions) -> Option<u64> {
    // Taken before the read: a line numbered while it runs is after it.
    let end = capture.log().end()?;
    let request = ReadRequest {
        after: end,
        sessions: session_secrets(sessions).await,
    };
    let snapshot = crate::debug::log::snapshot(request).await.ok()?;
    (!snapshot.stalled).then_some(end)
}
