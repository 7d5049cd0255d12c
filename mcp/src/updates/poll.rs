//! One poll of the rings raw and log subscriptions cover: the reads only.
//! It runs as a task beside the registry actor, which sends it a
//! [`PollPlan`] and gets the [`PollData`] back as a message, so the actor
//! never awaits. A raw tap is read with the session's secret scan, as
//! raw_since reads it; the log ring with every session's secrets, as
//! read_log reads it (stalled when they cannot be read).

use super::registry::{PollData, PollPlan};
use crate::debug::log::ring::ReadRequest;
use crate::debug::Capture;
use crate::read::log::{session_secrets, SECRETS_TIMEOUT};
use crate::read::withheld::Withholder;
use rete_actors::ReadOnlySessions;

/// Reads what `plan` asks for. A session that is gone, or whose secrets or
/// tap do not answer in time, is read as None; a log ring the capture no
/// longer holds is not read.
pub async fn read(plan: PollPlan, capture: Capture, sessions: ReadOnlySessions) -> PollData {
    let mut data = PollData::default();
    let readers = sessions.sessions();
    for (id, after) in plan.raw {
        let read = async {
            let session = readers.iter().find(|s| s.id() == &id)?;
            let taps = capture.raw()?;
            let scan = session.read(|view| Withholder::for_view(&view));
            let withhold = tokio::time::timeout(SECRETS_TIMEOUT, scan)
                .await
                .ok()?
                .ok()?;
            let window = taps.read(&id, after, usize::MAX).await.ok()?;
            Some((withhold, window.lines, window.dropped_through))
        };
        let got = read.await;
        data.raw.push((id, got));
    }
    if let (Some(after), Some(floor)) = (plan.log, capture.log().window_start()) {
        let request = ReadRequest {
            after: after.max(floor),
            sessions: session_secrets(&sessions).await,
        };
        if let Ok(snapshot) = crate::debug::log::snapshot(request).await {
            data.log = Some((after.max(floor), snapshot));
        }
    }
    data
}
