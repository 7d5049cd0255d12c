//! The listener's deadlines and cancellation, through real sockets, with a
//! tool that runs until it is cancelled (registered under an allowlisted
//! name, since no real tool blocks yet).

use super::*;
use crate::listener::supervisor::{ControlSupervisor, SupervisorArgs, SupervisorMsg};
use crate::tools::{Args, BoxFuture, Tier, Tool, ToolBox, ToolOutcome};
use parking_lot::Mutex as PlMutex;
use rete_actors::{Rete, ReteOptions};
use serde_json::{json, Value};
use std::time::Instant as StdInstant;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Runs until its request is cancelled, and records when that happened.
struct UntilCancelled {
    cancelled_at: Arc<PlMutex<Option<StdInstant>>>,
}

impl Tool for UntilCancelled {
    fn name(&self) -> &'static str {
        "wait_for_updates"
    }

    fn tier(&self) -> Tier {
        Tier::Release
    }

    fn descriptor(&self) -> Value {
        json!({"name": "wait_for_updates", "inputSchema": {"type": "object"}})
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, _args: &'a Args) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            ctx.cancel.cancelled().await;
            *self.cancelled_at.lock() = Some(StdInstant::now());
            ToolOutcome::Cancelled
        })
    }
}

struct Served {
    port: u16,
    token: Token,
    cancelled_at: Arc<PlMutex<Option<StdInstant>>>,
    supervisor: ActorRef<SupervisorMsg>,
}

async fn serve_until_cancelled() -> Served {
    let cancelled_at = Arc::new(PlMutex::new(None));
    let tools = ToolBox::with_tools(vec![Box::new(UntilCancelled {
        cancelled_at: cancelled_at.clone(),
    })])
    .unwrap_or_else(|_| panic!("wait_for_updates is allowlisted"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = Token::generate();
    let rete = Arc::new(Rete::start(ReteOptions::default()).await.unwrap());
    let ctx = Arc::new(ConnCtx {
        token: token.clone(),
        port,
        // SAFETY: geteuid has no preconditions and cannot fail.
        uid: unsafe { libc::geteuid() },
        tools,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        sending: rete_actors::SendingSessions::new(rete),
        debug: Arc::new(AtomicBool::new(false)),
        send: Arc::new(AtomicBool::new(false)),
        access_log: Arc::new(AccessLog::new()),
        updates: crate::updates::Updates::unstarted(),
        refusals: Mutex::new(RefusalLog::default()),
        slots: Arc::new(Slots::default()),
    });
    let args = SupervisorArgs {
        listener,
        port,
        ctx,
    };
    let (supervisor, _) = Actor::spawn(None, ControlSupervisor, args).await.unwrap();
    Served {
        port,
        token,
        cancelled_at,
        supervisor,
    }
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
    // Let the request reach its tool, then leave.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        served.cancelled_at.lock().is_none(),
        "cancelled before the client left"
    );
    let left = StdInstant::now();
    drop(stream);
    let deadline = left + Duration::from_secs(2);
    let cancelled = loop {
        if let Some(at) = *served.cancelled_at.lock() {
            break at;
        }
        assert!(StdInstant::now() < deadline, "the tool was not cancelled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
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
