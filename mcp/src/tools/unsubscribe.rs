//! unsubscribe: remove a subscription and everything its inbox held.

use crate::read::args::Args;
use crate::read::result::ToolOutcome;
use crate::tools::context::ToolContext;
use crate::tools::registry::{outcome_of, Declared, Tier, ToolResult};
use crate::tools::spec::{Effect, RequiredText, ToolSpec};
use crate::tools::updates_call::{asked, sub_id, UNKNOWN_SUBSCRIPTION};
use crate::updates::Owner;
use serde_json::json;

const NAME: &str = "unsubscribe";

const DESCRIPTION: &str = "Remove a subscription; everything its inbox held is gone.";

const ID: RequiredText = RequiredText::new("id", "A subscription id.");

/// The unsubscribe tool, declared.
pub(crate) const TOOL: Declared = Declared {
    spec: ToolSpec {
        name: NAME,
        tier: Tier::Release,
        description: DESCRIPTION,
        effect: Effect::Subscriptions,
        args: &[ID.spec],
    },
    run: |ctx, args| outcome_of(run(ctx, args)),
};

async fn run(ctx: &ToolContext, args: &Args) -> ToolResult {
    let id = sub_id(ID.read(args)?)?;
    match ctx
        .updates
        .unsubscribe_as(Owner::of(&ctx.principal), id, &ctx.cancel)
        .await
    {
        Ok(Ok(())) => Ok(json!({"unsubscribed": true})),
        Ok(Err(_)) => Err(ToolOutcome::error(UNKNOWN_SUBSCRIPTION)),
        Err(e) => Err(asked(e)),
    }
}
