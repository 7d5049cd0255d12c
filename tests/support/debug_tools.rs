//! The debug tier's tools in process, for tests that call them without the
//! HTTP server: a capture on an engine's raw tap, the live-updates registry
//! reading it, and a read-only `ToolContext` with debug on.

use std::sync::Arc;

use anyhow::Result;
use rete_actors::{ReadOnlySessions, Rete};
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::raw::RawTaps;
use rete_mcp::debug::Capture;
use rete_mcp::tools::{Settings, ToolContext};
use rete_mcp::updates::{SystemClock, Updates};
use tokio_util::sync::CancellationToken;

/// A capture on `rete`'s raw tap, switched on when `on`.
pub async fn capture(rete: &Rete, on: bool) -> Result<Capture> {
    let taps = RawTaps::start(rete.debug_raw_slot())
        .await
        .map_err(anyhow::Error::msg)?;
    let capture = Capture::with_raw_tap(taps);
    capture.switch(on);
    Ok(capture)
}

/// The live-updates registry over `rete`'s sessions, reading `capture`.
pub async fn updates(rete: &Arc<Rete>, capture: &Capture) -> Result<Updates> {
    Updates::start_with_capture(
        ReadOnlySessions::new(rete.clone()),
        Arc::new(SystemClock),
        capture.clone(),
    )
    .await
    .map_err(anyhow::Error::msg)
}

/// Read-only tools with the debug tier on (sending off) over `rete`.
pub fn debug_context(rete: &Arc<Rete>, capture: Capture, updates: Updates) -> ToolContext {
    ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: ReadOnlySessions::new(rete.clone()),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings {
            debug: true,
            send: false,
        },
        access_log: Arc::new(AccessLog::new()),
        updates,
        capture,
    }
}
