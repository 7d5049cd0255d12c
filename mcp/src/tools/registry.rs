//! The spec table of the seventeen tools and the dispatch in front of them.
//!
//! The seventeen names are the contract's; nothing else can ever be served,
//! whatever is registered. A tool is listed only when it is implemented and
//! its tier is on. Calls are refused in this order, before any argument is
//! looked at:
//! 1. a name not among the seventeen (matched exactly): `unknown tool`;
//! 2. a debug tool while control.debug is off: `debug tools are disabled`;
//! 3. send_raw while control.send is off: `sending is disabled`;
//! 4. a name on the allowlist whose tool is not implemented yet: `unknown
//!    tool` (it is in no tools/list either, so to a client it does not exist).

use crate::read::args::Args;
use crate::read::result::ToolOutcome;
pub use crate::read::result::ToolResult;
use crate::tools::context::{Settings, ToolContext};
use crate::tools::spec::ToolSpec;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use tracing::Instrument as _;

/// A boxed future that can cross threads, as tools return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which switch serves a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Served whenever the server runs (control.enabled).
    Release,
    /// Served only while control.debug is on.
    Debug,
    /// Served only while control.send is on.
    Send,
}

impl Tier {
    /// True when `settings` serve this tier.
    pub(crate) fn enabled(self, settings: &Settings) -> bool {
        match self {
            Tier::Release => true,
            Tier::Debug => settings.debug,
            Tier::Send => settings.send,
        }
    }
}

/// The spec table: the contract's seventeen tools, in tools/list order.
/// Nothing else can ever be served, whatever a [`ToolBox`] is given.
pub static TOOLS: [&dyn Tool; 17] = [
    &crate::tools::list_sessions::TOOL,
    &crate::tools::list_buffers::TOOL,
    &crate::tools::list_members::TOOL,
    &crate::tools::read_messages::TOOL,
    &crate::tools::read_since::TOOL,
    &crate::tools::search::TOOL,
    &crate::tools::find_user::TOOL,
    &crate::tools::subscribe::TOOL,
    &crate::tools::unsubscribe::TOOL,
    &crate::tools::list_subscriptions::TOOL,
    &crate::tools::read_updates::TOOL,
    &crate::tools::wait_for_updates::TOOL,
    &crate::tools::raw_since::TOOL,
    &crate::tools::search_raw::TOOL,
    &crate::tools::engine_state::TOOL,
    &crate::tools::read_log::TOOL,
    &crate::tools::send_raw::TOOL,
];

/// The tier the spec table gives `name`, or None when it is not a tool.
pub(crate) fn allowlisted(name: &str) -> Option<Tier> {
    TOOLS
        .iter()
        .map(|t| t.spec())
        .find(|s| s.name == name)
        .map(|s| s.tier)
}

/// One tool: its declaration and its run.
pub trait Tool: Send + Sync {
    /// Its declaration; its name must be in [`TOOLS`] with the same tier.
    fn spec(&self) -> &ToolSpec;
    /// Runs the call to its end: a result (a [`Value`], or text the tool
    /// encoded itself), an exact tool error, a stop, or a cancel. The
    /// registry has already refused undeclared arguments; the tool reads
    /// the rest through its spec's constants.
    fn run<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome>;
}

/// How a declared tool runs a call.
pub(crate) type Runner = for<'a> fn(&'a ToolContext, &'a Args) -> BoxFuture<'a, ToolOutcome>;

/// A tool body that builds its result as a [`Value`] (and ends any other
/// way with `Err`), boxed as the [`Runner`] a [`Declared`] holds.
pub(crate) fn outcome_of<'a>(
    body: impl Future<Output = ToolResult> + Send + 'a,
) -> BoxFuture<'a, ToolOutcome> {
    Box::pin(async move { ToolOutcome::from(body.await) })
}

/// A tool as its file declares it: the spec and the function that runs a
/// call. Every tool in [`TOOLS`] is one of these.
#[derive(Clone, Copy)]
pub(crate) struct Declared {
    /// Its declaration.
    pub(crate) spec: ToolSpec,
    /// Its run.
    pub(crate) run: Runner,
}

impl Tool for Declared {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        (self.run)(ctx, args)
    }
}

/// A table entry served as it is.
impl Tool for &'static dyn Tool {
    fn spec(&self) -> &ToolSpec {
        (**self).spec()
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        (**self).run(ctx, args)
    }
}

/// A tool was offered to [`ToolBox::with_tools`] that the spec table does
/// not allow (a name off the table, a tier that differs, or a name twice).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("tool {0} is not on the allowlist as registered")]
#[cfg(test)]
pub(crate) struct NotAllowed(pub String);

/// The served tools.
pub struct ToolBox {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolBox {
    /// Every tool of the spec table.
    pub fn new() -> ToolBox {
        ToolBox {
            tools: TOOLS
                .iter()
                .map(|&t| Box::new(t) as Box<dyn Tool>)
                .collect(),
        }
    }

    /// A box with exactly these tools, each checked against the spec table.
    #[cfg(test)]
    pub(crate) fn with_tools(tools: Vec<Box<dyn Tool>>) -> Result<ToolBox, NotAllowed> {
        for (i, tool) in tools.iter().enumerate() {
            let spec = tool.spec();
            let twice = tools[..i].iter().any(|t| t.spec().name == spec.name);
            if allowlisted(spec.name) != Some(spec.tier) || twice {
                return Err(NotAllowed(spec.name.to_owned()));
            }
        }
        Ok(ToolBox { tools })
    }

    /// The tools/list entries for these settings, in the table's order.
    pub fn list(&self, settings: &Settings) -> Vec<Value> {
        TOOLS
            .iter()
            .map(|t| t.spec())
            .filter(|spec| spec.tier.enabled(settings))
            .filter_map(|spec| self.find(spec.name))
            .map(|tool| tool.spec().descriptor(settings.debug))
            .collect()
    }

    /// The tool a call names, or the error that refuses it (see the module
    /// docs for the order).
    pub(crate) fn resolve(
        &self,
        name: &str,
        settings: &Settings,
    ) -> Result<&dyn Tool, &'static str> {
        let tier = allowlisted(name).ok_or(UNKNOWN_TOOL)?;
        match tier {
            Tier::Debug if !settings.debug => return Err(DEBUG_DISABLED),
            Tier::Send if !settings.send => return Err("sending is disabled"),
            _ => {}
        }
        self.find(name).ok_or(UNKNOWN_TOOL)
    }

    /// Resolves and runs a call: the tool's name, then its argument names
    /// (see `ToolSpec::check_names`), then the tool itself. A result the
    /// tool encoded itself comes back decoded, as `Ok`, as a client reads
    /// it; never as [`ToolOutcome::Encoded`].
    pub async fn call(&self, name: &str, ctx: &ToolContext, args: &Args) -> ToolOutcome {
        match self.answer(name, ctx, args).await {
            ToolOutcome::Encoded(text) => match text.decode() {
                Ok(value) => ToolOutcome::Ok(value),
                Err(e) => ToolOutcome::internal(e),
            },
            outcome => outcome,
        }
    }

    /// [`call`](Self::call) for the answer to send: a result the tool
    /// encoded itself stays [`ToolOutcome::Encoded`].
    pub(crate) async fn answer(&self, name: &str, ctx: &ToolContext, args: &Args) -> ToolOutcome {
        let tool = match self.resolve(name, &ctx.settings) {
            Ok(tool) => tool,
            Err(text) => return ToolOutcome::error(text),
        };
        if let Err(refusal) = tool.spec().check_names(args, &ctx.settings) {
            return refusal;
        }
        // Everything a tool logs while it runs is inside its call's span.
        let span = tracing::info_span!(target: "rete::app", "tool", name = tool.spec().name);
        tool.run(ctx, args).instrument(span).await
    }

    fn find(&self, name: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.spec().name == name)
            .map(|t| t.as_ref())
    }
}

impl Default for ToolBox {
    fn default() -> ToolBox {
        ToolBox::new()
    }
}

const UNKNOWN_TOOL: &str = "unknown tool";

pub(crate) use crate::read::errors::DEBUG_DISABLED;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::spec::Effect;
    use serde_json::json;

    struct Fake(ToolSpec);

    fn fake(name: &'static str, tier: Tier) -> Box<dyn Tool> {
        Box::new(Fake(ToolSpec {
            name,
            tier,
            description: "",
            effect: Effect::ReadOnly,
            args: &[],
        }))
    }

    impl Tool for Fake {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn run<'a>(&'a self, _: &'a ToolContext, _: &'a Args) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async move { ToolOutcome::Ok(json!({ "tool": self.0.name })) })
        }
    }

    const OFF: Settings = Settings {
        debug: false,
        send: false,
    };
    const ALL: Settings = Settings {
        debug: true,
        send: true,
    };

    fn names(list: Vec<Value>) -> Vec<String> {
        list.iter()
            .map(|d| d["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn the_allowlist_has_twelve_four_and_one() {
        let count = |t| TOOLS.iter().filter(|x| x.spec().tier == t).count();
        assert_eq!(count(Tier::Release), 12);
        assert_eq!(count(Tier::Debug), 4);
        assert_eq!(count(Tier::Send), 1);
    }

    #[test]
    fn only_allowlisted_tools_with_their_tier_register() {
        assert!(ToolBox::with_tools(vec![fake("rm_rf", Tier::Release)]).is_err());
        assert!(ToolBox::with_tools(vec![fake("send_raw", Tier::Release)]).is_err());
        assert!(ToolBox::with_tools(vec![
            fake("read_log", Tier::Debug),
            fake("read_log", Tier::Debug),
        ])
        .is_err());
        assert!(ToolBox::with_tools(vec![fake("read_log", Tier::Debug)]).is_ok());
    }

    #[test]
    fn listing_follows_tiers_and_implementation() {
        let b = ToolBox::with_tools(vec![
            fake("send_raw", Tier::Send),
            fake("read_log", Tier::Debug),
            fake("list_sessions", Tier::Release),
        ])
        .unwrap();
        assert_eq!(names(b.list(&OFF)), ["list_sessions"]);
        let debug = Settings {
            debug: true,
            send: false,
        };
        assert_eq!(names(b.list(&debug)), ["list_sessions", "read_log"]);
        let send = Settings {
            debug: false,
            send: true,
        };
        assert_eq!(names(b.list(&send)), ["list_sessions", "send_raw"]);
        assert_eq!(
            names(b.list(&ALL)),
            ["list_sessions", "read_log", "send_raw"]
        );
        assert_eq!(
            names(ToolBox::new().list(&ALL)),
            [
                "list_sessions",
                "list_buffers",
                "list_members",
                "read_messages",
                "read_since",
                "search_messages",
                "find_user",
                "subscribe",
                "unsubscribe",
                "list_subscriptions",
                "read_updates",
                "wait_for_updates",
                "raw_since",
                "search_raw",
                "engine_state",
                "read_log",
                "send_raw"
            ]
        );
    }

    #[test]
    fn resolution_errors_in_contract_order() {
        let b = ToolBox::with_tools(vec![
            fake("list_sessions", Tier::Release),
            fake("read_log", Tier::Debug),
        ])
        .unwrap();
        let err = |name: &str, s: &Settings| b.resolve(name, s).err();
        assert_eq!(err("nope", &ALL), Some("unknown tool"));
        assert_eq!(err("List_Sessions", &ALL), Some("unknown tool"));
        assert_eq!(err(" list_sessions", &ALL), Some("unknown tool"));
        assert_eq!(err("read_log", &OFF), Some("debug tools are disabled"));
        assert_eq!(err("engine_state", &OFF), Some("debug tools are disabled"));
        assert_eq!(
            ToolBox::new().resolve("engine_state", &ALL).err(),
            None,
            "implemented"
        );
        assert_eq!(
            ToolBox::new().resolve("engine_state", &OFF).err(),
            Some("debug tools are disabled")
        );
        assert_eq!(err("engine_state", &ALL), Some("unknown tool"));
        assert_eq!(err("send_raw", &OFF), Some("sending is disabled"));
        assert_eq!(err("send_raw", &ALL), Some("unknown tool"));
        assert_eq!(err("read_log", &ALL), None);
        assert_eq!(err("list_sessions", &OFF), None);
    }
}
