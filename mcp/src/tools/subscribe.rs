//! subscribe: start collecting what matches the filters into a new inbox.

use crate::read::args::Args;
use crate::read::result::ToolOutcome;
use crate::tools::context::{Settings, ToolContext};
use crate::tools::registry::{BoxFuture, Tier, Tool};
use crate::tools::schema;
use crate::tools::updates_call::asked;
use crate::updates::filter::Filter;
use serde_json::{Map, Value};

/// The subscribe tool.
pub struct Subscribe;

const NAME: &str = "subscribe";

/// The tool error for a 17th subscription.
pub const TOO_MANY: &str = "too many subscriptions: unsubscribe one first (limit 16)";

const DESCRIPTION: &str = "Start collecting live messages that match every filter given into a \
new subscription's inbox; drain it with read_updates or wait_for_updates. Give at least one \
filter. Scope with sessions and/or buffers (ids from list_sessions / list_buffers; absent: every \
session). At most 16 subscriptions exist across all clients; one untouched by subscribe, \
read_updates or wait_for_updates for 900 seconds is removed. History (chat history, replays) is \
counted, never delivered.";

impl Tool for Subscribe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tier(&self) -> Tier {
        Tier::Release
    }

    fn descriptor(&self) -> Value {
        descriptor(false)
    }

    fn descriptor_for(&self, settings: &Settings) -> Value {
        descriptor(settings.debug)
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(run(ctx, args))
    }
}

/// subscribe's tools/list entry; `debug` adds the raw and log filters, each
/// a closed object.
fn descriptor(debug: bool) -> Value {
    let mut props = Map::new();
    props.insert(
        "sessions".into(),
        schema::strings("Only these session ids."),
    );
    props.insert("buffers".into(), schema::strings("Only these buffer ids."));
    props.insert(
        "mentions".into(),
        schema::boolean(
            false,
            "Only messages that mention the session's current nick.",
        ),
    );
    props.insert(
        "queries".into(),
        schema::boolean(false, "Only messages in query (private message) buffers."),
    );
    props.insert(
        "from".into(),
        schema::strings("Only messages from these nicks, ignoring case."),
    );
    props.insert(
        "kinds".into(),
        schema::strings(
            "The message kinds to collect: privmsg, action, notice, topic, join, part, quit, \
                 nick, mode, kick. Absent: privmsg, action, notice.",
        ),
    );
    props.insert(
        "match".into(),
        schema::string("Only messages whose sender or text matches."),
    );
    props.insert(
        "match_mode".into(),
        schema::string_with_default("substring", "substring or glob."),
    );
    if debug {
        props.insert("raw".into(), raw_schema());
        props.insert("log".into(), log_schema());
    }
    schema::descriptor(
        NAME,
        DESCRIPTION,
        schema::closed_object(props, &[]),
        schema::changes_subscriptions(),
    )
}

/// The raw filter: a closed object.
fn raw_schema() -> Value {
    let mut props = Map::new();
    props.insert(
        "sessions".into(),
        schema::strings("Only these sessions' raw lines. Absent: every session."),
    );
    props.insert(
        "commands".into(),
        schema::strings("Only lines with these IRC commands or numerics."),
    );
    props.insert("direction".into(), schema::string("in or out."));
    let mut raw = schema::closed_object(props, &[]);
    raw["description"] = Value::from(
        "Debug filter: redacted raw IRC lines (as raw_since returns them), polled once a second.",
    );
    raw
}

/// The log filter: a closed object.
fn log_schema() -> Value {
    let mut props = Map::new();
    props.insert(
        "min_level".into(),
        schema::string_with_default(
            "warning",
            "Only lines at or above this level: debug, info, scripts, notice, warning, error, \
             fault.",
        ),
    );
    props.insert(
        "categories".into(),
        schema::strings(
            "Only lines in these categories: app, ui, network, db, auth, perf, scripts.",
        ),
    );
    let mut log = schema::closed_object(props, &[]);
    log["description"] =
        Value::from("Debug filter: Rete's own log lines (as read_log returns them).");
    log
}

async fn run(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    let filter = match Filter::parse(args, ctx.settings.debug) {
        Ok(f) => f,
        Err(refusal) => return refusal,
    };
    match ctx.updates.subscribe(filter, &ctx.cancel).await {
        Ok(Ok(answer)) => ToolOutcome::Ok(answer),
        Ok(Err(_full)) => ToolOutcome::error(TOO_MANY),
        Err(e) => asked(e),
    }
}
