//! Drives the real engine through its embedding facade (`rete_actors::Rete`) for the
//! `engine_live_*` tests: builds a [`SessionSpec`] for a test server, starts one session in its
//! own [`Rete`], records the session's events, and waits on reads without fixed sleeps.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_engine::buffer::{Buffer, BufferKind};
use rete_engine::event::{ConnState, Event};
use rete_engine::ids::{BufferId, SessionId};
use rete_engine::row::{Payload, Row};
use rete_engine::session::SessionConfig;
use rete_engine::view::{MemberView, SessionView};
use rete_transports::{Backoff, ConnectConfig};
use std::sync::Mutex;

use super::bot::{Bot, DEFAULT_TIMEOUT};
use super::msg::Msg;

/// How long a session read may take to come true (registration alone takes up to a second).
pub const WAIT: Duration = Duration::from_secs(10);

/// A fresh session config: a random id, the network name "test" and `nick`.
pub fn session_config(nick: &str) -> SessionConfig {
    let id = SessionId::parse(&uuid::Uuid::new_v4().to_string())
        .unwrap_or_else(|_| unreachable!("a v4 UUID always parses"));
    SessionConfig::new(id, "test", nick)
}

/// A plain-text connection to the test server on `port`.
pub fn plain(port: u16) -> ConnectConfig {
    ConnectConfig {
        host: "127.0.0.1".to_owned(),
        port,
        tls: false,
        tls_fingerprint: None,
        client_cert: None,
        connect_timeout: Duration::from_secs(5),
    }
}

/// A spec that connects at once and retries fast (100 ms, at most 1 s apart).
pub fn spec(config: SessionConfig, connect: ConnectConfig) -> SessionSpec {
    SessionSpec {
        config,
        transport: rete_transports::Transport::Irc(connect),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_millis(100), Duration::from_secs(1)),
    }
}

pub use super::eventually::eventually;

/// One session in its own engine, with every event it emitted so far.
pub struct Live {
    /// The engine (kept so its actor tree lives as long as the test).
    pub rete: Rete,
    /// The session.
    pub handle: SessionHandle,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Live {
    /// Starts an engine without a raw-out hook and adds `spec`.
    pub async fn start(spec: SessionSpec) -> Result<Self> {
        Self::start_with(ReteOptions::default(), spec).await
    }

    /// Starts an engine with `options` and adds `spec`, recording its events from the start.
    pub async fn start_with(options: ReteOptions, spec: SessionSpec) -> Result<Self> {
        let rete = Rete::start(options).await?;
        let id = spec.config.id.clone();
        let mut rx = rete.subscribe();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(e) if e.session == id => {
                        sink.lock().unwrap_or_else(|p| p.into_inner()).push(e.event)
                    }
                    Ok(_) => {}
                    // The backlog is far larger than any test's event count.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        let handle = rete.add_session(spec).await?;
        Ok(Self {
            rete,
            handle,
            events,
        })
    }

    /// Every event the session emitted so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The connection states the session went through, in order.
    pub fn states(&self) -> Vec<ConnState> {
        states_in(&self.events())
    }

    /// Waits until the recorded events satisfy `pred` (the recorder runs behind the session:
    /// a read can see a change before its event is recorded).
    pub async fn wait_events(&self, what: &str, pred: impl Fn(&[Event]) -> bool) -> Result<()> {
        let result = eventually(what, WAIT, || {
            let events = self.events();
            let ok = pred(&events);
            async move { ok.then_some(()) }
        })
        .await;
        result.with_context(|| format!("events: {:?}", self.events()))
    }

    /// One read of the session (fails while the actor restarts).
    pub async fn read<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(SessionView<'_>) -> R + Send + 'static,
    {
        Ok(self.handle.reader().read(f).await?)
    }

    /// Repeats the read `f` until it yields `Some` (reads during a restart count as `None`).
    /// On timeout the error shows the session's state and server buffer.
    pub async fn wait_for<R, F>(&self, what: &str, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(SessionView<'_>) -> Option<R> + Clone + Send + 'static,
    {
        let reader = self.handle.reader();
        let result = eventually(what, WAIT, || {
            let reader = reader.clone();
            let f = f.clone();
            async move { reader.read(f).await.ok().flatten() }
        })
        .await;
        match result {
            Ok(v) => Ok(v),
            Err(e) => {
                let dump = self.dump().await;
                Err(e).with_context(|| dump)
            }
        }
    }

    /// Waits until the session is reconnecting and returns the delay it
    /// waits before its next attempt.
    pub async fn wait_retry_in(&self) -> Result<Duration> {
        self.wait_for("the delay before reconnecting", |v| {
            if v.state() == ConnState::Reconnecting {
                v.retry_in()
            } else {
                None
            }
        })
        .await
    }

    /// Waits until the session is in `state`.
    pub async fn wait_state(&self, state: ConnState) -> Result<()> {
        self.wait_for(&format!("state {}", state.as_str()), move |v| {
            (v.state() == state).then_some(())
        })
        .await
    }

    /// The id of the channel buffer `name`, once it exists.
    pub async fn channel_id(&self, name: &str) -> Result<BufferId> {
        let name = name.to_owned();
        self.wait_for(&format!("buffer {name}"), move |v| {
            v.find_buffer(BufferKind::Channel, &name).cloned()
        })
        .await
    }

    /// Waits until we are a member of `channel` and returns its buffer id.
    pub async fn wait_joined(&self, channel: &str) -> Result<BufferId> {
        let name = channel.to_owned();
        self.wait_for(&format!("our membership of {channel}"), move |v| {
            let id = v.find_buffer(BufferKind::Channel, &name)?;
            let me = v.nick();
            let members = v.members(id)?;
            members.iter().any(|m| m.nick == me).then(|| id.clone())
        })
        .await
    }

    /// The members of the channel buffer `id` (empty when it is not a channel).
    pub async fn members(&self, id: &BufferId) -> Result<Vec<MemberView>> {
        let id = id.clone();
        self.read(move |v| v.members(&id).unwrap_or_default()).await
    }

    /// Waits until some member of `id` satisfies `pred` and returns that member.
    pub async fn wait_member<P>(&self, what: &str, id: &BufferId, pred: P) -> Result<MemberView>
    where
        P: Fn(&MemberView) -> bool + Clone + Send + 'static,
    {
        let id = id.clone();
        self.wait_for(what, move |v| v.members(&id)?.into_iter().find(|m| pred(m)))
            .await
    }

    /// Waits until the member list of `id` satisfies `pred` and returns it.
    pub async fn wait_members<P>(
        &self,
        what: &str,
        id: &BufferId,
        pred: P,
    ) -> Result<Vec<MemberView>>
    where
        P: Fn(&[MemberView]) -> bool + Clone + Send + 'static,
    {
        let id = id.clone();
        self.wait_for(what, move |v| v.members(&id).filter(|m| pred(m)))
            .await
    }

    /// The rows of buffer `id` in arrival (seq) order.
    pub async fn rows(&self, id: &BufferId) -> Result<Vec<Row>> {
        let id = id.clone();
        self.read(move |v| v.buffer(&id).map(all_rows).unwrap_or_default())
            .await
    }

    /// The rows of buffer `id` in display order.
    pub async fn display(&self, id: &BufferId) -> Result<Vec<Row>> {
        let id = id.clone();
        self.read(move |v| {
            v.buffer(&id)
                .map(|b| b.display().cloned().collect())
                .unwrap_or_default()
        })
        .await
    }

    /// Waits until buffer `id` holds a row satisfying `pred` and returns it.
    pub async fn wait_row<P>(&self, what: &str, id: &BufferId, pred: P) -> Result<Row>
    where
        P: Fn(&Row) -> bool + Clone + Send + 'static,
    {
        let id = id.clone();
        self.wait_for(what, move |v| {
            v.buffer(&id)?.since(0).find(|r| pred(r)).cloned()
        })
        .await
    }

    /// The server buffer's rows in arrival order.
    pub async fn server_rows(&self) -> Result<Vec<Row>> {
        self.read(|v| {
            v.buffer(v.server_buffer())
                .map(all_rows)
                .unwrap_or_default()
        })
        .await
    }

    /// Waits until the server buffer holds a row satisfying `pred` and returns it.
    pub async fn wait_server_row<P>(&self, what: &str, pred: P) -> Result<Row>
    where
        P: Fn(&Row) -> bool + Clone + Send + 'static,
    {
        self.wait_for(what, move |v| {
            v.buffer(v.server_buffer())?
                .since(0)
                .find(|r| pred(r))
                .cloned()
        })
        .await
    }

    /// The session state and server buffer as text, for failure messages.
    pub async fn dump(&self) -> String {
        self.read(describe)
            .await
            .unwrap_or_else(|e| format!("(no read: {e})"))
    }
}

/// The connection states among `events`, in order.
pub fn states_in(events: &[Event]) -> Vec<ConnState> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::State(s) => Some(*s),
            _ => None,
        })
        .collect()
}

fn all_rows(b: &Buffer) -> Vec<Row> {
    b.since(0).cloned().collect()
}

/// Text of a row's payload for failure messages and simple assertions.
pub fn text(row: &Row) -> String {
    let mut parts = Vec::new();
    row.payload.for_each_text(|t| parts.push(t.to_owned()));
    parts.join(" ")
}

/// The text of `row` when it is a PRIVMSG.
pub fn privmsg_text(row: &Row) -> Option<&str> {
    match &row.payload {
        Payload::Privmsg { text } => Some(text),
        _ => None,
    }
}

/// True when `row` is a client status line containing `needle`.
pub fn is_status(row: &Row, needle: &str) -> bool {
    matches!(&row.payload, Payload::ClientStatus { text } if text.contains(needle))
}

/// The session's state, nick and server buffer, one row a line.
pub fn describe(v: SessionView<'_>) -> String {
    let mut out = format!("state={} nick={}\n", v.state().as_str(), v.nick());
    for b in v.buffers() {
        out.push_str(&format!("--- {} ({}) ---\n", b.name(), b.kind().as_str()));
        for r in b.since(0) {
            out.push_str(&format!(
                "#{} {} <{}> {}{}\n",
                r.seq,
                r.kind().as_str(),
                r.from,
                text(r),
                if r.history { " [history]" } else { "" }
            ));
        }
    }
    out
}

/// Waits until `bot` knows `nick` is in `channel`: its own NAMES reply listed `nick` (who was
/// there first), or it saw `nick` join. Call it after the bot joined.
pub async fn bot_sees_member(bot: &mut Bot, nick: &str, channel: &str) -> Result<()> {
    let listed = |l: &str| {
        let m = Msg::parse(l);
        m.command == "353"
            && m.param(2).eq_ignore_ascii_case(channel)
            && m.param(3)
                .split(' ')
                .any(|e| e.trim_start_matches(['@', '+']) == nick)
    };
    // `Bot::join` already read past its NAMES reply, so look back first.
    if bot.lines().iter().any(|l| listed(l)) {
        return Ok(());
    }
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "JOIN"
                && m.source_nick() == Some(nick)
                && m.param(0).eq_ignore_ascii_case(channel)
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}
