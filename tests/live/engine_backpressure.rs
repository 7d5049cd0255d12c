//! Backpressure from the session actor to the TCP socket: while the actor is busy, a
//! 100,000-line burst (about 43 MB) waits in the server's send queue and the socket buffers,
//! not in our mailbox, and every line still arrives once the actor catches up.
//!
//! The server is scripted here (a real TCP socket): no IRC server lets a test write that
//! much that fast to one client. The actor is held busy by a read closure that blocks until
//! the server has written the whole burst or a deadline passes; with an unbounded mailbox the
//! connection task kept reading and the server finished while the actor was stalled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use support::live_tests_session::{eventually, plain, session_config, spec, Live};

const LINES: usize = 100_000;
/// How long the stalled actor waits for the server to finish writing; with backpressure it
/// never does, so the test spends this long stalled.
const STALL: Duration = Duration::from_secs(2);

/// The line `i` of the burst: about 430 bytes, so the burst is far larger than the socket
/// buffers on both ends.
fn burst_line(i: usize) -> String {
    format!(":bot!b@h PRIVMSG flooded :{i} {}\r\n", "x".repeat(400))
}

/// Accepts one client, registers it, and writes the burst when `start` fires; `done` gets
/// a message once the last byte was handed to the kernel. Plain threads and blocking
/// sockets: the server must run while the test holds one of the runtime's threads busy.
fn serve(
    listener: TcpListener,
    start: std_mpsc::Receiver<()>,
    done: std_mpsc::Sender<()>,
    written: Arc<AtomicUsize>,
) -> Result<()> {
    let (stream, _) = listener.accept()?;
    let mut write = stream.try_clone()?;
    let mut lines = BufReader::new(stream).lines();
    for line in lines.by_ref() {
        if line?.starts_with("USER ") {
            break;
        }
    }
    write.write_all(b":scripted 001 flooded :Welcome\r\n")?;
    // Keep reading what the client sends, so its writes never block.
    std::thread::spawn(move || for _ in lines {});
    start.recv().context("the test never started the burst")?;
    for i in 0..LINES {
        write.write_all(burst_line(i).as_bytes())?;
        written.store(i + 1, Ordering::SeqCst);
    }
    write.flush()?;
    let _ = done.send(());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_waits_in_the_socket_while_the_session_is_busy() -> Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let (start_tx, start_rx) = std_mpsc::channel();
    let (done_tx, done_rx) = std_mpsc::channel();
    let written = Arc::new(AtomicUsize::new(0));
    let counter = written.clone();
    // Detached: it ends when the burst is written or the client goes.
    std::thread::spawn(move || serve(listener, start_rx, done_tx, counter));
    let live = Live::start(spec(session_config("flooded"), plain(port))).await?;
    live.wait_state(ConnState::Connected).await?;

    // Inside the actor: start the burst, then stay busy until it was all written or STALL
    // passed. Nothing else runs in the actor meanwhile.
    let finished_while_stalled = live
        .read(move |_view| {
            let _ = start_tx.send(());
            done_rx.recv_timeout(STALL).is_ok()
        })
        .await?;
    let stalled_at = written.load(Ordering::SeqCst);
    assert!(
        !finished_while_stalled,
        "the server wrote all {LINES} lines while the session was busy: they went to our heap"
    );
    // What the server got rid of is in the kernel's socket buffers, plus at most
    // MAX_LINES_IN_FLIGHT lines in the mailbox (about 12,400 lines on the CI machine).
    assert!(stalled_at > 0, "the burst never started");

    // Once the actor is free again, every line arrives, in order.
    let last = format!("{} ", LINES - 1);
    eventually(
        "the last line of the burst",
        Duration::from_secs(120),
        || {
            let last = last.clone();
            let reader = live.handle.reader();
            async move {
                reader
                    .read(move |v| {
                        let id = v.find_buffer(BufferKind::Query, "bot")?;
                        let row = v.buffer(id)?.since(0).last()?;
                        matches!(&row.payload, Payload::Privmsg { text } if text.starts_with(&last))
                            .then_some(())
                    })
                    .await
                    .ok()
                    .flatten()
            }
        },
    )
    .await?;
    let count = live
        .read(|v| {
            v.find_buffer(BufferKind::Query, "bot")
                .and_then(|id| v.buffer(id))
                .map_or(0, |b| b.last_seq())
        })
        .await?;
    assert_eq!(count, LINES as u64, "lines lost or doubled");
    Ok(())
}
