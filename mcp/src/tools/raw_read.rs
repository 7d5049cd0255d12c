//! What raw_since and search_raw share: a cursor's position in a session's
//! raw tap, the session's secret scan, and the copy of a window out of the
//! tap actor.

use crate::debug::raw::ring::{Pos, Window};
use crate::read::cursor::{self, pack, unpack};
use crate::read::paging::Binding;
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

/// The session's secret scan, read inside its actor. A session that went
/// away (or is restarting) since it was found is `unknown session`: without
/// its secrets nothing can be screened, so nothing is returned.
pub(crate) async fn withholder(
    ctx: &ToolContext,
    session: &SessionReader,
) -> Result<Withholder, ToolOutcome> {
    lookup::read(ctx, session, UNKNOWN_SESSION, |view| {
        Withholder::for_view(&view)
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
