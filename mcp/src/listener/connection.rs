//! One connection, one request: peer check, head, gate, route, body, the
//! MCP handler under its deadlines, and the answer.
//!
//! Deadlines, all from the contract:
//! - the head within 2 s of accept, else the connection is closed;
//! - the whole request within 10 s of accept, else closed;
//! - an answer within 25 s of the request being complete: past that every
//!   tool call is cancelled and 504 is sent once the handler has stopped;
//! - the handler deadline, 30 s after the request was complete: 504 even if
//!   the handler has not stopped; the slot stays taken until it does, or for
//!   60 s more, after which the slot is given back and the handler counted
//!   as overrunning until it returns.
//!
//! Beyond the contract, which names no deadline for it: an answer must be
//! taken by the socket within 10 s of being ready ([`WRITE_DEADLINE`]), else
//! the connection is closed, so a client that never reads cannot keep its
//! slot. And a stop cancels a request still arriving (head or body) as it
//! cancels one being handled: its connection is closed unanswered at once.

use super::{ConnCtx, SlotGuard};
use crate::http::{self, route, HeadReader, Refusal};
use crate::peer::{check_peer, PeerCheck};
use crate::rpc::{self, RpcRequest};
use socket2::SockRef;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, Interest};
use tokio::net::TcpStream;
use tokio::time::{sleep_until, timeout, timeout_at, Instant};
use tokio_util::sync::CancellationToken;

const HEAD_DEADLINE: Duration = Duration::from_secs(2);
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
const ANSWER_DEADLINE: Duration = Duration::from_secs(25);
const HANDLER_DEADLINE: Duration = Duration::from_secs(30);
const OVERRUN_GRACE: Duration = Duration::from_secs(60);
/// How long an answer may take to be taken by the socket: a client that does
/// not read it is closed then, and its slot given back.
pub(super) const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// What the accept loop knows about a connection's addresses.
#[derive(Clone, Copy)]
pub(super) struct Addrs {
    /// The client's end.
    pub(super) peer: SocketAddr,
    /// Our end, when the listener knows it (bound to one address); else
    /// asked of the socket.
    pub(super) local: Option<SocketAddr>,
    /// Whether the socket already sends without delay, inherited from the
    /// listener.
    pub(super) nodelay: bool,
}

/// Serves one accepted connection to its end. `slot` is released when the
/// work has ended, before the client can see the end of the answer or the
/// close, or earlier when the handler overruns.
pub(super) async fn serve(
    mut stream: TcpStream,
    addrs: Addrs,
    ctx: Arc<ConnCtx>,
    cancel: CancellationToken,
    slot: SlotGuard,
) {
    let mut slot = Some(slot);
    serve_request(&mut stream, addrs, &ctx, cancel, &mut slot).await;
    // A client that sees the close may connect again at once: its slot must
    // be free by then.
    drop(slot);
    drop(stream);
}

/// The request on `stream`. `slot` is taken (and so given back) by
/// [`answer`] just before the last byte of an answer is written, and by
/// [`finish_handler`] when a handler overruns.
async fn serve_request(
    stream: &mut TcpStream,
    addrs: Addrs,
    ctx: &ConnCtx,
    cancel: CancellationToken,
    slot: &mut Option<SlotGuard>,
) {
    let accepted = Instant::now();
    let Some(local) = addrs.local.or_else(|| stream.local_addr().ok()) else {
        return;
    };
    // Before reading a byte: the client must be our own user.
    match check_peer(addrs.peer, local, ctx.uid) {
        PeerCheck::SameUser => {}
        PeerCheck::OtherUser => return ctx.refused(Refusal::PeerOtherUser),
        PeerCheck::Unchecked => return ctx.refused(Refusal::PeerUnchecked),
    }
    // See `answer`: its last byte must not wait for an acknowledgement.
    if !addrs.nodelay {
        let _ = stream.set_nodelay(true);
    }

    let (head, mut body) = match read_head(stream, accepted + HEAD_DEADLINE, &cancel).await {
        HeadOutcome::Head(head, leftover) => (head, leftover),
        HeadOutcome::Refused(refusal) => return refuse(stream, ctx, refusal, slot).await,
        HeadOutcome::Gone => return,
    };
    let principal = match ctx.gate.judge(&head).and_then(|p| route(&head).map(|()| p)) {
        Ok(principal) => principal,
        Err(refusal) => return refuse(stream, ctx, refusal, slot).await,
    };
    if head.expects_continue() {
        let sent = timeout_at(
            accepted + REQUEST_DEADLINE,
            stream.write_all(http::CONTINUE),
        );
        if !matches!(sent.await, Ok(Ok(()))) {
            return;
        }
    }
    let length = head.content_length().unwrap_or(0) as usize;
    let deadline = accepted + REQUEST_DEADLINE;
    match read_body(stream, &mut body, length, deadline, &cancel).await {
        Ok(()) => {}
        Err(BodyError::Deadline) => return ctx.refused(Refusal::ReadDeadline),
        Err(BodyError::Gone) => return,
    }
    body.truncate(length);

    let complete = Instant::now();
    // The connection's own token, a child of the listener's: cancelling it
    // for this request reaches no other connection, and a token of its own
    // below it would cost a node in the listener's token tree per request.
    let handler_cancel = cancel.clone();
    let tool_ctx = ctx.tool_context(handler_cancel.clone(), principal);
    // Polled by this task itself, not spawned: one task per connection, and
    // the handler keeps being polled after a 504 until it has really stopped.
    let headers: Vec<(&str, &str)> = head.headers().collect();
    let handler = rpc::handle(
        RpcRequest {
            headers: &headers,
            body: &body,
        },
        &ctx.tools,
        &tool_ctx,
    );
    let mut handler = std::pin::pin!(handler);
    let mut sink = [0u8; 64];

    // Wait for the answer, the client leaving, the answer deadline or a stop.
    // In that order: most handlers are ready at their first poll, and then
    // the other branches are never polled, so the request costs no read of
    // the socket, no timer and no waiter on the cancel.
    let outcome = loop {
        tokio::select! {
            biased;
            done = &mut handler => {
                // Ended by a stop (its tool saw the cancel before this select
                // did, so all it has is a cancelled outcome): the request is
                // dropped like every other one in flight, nothing answered.
                if cancel.is_cancelled() {
                    return;
                }
                break Some(done);
            }
            read = stream.read(&mut sink) => match read {
                // A client that closes (or only shuts its sending side) is gone.
                Ok(0) | Err(_) => {
                    handler_cancel.cancel();
                    finish_handler(handler.as_mut(), complete, ctx, slot).await;
                    return;
                }
                Ok(_) => continue,
            },
            _ = sleep_until(complete + ANSWER_DEADLINE) => {
                handler_cancel.cancel();
                break None;
            }
            _ = cancel.cancelled() => {
                handler_cancel.cancel();
                finish_handler(handler.as_mut(), complete, ctx, slot).await;
                return;
            }
        }
    };
    match outcome {
        Some(response) => {
            let bytes = match response.content_type {
                Some(ct) => http::with_body(response.status, ct, &response.body, &[]),
                None => http::empty(response.status),
            };
            answer(stream, &bytes, slot).await;
        }
        None => {
            // Cancelled at 25 s: answer 504 once the tool calls have stopped,
            // or at the handler deadline if they have not.
            let stopped = timeout_at(complete + HANDLER_DEADLINE, &mut handler)
                .await
                .is_ok();
            if stopped {
                return answer(stream, &http::empty(504), slot).await;
            }
            // The handler still runs, so the connection keeps its slot
            // through the 504 and after it, until the handler returns.
            ctx.refused(Refusal::HandlerDeadline);
            let _ = timeout(WRITE_DEADLINE, stream.write_all(&http::empty(504))).await;
            let _ = timeout(WRITE_DEADLINE, stream.shutdown()).await;
            finish_handler(handler.as_mut(), complete, ctx, slot).await;
        }
    }
}

/// Refuses the request: counted first, then answered with its status, if it
/// has one (a connection closed unanswered has none).
async fn refuse(
    stream: &mut TcpStream,
    ctx: &ConnCtx,
    refusal: Refusal,
    slot: &mut Option<SlotGuard>,
) {
    ctx.refused(refusal);
    if let Some(status) = refusal.status() {
        answer(stream, &http::empty(status), slot).await;
    }
}

/// Writes the answer of a request whose work has ended, and closes the
/// sending side.
///
/// The slot is given back between the answer's last byte and the rest: a
/// client reads to the end of the answer and may open its next connection
/// at once, so the slot must be free before it can see that end; and until
/// the rest has been taken by the socket, a client that does not read still
/// holds its slot. The rest is sent with `MSG_MORE`, so the kernel holds it
/// back for the last byte and the client gets the answer in one segment, not
/// two; and the socket sends without delay (`TCP_NODELAY`), so in an answer
/// longer than a segment the tail does not wait for an acknowledgement.
///
/// A client that does not take the answer within [`WRITE_DEADLINE`] is
/// given up on: the connection is closed (by the caller, returning) and the
/// slot, still held while the rest waited, goes with it.
async fn answer(stream: &mut TcpStream, bytes: &[u8], slot: &mut Option<SlotGuard>) {
    let Some((last, rest)) = bytes.split_last() else {
        return;
    };
    let deadline = Instant::now() + WRITE_DEADLINE;
    if !matches!(
        timeout_at(deadline, send_all(stream, rest, libc::MSG_MORE)).await,
        Ok(Ok(()))
    ) {
        return;
    }
    drop(slot.take());
    let sent = timeout_at(deadline, send_all(stream, std::slice::from_ref(last), 0)).await;
    if matches!(sent, Ok(Ok(()))) {
        let _ = timeout_at(deadline, stream.shutdown()).await;
    }
}

/// Writes all of `bytes` with `send(2)` and `flags`, waiting while the
/// socket's buffer is full.
async fn send_all(stream: &TcpStream, mut bytes: &[u8], flags: libc::c_int) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.writable().await?;
        let sent = stream.try_io(Interest::WRITABLE, || {
            SockRef::from(stream).send_with_flags(bytes, flags | libc::MSG_NOSIGNAL)
        });
        match sent {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits for a cancelled handler to return, keeping the slot until the
/// overrun point; past it, the slot is given back and the handler counted as
/// overrunning until it returns.
async fn finish_handler<F: std::future::Future>(
    mut handler: std::pin::Pin<&mut F>,
    complete: Instant,
    ctx: &ConnCtx,
    slot: &mut Option<SlotGuard>,
) {
    let overrun_at = complete + HANDLER_DEADLINE + OVERRUN_GRACE;
    if timeout_at(overrun_at, handler.as_mut()).await.is_ok() {
        return;
    }
    ctx.refused(Refusal::HandlerOverran);
    let overrun = slot.take().map(SlotGuard::into_overrun);
    handler.await;
    drop(overrun);
}

enum HeadOutcome {
    Head(http::RequestHead, Vec<u8>),
    Refused(Refusal),
    Gone,
}

/// Room for a typical head in one read; a longer one takes more. On the
/// heap, as the body is: the connection's future is moved when its task is
/// spawned, so it is kept small. Under 1 KiB, which glibc's allocator serves
/// from its per-thread cache, where 4 KiB cost a heap consolidation per
/// connection.
const HEAD_READ: usize = 1000;

/// Reads the head until `deadline`; a stop (`cancel`) ends the read as if
/// the client had gone, so the connection is closed unanswered at once.
async fn read_head(
    stream: &mut TcpStream,
    deadline: Instant,
    cancel: &CancellationToken,
) -> HeadOutcome {
    let mut reader = HeadReader::new();
    let mut buf = Vec::with_capacity(HEAD_READ);
    loop {
        buf.clear();
        // The read first: when the head is there already, no timer and no
        // waiter on the cancel are set up for it. A stop while bytes keep
        // coming is seen at the next wait, at the latest by the handler.
        let read = tokio::select! {
            biased;
            read = timeout_at(deadline, stream.read_buf(&mut buf)) => read,
            _ = cancel.cancelled() => return HeadOutcome::Gone,
        };
        match read {
            Err(_) => return HeadOutcome::Refused(Refusal::HeadDeadline),
            Ok(Ok(0)) | Ok(Err(_)) => return HeadOutcome::Gone,
            Ok(Ok(_)) => {}
        }
        match reader.push(&buf) {
            Ok(Some((head, leftover))) => return HeadOutcome::Head(head, leftover),
            Ok(None) => continue,
            Err(e) => return HeadOutcome::Refused(Refusal::from(e)),
        }
    }
}

enum BodyError {
    Deadline,
    Gone,
}

/// Reads until `body` holds `length` bytes, straight into it; a stop
/// (`cancel`) ends the read as if the client had gone.
async fn read_body(
    stream: &mut TcpStream,
    body: &mut Vec<u8>,
    length: usize,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<(), BodyError> {
    body.reserve(length.saturating_sub(body.len()));
    while body.len() < length {
        // The read first, as for the head.
        let read = tokio::select! {
            biased;
            read = timeout_at(deadline, stream.read_buf(body)) => read,
            _ = cancel.cancelled() => return Err(BodyError::Gone),
        };
        match read {
            Err(_) => return Err(BodyError::Deadline),
            Ok(Ok(0)) | Ok(Err(_)) => return Err(BodyError::Gone),
            Ok(Ok(_)) => {}
        }
    }
    Ok(())
}
