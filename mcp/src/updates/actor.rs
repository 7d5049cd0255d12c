//! The registry actor: the one owner of the subscriptions, their inboxes and
//! the parked waits.
//!
//! It never awaits inside `handle`. Session events reach it from a pump task
//! that runs only while a subscription exists; a batch is a closure queued
//! in the session actor ([`rete_actors::SessionReader::read_detached`]) that sends its
//! result back here as a message; a wait parks its reply port here and is
//! answered by the batch that fills a targeted inbox, by its timer, or
//! dropped when its request is cancelled.

use super::batch::{read_batch, BatchData, BatchRequest};
use super::clock::Clock;
use super::collector::Next;
use super::feed::{Starts, POLL_EVERY};
use super::filter::Filter;
use super::registry::{Full, Listed, PollData, Registry, Subscribed, Unknown};
use super::render::Detail;
use super::{Holder, Owner, SubId, MAX_GRANTS_WAITS, MAX_WAITS, SWEEP_EVERY};
use crate::debug::Capture;
use crate::grant::Grants;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rete_actors::{ReadOnlySessions, SessionEvent};
use rete_engine::event::Event;
use rete_engine::ids::{BufferId, SessionId};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// At most this many row signals travel in one message from the pump.
const PUMP_BATCH: usize = 256;

/// How a wait ended.
#[derive(Debug, PartialEq)]
pub(crate) enum WaitAnswer {
    /// The read that ended it (an event arrived, or the timeout passed:
    /// then `{"timed_out":true,"untrusted":true,"updates":[]}`).
    Ready(Value),
    /// The named subscription is not live, or was removed while waiting.
    Unknown,
    /// Two waits are parked already.
    TooMany,
}

/// What one read asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadSpec {
    /// Whose subscriptions are read: no one reads another's.
    pub(crate) owner: Owner,
    /// One subscription, or every one of the owner's.
    pub(crate) target: Option<SubId>,
    /// Digest or full.
    pub(crate) detail: Detail,
    /// Leave everything in place.
    pub(crate) peek: bool,
}

/// Messages the registry handles.
pub(crate) enum RegistryMsg {
    /// subscribe.
    Subscribe(Filter, Holder, RpcReplyPort<Result<Subscribed, Full>>),
    /// subscribe, once the new subscription's starting points in the rings
    /// were read (raw and log filters).
    SubscribeAt(
        Filter,
        Holder,
        Starts,
        RpcReplyPort<Result<Subscribed, Full>>,
    ),
    /// unsubscribe.
    Unsubscribe(Owner, SubId, RpcReplyPort<Result<(), Unknown>>),
    /// list_subscriptions.
    List(Owner, RpcReplyPort<Vec<Listed>>),
    /// read_updates.
    Read(ReadSpec, RpcReplyPort<Result<Value, Unknown>>),
    /// wait_for_updates, under the caller's wait number.
    Wait {
        /// The caller's number for it, to cancel it by.
        wait: u64,
        /// What to read when it ends.
        spec: ReadSpec,
        /// How long to wait (already clamped).
        timeout: Duration,
        /// Told when the wait is parked (not when it is refused or answered
        /// at once), so the access log can show it waiting.
        parked: oneshot::Sender<()>,
        /// Where the answer goes.
        reply: RpcReplyPort<WaitAnswer>,
    },
    /// The request behind a wait was cancelled: free its place.
    CancelWait(u64),
    /// A wait's timeout passed.
    WaitExpired(u64),
    /// Sessions stored rows: (session, buffer, seq) in the order stored.
    Signals(Vec<(SessionId, BufferId, u64)>),
    /// Session events were lost.
    Lagged,
    /// A batch's read came back.
    BatchRead(SessionId, BatchData),
    /// A batch's read could not run.
    BatchFailed(SessionId, BatchRequest),
    /// A session's pause between batches is over.
    PauseOver(SessionId),
    /// Time to sweep for idle subscriptions.
    Sweep,
    /// Time to poll the rings raw and log subscriptions cover.
    PollTick,
    /// A poll's reads came back.
    Polled(PollData),
    /// Statistics, for tests and benchmarks.
    Stats(RpcReplyPort<Stats>),
}

/// Counts that show what collection cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Batches read from sessions.
    pub batches: u64,
    /// Rows those batches brought back.
    pub rows: u64,
    /// Subscriptions live now.
    pub subscriptions: usize,
    /// Waits parked now.
    pub waits: usize,
    /// Sessions whose collection is reading or pausing (0: caught up).
    pub busy_sessions: usize,
    /// Ranges given up as evicted so far.
    pub evicted_ranges: u64,
    /// Subscriptions whose starting point is still being read.
    pub starting: usize,
}

/// What the registry starts with.
pub(crate) struct RegistryArgs {
    /// The sessions collected from, as readers only.
    pub(crate) sessions: ReadOnlySessions,
    /// Where time is read.
    pub(crate) clock: Arc<dyn Clock>,
    /// The debug capture raw and log subscriptions read (off: they are
    /// paused).
    pub(crate) capture: Capture,
    /// The host's grants: a revoked or ended grant's subscriptions (and
    /// waits) are removed at the next sweep. None: no grant is served.
    pub(crate) grants: Option<Grants>,
}

struct Parked {
    wait: u64,
    spec: ReadSpec,
    reply: RpcReplyPort<WaitAnswer>,
}

/// The registry actor's state.
pub(crate) struct RegistryState {
    sessions: ReadOnlySessions,
    clock: Arc<dyn Clock>,
    registry: Registry,
    parked: Vec<Parked>,
    pump: Option<JoinHandle<()>>,
    stats: Stats,
    capture: Capture,
    /// A poll's reads are out: the next tick waits for them.
    polling: Option<JoinHandle<()>>,
    /// The capture's clear count last seen: a change means debug went off
    /// (and perhaps on again) since, so pending raw and log events go.
    clears: u64,
    grants: Option<Grants>,
}

/// The registry actor.
pub(crate) struct RegistryActor;

impl Actor for RegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = RegistryArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RegistryArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_interval(SWEEP_EVERY, || RegistryMsg::Sweep);
        myself.send_interval(POLL_EVERY, || RegistryMsg::PollTick);
        Ok(RegistryState {
            sessions: args.sessions,
            clock: args.clock,
            registry: Registry::new(),
            parked: Vec::new(),
            pump: None,
            stats: Stats::default(),
            clears: args.capture.clears(),
            capture: args.capture,
            polling: None,
            grants: args.grants,
        })
    }

    async fn post_stop(
        &self,
        _: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(pump) = state.pump.take() {
            pump.abort();
        }
        if let Some(poll) = state.polling.take() {
            poll.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        state.handle(&myself, msg);
        Ok(())
    }
}

impl RegistryState {
    fn handle(&mut self, myself: &ActorRef<RegistryMsg>, msg: RegistryMsg) {
        match msg {
            RegistryMsg::Subscribe(filter, holder, reply) => {
                let debug = filter.raw.is_some() || filter.log.is_some();
                if debug && self.capture.is_on() {
                    self.read_starts(myself, filter, holder, reply);
                } else {
                    self.sweep();
                    let answer = self.subscribe(myself, filter, holder, &Starts::default());
                    let _ = reply.send(answer);
                }
            }
            RegistryMsg::SubscribeAt(filter, holder, mut starts, reply) => {
                // A clear not seen yet resets the positions there are first,
                // so that it does not reset these too; positions read before
                // a clear are of lines since cleared: taken again, as after
                // debug off.
                self.pause_when_debug_off();
                if starts.clears != self.clears {
                    starts = Starts::default();
                }
                self.sweep();
                let _ = reply.send(self.subscribe(myself, filter, holder, &starts));
            }
            RegistryMsg::Unsubscribe(owner, id, reply) => {
                self.sweep();
                let answer = self.registry.unsubscribe(&owner, &id);
                self.after_removal();
                let _ = reply.send(answer);
            }
            RegistryMsg::List(owner, reply) => {
                self.sweep();
                self.pause_when_debug_off();
                let _ = reply.send(self.registry.list(&owner, self.clock.now()));
            }
            RegistryMsg::Read(spec, reply) => {
                self.sweep();
                self.pause_when_debug_off();
                let _ = reply.send(self.read(&spec));
            }
            RegistryMsg::Wait {
                wait,
                spec,
                timeout,
                parked,
                reply,
            } => {
                self.sweep();
                self.pause_when_debug_off();
                if self.wait(myself, wait, spec, timeout, reply) {
                    let _ = parked.send(());
                }
            }
            RegistryMsg::CancelWait(wait) | RegistryMsg::WaitExpired(wait) => {
                // A cancelled wait's reply port is dropped unanswered; an
                // expired one answers that nothing came.
                let expired = matches!(msg, RegistryMsg::WaitExpired(_));
                if let Some(at) = self.parked.iter().position(|p| p.wait == wait) {
                    let parked = self.parked.remove(at);
                    if expired {
                        let timed_out =
                            json!({"timed_out": true, "untrusted": true, "updates": []});
                        let _ = parked.reply.send(WaitAnswer::Ready(timed_out));
                    }
                }
            }
            RegistryMsg::Signals(signals) => {
                for (session, buffer, seq) in signals {
                    let next = self.registry.signal(&session, &buffer, seq);
                    self.follow(myself, &session, next);
                }
            }
            RegistryMsg::Lagged => {
                let running = self.running();
                for (session, next) in self.registry.lagged(&running) {
                    self.follow(myself, &session, next);
                }
            }
            RegistryMsg::BatchRead(session, data) => {
                self.stats.batches += 1;
                self.stats.rows += data
                    .buffers
                    .iter()
                    .map(|b| b.rows.len() as u64)
                    .sum::<u64>();
                let next = self.registry.apply_batch(&session, data, self.clock.now());
                self.answer_waits();
                self.follow(myself, &session, next);
            }
            RegistryMsg::BatchFailed(session, request) => {
                let next = self
                    .registry
                    .batch_failed(&session, request, self.clock.now());
                self.follow(myself, &session, next);
            }
            RegistryMsg::PauseOver(session) => {
                let next = self.registry.pause_over(&session);
                self.follow(myself, &session, next);
            }
            RegistryMsg::Sweep => self.sweep(),
            RegistryMsg::PollTick => self.poll(myself),
            RegistryMsg::Polled(data) => {
                self.polling = None;
                // A poll that began before a clear read lines of before it.
                if self.pause_when_debug_off() || data.clears != self.clears {
                    return;
                }
                self.registry.apply_poll(&data, self.clock.now());
                self.answer_waits();
            }
            RegistryMsg::Stats(reply) => {
                let mut stats = self.stats;
                stats.subscriptions = self.registry.len();
                stats.waits = self.parked.len();
                stats.busy_sessions = self.registry.busy_sessions();
                stats.evicted_ranges = self.registry.evicted_ranges();
                stats.starting = self.registry.starting();
                let _ = reply.send(stats);
            }
        }
    }

    fn subscribe(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
        filter: Filter,
        holder: Holder,
        starts: &Starts,
    ) -> Result<Subscribed, Full> {
        let running = self.running();
        // Events are watched before any starting point is read, so no row
        // stored after a starting point can be missed.
        self.ensure_pump(myself);
        let id = self.fresh_id();
        let (now, wall) = (self.clock.now(), self.clock.wall());
        let (answer, actions) = self
            .registry
            .subscribe_at(id, filter, holder, &running, starts, now, wall)?;
        for (session, next) in actions {
            self.follow(myself, &session, next);
        }
        Ok(answer)
    }

    /// Reads where a raw or log subscription starts in the rings (the end
    /// of each covered session's tap, the log ring's end) on a task of its
    /// own, which hands the subscription back to be made with them: so the
    /// starting point is the rings' end when subscribe answers, and every
    /// line after it is delivered or counted.
    fn read_starts(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
        filter: Filter,
        holder: Holder,
        reply: RpcReplyPort<Result<Subscribed, Full>>,
    ) {
        let raw: Vec<SessionId> = match &filter.raw {
            Some(raw) => self
                .running()
                .into_iter()
                .filter(|s| raw.covers(s))
                .collect(),
            None => Vec::new(),
        };
        let log = filter.log.is_some();
        let (capture, sessions, me) = (self.capture.clone(), self.sessions.clone(), myself.clone());
        tokio::spawn(async move {
            let starts = super::poll::read_starts(raw, log, capture, sessions).await;
            // A registry gone meanwhile drops the reply: the caller hears so.
            let _ = me.cast(RegistryMsg::SubscribeAt(filter, holder, starts, reply));
        });
    }

    /// With control.debug off (the capture off), removes every pending raw
    /// and log event into dropped, so none is read and none ends a wait.
    /// True when it is off.
    fn pause_when_debug_off(&mut self) -> bool {
        let clears = self.capture.clears();
        let on = self.capture.is_on();
        if on && clears == self.clears {
            return false;
        }
        self.clears = clears;
        self.registry.debug_off();
        !on
    }

    /// Starts a poll of the rings some subscription covers, unless debug is
    /// off, none is covered, or the last poll's reads are still out.
    fn poll(&mut self, myself: &ActorRef<RegistryMsg>) {
        if self.pause_when_debug_off() || self.polling.is_some() {
            return;
        }
        let Some(plan) = self.registry.poll_plan(&self.running()) else {
            return;
        };
        if plan.raw.is_empty() && plan.log.is_none() {
            return;
        }
        let (capture, sessions, me) = (self.capture.clone(), self.sessions.clone(), myself.clone());
        let clears = self.clears;
        self.polling = Some(tokio::spawn(async move {
            let mut data = super::poll::read(plan, capture, sessions).await;
            data.clears = clears;
            let _ = me.cast(RegistryMsg::Polled(data));
        }));
    }

    fn running(&self) -> Vec<SessionId> {
        self.sessions
            .sessions()
            .iter()
            .map(|s| s.id().clone())
            .collect()
    }

    fn fresh_id(&self) -> SubId {
        loop {
            let id = SubId::from_bits(rand::random::<u64>());
            if !self.registry.exists(&id) {
                return id;
            }
        }
    }

    fn read(&mut self, spec: &ReadSpec) -> Result<Value, Unknown> {
        self.registry.read(
            &spec.owner,
            spec.target.as_ref(),
            spec.detail,
            spec.peek,
            self.clock.now(),
            self.clock.wall(),
        )
    }

    /// Parks a wait, or answers it at once (unknown id, two parked, or an
    /// event already pending). True when parked.
    fn wait(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
        wait: u64,
        spec: ReadSpec,
        timeout: Duration,
        reply: RpcReplyPort<WaitAnswer>,
    ) -> bool {
        if spec
            .target
            .as_ref()
            .is_some_and(|id| !self.registry.owns(&spec.owner, id))
        {
            let _ = reply.send(WaitAnswer::Unknown);
            return false;
        }
        let grants_parked = self.parked.iter().filter(|p| p.spec.owner != Owner::Full);
        if self.parked.len() >= MAX_WAITS
            || (spec.owner != Owner::Full && grants_parked.count() >= MAX_GRANTS_WAITS)
        {
            let _ = reply.send(WaitAnswer::TooMany);
            return false;
        }
        if self.registry.has_event(&spec.owner, spec.target.as_ref()) {
            let answer = self
                .read(&spec)
                .map_or(WaitAnswer::Unknown, WaitAnswer::Ready);
            let _ = reply.send(answer);
            return false;
        }
        self.registry
            .touch(&spec.owner, spec.target.as_ref(), self.clock.now());
        self.parked.push(Parked { wait, spec, reply });
        myself.send_after(timeout, move || RegistryMsg::WaitExpired(wait));
        true
    }

    /// Answers every parked wait whose target now has an event.
    fn answer_waits(&mut self) {
        let mut at = 0;
        while at < self.parked.len() {
            let spec = &self.parked[at].spec;
            if self.registry.has_event(&spec.owner, spec.target.as_ref()) {
                let parked = self.parked.remove(at);
                let answer = self
                    .read(&parked.spec)
                    .map_or(WaitAnswer::Unknown, WaitAnswer::Ready);
                let _ = parked.reply.send(answer);
            } else {
                at += 1;
            }
        }
    }

    /// Removes idle subscriptions, and those of grants revoked or ended
    /// (whose waits end too: no request with their token is served now).
    fn sweep(&mut self) {
        let mut removed = !self.registry.sweep(self.clock.now()).is_empty();
        if let Some(grants) = &self.grants {
            let now_ms = self.clock.wall().0;
            let ended = self
                .registry
                .drop_ended_grants(|key| grants.holds_live(key, now_ms));
            if !ended.is_empty() {
                removed = true;
                let mut at = 0;
                while at < self.parked.len() {
                    let owner = &self.parked[at].spec.owner;
                    if matches!(owner, Owner::Grant(key) if ended.contains(key)) {
                        let _ = self.parked.remove(at).reply.send(WaitAnswer::Unknown);
                    } else {
                        at += 1;
                    }
                }
            }
        }
        if removed {
            self.after_removal();
        }
    }

    /// Ends the waits on removed subscriptions, and stops watching session
    /// events once nothing is subscribed.
    fn after_removal(&mut self) {
        let mut at = 0;
        while at < self.parked.len() {
            let spec = &self.parked[at].spec;
            let gone = spec
                .target
                .as_ref()
                .is_some_and(|id| !self.registry.owns(&spec.owner, id));
            if gone {
                let _ = self.parked.remove(at).reply.send(WaitAnswer::Unknown);
            } else {
                at += 1;
            }
        }
        if self.registry.is_empty() {
            if let Some(pump) = self.pump.take() {
                pump.abort();
            }
        }
    }

    /// Starts forwarding row signals, unless already.
    fn ensure_pump(&mut self, myself: &ActorRef<RegistryMsg>) {
        if self.pump.as_ref().is_some_and(|p| !p.is_finished()) {
            return;
        }
        let mut events = self.sessions.subscribe();
        let me = myself.clone();
        self.pump = Some(tokio::spawn(async move {
            // Everything already queued goes in one message, so a flood
            // wakes the registry once per burst rather than once per row.
            let mut signals = Vec::new();
            loop {
                let first = events.recv().await;
                let mut next = Some(first);
                while let Some(received) = next.take() {
                    match received {
                        Ok(SessionEvent {
                            session,
                            event: Event::Row { buffer, seq },
                        }) => signals.push((session, buffer, seq)),
                        Ok(_) => {}
                        Err(RecvError::Lagged(_)) => {
                            let pending = std::mem::take(&mut signals);
                            if me.cast(RegistryMsg::Signals(pending)).is_err()
                                || me.cast(RegistryMsg::Lagged).is_err()
                            {
                                return;
                            }
                        }
                        Err(RecvError::Closed) => return,
                    }
                    if signals.len() < PUMP_BATCH {
                        next = match events.try_recv() {
                            Ok(ev) => Some(Ok(ev)),
                            Err(TryRecvError::Lagged(n)) => Some(Err(RecvError::Lagged(n))),
                            Err(TryRecvError::Closed) => Some(Err(RecvError::Closed)),
                            Err(TryRecvError::Empty) => None,
                        };
                    }
                }
                if !signals.is_empty()
                    && me
                        .cast(RegistryMsg::Signals(std::mem::take(&mut signals)))
                        .is_err()
                {
                    return;
                }
            }
        }));
    }

    /// Carries out what a session's collector asked for.
    fn follow(&mut self, myself: &ActorRef<RegistryMsg>, session: &SessionId, next: Next) {
        match next {
            Next::Wait => {}
            Next::PauseUntil(at) => {
                let delay = at.saturating_duration_since(self.clock.now());
                let session = session.clone();
                myself.send_after(delay, move || RegistryMsg::PauseOver(session));
            }
            Next::ReadNow => {
                let request = self.registry.take_batch(session);
                self.start_batch(myself, session, request);
            }
        }
    }

    fn start_batch(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
        session: &SessionId,
        request: BatchRequest,
    ) {
        let reader = self
            .sessions
            .sessions()
            .into_iter()
            .find(|s| s.id() == session);
        let Some(reader) = reader else {
            let _ = myself.cast(RegistryMsg::BatchFailed(session.clone(), request));
            return;
        };
        let mut guard = BatchGuard {
            registry: myself.clone(),
            session: session.clone(),
            request: Some(request),
        };
        // On failure to queue, the closure (and so the guard) is dropped,
        // which reports the batch failed.
        let _ = reader.read_detached(move |view| {
            if let Some(request) = guard.request.take() {
                let data = read_batch(&view, request);
                let _ = guard
                    .registry
                    .cast(RegistryMsg::BatchRead(guard.session.clone(), data));
            }
        });
    }
}

/// Travels with a batch's closure: if the session actor drops the closure
/// without running it, the registry hears that the batch failed, so the
/// session's collection never stalls waiting for it.
struct BatchGuard {
    registry: ActorRef<RegistryMsg>,
    session: SessionId,
    request: Option<BatchRequest>,
}

impl Drop for BatchGuard {
    fn drop(&mut self) {
        if let Some(request) = self.request.take() {
            let _ = self
                .registry
                .cast(RegistryMsg::BatchFailed(self.session.clone(), request));
        }
    }
}
