//! The names [`SessionView::progress`](crate::view::SessionView::progress)
//! gives registration's steps and SASL's outcomes, kept beside the
//! registration module whose private types they name.

use super::registration::{RegStep, SaslOutcome};

/// A registration step's name.
pub(crate) fn step(step: RegStep) -> &'static str {
    match step {
        RegStep::Idle => "idle",
        RegStep::CapLs => "cap_ls",
        RegStep::CapReq => "cap_req",
        RegStep::Sasl => "sasl",
        RegStep::AwaitWelcome => "await_welcome",
        RegStep::Registered => "registered",
    }
}

/// A SASL outcome's name.
pub(crate) fn sasl(outcome: &SaslOutcome) -> &'static str {
    match outcome {
        SaslOutcome::NotTried => "not_tried",
        SaslOutcome::InProgress => "in_progress",
        SaslOutcome::Succeeded => "succeeded",
        SaslOutcome::Failed(_) => "failed",
    }
}

/// Why SASL failed, when it did.
pub(crate) fn failure(outcome: &SaslOutcome) -> Option<&str> {
    match outcome {
        SaslOutcome::Failed(why) => Some(why),
        _ => None,
    }
}
