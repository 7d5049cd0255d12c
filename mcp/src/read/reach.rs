//! What one request may see: everything (the full token) or what a scoped
//! grant covers (issue 33). Beside [`withheld`](super::withheld), which
//! decides what no request may see, this is the one place that decides what
//! a request's grant may see, so the tools cannot drift apart on it.
//!
//! Out of reach is answered exactly as absent: a session or buffer the
//! grant does not cover is `unknown session` / `unknown buffer`, so a grant
//! cannot probe what exists.
//!
//! The gate gives the full token [`Reach::everything`] and a grant its
//! scope; a subscription keeps the reach of the request that made it.

use crate::grant::{BufferRef, Scope};
use rete_engine::buffer::Buffer;
use rete_engine::view::SessionView;
use std::sync::Arc;

/// What a request may see.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// None: everything.
    scope: Option<Arc<Scope>>,
}

impl Reach {
    /// Everything: the full token's reach.
    pub fn everything() -> Reach {
        Reach::default()
    }

    /// What `scope` covers.
    pub fn within(scope: Scope) -> Reach {
        Reach {
            scope: Some(Arc::new(scope)),
        }
    }

    /// True for the full token's reach, where no check is needed.
    pub fn is_everything(&self) -> bool {
        self.scope.is_none()
    }

    /// True when `buffer` is in reach, named by its parts (for callers that
    /// keep a buffer's identity rather than a view of it: subscriptions).
    pub(crate) fn covers(&self, buffer: BufferRef<'_>) -> bool {
        self.scope.as_ref().is_none_or(|s| s.covers(buffer))
    }

    /// True when the session behind `view` is in reach at all.
    pub fn session(&self, view: &SessionView<'_>) -> bool {
        self.scope
            .as_ref()
            .is_none_or(|s| s.covers_network(view.name()))
    }

    /// True when `buffer` of the session behind `view` is in reach.
    pub fn buffer(&self, view: &SessionView<'_>, buffer: &Buffer) -> bool {
        self.scope.as_ref().is_none_or(|s| {
            s.covers(BufferRef {
                network: view.name(),
                kind: buffer.kind(),
                name: buffer.name(),
                casemap: view.isupport().casemapping,
            })
        })
    }

    /// The grant's scope, None for everything: for the checks the methods
    /// above cannot make from a view and a buffer, such as the debug tier's
    /// attribution of raw and log lines (`debug/attribution.rs`).
    pub(crate) fn scope(&self) -> Option<&Scope> {
        self.scope.as_deref()
    }
}
