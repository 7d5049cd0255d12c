//! SASL SCRAM-SHA-256 end to end: the engine, driven through the `Rete` facade, against a
//! scripted IRC server written here. The Debian Atheme has no SCRAM mechanism, so the server
//! side of RFC 5802/7677 is played by this file, with its own computation (the `hmac`, `sha2`
//! and `pbkdf2` crates) so it checks the engine rather than sharing its code.

use std::time::Duration;

use anyhow::Result;
use rete_engine::event::ConnState;
use rete_engine::sasl::{Credentials, Mechanism};

use scripted::{ScramServer, ServerSpec, Transcript};
use support::sasl_tests_session::{
    await_sasl_verdict, plain, sasl_config, start_session, Snapshot, VERDICT, WAIT,
};

/// The account the client authenticates as.
const ACCOUNT: &str = "scramuser";
/// The password the scripted server knows for [`ACCOUNT`]; distinctive so a leak is found.
const PASSWORD: &str = "Tr0ub4dor-scram-4917";

/// Runs one session against `spec` with `password` and returns the engine's view and the
/// server's transcript once registration is over.
async fn run(spec: ServerSpec, password: &str) -> Result<(Snapshot, Transcript)> {
    let server = ScramServer::start(spec).await?;
    let credentials = Credentials {
        authcid: ACCOUNT.to_owned(),
        password: password.to_owned(),
        authzid: None,
    };
    let config = sasl_config("scramnick", Mechanism::ScramSha256, credentials)?;
    let (rete, session) = start_session(config, plain(server.port())).await?;
    let snap = await_sasl_verdict(&session, || {
        format!("scripted server transcript: {:#?}", server.snapshot())
    })
    .await;
    rete.shutdown(Duration::from_secs(2)).await;
    let transcript = server.snapshot();
    Ok((snap?, transcript))
}

/// The client's lines, as the server received them, that start with `prefix`.
fn received_with<'a>(t: &'a Transcript, prefix: &str) -> Vec<&'a str> {
    t.received
        .iter()
        .filter(|l| l.starts_with(prefix))
        .map(String::as_str)
        .collect()
}

#[tokio::test]
async fn scram_sha256_logs_in_and_proves_the_password() -> Result<()> {
    let (snap, t) = run(ServerSpec::new(PASSWORD), PASSWORD).await?;

    assert_eq!(t.authcid.as_deref(), Some(ACCOUNT), "{t:#?}");
    assert_eq!(t.proof_valid, Some(true), "{t:#?}");
    assert!(t.logged_in, "the server never sent 900/903: {t:#?}");
    assert_eq!(
        snap.statuses_with(VERDICT),
        ["SASL authentication succeeded"]
    );
    assert!(
        snap.replies_to("900")
            .iter()
            .any(|text| text.contains(ACCOUNT) && text.contains("You are now logged in")),
        "no 900 row: {:?}",
        snap.replies
    );
    assert_eq!(snap.state, ConnState::Connected);
    assert_eq!(snap.sasl_outcome(), "succeeded");
    assert_eq!(snap.sasl_account(), Some(ACCOUNT));
    // CAP END only after the exchange, and no abort.
    assert!(received_with(&t, "AUTHENTICATE *").is_empty(), "{t:#?}");
    let end = t.received.iter().position(|l| l == "CAP END");
    let last_auth = t
        .received
        .iter()
        .rposition(|l| l.starts_with("AUTHENTICATE"));
    assert!(end > last_auth, "CAP END before SASL finished: {t:#?}");
    snap.assert_no_secret(PASSWORD);
    assert!(
        t.received.iter().all(|l| !l.contains(PASSWORD)),
        "the password went over the wire"
    );
    Ok(())
}

#[tokio::test]
async fn scram_wrong_password_fails_with_904_and_still_registers() -> Result<()> {
    let wrong = "not-the-Password-8821";
    let (snap, t) = run(ServerSpec::new(PASSWORD), wrong).await?;

    assert_eq!(
        t.proof_valid,
        Some(false),
        "the server accepted a proof: {t:#?}"
    );
    assert!(!t.logged_in);
    let verdicts = snap.statuses_with(VERDICT);
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert!(
        // The scripted 904 text repeats the prefix: it is said once.
        verdicts[0] == scripted::FAILED_TEXT,
        "{verdicts:?}"
    );
    assert_eq!(snap.state, ConnState::Connected);
    assert_eq!(snap.sasl_outcome(), "failed");
    assert_eq!(snap.sasl_account(), None);
    // The server already ended the exchange with 904: no abort is due.
    assert!(received_with(&t, "AUTHENTICATE *").is_empty(), "{t:#?}");
    assert!(t.received.iter().any(|l| l == "CAP END"));
    snap.assert_no_secret(wrong);
    snap.assert_no_secret(PASSWORD);
    Ok(())
}

#[tokio::test]
async fn scram_forged_server_signature_aborts_and_still_registers() -> Result<()> {
    let (snap, t) = run(ServerSpec::new(PASSWORD).forge_server_signature(), PASSWORD).await?;

    // The client proved the password; the server could not prove it knows it.
    assert_eq!(t.proof_valid, Some(true), "{t:#?}");
    assert!(t.server_final_sent, "{t:#?}");
    let auth = received_with(&t, "AUTHENTICATE ");
    assert_eq!(
        auth.last(),
        Some(&"AUTHENTICATE *"),
        "the engine did not abort after the forged v=: {t:#?}"
    );
    assert!(
        !t.logged_in,
        "the engine acknowledged a forged server-final: {t:#?}"
    );
    let verdicts = snap.statuses_with(VERDICT);
    assert_eq!(
        verdicts,
        ["SASL authentication failed: SCRAM server signature mismatch"]
    );
    assert_eq!(snap.state, ConnState::Connected);
    assert_eq!(snap.sasl_outcome(), "failed");
    assert_eq!(snap.sasl_account(), None);
    snap.assert_no_secret(PASSWORD);
    Ok(())
}

/// A server-first whose base64 is 1000 bytes arrives as chunks of 400, 400 and 200.
#[tokio::test]
async fn scram_long_server_first_is_reassembled_from_three_chunks() -> Result<()> {
    let (snap, t) = run(
        ServerSpec::new(PASSWORD).server_first_base64_len(1000),
        PASSWORD,
    )
    .await?;

    assert_eq!(t.server_first_chunks, [400, 400, 200], "{t:#?}");
    // client-final repeats the long nonce, so the engine must chunk its own answer too.
    assert!(
        t.client_final_chunks.len() >= 2 && t.client_final_chunks[0] == 400,
        "client-final was not split into 400-byte chunks: {t:#?}"
    );
    assert_eq!(t.proof_valid, Some(true), "{t:#?}");
    assert!(t.logged_in, "{t:#?}");
    assert_eq!(
        snap.statuses_with(VERDICT),
        ["SASL authentication succeeded"]
    );
    assert_eq!(snap.sasl_account(), Some(ACCOUNT));
    snap.assert_no_secret(PASSWORD);
    Ok(())
}

/// A server-first whose base64 is exactly 800 bytes arrives as two full chunks and a `+`.
#[tokio::test]
async fn scram_server_first_of_exactly_two_chunks_ends_with_plus() -> Result<()> {
    let (snap, t) = run(
        ServerSpec::new(PASSWORD).server_first_base64_len(800),
        PASSWORD,
    )
    .await?;

    // 1 stands for the lone "+" that ends a payload of whole chunks.
    assert_eq!(t.server_first_chunks, [400, 400, 1], "{t:#?}");
    assert_eq!(t.proof_valid, Some(true), "{t:#?}");
    assert!(t.logged_in, "{t:#?}");
    assert_eq!(
        snap.statuses_with(VERDICT),
        ["SASL authentication succeeded"]
    );
    snap.assert_no_secret(PASSWORD);
    Ok(())
}

/// A server asking for many iterations: the session derives the key off its actor, so it
/// answers a PING sent right after server-first before client-final is ready (computed
/// inline, the PONG came only after client-final). No clock is read: the order of the
/// client's lines is the evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_key_derivation_does_not_stall_the_session() -> Result<()> {
    let (snap, t) = run(
        ServerSpec::new(PASSWORD).slow_key_with_probe(150_000),
        PASSWORD,
    )
    .await?;
    assert_eq!(snap.state, ConnState::Connected, "{t:#?}");
    assert_eq!(t.proof_valid, Some(true), "{t:#?}");
    let pong = t
        .received
        .iter()
        .position(|l| l.starts_with("PONG") && l.contains("probe"))
        .unwrap_or_else(|| panic!("no PONG: {t:#?}"));
    let client_final = t
        .received
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("AUTHENTICATE"))
        .map(|(i, _)| i)
        .nth(2)
        .unwrap_or_else(|| panic!("no client-final: {t:#?}"));
    assert!(
        pong < client_final,
        "the PING waited for the key derivation: {:#?}",
        t.received
    );
    Ok(())
}

/// Issue 37: the server's AUTHENTICATE challenges (server-first, server-final) are withheld
/// from the raw view — raw_since, search_raw and a raw subscription — and counted in
/// `withheld`, not returned as `AUTHENTICATE ********`; the server's empty `AUTHENTICATE +`
/// and the client's own (masked) lines still come back. Through `ToolBox::call`, with a debug
/// capture on the engine's raw tap switched on before the session connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_challenges_are_withheld_from_the_raw_view() -> Result<()> {
    use std::sync::Arc;

    use anyhow::{bail, ensure, Context};
    use rete_actors::{Rete, ReteOptions, SessionSpec};

    use rete_mcp::tools::{Args, ToolBox, ToolOutcome};

    use serde_json::{json, Value};

    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let capture = support::debug_tools::capture(&rete, true).await?;
    let updates = support::debug_tools::updates(&rete, &capture).await?;
    let ctx = support::debug_tools::debug_context(&rete, capture, updates);
    let call = |tool: &'static str, args: Value| {
        let ctx = &ctx;
        async move {
            let Ok(parsed) = Args::from_request(Some(&args)) else {
                bail!("arguments are not an object");
            };
            match ToolBox::new().call(tool, ctx, &parsed).await {
                ToolOutcome::Ok(v) => Ok(v),
                other => bail!("{tool}({args}) failed: {other:?}"),
            }
        }
    };
    let server = ScramServer::start(ServerSpec::new(PASSWORD)).await?;
    let credentials = Credentials {
        authcid: ACCOUNT.to_owned(),
        password: PASSWORD.to_owned(),
        authzid: None,
    };
    let config = sasl_config("scramraw", Mechanism::ScramSha256, credentials)?;
    let session = rete
        .add_session(SessionSpec {
            config,
            transport: rete_transports::Transport::Irc(plain(server.port())),
            autoconnect: true,
            reconnect: rete_transports::Backoff::new(
                Duration::from_millis(200),
                Duration::from_secs(2),
            ),
        })
        .await?;
    await_sasl_verdict(&session, || format!("{:#?}", server.snapshot())).await?;
    let t = server.snapshot();
    ensure!(t.logged_in, "{t:#?}");
    // The two challenges the server sent: server-first and server-final.
    let challenges = t
        .sent
        .iter()
        .filter(|l| l.contains("AUTHENTICATE ") && !l.ends_with("AUTHENTICATE +"))
        .count();
    ensure!(
        challenges == 2,
        "the server sent {challenges} challenges: {t:#?}"
    );
    let sid = session.id().as_str().to_owned();

    // Lines of the raw view: (dir, line) of every AUTHENTICATE, and the withheld count.
    let authenticates = |lines: &Value| -> Vec<(String, String)> {
        lines
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| l.get("line").filter(|v| v.is_object()).unwrap_or(l))
            .filter_map(|l| {
                Some((
                    l["dir"].as_str()?.to_owned(),
                    l["line"].as_str()?.to_owned(),
                ))
            })
            .filter(|(_, line)| line.contains("AUTHENTICATE"))
            .collect()
    };
    let check = |what: &str, got: &[(String, String)], withheld: u64| -> Result<()> {
        ensure!(withheld >= 2, "{what} withheld {withheld}: {got:?}");
        let incoming: Vec<&str> = got
            .iter()
            .filter(|(d, _)| d == "in")
            .map(|(_, l)| l.as_str())
            .collect();
        ensure!(
            incoming.iter().all(|l| l.ends_with("AUTHENTICATE +")),
            "{what} returned a server challenge: {incoming:?}"
        );
        ensure!(
            !incoming.is_empty(),
            "{what} lost the server's AUTHENTICATE +"
        );
        ensure!(
            got.iter()
                .any(|(d, l)| d == "out" && l == "AUTHENTICATE SCRAM-SHA-256"),
            "{what} lost our mechanism line: {got:?}"
        );
        Ok(())
    };

    let v = call("raw_since", json!({"session": sid, "limit": 2000})).await?;
    let withheld = v.get("withheld").and_then(Value::as_u64).unwrap_or(0);
    check("raw_since", &authenticates(&v["lines"]), withheld)?;

    let v = call(
        "search_raw",
        json!({"session": sid, "commands": ["AUTHENTICATE"], "limit": 2000}),
    )
    .await?;
    let withheld = v.get("withheld").and_then(Value::as_u64).unwrap_or(0);
    check("search_raw", &authenticates(&v["lines"]), withheld)?;

    // A raw subscription, once it has started (a PONG reached it), meets a challenge the
    // server sends later: withheld and counted, and the PONG after it delivered.
    let sub = call(
        "subscribe",
        json!({"raw": {"commands": ["AUTHENTICATE", "PONG"], "direction": "in"}}),
    )
    .await?;
    let sub = sub["subscription"]["id"]
        .as_str()
        .context("subscription id")?
        .to_owned();
    let (mut events, mut withheld) = (Vec::new(), 0u64);
    let mut lines = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut started = false;
    for i in 0.. {
        let token = if started {
            scripted::LATE_CHALLENGE_PING.to_owned()
        } else {
            format!("probe{i}")
        };
        session
            .sender()
            .command(move |c| c.quote(&format!("PING :{token}")))
            .await?;
        let v = call(
            "wait_for_updates",
            json!({"id": sub, "detail": "full", "limit": 500, "timeout": 2}),
        )
        .await?;
        for entry in v["updates"].as_array().into_iter().flatten() {
            withheld += entry.get("withheld").and_then(Value::as_u64).unwrap_or(0);
            events.extend(authenticates(&entry["events"]));
            lines.extend(
                entry["events"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["line"]["line"].as_str().map(str::to_owned)),
            );
        }
        let challenged = lines
            .iter()
            .any(|l| l.contains("PONG") && l.ends_with(scripted::LATE_CHALLENGE_PING));
        if challenged {
            break;
        }
        started = !lines.is_empty();
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the subscription delivered {lines:?}"
        );
    }
    ensure!(
        withheld >= 1,
        "the raw subscription withheld nothing: {lines:?}"
    );
    ensure!(
        events.is_empty(),
        "the raw subscription returned a server challenge: {events:?}"
    );

    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// The scripted IRC server: just enough registration and the server side of SCRAM-SHA-256.
mod scripted {
    use std::sync::{Arc, Mutex};

    use anyhow::{anyhow, bail, Context, Result};
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use hmac::{Hmac, Mac};
    use rand::distr::{Alphanumeric, SampleString};
    use rand::RngCore;
    use sha2::{Digest, Sha256};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::tcp::OwnedWriteHalf;
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    const SERVER: &str = "scram.test";
    /// The iteration count unless the spec says otherwise (RFC 7677's example).
    const ITERATIONS: u32 = 4096;
    /// The longest base64 chunk one AUTHENTICATE line carries (IRCv3 SASL).
    const CHUNK: usize = 400;
    /// The text of the 904 the server sends for a wrong proof.
    pub const FAILED_TEXT: &str = "SASL authentication failed";
    /// The PING token that makes the server send [`LATE_CHALLENGE`].
    pub const LATE_CHALLENGE_PING: &str = "challenge";
    /// A challenge (base64 of `r=late-challenge-nonce`) sent on [`LATE_CHALLENGE_PING`].
    pub const LATE_CHALLENGE: &str = "cj1sYXRlLWNoYWxsZW5nZS1ub25jZQ==";

    /// How the scripted server behaves.
    #[derive(Clone, Debug)]
    pub struct ServerSpec {
        password: String,
        forge_signature: bool,
        /// Pad the nonce and lengthen the salt so base64(server-first) has this length.
        server_first_b64_len: Option<usize>,
        /// The PBKDF2 iteration count asked for in server-first.
        iterations: u32,
        /// Sends `PING :probe` right after server-first.
        probe: bool,
    }

    impl ServerSpec {
        /// A well-behaved server that knows `password` for every account.
        pub fn new(password: &str) -> Self {
            Self {
                password: password.to_owned(),
                forge_signature: false,
                server_first_b64_len: None,
                iterations: ITERATIONS,
                probe: false,
            }
        }

        /// Asks for `iterations` PBKDF2 rounds and sends `PING :probe` right after
        /// server-first, so the transcript shows whether the client answered the PING
        /// while it derived its key.
        pub fn slow_key_with_probe(mut self, iterations: u32) -> Self {
            self.iterations = iterations;
            self.probe = true;
            self
        }

        /// Sends a server-final whose `v=` signature is wrong (a server without the password).
        pub fn forge_server_signature(mut self) -> Self {
            self.forge_signature = true;
            self
        }

        /// Makes base64(server-first) exactly `len` bytes (a multiple of 4, at least 700).
        pub fn server_first_base64_len(mut self, len: usize) -> Self {
            self.server_first_b64_len = Some(len);
            self
        }
    }

    /// What happened on the connection, for assertions and failure output.
    #[derive(Clone, Debug, Default)]
    pub struct Transcript {
        /// Every line the client sent, in order.
        pub received: Vec<String>,
        /// Every line the server sent, in order.
        pub sent: Vec<String>,
        /// The `n=` of client-first.
        pub authcid: Option<String>,
        /// Whether the client's proof matched the password, once checked.
        pub proof_valid: Option<bool>,
        /// Lengths of the AUTHENTICATE chunks that carried server-first ("+" counts 1).
        pub server_first_chunks: Vec<usize>,
        /// Lengths of the AUTHENTICATE chunks that carried client-final ("+" counts 1).
        pub client_final_chunks: Vec<usize>,
        /// Whether the server sent its server-final message.
        pub server_final_sent: bool,
        /// Whether the server sent 900 and 903.
        pub logged_in: bool,
    }

    /// A listening scripted server; serves one connection.
    pub struct ScramServer {
        port: u16,
        transcript: Arc<Mutex<Transcript>>,
        task: JoinHandle<()>,
    }

    impl Drop for ScramServer {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl ScramServer {
        /// Binds 127.0.0.1 on an ephemeral port and serves the first client in the background.
        pub async fn start(spec: ServerSpec) -> Result<Self> {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let port = listener.local_addr()?.port();
            let transcript = Arc::new(Mutex::new(Transcript::default()));
            let shared = transcript.clone();
            let task = tokio::spawn(async move {
                if let Err(e) = serve(listener, spec, shared.clone()).await {
                    let mut t = shared.lock().unwrap_or_else(|p| p.into_inner());
                    t.sent.push(format!("<server error: {e:#}>"));
                }
            });
            Ok(Self {
                port,
                transcript,
                task,
            })
        }

        /// The port the client should connect to.
        pub fn port(&self) -> u16 {
            self.port
        }

        /// A copy of the transcript as it is now.
        pub fn snapshot(&self) -> Transcript {
            self.transcript
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        }
    }

    /// Where the SASL exchange stands on the server.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Sasl {
        Idle,
        AwaitClientFirst,
        AwaitClientFinal,
        AwaitFinalAck,
        Over,
    }

    /// What the server keeps between server-first and client-final.
    struct Exchange {
        client_first_bare: String,
        server_first: String,
        nonce: String,
        salt: Vec<u8>,
    }

    struct Conn {
        spec: ServerSpec,
        writer: OwnedWriteHalf,
        transcript: Arc<Mutex<Transcript>>,
        nick: String,
        sasl: Sasl,
        exchange: Option<Exchange>,
        /// Base64 chunks of the client payload being assembled.
        pending: String,
        /// Lengths of the chunks of the payload being assembled.
        pending_chunks: Vec<usize>,
    }

    async fn serve(
        listener: TcpListener,
        spec: ServerSpec,
        transcript: Arc<Mutex<Transcript>>,
    ) -> Result<()> {
        let (stream, _) = listener.accept().await?;
        let (read, writer) = stream.into_split();
        let mut conn = Conn {
            spec,
            writer,
            transcript,
            nick: "*".to_owned(),
            sasl: Sasl::Idle,
            exchange: None,
            pending: String::new(),
            pending_chunks: Vec::new(),
        };
        let mut lines = BufReader::new(read).lines();
        while let Some(line) = lines.next_line().await? {
            conn.record(|t| t.received.push(line.clone()));
            if !conn.handle(&line).await? {
                break;
            }
        }
        Ok(())
    }

    impl Conn {
        fn record(&self, f: impl FnOnce(&mut Transcript)) {
            f(&mut self.transcript.lock().unwrap_or_else(|p| p.into_inner()));
        }

        async fn send(&mut self, line: &str) -> Result<()> {
            self.record(|t| t.sent.push(line.to_owned()));
            self.writer
                .write_all(format!("{line}\r\n").as_bytes())
                .await?;
            Ok(())
        }

        async fn numeric(&mut self, code: &str, rest: &str) -> Result<()> {
            let line = format!(":{SERVER} {code} {} {rest}", self.nick);
            self.send(&line).await
        }

        /// Handles one client line; false once the client quit.
        async fn handle(&mut self, line: &str) -> Result<bool> {
            let mut words = line.splitn(3, ' ');
            let command = words.next().unwrap_or("");
            let first = words.next().unwrap_or("");
            let rest = words.next().unwrap_or("");
            match command {
                "CAP" => match first {
                    "LS" => {
                        self.send(&format!(":{SERVER} CAP * LS :sasl=SCRAM-SHA-256"))
                            .await?
                    }
                    "REQ" => {
                        let caps = rest.trim_start_matches(':').to_owned();
                        self.send(&format!(":{SERVER} CAP * ACK :{caps}")).await?;
                    }
                    "END" => {
                        self.numeric("001", ":Welcome to the scripted SCRAM server")
                            .await?
                    }
                    _ => {}
                },
                "NICK" => first.clone_into(&mut self.nick),
                "PING" => {
                    // `PING :challenge` makes the server send a challenge after
                    // registration, as a re-authentication would, so a raw
                    // subscription started by then can be shown one.
                    if first.trim_start_matches(':') == LATE_CHALLENGE_PING {
                        self.send(&format!(":{SERVER} AUTHENTICATE {LATE_CHALLENGE}"))
                            .await?;
                    }
                    self.send(&format!(":{SERVER} PONG {SERVER} {first}"))
                        .await?
                }
                "AUTHENTICATE" => self.authenticate(first).await?,
                "QUIT" => {
                    self.send("ERROR :Closing link").await?;
                    return Ok(false);
                }
                _ => {}
            }
            Ok(true)
        }

        async fn authenticate(&mut self, arg: &str) -> Result<()> {
            let step = self.sasl;
            self.sasl = Sasl::Over;
            match step {
                _ if arg == "*" => self.numeric("906", ":SASL authentication aborted").await,
                Sasl::Idle if arg == "SCRAM-SHA-256" => {
                    self.sasl = Sasl::AwaitClientFirst;
                    self.send("AUTHENTICATE +").await
                }
                Sasl::AwaitClientFirst | Sasl::AwaitClientFinal => {
                    let Some(payload) = self.assemble(arg)? else {
                        self.sasl = step;
                        return Ok(());
                    };
                    let chunks = std::mem::take(&mut self.pending_chunks);
                    if step == Sasl::AwaitClientFirst {
                        self.on_client_first(&payload).await
                    } else {
                        self.record(|t| t.client_final_chunks = chunks);
                        self.on_client_final(&payload).await
                    }
                }
                Sasl::AwaitFinalAck if arg == "+" => self.log_in().await,
                Sasl::Idle | Sasl::AwaitFinalAck | Sasl::Over => {
                    self.numeric("904", &format!(":{FAILED_TEXT}")).await
                }
            }
        }

        async fn log_in(&mut self) -> Result<()> {
            self.record(|t| t.logged_in = true);
            let nick = self.nick.clone();
            let account = self.authcid();
            self.numeric(
                "900",
                &format!("{nick}!{nick}@{SERVER} {account} :You are now logged in as {account}"),
            )
            .await?;
            self.numeric("903", ":SASL authentication successful").await
        }

        fn authcid(&self) -> String {
            self.transcript
                .lock()
                .map(|t| t.authcid.clone().unwrap_or_default())
                .unwrap_or_default()
        }

        /// Adds one client chunk; the decoded payload once complete, None while more are due.
        fn assemble(&mut self, chunk: &str) -> Result<Option<String>> {
            self.pending_chunks.push(chunk.len());
            if chunk != "+" {
                if chunk.len() > CHUNK {
                    bail!("client chunk of {} bytes", chunk.len());
                }
                self.pending.push_str(chunk);
                if chunk.len() == CHUNK {
                    return Ok(None);
                }
            }
            let b64 = std::mem::take(&mut self.pending);
            let bytes = STANDARD.decode(&b64).context("client payload base64")?;
            Ok(Some(String::from_utf8(bytes)?))
        }

        async fn on_client_first(&mut self, message: &str) -> Result<()> {
            let bare = message
                .strip_prefix("n,,")
                .with_context(|| format!("client-first without the n,, header: {message}"))?;
            let mut attrs = bare.split(',');
            let authcid = attrs
                .next()
                .and_then(|a| a.strip_prefix("n="))
                .context("client-first without n=")?
                .to_owned();
            let client_nonce = attrs
                .next()
                .and_then(|a| a.strip_prefix("r="))
                .context("client-first without r=")?;
            self.record(|t| t.authcid = Some(authcid.clone()));

            let (salt, nonce) = self.salt_and_nonce(client_nonce);
            let iterations = self.spec.iterations;
            let server_first = format!("r={nonce},s={},i={iterations}", STANDARD.encode(&salt));
            let chunks = chunk_base64(&STANDARD.encode(&server_first));
            self.record(|t| t.server_first_chunks = chunks.iter().map(String::len).collect());
            for chunk in chunks {
                self.send(&format!("AUTHENTICATE {chunk}")).await?;
            }
            if self.spec.probe {
                self.send("PING :probe").await?;
            }
            self.exchange = Some(Exchange {
                client_first_bare: bare.to_owned(),
                server_first,
                nonce,
                salt,
            });
            self.sasl = Sasl::AwaitClientFinal;
            Ok(())
        }

        /// A random salt and the combined nonce; both lengthened when the spec asks for a
        /// server-first of a given size.
        fn salt_and_nonce(&self, client_nonce: &str) -> (Vec<u8>, String) {
            let mut rng = rand::rng();
            let Some(b64_len) = self.spec.server_first_b64_len else {
                let mut salt = vec![0u8; 16];
                rng.fill_bytes(&mut salt);
                let nonce = format!("{client_nonce}{}", Alphanumeric.sample_string(&mut rng, 24));
                return (salt, nonce);
            };
            // A 300-byte salt is 400 base64 bytes on its own; the nonce fills the rest.
            let mut salt = vec![0u8; 300];
            rng.fill_bytes(&mut salt);
            let fixed = format!(
                "r={client_nonce},s={},i={ITERATIONS}",
                STANDARD.encode(&salt)
            );
            let text_len = b64_len / 4 * 3;
            let pad = text_len.saturating_sub(fixed.len()).max(1);
            let nonce = format!(
                "{client_nonce}{}",
                Alphanumeric.sample_string(&mut rng, pad)
            );
            (salt, nonce)
        }

        async fn on_client_final(&mut self, message: &str) -> Result<()> {
            let ex = self
                .exchange
                .take()
                .context("client-final before server-first")?;
            let (without_proof, proof_b64) = message
                .rsplit_once(",p=")
                .with_context(|| format!("client-final without p=: {message}"))?;
            let mut attrs = without_proof.split(',');
            let binding = attrs.next().and_then(|a| a.strip_prefix("c="));
            let nonce = attrs.next().and_then(|a| a.strip_prefix("r="));
            if binding != Some("biws") || nonce != Some(ex.nonce.as_str()) {
                bail!("client-final with wrong c= or r=: {without_proof}");
            }
            let auth_message = format!(
                "{},{},{without_proof}",
                ex.client_first_bare, ex.server_first
            );
            let keys = ScramKeys::derive(&self.spec.password, &ex.salt, self.spec.iterations)?;
            let proof = STANDARD.decode(proof_b64).context("proof base64")?;
            let valid =
                self.authcid() == super::ACCOUNT && keys.verify_proof(&auth_message, &proof)?;
            self.record(|t| t.proof_valid = Some(valid));
            if !valid {
                return self.numeric("904", &format!(":{FAILED_TEXT}")).await;
            }
            let mut signature = keys.server_signature(&auth_message)?;
            if self.spec.forge_signature {
                signature[0] ^= 0x01;
            }
            let server_final = format!("v={}", STANDARD.encode(&signature));
            for chunk in chunk_base64(&STANDARD.encode(server_final)) {
                self.send(&format!("AUTHENTICATE {chunk}")).await?;
            }
            self.record(|t| t.server_final_sent = true);
            self.sasl = Sasl::AwaitFinalAck;
            Ok(())
        }
    }

    /// Splits a base64 payload into AUTHENTICATE arguments: 400-byte chunks, and a lone `+`
    /// after a payload that is a whole number of chunks.
    fn chunk_base64(b64: &str) -> Vec<String> {
        let mut chunks: Vec<String> = b64
            .as_bytes()
            .chunks(CHUNK)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        if b64.len() % CHUNK == 0 {
            chunks.push("+".to_owned());
        }
        chunks
    }

    type HmacSha256 = Hmac<Sha256>;

    /// RFC 5802 section 3 keys for one password and salt.
    struct ScramKeys {
        client_key: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
    }

    impl ScramKeys {
        fn derive(password: &str, salt: &[u8], iterations: u32) -> Result<Self> {
            let mut salted = [0u8; 32];
            pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut salted);
            let client_key = hmac(&salted, b"Client Key")?;
            let stored_key = Sha256::digest(&client_key).to_vec();
            let server_key = hmac(&salted, b"Server Key")?;
            Ok(Self {
                client_key,
                stored_key,
                server_key,
            })
        }

        /// ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage).
        fn verify_proof(&self, auth_message: &str, proof: &[u8]) -> Result<bool> {
            let signature = hmac(&self.stored_key, auth_message.as_bytes())?;
            let expected: Vec<u8> = self
                .client_key
                .iter()
                .zip(&signature)
                .map(|(k, s)| k ^ s)
                .collect();
            Ok(proof == expected.as_slice())
        }

        /// ServerSignature = HMAC(ServerKey, AuthMessage).
        fn server_signature(&self, auth_message: &str) -> Result<Vec<u8>> {
            hmac(&self.server_key, auth_message.as_bytes())
        }
    }

    fn hmac(key: &[u8], data: &[u8]) -> Result<Vec<u8>> {
        let mut mac = HmacSha256::new_from_slice(key).map_err(|e| anyhow!("{e}"))?;
        mac.update(data);
        Ok(mac.finalize().into_bytes().to_vec())
    }
}
