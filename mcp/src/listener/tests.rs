//! The listener's deadlines and cancellation, through real sockets, with a
//! tool that runs until it is cancelled (registered under an allowlisted
//! name, since no real tool blocks yet).

use super::*;
use crate::listener::supervisor::{ControlSupervisor, SupervisorArgs, SupervisorMsg};
use crate::tools::registry::{BoxFuture, Tool};
use crate::tools::spec::ToolSpec;
use crate::tools::{Args, ToolBox, ToolOutcome};
use parking_lot::Mutex as PlMutex;
use rete_actors::{Rete, ReteOptions};

use std::time::Instant as StdInstant;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Runs until its request is cancelled, and records when that happened.
/// `started` and `cancelled` let a test wait for each moment instead of
/// sleeping.
struct UntilCancelled {
    cancelled_at: Arc<PlMutex<Option<StdInstant>>>,
    started: Arc<Notify>,
    cancelled: Arc<Notify>,
}

impl Tool for UntilCancelled {
    fn spec(&self) -> &ToolSpec {
        &crate::tools::wait_for_updates::TOOL.spec
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, _args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            self.started.notify_one();
            ctx.cancel.cancelled().await;
            *self.cancelled_at.lock() = Some(StdInstant::now());
            self.cancelled.notify_one();
            ToolOutcome::Cancelled
        })
    }
}

struct Served {
    port: u16,
    token: Token,
    cancelled_at: Arc<PlMutex<Option<StdInstant>>>,
    started: Arc<Notify>,
    cancelled: Arc<Notify>,
    supervisor: ActorRef<SupervisorMsg>,
}

async fn serve_until_cancelled() -> Served {
    let cancelled_at = Arc::new(PlMutex::new(None));
    let started = Arc::new(Notify::new());
    let cancelled = Arc::new(Notify::new());
    let tools = ToolBox::with_tools(vec![Box::new(UntilCancelled {
        cancelled_at: cancelled_at.clone(),
        started: started.clone(),
        cancelled: cancelled.clone(),
    })])
    .unwrap_or_else(|_| panic!("wait_for_updates is allowlisted"));
    let (port, token, supervisor) = serve_tools(tools).await;
    Served {
        port,
        token,
        cancelled_at,
        started,
        cancelled,
        supervisor,
    }
}

/// Starts a listener under its supervisor serving `tools` on a free port.
async fn serve_tools(tools: ToolBox) -> (u16, Token, ActorRef<SupervisorMsg>) {
    let (port, token, supervisor, _) = serve_tools_ctx(tools).await;
    (port, token, supervisor)
}

/// [`serve_tools`], with the connection context, whose slot count a test can watch.
async fn serve_tools_ctx(tools: ToolBox) -> (u16, Token, ActorRef<SupervisorMsg>, Arc<ConnCtx>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = Token::generate();
    let rete = Arc::new(Rete::start(ReteOptions::default()).await.unwrap());
    let ctx = Arc::new(ConnCtx {
        gate: Gate::new(token.expose(), port, Default::default()),
        // SAFETY: geteuid has no preconditions and cannot fail.
        uid: unsafe { libc::geteuid() },
        tools,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        sending: rete_actors::SendingSessions::new(rete),
        limiter: crate::send::limiter::Limiter::unstarted(),
        debug: Arc::new(AtomicBool::new(false)),
        send: Arc::new(AtomicBool::new(false)),
        approvals: Default::default(),
        access_log: Arc::new(AccessLog::new()),
        updates: crate::updates::Updates::unstarted(),
        capture: crate::debug::Capture::off(),
        grants: Default::default(),
        refusals: Mutex::new(RefusalLog::default()),
        slots: Arc::new(Slots::default()),
    });
    let args = SupervisorArgs {
        listener,
        port,
        ctx: ctx.clone(),
    };
    let (supervisor, _) = Actor::spawn(None, ControlSupervisor, args).await.unwrap();
    (port, token, supervisor, ctx)
}

async fn send_call(served: &Served) -> TcpStream {
    let body =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_updates"}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        served.port,
        served.token.expose(),
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", served.port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

#[tokio::test]
async fn a_client_that_leaves_cancels_its_request_at_once() {
    let served = serve_until_cancelled().await;
    let stream = send_call(&served).await;
    // Wait until the request has reached its tool, then leave.
    tokio::time::timeout(Duration::from_secs(10), served.started.notified())
        .await
        .expect("the request reached its tool");
    assert!(
        served.cancelled_at.lock().is_none(),
        "cancelled before the client left"
    );
    let left = StdInstant::now();
    drop(stream);
    tokio::time::timeout(Duration::from_secs(2), served.cancelled.notified())
        .await
        .expect("the tool was cancelled");
    let cancelled = served
        .cancelled_at
        .lock()
        .expect("the tool recorded when it was cancelled");
    let after = cancelled.duration_since(left);
    assert!(
        after < Duration::from_millis(100),
        "cancelled {after:?} after the client left"
    );
    let _ = ractor::call!(served.supervisor, SupervisorMsg::Stop);
}

#[tokio::test]
async fn no_answer_in_25_seconds_is_504_once_the_tool_has_stopped() {
    let served = serve_until_cancelled().await;
    let mut stream = send_call(&served).await;
    let sent = StdInstant::now();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answered = StdInstant::now();
    assert!(
        answer.starts_with(b"HTTP/1.1 504"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert!(answered.duration_since(sent) >= Duration::from_secs(25));
    let cancelled = served.cancelled_at.lock().expect("the tool was cancelled");
    assert!(
        cancelled <= answered,
        "504 was sent before the tool stopped"
    );
    let _ = ractor::call!(served.supervisor, SupervisorMsg::Stop);
}

/// What one request on a fresh connection came to.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The whole answer (its head and Content-Length bytes of body) arrived.
    Answered,
    /// The connection was closed before the answer was complete.
    ClosedUnanswered,
}

/// Sends `request` on a fresh connection and reads the answer only up to its
/// Content-Length: the moment the client has seen the end of it, it resets
/// the connection and is free to open the next one.
async fn one_request(port: u16, request: &[u8]) -> Seen {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    if stream.write_all(request).await.is_err() {
        return Seen::ClosedUnanswered;
    }
    let mut answer = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let seen = loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break Seen::ClosedUnanswered,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
        if answer_complete(&answer) {
            assert!(
                answer.starts_with(b"HTTP/1.1 200"),
                "{}",
                String::from_utf8_lossy(&answer)
            );
            break Seen::Answered;
        }
    };
    // A reset, not a FIN: 8,000 connections in TIME_WAIT would only slow
    // the peer check down.
    let _ = stream.set_zero_linger();
    seen
}

/// True once the head and Content-Length bytes of body have arrived.
fn answer_complete(answer: &[u8]) -> bool {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .expect("an answer with a body has a Content-Length");
    answer.len() >= end + 4 + length
}

/// As many clients as there are slots, each opening its next connection the
/// moment it has seen the end of the last answer: the slot must already be
/// free by then, so not one connection is closed unanswered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_clients_in_a_row_are_all_answered() {
    const PER_CLIENT: usize = 1_000;
    let (port, token, supervisor) = serve_tools(ToolBox::new()).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#;
    let request: Arc<[u8]> = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        token.expose(),
        body.len()
    )
    .into_bytes()
    .into();
    let clients: Vec<_> = (0..SLOTS)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut unanswered = 0;
                for _ in 0..PER_CLIENT {
                    if one_request(port, &request).await == Seen::ClosedUnanswered {
                        unanswered += 1;
                    }
                }
                unanswered
            })
        })
        .collect();
    let mut unanswered = 0;
    for client in clients {
        unanswered += client.await.unwrap();
    }
    assert_eq!(
        unanswered,
        0,
        "{unanswered} of {} connections closed unanswered",
        SLOTS * PER_CLIENT
    );
    let _ = ractor::call!(supervisor, SupervisorMsg::Stop);
}

#[tokio::test]
async fn a_request_carries_approval_only_while_it_is_on() {
    let rete = Arc::new(Rete::start(ReteOptions::default()).await.unwrap());
    let switches = crate::listener::Switches::default();
    switches
        .send
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let approvals = switches.approvals.clone();
    let ctx = crate::listener::conn_ctx(
        Token::generate(),
        1,
        rete,
        switches,
        Arc::new(AccessLog::new()),
        crate::updates::Updates::unstarted(),
        crate::debug::Capture::off(),
    );
    let approval = |ctx: &ConnCtx| {
        ctx.tool_context(CancellationToken::new(), crate::grant::Principal::Full)
            .send
            .map(|s| s.approval.is_some())
    };
    assert_eq!(approval(&ctx), Some(false));
    approvals.set_on(true);
    assert_eq!(approval(&ctx), Some(true), "read on the next request");
    approvals.set_on(false);
    assert_eq!(approval(&ctx), Some(false));
}

/// Answers with far more than the kernel buffers on loopback (a partial
/// result is not held to the budget, so a test tool can make one this large),
/// and says when it has.
struct HugeAnswer {
    answered: Arc<Notify>,
}

impl Tool for HugeAnswer {
    fn spec(&self) -> &ToolSpec {
        &crate::tools::list_sessions::TOOL.spec
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext, _args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            self.answered.notify_one();
            // Twice the most a loopback socket buffers (tcp_wmem's
            // default maximum is 4 MiB), so the answer cannot all be taken.
            ToolOutcome::Stopped(serde_json::json!({"pad": "x".repeat(8 << 20)}))
        })
    }
}

/// A client that never reads an answer the socket cannot take keeps its slot
/// only until the write deadline; then the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_loses_its_slot_at_the_write_deadline() {
    let answered = Arc::new(Notify::new());
    let tools = ToolBox::with_tools(vec![Box::new(HugeAnswer {
        answered: answered.clone(),
    })])
    .unwrap_or_else(|_| panic!("list_sessions is allowlisted"));
    let (port, token, supervisor, ctx) = serve_tools_ctx(tools).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        token.expose(),
        body.len()
    );
    // The smallest receive window, and never a read.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1).unwrap();
    let mut stream = socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), answered.notified())
        .await
        .expect("the request reached its tool");
    let started = StdInstant::now();
    let live = || ctx.slots.live.load(Ordering::SeqCst);
    // Its answer is stuck in the socket: it still holds its slot.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(live(), 1, "the answer did not wait on the client");
    // The deadline starts once the answer is encoded, which on a loaded
    // machine in a debug build takes seconds after the tool was reached.
    let limit = super::connection::WRITE_DEADLINE + Duration::from_secs(15);
    while live() != 0 {
        assert!(
            started.elapsed() < limit,
            "the slot is still held {:?} after the answer was ready",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let freed = started.elapsed();
    assert!(
        freed >= super::connection::WRITE_DEADLINE - Duration::from_secs(1),
        "freed after only {freed:?}"
    );
    drop(stream);
    let _ = ractor::call!(supervisor, SupervisorMsg::Stop);
}
