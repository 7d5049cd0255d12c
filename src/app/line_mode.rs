//! Line mode: commands from stdin, every row printed as one line on stdout.
//! Used when stdin or stdout is not a terminal, or with `--plain`, so
//! scripts and pipes keep working.

use super::{approval, events, say, App};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::broadcast::error::RecvError;

/// Runs until `/quit`, end of input, SIGINT, SIGTERM or SIGHUP.
pub async fn run(mut app: App) -> anyhow::Result<()> {
    let mut events = match app.events.take() {
        Some(e) => e,
        None => app.rete.subscribe(),
    };
    let mut signals = super::leaving::Signals::catch()?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    // Lines waiting for the person's approval are printed as they come.
    let approvals = app.control.approvals().clone();
    let mut approval_events = approvals.subscribe();
    let mut older = app.older.outcomes();
    app.greet();
    while !app.quit {
        tokio::select! {
            line = stdin.next_line() => match line {
                Ok(Some(line)) => app.on_input(&line).await,
                // End of input is a quit: reterm is line-driven.
                Ok(None) | Err(_) => app.leave(None),
            },
            event = events.recv() => match event {
                Ok(event) => {
                    events::on_event(&mut app, event).await;
                }
                Err(RecvError::Lagged(n)) => say(&format!("-!- {n} events were not shown (output fell behind)")),
                Err(RecvError::Closed) => app.quit = true,
            },
            event = approval_events.recv() => approval::on_event(event, &approvals),
            Some(outcome) = next_outcome(&mut older) => {
                // The session sent the rows' events before its answer:
                // print them first, then the count.
                while let Ok(event) = events.try_recv() {
                    events::on_event(&mut app, event).await;
                }
                if let Some(line) = app.older.settle(&outcome) {
                    say(&line);
                }
            },
            _ = signals.next() => app.leave(None),
        }
    }
    app.stop().await;
    Ok(())
}

/// The next outcome of a request for older rows (never, without a receiver).
pub async fn next_outcome(
    rx: &mut Option<tokio::sync::mpsc::UnboundedReceiver<super::older::Outcome>>,
) -> Option<super::older::Outcome> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
