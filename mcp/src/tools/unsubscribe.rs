//! unsubscribe: remove a subscription and everything its inbox held.

use crate::read::args::Args;
use crate::read::result::ToolOutcome;
use crate::tools::context::ToolContext;
use crate::tools::registry::{BoxFuture, Tier, Tool};
use crate::tools::schema;
use crate::tools::updates_call::{asked, sub_id, UNKNOWN_SUBSCRIPTION};
use serde_json::{json, Map, Value};

/// The unsubscribe tool.
pub struct Unsubscribe;

const NAME: &str = "unsubscribe";

const DESCRIPTION: &str = "Remove a subscription; everything its inbox held is gone.";

impl Tool for Unsubscribe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tier(&self) -> Tier {
        Tier::Release
    }

    fn descriptor(&self) -> Value {
        let mut props = Map::new();
        props.insert("id".into(), schema::string("A subscription id."));
        schema::descriptor(
            NAME,
            DESCRIPTION,
            schema::closed_object(props, &["id"]),
            schema::changes_subscriptions(),
        )
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(run(ctx, args))
    }
}

async fn run(ctx: &ToolContext, args: &Args) -> ToolOutcome {
    if let Err(e) = args.expect_only(&["id"]) {
        return e.into();
    }
    let id = match args.required_str("id") {
        Ok(id) => id,
        Err(e) => return e.into(),
    };
    let id = match sub_id(id) {
        Ok(id) => id,
        Err(refusal) => return refusal,
    };
    match ctx.updates.unsubscribe(id, &ctx.cancel).await {
        Ok(Ok(())) => ToolOutcome::Ok(json!({"unsubscribed": true})),
        Ok(Err(_)) => ToolOutcome::error(UNKNOWN_SUBSCRIPTION),
        Err(e) => asked(e),
    }
}
