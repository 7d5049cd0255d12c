//! The fixed, reviewed allowlist of tools and the dispatch in front of them.
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
use crate::tools::context::{Settings, ToolContext};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

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
    pub fn enabled(self, settings: &Settings) -> bool {
        match self {
            Tier::Release => true,
            Tier::Debug => settings.debug,
            Tier::Send => settings.send,
        }
    }
}

/// The contract's seventeen tools, in tools/list order.
pub const ALLOWLIST: [(&str, Tier); 17] = [
    ("list_sessions", Tier::Release),
    ("list_buffers", Tier::Release),
    ("list_members", Tier::Release),
    ("read_messages", Tier::Release),
    ("read_since", Tier::Release),
    ("search_messages", Tier::Release),
    ("find_user", Tier::Release),
    ("subscribe", Tier::Release),
    ("unsubscribe", Tier::Release),
    ("list_subscriptions", Tier::Release),
    ("read_updates", Tier::Release),
    ("wait_for_updates", Tier::Release),
    ("raw_since", Tier::Debug),
    ("search_raw", Tier::Debug),
    ("engine_state", Tier::Debug),
    ("read_log", Tier::Debug),
    ("send_raw", Tier::Send),
];

/// The tier the allowlist gives `name`, or None when it is not a tool.
pub fn allowlisted(name: &str) -> Option<Tier> {
    ALLOWLIST.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// One tool.
pub trait Tool: Send + Sync {
    /// Its name; must be on [`ALLOWLIST`] with the same tier.
    fn name(&self) -> &'static str;
    /// Its tier.
    fn tier(&self) -> Tier;
    /// Its tools/list entry: name, description, inputSchema (closed, with
    /// defaults, no maximums) and annotations, per the contract.
    fn descriptor(&self) -> Value;
    /// Its tools/list entry under `settings`: the same as [`Tool::descriptor`]
    /// unless a switch changes the schema (subscribe's raw and log exist only
    /// while control.debug is on).
    fn descriptor_for(&self, _settings: &Settings) -> Value {
        self.descriptor()
    }
    /// Runs the call. Arguments are already an object; the tool checks them.
    fn call<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome>;
}

/// A tool was offered to [`ToolBox::with_tools`] that the allowlist does not
/// allow (a name off the list, a tier that differs, or a name twice).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("tool {0} is not on the allowlist as registered")]
pub struct NotAllowed(pub String);

/// The served tools: the implemented subset of the allowlist.
pub struct ToolBox {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolBox {
    /// Every tool implemented so far.
    pub fn new() -> ToolBox {
        ToolBox {
            tools: vec![
                Box::new(crate::tools::list_sessions::ListSessions),
                Box::new(crate::tools::list_buffers::ListBuffers),
                Box::new(crate::tools::list_members::ListMembers),
                Box::new(crate::tools::read_messages::ReadMessages),
                Box::new(crate::tools::read_since::ReadSince),
                Box::new(crate::tools::search::SearchMessages),
                Box::new(crate::tools::find_user::FindUser),
                Box::new(crate::tools::subscribe::Subscribe),
                Box::new(crate::tools::unsubscribe::Unsubscribe),
                Box::new(crate::tools::list_subscriptions::ListSubscriptions),
                Box::new(crate::tools::read_updates::ReadUpdates),
                Box::new(crate::tools::wait_for_updates::WaitForUpdates),
                Box::new(crate::tools::send_raw::SendRaw),
                Box::new(crate::tools::read_log::ReadLog),
                Box::new(crate::tools::engine_state::EngineState),
                Box::new(crate::tools::raw_since::RawSince),
                Box::new(crate::tools::search_raw::SearchRaw),
            ],
        }
    }

    /// A box with exactly these tools, each checked against the allowlist.
    pub fn with_tools(tools: Vec<Box<dyn Tool>>) -> Result<ToolBox, NotAllowed> {
        for (i, tool) in tools.iter().enumerate() {
            let twice = tools[..i].iter().any(|t| t.name() == tool.name());
            if allowlisted(tool.name()) != Some(tool.tier()) || twice {
                return Err(NotAllowed(tool.name().to_owned()));
            }
        }
        Ok(ToolBox { tools })
    }

    /// The tools/list entries for these settings, in allowlist order.
    pub fn list(&self, settings: &Settings) -> Vec<Value> {
        ALLOWLIST
            .iter()
            .filter(|(_, tier)| tier.enabled(settings))
            .filter_map(|(name, _)| self.find(name))
            .map(|tool| tool.descriptor_for(settings))
            .collect()
    }

    /// The tool a call names, or the error that refuses it (see the module
    /// docs for the order).
    pub fn resolve(&self, name: &str, settings: &Settings) -> Result<&dyn Tool, &'static str> {
        let tier = allowlisted(name).ok_or(UNKNOWN_TOOL)?;
        match tier {
            Tier::Debug if !settings.debug => return Err(DEBUG_DISABLED),
            Tier::Send if !settings.send => return Err("sending is disabled"),
            _ => {}
        }
        self.find(name).ok_or(UNKNOWN_TOOL)
    }

    /// Resolves and runs a call.
    pub async fn call(&self, name: &str, ctx: &ToolContext, args: &Args) -> ToolOutcome {
        match self.resolve(name, &ctx.settings) {
            Ok(tool) => tool.call(ctx, args).await,
            Err(text) => ToolOutcome::error(text),
        }
    }

    fn find(&self, name: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .map(|t| t.as_ref())
    }
}

impl Default for ToolBox {
    fn default() -> ToolBox {
        ToolBox::new()
    }
}

const UNKNOWN_TOOL: &str = "unknown tool";

pub use crate::read::errors::DEBUG_DISABLED;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fake(&'static str, Tier);

    impl Tool for Fake {
        fn name(&self) -> &'static str {
            self.0
        }
        fn tier(&self) -> Tier {
            self.1
        }
        fn descriptor(&self) -> Value {
            json!({ "name": self.0 })
        }
        fn call<'a>(&'a self, _: &'a ToolContext, _: &'a Args) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async move { ToolOutcome::Ok(json!({ "tool": self.0 })) })
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
        let count = |t| ALLOWLIST.iter().filter(|(_, x)| *x == t).count();
        assert_eq!(count(Tier::Release), 12);
        assert_eq!(count(Tier::Debug), 4);
        assert_eq!(count(Tier::Send), 1);
    }

    #[test]
    fn only_allowlisted_tools_with_their_tier_register() {
        assert!(ToolBox::with_tools(vec![Box::new(Fake("rm_rf", Tier::Release))]).is_err());
        assert!(ToolBox::with_tools(vec![Box::new(Fake("send_raw", Tier::Release))]).is_err());
        assert!(ToolBox::with_tools(vec![
            Box::new(Fake("read_log", Tier::Debug)),
            Box::new(Fake("read_log", Tier::Debug)),
        ])
        .is_err());
        assert!(ToolBox::with_tools(vec![Box::new(Fake("read_log", Tier::Debug))]).is_ok());
    }

    #[test]
    fn listing_follows_tiers_and_implementation() {
        let b = ToolBox::with_tools(vec![
            Box::new(Fake("send_raw", Tier::Send)),
            Box::new(Fake("read_log", Tier::Debug)),
            Box::new(Fake("list_sessions", Tier::Release)),
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
            Box::new(Fake("list_sessions", Tier::Release)),
            Box::new(Fake("read_log", Tier::Debug)),
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
