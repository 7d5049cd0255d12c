//! Finding what a call names: a session by id, a buffer by id across every
//! session. Ids are matched exactly, as list_sessions and list_buffers spell
//! them; anything else is the contract's `unknown session` / `unknown buffer`.

use crate::read::result::ToolOutcome;
use crate::tools::context::ToolContext;
use rete_actors::{ReteError, SessionReader};
use rete_engine::ids::BufferId;
use rete_engine::view::SessionView;

pub(crate) use crate::read::errors::{UNKNOWN_BUFFER, UNKNOWN_SESSION};

/// The running session whose id is exactly `id`, or `unknown session`
/// (also for a session out of the request's reach).
pub(crate) async fn session(ctx: &ToolContext, id: &str) -> Result<SessionReader, ToolOutcome> {
    let session = ctx
        .sessions
        .sessions()
        .into_iter()
        .find(|s| s.id().as_str() == id)
        .ok_or_else(|| ToolOutcome::error(UNKNOWN_SESSION))?;
    if !ctx.reach.is_everything() {
        let reach = ctx.reach.clone();
        if !read(ctx, &session, UNKNOWN_SESSION, move |view| {
            reach.session(&view)
        })
        .await?
        {
            return Err(ToolOutcome::error(UNKNOWN_SESSION));
        }
    }
    Ok(session)
}

/// The sessions in the request's reach (all of them for the full token). A
/// session that cannot be read now is left out, as list_sessions leaves
/// out one whose actor is restarting.
pub(crate) async fn sessions_in_reach(
    ctx: &ToolContext,
) -> Result<Vec<SessionReader>, ToolOutcome> {
    let sessions = ctx.sessions.sessions();
    if ctx.reach.is_everything() {
        return Ok(sessions);
    }
    let mut kept = Vec::with_capacity(sessions.len());
    for session in sessions {
        let reach = ctx.reach.clone();
        let covered = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolOutcome::Cancelled),
            r = session.read(move |view| reach.session(&view)) => r,
        };
        if covered.unwrap_or(false) {
            kept.push(session);
        }
    }
    Ok(kept)
}

/// The session that lists buffer `id`, and the id, or `unknown buffer`
/// (also for a buffer out of the request's reach).
/// Sessions are asked in order; one whose actor is restarting cannot list
/// anything at this instant and is passed over. Cancellation is checked
/// between sessions.
pub(crate) async fn buffer(
    ctx: &ToolContext,
    id: &str,
) -> Result<(SessionReader, BufferId), ToolOutcome> {
    let sessions = ctx.sessions.sessions();
    let wanted = BufferId::from_client(id);
    for session in sessions {
        if ctx.cancel.is_cancelled() {
            return Err(ToolOutcome::Cancelled);
        }
        let probe = wanted.clone();
        let reach = ctx.reach.clone();
        let listed = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolOutcome::Cancelled),
            r = session.read(move |view| {
                view.buffer(&probe).is_some_and(|b| reach.buffer(&view, b))
            }) => r,
        };
        match listed {
            Ok(true) => return Ok((session, wanted)),
            Ok(false) | Err(ReteError::Restarting) => {}
            Err(e) => return Err(ToolOutcome::internal(e)),
        }
    }
    Err(ToolOutcome::error(UNKNOWN_BUFFER))
}

/// Runs `f` over the view of `session`, found a moment ago, unless the call
/// is cancelled first. A session that went away (or is restarting) since no
/// longer lists anything, so the call's own `unknown …` error is the
/// truthful answer; any other failure is internal.
pub(crate) async fn read<R, F>(
    ctx: &ToolContext,
    session: &SessionReader,
    unknown: &'static str,
    f: F,
) -> Result<R, ToolOutcome>
where
    R: Send + 'static,
    F: FnOnce(SessionView<'_>) -> R + Send + 'static,
{
    let result = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return Err(ToolOutcome::Cancelled),
        r = session.read(f) => r,
    };
    match result {
        Ok(_) if ctx.cancel.is_cancelled() => Err(ToolOutcome::Cancelled),
        Ok(r) => Ok(r),
        Err(ReteError::Restarting | ReteError::UnknownSession) => Err(ToolOutcome::error(unknown)),
        Err(e) => Err(ToolOutcome::internal(e)),
    }
}
