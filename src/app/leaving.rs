//! Every way of leaving says goodbye first: `/quit`, and the signals a
//! terminal or a service manager sends (SIGINT, SIGTERM, SIGHUP), each send
//! QUIT with a reason to every connected network before reterm stops, so
//! others see the reason rather than the server's "Client exited".

use super::App;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The QUIT reason when the person gave none.
pub const QUIT_REASON: &str = "Leaving";

/// The signals that end reterm.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on.
    pub fn catch() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next of them.
    pub async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
            _ = self.hangup.recv() => {},
        }
    }
}

impl App {
    /// Sends QUIT (with `reason`, or [`QUIT_REASON`]) to every network and
    /// ends the loop; `stop` then waits for the QUITs to go out.
    pub fn leave(&mut self, reason: Option<String>) {
        let reason = reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| QUIT_REASON.to_owned());
        for n in &self.networks {
            n.session.sender().disconnect(Some(reason.clone()));
        }
        self.quit = true;
    }
}
