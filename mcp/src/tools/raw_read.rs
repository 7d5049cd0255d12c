//! What raw_since and search_raw share: a cursor's position in a session's
//! raw tap, the screen every line passes (the session's secret scan and,
//! for a scoped grant, what it may see), and the copy of a window out of
//! the tap actor.

use crate::debug::attribution::RawScreen;
use crate::debug::raw::ring::{Pos, RawLine, Window};
use crate::read::cursor::{self, pack, unpack};
use crate::read::paging::Binding;
use crate::read::raw::withheld;
use crate::read::result::ToolOutcome;
use crate::read::withheld::Withholder;
use crate::tools::context::ToolContext;
use crate::tools::lookup::{self, UNKNOWN_SESSION};
use rete_actors::SessionReader;
use serde_json::{json, Value};

/// The bytes of a position in a cursor (tap and seq).
pub(crate) const POSITION_LEN: usize = 16;

/// A cursor at `pos`.
pub(crate) fn mint(binding: &Binding, pos: Pos) -> String {
    binding.mint(&pack(&[pos.tap, pos.seq]))
}

/// The position of a cursor minted by [`mint`] under `binding`, or
/// `invalid cursor`.
pub(crate) fn open(binding: &Binding, text: &str) -> Result<Pos, ToolOutcome> {
    let position = binding.open(text)?;
    let v = unpack(&position, 2).map_err(ToolOutcome::error)?;
    match v.as_slice() {
        [tap, seq] => Ok(Pos {
            tap: *tap,
            seq: *seq,
        }),
        _ => Err(ToolOutcome::error(cursor::INVALID)),
    }
}

/// What a raw read screens out: lines holding a secret (for every
/// request) and lines out of the request's reach (for a scoped grant).
#[derive(Clone, Debug)]
pub(crate) struct Screen {
    /// The session's secret scan.
    pub(crate) secrets: Withholder,
    /// What the request may see of the session.
    pub(crate) reach: RawScreen,
}

impl Screen {
    /// The screen of a read that may see every line: secrets alone.
    #[cfg(test)]
    pub(crate) fn secrets_only(secrets: Withholder) -> Screen {
        Screen {
            secrets,
            reach: RawScreen::everything(),
        }
    }

    /// The screen of a grant reaching only `channel`, on network `net`
    /// where our nick is `me`, with no secrets to scan.
    #[cfg(test)]
    pub(crate) fn channel_grant(channel: &str) -> Screen {
        use crate::debug::attribution::SessionFacts;
        use crate::grant::Scope;
        use crate::tools::context::Reach;
        let reach = Reach::within(Scope {
            networks: vec![],
            buffers: vec![channel.into()],
            queries: false,
        });
        Screen {
            secrets: Withholder::default(),
            reach: RawScreen::for_session(&reach, SessionFacts::sample("net", "me")),
        }
    }

    /// True when `line` must not leave because it holds a secret.
    pub(crate) fn holds_secret(&self, line: &RawLine) -> bool {
        withheld(&self.secrets, line)
    }

    /// True when `line` is beyond the request's reach (never for the full
    /// token).
    pub(crate) fn out_of_reach(&self, line: &RawLine) -> bool {
        !self.reach.raw(line)
    }
}

/// The session's screen, read inside its actor: its secret scan and what
/// the request's reach sees of it. A session that went away (or is
/// restarting) since it was found is `unknown session`: without its
/// secrets nothing can be screened, so nothing is returned.
pub(crate) async fn screen(
    ctx: &ToolContext,
    session: &SessionReader,
) -> Result<Screen, ToolOutcome> {
    let reach = ctx.reach.clone();
    lookup::read(ctx, session, UNKNOWN_SESSION, move |view| Screen {
        secrets: Withholder::for_view(&view),
        reach: RawScreen::new(&reach, &view),
    })
    .await
}

/// Up to `limit` lines of `session`'s tap after `after`. A capture not
/// attached to an engine has no lines.
pub(crate) async fn window(
    ctx: &ToolContext,
    session: &SessionReader,
    after: Option<Pos>,
    limit: usize,
) -> Result<Window, ToolOutcome> {
    let Some(taps) = ctx.capture.raw() else {
        return Ok(Window::default());
    };
    tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(ToolOutcome::Cancelled),
        w = taps.read(session.id(), after, limit) => w.map_err(ToolOutcome::internal),
    }
}

/// A page's skipped list as its frame counts it: what was skipped so far
/// and room for one more sequence number.
pub(crate) fn skipped_with_room(skipped: &[Value]) -> Value {
    let mut list = skipped.to_vec();
    list.push(json!(u64::MAX));
    Value::Array(list)
}
