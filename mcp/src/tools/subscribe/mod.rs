//! subscribe: start collecting what matches the filters into a new inbox.
//! Its arguments are declared here and read in `parse`.

use crate::read::args::Args;
use crate::read::result::{time, ToolOutcome};
use crate::tools::context::ToolContext;
use crate::tools::registry::{outcome_of, Declared, Tier, ToolResult};
use crate::tools::spec::{Choice, Effect, Flag, Object, Text, Texts, ToolSpec};
use crate::tools::updates_call::asked;
use crate::updates::Holder;
use serde_json::json;

mod parse;
pub use parse::parse;

const NAME: &str = "subscribe";

/// The tool error for a 17th subscription.
pub(crate) const TOO_MANY: &str = "too many subscriptions: unsubscribe one first (limit 16)";

const DESCRIPTION: &str = "Start collecting live messages that match every filter given into a \
new subscription's inbox; drain it with read_updates or wait_for_updates. Give at least one \
filter. Scope with sessions and/or buffers (ids from list_sessions / list_buffers; absent: every \
session). At most 16 subscriptions exist across all clients; one untouched by subscribe, \
read_updates or wait_for_updates for 900 seconds is removed. History (chat history, replays) is \
counted, never delivered.";

pub(super) const SESSIONS: Texts = Texts::new("sessions", "Only these session ids.");
pub(super) const BUFFERS: Texts = Texts::new("buffers", "Only these buffer ids.");
pub(super) const MENTIONS: Flag = Flag::new(
    "mentions",
    false,
    "Only messages that mention the session's current nick.",
);
pub(super) const QUERIES: Flag = Flag::new(
    "queries",
    false,
    "Only messages in query (private message) buffers.",
);
pub(super) const FROM: Texts = Texts::new("from", "Only messages from these nicks, ignoring case.");
pub(super) const KINDS: Texts = Texts::new(
    "kinds",
    "The message kinds to collect: privmsg, action, notice, topic, join, part, quit, nick, mode, \
     kick. Absent: privmsg, action, notice.",
);
pub(super) const MATCH: Text = Text::new("match", "Only messages whose sender or text matches.");
pub(super) const MATCH_MODE: Choice = Choice::new("match_mode", "substring", "substring or glob.");

pub(super) const RAW_SESSIONS: Texts = Texts::new(
    "sessions",
    "Only these sessions' raw lines. Absent: every session.",
);
pub(super) const COMMANDS: Texts = Texts::new(
    "commands",
    "Only lines with these IRC commands or numerics.",
);
pub(super) const DIRECTION: Text = Text::new("direction", "in or out.");
/// The debug filter over raw lines.
pub(super) const RAW: Object = Object::new(
    "raw",
    "Debug filter: redacted raw IRC lines (as raw_since returns them), polled once a second.",
    &[RAW_SESSIONS.spec, COMMANDS.spec, DIRECTION.spec],
)
.debug_only();

pub(super) const MIN_LEVEL: Choice = Choice::new(
    "min_level",
    "warning",
    "Only lines at or above this level: debug, info, scripts, notice, warning, error, fault.",
);
pub(super) const CATEGORIES: Texts = Texts::new(
    "categories",
    "Only lines in these categories: app, ui, network, db, auth, perf, scripts.",
);
/// The debug filter over Rete's own log lines.
pub(super) const LOG: Object = Object::new(
    "log",
    "Debug filter: Rete's own log lines (as read_log returns them).",
    &[MIN_LEVEL.spec, CATEGORIES.spec],
)
.debug_only();

/// The subscribe tool, declared.
pub(crate) const TOOL: Declared = Declared {
    spec: ToolSpec {
        name: NAME,
        tier: Tier::Release,
        description: DESCRIPTION,
        effect: Effect::Subscriptions,
        args: &[
            SESSIONS.spec,
            BUFFERS.spec,
            MENTIONS.spec,
            QUERIES.spec,
            FROM.spec,
            KINDS.spec,
            MATCH.spec,
            MATCH_MODE.spec,
            RAW.spec,
            LOG.spec,
        ],
    },
    run: |ctx, args| outcome_of(run(ctx, args)),
};

async fn run(ctx: &ToolContext, args: &Args) -> ToolResult {
    let filter = parse(args)?;
    match ctx
        .updates
        .subscribe_as(filter, Holder::of(ctx), &ctx.cancel)
        .await
    {
        Ok(Ok(made)) => Ok(json!({
            "subscription": {
                "id": made.id.as_str(),
                "filters": made.filter.to_json(),
                "created": time(made.created),
                "expires_after_idle": made.expires_after_idle.as_secs(),
            }
        })),
        Ok(Err(_full)) => Err(ToolOutcome::error(TOO_MANY)),
        Err(e) => Err(asked(e)),
    }
}
