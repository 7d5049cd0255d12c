//! The subscriptions and everything collected for them, without I/O.
//!
//! The registry actor feeds this with session signals, batch results and
//! tool calls, each with the current time, and carries out what it answers
//! (start a batch, arm a pause). Keeping it free of I/O lets the rules —
//! limits, starting points, live versus history, idle expiry — be tested
//! step by step with a clock the test moves.

use super::batch::{BatchData, BatchRequest, BufferRows, KindSet};
use super::collector::{Collector, Next};
use super::feed::{Feed, Starts};
use super::filter::{mentions_in, Filter};
use super::inbox::Inbox;
use super::render::{self, Detail, Target};
use super::{
    Event, Holder, Owner, Source, SubId, IDLE_EXPIRY, MAX_GRANTS_SUBSCRIPTIONS,
    MAX_GRANT_SUBSCRIPTIONS, MAX_SUBSCRIPTIONS,
};
use crate::grant::BufferRef;
use crate::read::matcher::Scratch;
use crate::read::message::message_json;
use crate::read::reach::Reach;
use crate::read::result::encoded_len;
use rete_engine::buffer::BufferKind;
use rete_engine::casemap::CaseMapping;
use rete_engine::clock::UnixMillis;
use rete_engine::ids::{BufferId, SessionId};
use rete_engine::row::{Kind, Row};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// subscribe while [`MAX_SUBSCRIPTIONS`] exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// A named subscription is not live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unknown;

/// Where a subscription starts in one session's buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Start {
    /// Not read yet: every row read meanwhile counts as history. Taken from
    /// the first batch numbered at least this, so never from a read that
    /// began before the subscription existed.
    Pending(u64),
    /// Each buffer's last seq when it was read; a buffer not listed was
    /// opened later and is collected from its first message.
    Known(HashMap<BufferId, u64>),
}

/// A new subscription, as subscribe answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Subscribed {
    /// Its id.
    pub(crate) id: SubId,
    /// Its filters, normalised.
    pub(crate) filter: Filter,
    /// When it was made.
    pub(crate) created: UnixMillis,
    /// How long it may go unread before it is removed.
    pub(crate) expires_after_idle: Duration,
}

/// One live subscription.
#[derive(Debug)]
struct Subscription {
    id: SubId,
    /// Who made it: only they see it.
    owner: Owner,
    /// What it may collect: the reach of the request that made it. A
    /// message, or an evicted range's mark, of a buffer outside it never
    /// reaches its inbox.
    reach: Reach,
    filter: Filter,
    created: UnixMillis,
    touched: Instant,
    last_read: Option<UnixMillis>,
    inbox: Inbox,
    /// Sessions running when it was made. A session absent here was added
    /// later, so all of it is collected.
    starts: HashMap<SessionId, Start>,
    /// Where it stands in the raw taps and the log ring (raw and log
    /// filters only).
    feed: Feed,
}

impl Subscription {
    /// True when `row` of this session's buffer is past the starting point.
    fn after_start(&self, session: &SessionId, buffer: &BufferId, seq: u64) -> bool {
        match self.starts.get(session) {
            None => true,
            Some(Start::Pending(_)) => false,
            Some(Start::Known(map)) => map.get(buffer).is_none_or(|&start| seq > start),
        }
    }

    /// Moves the starting point of a buffer back to `through` after an
    /// evicted range, so a restarted sequence is collected again from there.
    fn restart_at(&mut self, session: &SessionId, buffer: &BufferId, through: u64) {
        if let Some(Start::Known(map)) = self.starts.get_mut(session) {
            if let Some(start) = map.get_mut(buffer) {
                *start = (*start).min(through);
            }
        }
    }

    fn collects(&self, kind: Kind) -> bool {
        self.filter.wants_kind(kind)
    }

    /// True when `owner` may see it.
    fn held_by(&self, owner: &Owner) -> bool {
        &self.owner == owner
    }

    /// True when it is one `owner` asked for: `target`, or any of theirs.
    fn targeted(&self, owner: &Owner, target: Option<&SubId>) -> bool {
        self.held_by(owner) && target.is_none_or(|t| &self.id == t)
    }

    /// True when its filter and its reach cover `buffer`, known as `known`
    /// holds it (a scoped subscription takes no buffer it knows nothing of).
    fn covers(
        &self,
        session: &SessionId,
        buffer: &BufferId,
        known: &HashMap<BufferId, Known>,
    ) -> bool {
        self.filter.in_scope(session, buffer)
            && (self.reach.is_everything()
                || known
                    .get(buffer)
                    .is_some_and(|k| self.reach.covers(k.as_ref())))
    }
}

/// What batches told of a buffer: its kind (so a channel only query
/// subscriptions cover is not read again) and what a scoped subscription's
/// reach judges it by.
#[derive(Clone, Debug)]
struct Known {
    network: Arc<str>,
    kind: BufferKind,
    name: String,
    casemap: CaseMapping,
}

impl Known {
    fn as_ref(&self) -> BufferRef<'_> {
        BufferRef {
            network: &self.network,
            kind: self.kind,
            name: &self.name,
            casemap: self.casemap,
        }
    }
}

/// What list_subscriptions shows of one subscription, before its state
/// (which needs the sessions) is worked out.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    /// Its id.
    pub id: SubId,
    /// The normalised filters.
    pub(crate) filters: Value,
    /// When it was made.
    pub(crate) created: UnixMillis,
    /// The last read that touched it.
    pub(crate) last_read: Option<UnixMillis>,
    /// Events in its inbox.
    pub(crate) pending: usize,
    /// Events dropped at a cap since the last read that advanced it.
    pub(crate) dropped: u64,
    /// The sessions it names.
    pub(crate) sessions: Vec<SessionId>,
    /// The buffers it names.
    pub(crate) buffers: Vec<BufferId>,
    /// True when it has a raw or log filter (paused while debug is off).
    pub(crate) debug: bool,
}

/// Every subscription, and each session's collection.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    subs: Vec<Subscription>,
    collectors: HashMap<SessionId, Collector>,
    /// Buffers as batches last saw them.
    known: HashMap<BufferId, Known>,
    /// Ranges given up as evicted so far (overflow, restart, lost rows, a
    /// failed read), for statistics.
    evicted_ranges: u64,
    /// Per session whose signals were lost: the first batch that may
    /// resync, and the last seq signalled per buffer before the loss, until
    /// such a batch has read what the buffers hold.
    lag_marks: HashMap<SessionId, (u64, HashMap<BufferId, u64>)>,
    /// The number the next batch gets.
    next_batch: u64,
    /// The batch each session's collection waits for.
    in_flight: HashMap<SessionId, u64>,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> Registry {
        Registry::default()
    }

    /// True when no subscription exists (nothing is collected then).
    pub(crate) fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// How many subscriptions exist.
    pub(crate) fn len(&self) -> usize {
        self.subs.len()
    }

    /// Sessions whose collection is reading a batch or pausing between two.
    pub(crate) fn busy_sessions(&self) -> usize {
        self.collectors
            .values()
            .filter(|c| c.phase() != super::collector::Phase::Idle)
            .count()
    }

    /// Subscriptions whose starting point in some session is still being
    /// read: a message landing there now counts as history.
    pub(crate) fn starting(&self) -> usize {
        self.subs
            .iter()
            .filter(|s| s.starts.values().any(|st| matches!(st, Start::Pending(_))))
            .count()
    }

    /// Ranges given up as evicted so far.
    pub(crate) fn evicted_ranges(&self) -> u64 {
        self.evicted_ranges
    }

    /// True when `id` is live, whoever holds it (a new id must not be).
    pub(crate) fn exists(&self, id: &SubId) -> bool {
        self.subs.iter().any(|s| &s.id == id)
    }

    /// True when `id` is live and `owner`'s.
    pub(crate) fn owns(&self, owner: &Owner, id: &SubId) -> bool {
        self.subs.iter().any(|s| &s.id == id && s.held_by(owner))
    }

    /// Adds a subscription whose raw and log positions are still to be
    /// taken (see [`Registry::subscribe_at`]).
    #[cfg(test)]
    pub(crate) fn subscribe(
        &mut self,
        id: SubId,
        filter: Filter,
        running: &[SessionId],
        now: Instant,
        wall: UnixMillis,
    ) -> Result<(Subscribed, Vec<(SessionId, Next)>), Full> {
        let holder = Holder::default();
        self.subscribe_at(id, filter, holder, running, &Starts::default(), now, wall)
    }

    /// Adds a subscription. `running` are the sessions running now: their
    /// buffers' starting points are to be read, so each is answered with
    /// what its collector must do. `rings` are its positions in the raw taps
    /// and the log ring, read just before (for raw and log filters).
    /// A scoped grant holds at most [`MAX_GRANT_SUBSCRIPTIONS`] of them,
    /// and grants together [`MAX_GRANTS_SUBSCRIPTIONS`].
    #[allow(clippy::too_many_arguments)] // Each is one fact of the new subscription.
    pub(crate) fn subscribe_at(
        &mut self,
        id: SubId,
        filter: Filter,
        holder: Holder,
        running: &[SessionId],
        rings: &Starts,
        now: Instant,
        wall: UnixMillis,
    ) -> Result<(Subscribed, Vec<(SessionId, Next)>), Full> {
        if self.subs.len() >= MAX_SUBSCRIPTIONS {
            return Err(Full);
        }
        if holder.owner != Owner::Full {
            let its = self.subs.iter().filter(|s| s.held_by(&holder.owner));
            let grants = self.subs.iter().filter(|s| s.owner != Owner::Full);
            if its.count() >= MAX_GRANT_SUBSCRIPTIONS || grants.count() >= MAX_GRANTS_SUBSCRIPTIONS
            {
                return Err(Full);
            }
        }
        let answer = Subscribed {
            id: id.clone(),
            filter: filter.clone(),
            created: wall,
            expires_after_idle: IDLE_EXPIRY,
        };
        let starts = running
            .iter()
            .map(|s| (s.clone(), Start::Pending(self.next_batch)))
            .collect();
        self.subs.push(Subscription {
            id,
            owner: holder.owner,
            reach: holder.reach,
            filter,
            created: wall,
            touched: now,
            last_read: None,
            inbox: Inbox::new(),
            starts,
            feed: Feed::starting(rings),
        });
        let actions = running
            .iter()
            .map(|s| {
                (
                    s.clone(),
                    self.collectors.entry(s.clone()).or_default().want_batch(),
                )
            })
            .collect();
        Ok((answer, actions))
    }

    /// Removes one of `owner`'s subscriptions and its inbox.
    pub(crate) fn unsubscribe(&mut self, owner: &Owner, id: &SubId) -> Result<(), Unknown> {
        let before = self.subs.len();
        self.subs.retain(|s| !(&s.id == id && s.held_by(owner)));
        if self.subs.len() == before {
            return Err(Unknown);
        }
        self.forget_collection_when_empty();
        Ok(())
    }

    /// Removes every subscription idle for [`IDLE_EXPIRY`]; returns their ids.
    pub(crate) fn sweep(&mut self, now: Instant) -> Vec<SubId> {
        let mut gone = Vec::new();
        self.subs.retain(|s| {
            let idle = now.saturating_duration_since(s.touched) >= IDLE_EXPIRY;
            if idle {
                gone.push(s.id.clone());
            }
            !idle
        });
        self.forget_collection_when_empty();
        gone
    }

    /// Removes every subscription of a grant `live` says has ended or was
    /// revoked (by its key); returns the keys it removed any for.
    pub(crate) fn drop_ended_grants(&mut self, live: impl Fn(&str) -> bool) -> Vec<Arc<str>> {
        let mut ended: Vec<Arc<str>> = Vec::new();
        self.subs.retain(|s| match &s.owner {
            Owner::Grant(key) if !live(key) => {
                if !ended.contains(key) {
                    ended.push(key.clone());
                }
                false
            }
            _ => true,
        });
        self.forget_collection_when_empty();
        ended
    }

    fn forget_collection_when_empty(&mut self) {
        if self.subs.is_empty() {
            // With nothing subscribed nothing is collected; a later
            // subscription starts from what buffers hold then.
            self.collectors.clear();
            self.known.clear();
            self.lag_marks.clear();
            self.in_flight.clear();
        }
    }

    /// A row was stored. Queued only when a subscription covers its buffer.
    pub(crate) fn signal(&mut self, session: &SessionId, buffer: &BufferId, seq: u64) -> Next {
        if !self.covers(session, buffer) {
            return Next::Wait;
        }
        self.collectors
            .entry(session.clone())
            .or_default()
            .signal(buffer, seq)
    }

    /// Session events were lost (the event stream lagged), so rows may have
    /// been stored whose signals never come. Each running session gets a
    /// batch that reads every buffer's last seq; a buffer holding rows past
    /// the last one signalled before the loss is reported evicted (see
    /// [`Registry::apply_batch`]). Rows whose signals still arrive are
    /// collected as usual.
    pub(crate) fn lagged(&mut self, running: &[SessionId]) -> Vec<(SessionId, Next)> {
        if self.subs.is_empty() {
            return Vec::new();
        }
        running
            .iter()
            .map(|session| {
                let (seen, next) = self.collectors.entry(session.clone()).or_default().lagged();
                let (from, mark) = self
                    .lag_marks
                    .entry(session.clone())
                    .or_insert_with(|| (self.next_batch, HashMap::new()));
                // A batch already in flight read before the loss.
                *from = self.next_batch;
                for (buffer, seq) in seen {
                    let at = mark.entry(buffer).or_insert(seq);
                    *at = (*at).min(seq);
                }
                (session.clone(), next)
            })
            .collect()
    }

    /// True when some subscription may collect from `buffer`. A buffer no
    /// batch has read yet is read once, so that scoped subscriptions learn
    /// what it is.
    fn covers(&self, session: &SessionId, buffer: &BufferId) -> bool {
        let query_only = |sub: &Subscription| {
            sub.filter.queries
                && self
                    .known
                    .get(buffer)
                    .is_some_and(|k| k.kind != BufferKind::Query)
        };
        let unread_or_covered = |sub: &Subscription| {
            sub.covers(session, buffer, &self.known)
                || (!self.known.contains_key(buffer) && sub.filter.in_scope(session, buffer))
        };
        self.subs
            .iter()
            .any(|sub| unread_or_covered(sub) && !query_only(sub))
    }

    /// Takes a session's queued changes as the batch to read now.
    pub(crate) fn take_batch(&mut self, session: &SessionId) -> BatchRequest {
        let ranges = self
            .collectors
            .get_mut(session)
            .map(Collector::take_batch)
            .unwrap_or_default();
        let mut kinds = KindSet::default();
        for kind in Kind::ALL {
            if self.subs.iter().any(|s| s.collects(kind)) {
                kinds.insert(kind);
            }
        }
        let starts = self.lag_marks.contains_key(session)
            || self
                .subs
                .iter()
                .any(|s| matches!(s.starts.get(session), Some(Start::Pending(_))));
        let batch = self.next_batch;
        self.next_batch += 1;
        self.in_flight.insert(session.clone(), batch);
        BatchRequest {
            batch,
            ranges,
            kinds,
            starts,
        }
    }

    /// True (and forgotten) when `batch` is the one `session` waits for; an
    /// answer to any other (one taken before collection was reset) is stale.
    fn expected(&mut self, session: &SessionId, batch: u64) -> bool {
        if self.in_flight.get(session) == Some(&batch) {
            self.in_flight.remove(session);
            true
        } else {
            false
        }
    }

    /// The pause after a session's batch is over.
    pub(crate) fn pause_over(&mut self, session: &SessionId) -> Next {
        self.collectors
            .get_mut(session)
            .map_or(Next::Wait, Collector::pause_over)
    }

    /// A batch could not be read (the session was restarting or is gone):
    /// its ranges are reported evicted.
    pub(crate) fn batch_failed(
        &mut self,
        session: &SessionId,
        request: BatchRequest,
        now: Instant,
    ) -> Next {
        if !self.expected(session, request.batch) {
            return Next::Wait;
        }
        for range in request.ranges {
            self.evicted_ranges += 1;
            for sub in self.subs.iter_mut() {
                if sub.covers(session, &range.buffer, &self.known) {
                    sub.inbox.mark_evicted(&range.buffer, "");
                }
            }
        }
        self.batch_done(session, now)
    }

    fn batch_done(&mut self, session: &SessionId, now: Instant) -> Next {
        self.collectors
            .get_mut(session)
            .map_or(Next::Wait, |c| c.batch_done(now))
    }

    /// Matches a batch's rows against every subscription and fills inboxes.
    /// Returns what the session's collector does next.
    pub(crate) fn apply_batch(
        &mut self,
        session: &SessionId,
        data: BatchData,
        now: Instant,
    ) -> Next {
        if !self.expected(session, data.batch) {
            return Next::Wait;
        }
        let network: Arc<str> = Arc::from(data.network.as_str());
        for buffer in &data.buffers {
            if let Some(kind) = buffer.kind {
                let known = Known {
                    network: network.clone(),
                    kind,
                    name: buffer.name.clone(),
                    casemap: data.casemap,
                };
                self.known.insert(buffer.range.buffer.clone(), known);
            }
            self.apply_buffer(session, buffer, &data, now);
        }
        if let Some(starts) = data.starts {
            let resync = self
                .lag_marks
                .get(session)
                .is_some_and(|(from, _)| data.batch >= *from);
            if resync {
                if let Some((_, mark)) = self.lag_marks.remove(session) {
                    self.evict_unsignalled(session, &starts, &mark);
                }
            }
            let map: HashMap<BufferId, u64> = starts.into_iter().collect();
            for sub in self.subs.iter_mut() {
                if let Some(start) = sub.starts.get_mut(session) {
                    if matches!(start, Start::Pending(from) if data.batch >= *from) {
                        *start = Start::Known(map.clone());
                    }
                }
            }
        }
        self.batch_done(session, now)
    }

    /// After lost signals: a buffer that holds rows past both the last seq
    /// signalled before the loss and a subscription's starting point may
    /// hold rows that subscription will never hear of, so it is reported
    /// evicted there.
    fn evict_unsignalled(
        &mut self,
        session: &SessionId,
        last_seqs: &[(BufferId, u64)],
        mark: &HashMap<BufferId, u64>,
    ) {
        for (buffer, last) in last_seqs {
            if *last <= mark.get(buffer).copied().unwrap_or(0) {
                continue;
            }
            self.evicted_ranges += 1;
            for sub in self.subs.iter_mut() {
                if sub.covers(session, buffer, &self.known)
                    && sub.after_start(session, buffer, *last)
                {
                    sub.inbox.mark_evicted(buffer, "");
                }
            }
        }
    }

    fn apply_buffer(
        &mut self,
        session: &SessionId,
        rows: &BufferRows,
        data: &BatchData,
        now: Instant,
    ) {
        let buffer = &rows.range.buffer;
        if rows.range.evicted || rows.lost {
            self.evicted_ranges += 1;
            for sub in self.subs.iter_mut() {
                if sub.covers(session, buffer, &self.known) {
                    sub.inbox.mark_evicted(buffer, &rows.name);
                    if rows.range.evicted {
                        sub.restart_at(session, buffer, rows.range.through);
                    }
                }
            }
        }
        let Some(kind) = rows.kind else {
            return;
        };
        let mut scratch = Scratch::default();
        for row in &rows.rows {
            let mut event: Option<Arc<Event>> = None;
            // Whether the row mentions the nick is the same for every
            // subscription: found once, when the first one asks.
            let mut mention: Option<bool> = None;
            for sub in self.subs.iter_mut() {
                if !sub.covers(session, buffer, &self.known)
                    || !sub.after_start(session, buffer, row.seq)
                    || !sub.filter.admits(row, kind, &mut scratch)
                {
                    continue;
                }
                let mention = *mention.get_or_insert_with(|| mentions_in(row, &data.nick));
                if sub.filter.mentions && !mention {
                    continue;
                }
                if row.history {
                    sub.inbox.add_backfilled(buffer, &rows.name, 1);
                } else if data.withholder.row(row) {
                    sub.inbox.add_withheld(buffer, &rows.name, 1);
                } else {
                    let event = event
                        .get_or_insert_with(|| {
                            Arc::new(message_event(buffer, &rows.name, row, mention, now))
                        })
                        .clone();
                    sub.inbox.push(event, now);
                }
            }
        }
    }

    /// True when a targeted subscription has an event pending (counters
    /// alone do not count). `None` targets every one of `owner`'s.
    pub(crate) fn has_event(&self, owner: &Owner, target: Option<&SubId>) -> bool {
        self.subs
            .iter()
            .filter(|s| s.targeted(owner, target))
            .any(|s| s.inbox.has_event())
    }

    /// One read_updates (or the read that ends a wait): touches every
    /// subscription it reads, expires old events, renders and removes.
    /// Only `owner`'s subscriptions are read.
    pub(crate) fn read(
        &mut self,
        owner: &Owner,
        target: Option<&SubId>,
        detail: Detail,
        peek: bool,
        now: Instant,
        wall: UnixMillis,
    ) -> Result<Value, Unknown> {
        if let Some(id) = target {
            if !self.owns(owner, id) {
                return Err(Unknown);
            }
        }
        let mut targets: Vec<Target<'_>> = Vec::new();
        for sub in self.subs.iter_mut() {
            if !sub.targeted(owner, target) {
                continue;
            }
            sub.touched = now;
            sub.last_read = Some(wall);
            sub.inbox.expire(now);
            targets.push(Target {
                id: &sub.id,
                inbox: &mut sub.inbox,
            });
        }
        Ok(render::read(&mut targets, detail, peek))
    }

    /// Restarts the idle clock of the targeted subscriptions (a wait that
    /// starts parked touches them as a read would).
    pub(crate) fn touch(&mut self, owner: &Owner, target: Option<&SubId>, now: Instant) {
        for sub in self.subs.iter_mut() {
            if sub.targeted(owner, target) {
                sub.touched = now;
            }
        }
    }

    /// Every one of `owner`'s subscriptions, oldest first, for
    /// list_subscriptions (touches none).
    pub(crate) fn list(&mut self, owner: &Owner, now: Instant) -> Vec<Listed> {
        self.subs
            .iter_mut()
            .filter(|s| s.held_by(owner))
            .map(|s| {
                s.inbox.expire(now);
                Listed {
                    id: s.id.clone(),
                    filters: s.filter.to_json(),
                    created: s.created,
                    last_read: s.last_read,
                    pending: s.inbox.pending(),
                    dropped: s.inbox.dropped(),
                    sessions: s.filter.sessions.clone(),
                    buffers: s.filter.buffers.clone(),
                    debug: s.filter.raw.is_some() || s.filter.log.is_some(),
                }
            })
            .collect()
    }
}

/// The full-mode event for a message row.
fn message_event(buffer: &BufferId, name: &str, row: &Row, mention: bool, now: Instant) -> Event {
    let json = json!({
        "type": "message",
        "buffer": buffer.as_str(),
        "message": message_json(row),
    });
    Event {
        source: Source::Message(buffer.clone()),
        buffer_name: name.to_owned(),
        from: row.from.clone(),
        mention,
        collected: now,
        size: encoded_len(&json),
        json,
    }
}

mod poll;
pub(crate) use poll::{LogPoll, PollData, PollPlan, TapPoll};

#[cfg(test)]
mod tests;
