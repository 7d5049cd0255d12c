//! The raw-out hook: an embedder's view of every line as it goes on the wire.

/// What the hook decided about one outgoing line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send the line.
    Allow,
    /// Drop the line; the session notes the veto in its server buffer.
    Veto,
}

/// Sees each outgoing line just before it is written, and may veto it.
///
/// Called on the session actor's task: keep it quick and never block.
pub trait RawOutHook: Send + Sync + 'static {
    /// Judges one line (without CR LF) about to be sent on `session`.
    fn on_raw_out(&self, session: &rete_engine::ids::SessionId, line: &str) -> Verdict;
}
