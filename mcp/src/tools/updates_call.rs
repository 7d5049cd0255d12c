//! What the five live-update tools share: the registry's failures as tool
//! outcomes, and the subscription-id argument.

use crate::read::result::ToolOutcome;
use crate::updates::handle::Asked;
use crate::updates::SubId;

/// The tool error for an id that names no live subscription.
pub(crate) const UNKNOWN_SUBSCRIPTION: &str = "unknown subscription";

/// A call the registry did not answer.
pub(crate) fn asked(e: Asked) -> ToolOutcome {
    match e {
        Asked::Cancelled => ToolOutcome::Cancelled,
        Asked::Gone => ToolOutcome::internal(e),
    }
}

/// An `id` argument: a malformed one names no subscription.
pub(crate) fn sub_id(id: &str) -> Result<SubId, ToolOutcome> {
    SubId::parse(id).ok_or_else(|| ToolOutcome::error(UNKNOWN_SUBSCRIPTION))
}
