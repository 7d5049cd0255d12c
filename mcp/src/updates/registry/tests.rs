//! The registry's rules step by step: starting points, live versus history,
//! secrets, coverage, evicted ranges, limits and idle expiry.

use super::*;
use crate::read::args::Args;
use crate::read::result::encode;
use crate::read::withheld::Withholder;
use crate::updates::batch::{BatchRequest, BufferRows};
use crate::updates::collector::Range;
use crate::updates::feed::Starts;
use rete_engine::row::Payload;
use std::time::Duration;

const S: &str = "6A1E9D4C-0000-4000-8000-000000000001";
const B: &str = "0B0B0B0B-0000-5000-8000-000000000001";
const Q: &str = "0B0B0B0B-0000-5000-8000-000000000002";

fn session() -> SessionId {
    SessionId::parse(S).unwrap()
}

fn filter(args: Value) -> Filter {
    crate::tools::subscribe::parse(&Args::from_request(Some(&args)).unwrap()).unwrap()
}

fn row(seq: u64, from: &str, text: &str, history: bool) -> Row {
    Row {
        seq,
        time: UnixMillis(1_790_769_600_000),
        msgid: None,
        from: from.into(),
        history,
        payload: Payload::Privmsg { text: text.into() },
    }
}

fn rows(buffer: &str, kind: BufferKind, rows: Vec<Row>) -> BufferRows {
    let from = rows.first().map_or(1, |r| r.seq);
    let through = rows.last().map_or(1, |r| r.seq);
    BufferRows {
        range: Range {
            buffer: BufferId::from_client(buffer),
            from,
            through,
            evicted: false,
        },
        name: "#rete".into(),
        kind: Some(kind),
        rows,
        lost: false,
    }
}

/// The answer to `request` holding `buffers`.
fn answer(request: &BatchRequest, buffers: Vec<BufferRows>) -> BatchData {
    BatchData {
        batch: request.batch,
        nick: "mriron".into(),
        network: NETWORK.into(),
        casemap: Default::default(),
        withholder: Withholder::new(["hunter22"]),
        buffers,
        starts: None,
    }
}

/// The full token's digest read of `target` (None: all), at `now` and
/// wall time `wall`.
fn read_digest(
    reg: &mut Registry,
    target: Option<&SubId>,
    now: Instant,
    wall: UnixMillis,
) -> Result<Value, Unknown> {
    reg.read(&Owner::Full, target, Detail::Digest, false, now, wall)
}

fn digest(reg: &mut Registry, now: Instant) -> String {
    encode(&read_digest(reg, None, now, UnixMillis(0)).unwrap())
}

/// A registry with one subscription made while no session ran, so all of
/// the session is collected.
fn subscribed(args: Value, now: Instant) -> (Registry, SubId) {
    let mut reg = Registry::new();
    let id = SubId::from_bits(7);
    reg.subscribe(id.clone(), filter(args), &[], now, UnixMillis(0))
        .unwrap();
    (reg, id)
}

#[test]
fn live_rows_are_delivered_and_history_and_secrets_only_counted() {
    let now = Instant::now();
    let (mut reg, _) = subscribed(json!({"mentions": true}), now);
    let b = BufferId::from_client(B);
    assert_eq!(reg.signal(&session(), &b, 1), Next::ReadNow);
    let r = reg.take_batch(&session());
    reg.apply_batch(
        &session(),
        answer(
            &r,
            vec![rows(
                B,
                BufferKind::Channel,
                vec![
                    row(1, "alice", "hi mriron", false),
                    row(2, "bob", "mriron: old news", true),
                    row(3, "carol", "mriron the pw is hunter22", false),
                    row(4, "dave", "mrironman is not you", false),
                ],
            )],
        ),
        now,
    );
    assert!(reg.has_event(&Owner::Full, None));
    assert_eq!(
        digest(&mut reg, now),
        format!(
            r##"{{"untrusted":true,"updates":[{{"buffers":[{{"backfilled":1,"buffer":"{B}","from":["alice"],"mentions":1,"name":"#rete","new":1,"withheld":1}}],"subscription":"sub_000000000007"}}]}}"##
        )
    );
    assert_eq!(digest(&mut reg, now), r#"{"untrusted":true,"updates":[]}"#);
}

#[test]
fn a_subscription_starts_from_what_buffers_hold() {
    let now = Instant::now();
    let mut reg = Registry::new();
    let id = SubId::from_bits(1);
    let (_, actions) = reg
        .subscribe(
            id,
            filter(json!({"from": ["alice"]})),
            &[session()],
            now,
            UnixMillis(0),
        )
        .unwrap();
    assert_eq!(
        actions,
        [(session(), Next::ReadNow)],
        "the start is read at once"
    );
    let request = reg.take_batch(&session());
    assert!(request.starts && request.ranges.is_empty());
    // While the start is read, a row arrives: it is history.
    let mut data = answer(
        &request,
        vec![rows(
            B,
            BufferKind::Channel,
            vec![row(5, "alice", "x", false)],
        )],
    );
    data.starts = Some(vec![(BufferId::from_client(B), 5)]);
    reg.apply_batch(&session(), data, now);
    assert!(!reg.has_event(&Owner::Full, None));
    // After it: B from seq 6; Q was opened later, so from its first row.
    reg.signal(&session(), &BufferId::from_client(B), 6);
    let r = reg.take_batch(&session());
    reg.apply_batch(
        &session(),
        answer(
            &r,
            vec![
                rows(
                    B,
                    BufferKind::Channel,
                    vec![row(5, "alice", "old", false), row(6, "alice", "new", false)],
                ),
                rows(Q, BufferKind::Query, vec![row(1, "alice", "first", false)]),
            ],
        ),
        now,
    );
    let full = encode(
        &reg.read(
            &Owner::Full,
            None,
            Detail::Full { limit: 50 },
            false,
            now,
            UnixMillis(0),
        )
        .unwrap(),
    );
    assert!(
        full.contains(r#""text":"new""#) && full.contains(r#""text":"first""#),
        "{full}"
    );
    assert!(!full.contains(r#""text":"old""#), "{full}");
}

#[test]
fn a_buffer_no_subscription_covers_is_never_queued() {
    let now = Instant::now();
    let (mut reg, _) = subscribed(json!({"buffers": [B]}), now);
    assert_eq!(
        reg.signal(&session(), &BufferId::from_client(Q), 1),
        Next::Wait
    );
    assert_eq!(
        reg.signal(&session(), &BufferId::from_client(B), 1),
        Next::ReadNow
    );
    let request = reg.take_batch(&session());
    assert_eq!(request.ranges.len(), 1);
    assert!(request.kinds.contains(Kind::Privmsg) && !request.kinds.contains(Kind::Join));
}

#[test]
fn a_channel_is_not_read_again_for_query_only_subscriptions() {
    let now = Instant::now();
    let (mut reg, _) = subscribed(json!({"queries": true}), now);
    let b = BufferId::from_client(B);
    assert_eq!(reg.signal(&session(), &b, 1), Next::ReadNow);
    let r = reg.take_batch(&session());
    reg.apply_batch(
        &session(),
        answer(
            &r,
            vec![rows(
                B,
                BufferKind::Channel,
                vec![row(1, "alice", "x", false)],
            )],
        ),
        now,
    );
    assert!(!reg.has_event(&Owner::Full, None));
    assert_eq!(
        reg.signal(&session(), &b, 2),
        Next::Wait,
        "known to be a channel"
    );
    assert_eq!(
        reg.signal(&session(), &BufferId::from_client(Q), 1),
        Next::ReadNow
    );
}

#[test]
fn an_evicted_range_is_reported_and_a_restarted_sequence_collected_again() {
    let now = Instant::now();
    let mut reg = Registry::new();
    reg.subscribe(
        SubId::from_bits(1),
        filter(json!({"kinds": ["privmsg"]})),
        &[session()],
        now,
        UnixMillis(0),
    )
    .unwrap();
    let r = reg.take_batch(&session());
    let mut data = answer(&r, vec![]);
    data.starts = Some(vec![(BufferId::from_client(B), 40)]);
    reg.apply_batch(&session(), data, now);
    // The session was added again: its sequence restarts at 1.
    let mut restarted = rows(B, BufferKind::Channel, vec![]);
    restarted.range = Range {
        buffer: BufferId::from_client(B),
        from: 1,
        through: 1,
        evicted: true,
    };
    let r = reg.take_batch(&session());
    reg.apply_batch(&session(), answer(&r, vec![restarted]), now);
    let r = reg.take_batch(&session());
    reg.apply_batch(
        &session(),
        answer(
            &r,
            vec![rows(
                B,
                BufferKind::Channel,
                vec![row(2, "alice", "after", false)],
            )],
        ),
        now,
    );
    let text = digest(&mut reg, now);
    assert!(
        text.contains(r#""evicted":true"#) && text.contains(r#""new":1"#),
        "{text}"
    );
}

#[test]
fn sixteen_subscriptions_at_most() {
    let now = Instant::now();
    let mut reg = Registry::new();
    for i in 0..16 {
        reg.subscribe(
            SubId::from_bits(i),
            filter(json!({"mentions": true})),
            &[],
            now,
            UnixMillis(0),
        )
        .unwrap();
    }
    assert_eq!(
        reg.subscribe(
            SubId::from_bits(99),
            filter(json!({"mentions": true})),
            &[],
            now,
            UnixMillis(0)
        ),
        Err(Full)
    );
    reg.unsubscribe(&Owner::Full, &SubId::from_bits(3)).unwrap();
    assert_eq!(
        reg.unsubscribe(&Owner::Full, &SubId::from_bits(3)),
        Err(Unknown)
    );
    assert!(reg
        .subscribe(
            SubId::from_bits(99),
            filter(json!({"mentions": true})),
            &[],
            now,
            UnixMillis(0)
        )
        .is_ok());
}

#[test]
fn idle_subscriptions_expire_and_reads_keep_them() {
    let t0 = Instant::now();
    let mut reg = Registry::new();
    let a = SubId::from_bits(1);
    let b = SubId::from_bits(2);
    for id in [&a, &b] {
        reg.subscribe(
            id.clone(),
            filter(json!({"mentions": true})),
            &[],
            t0,
            UnixMillis(0),
        )
        .unwrap();
    }
    let t1 = t0 + Duration::from_secs(600);
    reg.read(
        &Owner::Full,
        Some(&a),
        Detail::Digest,
        true,
        t1,
        UnixMillis(0),
    )
    .unwrap();
    reg.list(&Owner::Full, t1);
    assert!(reg.sweep(t0 + Duration::from_secs(899)).is_empty());
    assert_eq!(
        reg.sweep(t0 + IDLE_EXPIRY),
        std::slice::from_ref(&b),
        "listing touched nothing"
    );
    assert!(reg.exists(&a));
    assert_eq!(reg.sweep(t1 + IDLE_EXPIRY), [a]);
    assert!(reg.is_empty());
}

#[test]
fn a_read_names_a_live_subscription() {
    let now = Instant::now();
    let (mut reg, id) = subscribed(json!({"mentions": true}), now);
    assert_eq!(
        read_digest(&mut reg, Some(&SubId::from_bits(8)), now, UnixMillis(0)),
        Err(Unknown)
    );
    assert!(read_digest(&mut reg, Some(&id), now, UnixMillis(5)).is_ok());
    assert_eq!(
        reg.list(&Owner::Full, now)[0].last_read,
        Some(UnixMillis(5))
    );
}

#[test]
fn rows_lost_before_the_read_mark_the_buffer_evicted_and_held_ones_still_go() {
    let now = Instant::now();
    let (mut reg, _) = subscribed(json!({"kinds": ["privmsg"]}), now);
    reg.signal(&session(), &BufferId::from_client(B), 1);
    let r = reg.take_batch(&session());
    let mut lost = rows(B, BufferKind::Channel, vec![row(3, "alice", "kept", false)]);
    lost.range.from = 1;
    lost.lost = true;
    reg.apply_batch(&session(), answer(&r, vec![lost]), now);
    let text = digest(&mut reg, now);
    assert!(
        text.contains(r#""evicted":true"#) && text.contains(r#""new":1"#),
        "{text}"
    );
}

#[test]
fn after_lost_signals_buffers_holding_unsignalled_rows_are_evicted() {
    let now = Instant::now();
    let mut reg = Registry::new();
    reg.subscribe(
        SubId::from_bits(1),
        filter(json!({"mentions": true})),
        &[session()],
        now,
        UnixMillis(0),
    )
    .unwrap();
    let r = reg.take_batch(&session());
    let mut start = answer(&r, vec![]);
    start.starts = Some(vec![
        (BufferId::from_client(B), 10),
        (BufferId::from_client(Q), 4),
    ]);
    reg.apply_batch(&session(), start, now);
    // B's rows 11 and 12 were signalled and read; then signals were lost.
    reg.signal(&session(), &BufferId::from_client(B), 11);
    let r = reg.take_batch(&session());
    reg.signal(&session(), &BufferId::from_client(B), 12);
    reg.apply_batch(&session(), answer(&r, vec![]), now);
    assert_eq!(
        reg.lagged(&[session()]),
        [(session(), Next::Wait)],
        "a batch is pausing"
    );
    assert_eq!(reg.pause_over(&session()), Next::ReadNow);
    let request = reg.take_batch(&session());
    assert!(request.starts, "the resync reads every buffer's last seq");
    // B holds up to 15 (13–15 never signalled); Q still holds only history.
    let mut resync = answer(&request, vec![]);
    resync.starts = Some(vec![
        (BufferId::from_client(B), 15),
        (BufferId::from_client(Q), 4),
    ]);
    reg.apply_batch(&session(), resync, now);
    let text = digest(&mut reg, now);
    assert!(
        text.contains(&format!(r#""buffer":"{B}","evicted":true"#)),
        "{text}"
    );
    assert!(!text.contains(Q), "Q has nothing past its start: {text}");
    assert!(!reg.take_batch(&session()).starts, "resynced once");
}

#[test]
fn a_starting_point_is_never_taken_from_a_read_begun_before_the_subscription() {
    let now = Instant::now();
    let mut reg = Registry::new();
    let first = SubId::from_bits(1);
    reg.subscribe(
        first.clone(),
        filter(json!({"mentions": true})),
        &[session()],
        now,
        UnixMillis(0),
    )
    .unwrap();
    let early = reg.take_batch(&session());
    assert!(early.starts);
    // A second subscription arrives while that read is in flight.
    let second = SubId::from_bits(2);
    let (_, actions) = reg
        .subscribe(
            second.clone(),
            filter(json!({"from": ["alice"]})),
            &[session()],
            now,
            UnixMillis(0),
        )
        .unwrap();
    assert_eq!(actions, [(session(), Next::Wait)], "one batch at a time");
    let mut data = answer(&early, vec![]);
    data.starts = Some(vec![(BufferId::from_client(B), 5)]);
    // Rows 6 and 7 were stored before the second subscription existed, and
    // arrive in the next batch, which reads its starting point too.
    assert!(matches!(
        reg.apply_batch(&session(), data, now),
        Next::PauseUntil(_)
    ));
    assert_eq!(
        reg.starting(),
        1,
        "a batch was read, but not the second's start"
    );
    reg.signal(&session(), &BufferId::from_client(B), 6);
    assert_eq!(reg.pause_over(&session()), Next::ReadNow);
    let next = reg.take_batch(&session());
    assert!(
        next.starts,
        "the second subscription's start is still to be read"
    );
    let mut data = answer(
        &next,
        vec![rows(
            B,
            BufferKind::Channel,
            vec![row(6, "alice", "mriron: before", false)],
        )],
    );
    data.starts = Some(vec![(BufferId::from_client(B), 7)]);
    reg.apply_batch(&session(), data, now);
    assert_eq!(reg.starting(), 0);
    let full = encode(
        &reg.read(
            &Owner::Full,
            Some(&second),
            Detail::Full { limit: 50 },
            false,
            now,
            UnixMillis(0),
        )
        .unwrap(),
    );
    assert_eq!(
        full, r#"{"untrusted":true,"updates":[]}"#,
        "row 6 came before it"
    );
    assert!(
        reg.has_event(&Owner::Full, Some(&first)),
        "the first one's start was row 5"
    );
}

#[test]
fn an_answer_to_a_batch_no_longer_waited_for_is_ignored() {
    let now = Instant::now();
    let (mut reg, id) = subscribed(json!({"kinds": ["privmsg"]}), now);
    reg.signal(&session(), &BufferId::from_client(B), 1);
    let stale = reg.take_batch(&session());
    reg.unsubscribe(&Owner::Full, &id).unwrap();
    let (mut reg2, id2) = (reg, SubId::from_bits(9));
    reg2.subscribe(
        id2.clone(),
        filter(json!({"kinds": ["privmsg"]})),
        &[],
        now,
        UnixMillis(0),
    )
    .unwrap();
    let data = answer(
        &stale,
        vec![rows(
            B,
            BufferKind::Channel,
            vec![row(1, "alice", "old", false)],
        )],
    );
    assert_eq!(reg2.apply_batch(&session(), data, now), Next::Wait);
    assert!(
        !reg2.has_event(&Owner::Full, None),
        "collection was reset when the last subscription went"
    );
}

fn debug_filter(args: Value) -> Filter {
    crate::tools::subscribe::parse(&Args::from_request(Some(&args)).unwrap()).unwrap()
}

fn raw_line(seq: u64, text: &str) -> crate::debug::raw::ring::RawLine {
    crate::debug::raw::ring::RawLine {
        pos: crate::debug::raw::ring::Pos { tap: 1, seq },
        time: UnixMillis(1_790_769_600_000),
        dir: rete_actors::Direction::In,
        text: text.into(),
        kept: None,
    }
}

fn tap(lines: Vec<crate::debug::raw::ring::RawLine>) -> PollData {
    tap_after(None, lines)
}

/// A poll's read of the session's tap, begun after `after`.
fn tap_after(
    after: Option<crate::debug::raw::ring::Pos>,
    lines: Vec<crate::debug::raw::ring::RawLine>,
) -> PollData {
    PollData {
        raw: vec![TapPoll {
            session: session(),
            after,
            read: Some((Withholder::new(["hunter22"]), lines, None)),
            facts: Some(crate::debug::attribution::SessionFacts::sample(
                NETWORK, "mriron",
            )),
        }],
        log: None,
        clears: 0,
    }
}

#[test]
fn raw_polls_start_at_the_end_screen_and_debug_off_drops_them() {
    let mut reg = Registry::new();
    let now = Instant::now();
    let raw = SubId::from_bits(1);
    let msgs = SubId::from_bits(2);
    let f = debug_filter(json!({"raw": {"commands": ["privmsg"]}}));
    reg.subscribe(raw.clone(), f, &[session()], now, UnixMillis(0))
        .unwrap();
    reg.subscribe(
        msgs.clone(),
        filter(json!({"mentions": true})),
        &[],
        now,
        UnixMillis(0),
    )
    .unwrap();
    // Only the raw subscription is planned, from the tap's start (its end is to be taken).
    let plan = reg.poll_plan(&[session()]).unwrap();
    assert_eq!(plan.raw, vec![(session(), None)]);
    assert_eq!(plan.log, None);
    // The first poll takes the end: what the tap held is history.
    reg.apply_poll(&tap(vec![raw_line(1, ":a PRIVMSG #r :old")]), now);
    assert!(!reg.has_event(&Owner::Full, Some(&raw)));
    let plan = reg.poll_plan(&[session()]).unwrap();
    assert_eq!(
        plan.raw,
        vec![(
            session(),
            Some(crate::debug::raw::ring::Pos { tap: 1, seq: 1 })
        )]
    );
    reg.apply_poll(
        &tap(vec![
            raw_line(2, ":a PRIVMSG #r :new"),
            raw_line(3, ":a NOTICE #r :not a privmsg"),
            raw_line(4, ":a PRIVMSG #r :hunter22"),
        ]),
        now,
    );
    let v = reg
        .read(
            &Owner::Full,
            Some(&raw),
            Detail::Full { limit: 50 },
            true,
            now,
            UnixMillis(0),
        )
        .unwrap();
    let entry = &v["updates"][0];
    assert_eq!(entry["withheld"], 1, "{v}");
    let events = entry["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{v}");
    assert_eq!(events[0]["type"], "raw");
    assert_eq!(events[0]["session"], S);
    assert_eq!(events[0]["line"]["line"], ":a PRIVMSG #r :new");
    let digest = reg
        .read(
            &Owner::Full,
            Some(&raw),
            Detail::Digest,
            true,
            now,
            UnixMillis(0),
        )
        .unwrap();
    assert_eq!(
        encode(&digest),
        format!(
            r#"{{"untrusted":true,"updates":[{{"buffers":[],"raw":1,"subscription":"{raw}","withheld":1}}]}}"#
        )
    );
    // Debug off: the pending raw event moves into dropped; positions start over.
    reg.debug_off();
    assert!(!reg.has_event(&Owner::Full, Some(&raw)));
    let listed = reg.list(&Owner::Full, now);
    assert_eq!(
        (listed[0].pending, listed[0].dropped, listed[0].debug),
        (0, 1, true)
    );
    assert!(!listed[1].debug);
    assert_eq!(
        reg.poll_plan(&[session()]).unwrap().raw,
        vec![(session(), None)]
    );
}

#[test]
fn past_200_a_minute_raw_events_are_suppressed() {
    let mut reg = Registry::new();
    let now = Instant::now();
    let id = SubId::from_bits(1);
    reg.subscribe(
        id.clone(),
        debug_filter(json!({"raw": {}})),
        &[session()],
        now,
        UnixMillis(0),
    )
    .unwrap();
    reg.apply_poll(&tap(vec![]), now);
    let lines = (1..=250)
        .map(|i| raw_line(i, &format!("PING :{i}")))
        .collect();
    reg.apply_poll(&tap(lines), now);
    let v = read_digest(&mut reg, Some(&id), now, UnixMillis(0)).unwrap();
    assert_eq!(v["updates"][0]["raw"], 200, "{v}");
    assert_eq!(v["updates"][0]["suppressed"], 50, "{v}");
}

/// A subscription whose start was read before a poll that was planned (from another
/// subscription's later position) before it was made: that poll's lines begin past its start,
/// so it leaves them, and the next poll, planned from its start, brings every line after it.
#[test]
fn a_poll_planned_past_a_new_subscriptions_start_is_left_for_the_next() {
    use crate::debug::raw::ring::Pos;
    use crate::updates::feed::Starts;
    let mut reg = Registry::new();
    let now = Instant::now();
    let (old, new) = (SubId::from_bits(1), SubId::from_bits(2));
    let f = debug_filter(json!({"raw": {}}));
    let at = |seq| Starts {
        raw: vec![(session(), Some(Pos { tap: 1, seq }))],
        log: None,
        clears: 0,
    };
    reg.subscribe_at(
        old.clone(),
        f.clone(),
        Holder::default(),
        &[session()],
        &at(3),
        now,
        UnixMillis(0),
    )
    .unwrap();
    let plan = reg.poll_plan(&[session()]).unwrap();
    assert_eq!(plan.raw, vec![(session(), Some(Pos { tap: 1, seq: 3 }))]);
    // Made after that plan, with its start read at seq 1.
    reg.subscribe_at(
        new.clone(),
        f,
        Holder::default(),
        &[session()],
        &at(1),
        now,
        UnixMillis(0),
    )
    .unwrap();
    let after = Some(Pos { tap: 1, seq: 3 });
    reg.apply_poll(&tap_after(after, vec![raw_line(4, "PING :4")]), now);
    assert!(reg.has_event(&Owner::Full, Some(&old)));
    assert!(
        !reg.has_event(&Owner::Full, Some(&new)),
        "lines 2 and 3 were not in that read"
    );
    let plan = reg.poll_plan(&[session()]).unwrap();
    assert_eq!(plan.raw, vec![(session(), Some(Pos { tap: 1, seq: 1 }))]);
    let lines = (2..=4)
        .map(|i| raw_line(i, &format!("PING :{i}")))
        .collect();
    reg.apply_poll(&tap_after(Some(Pos { tap: 1, seq: 1 }), lines), now);
    let v = reg
        .read(
            &Owner::Full,
            Some(&new),
            Detail::Full { limit: 50 },
            false,
            now,
            UnixMillis(0),
        )
        .unwrap();
    let seqs: Vec<&Value> = v["updates"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["line"]["seq"])
        .collect();
    assert_eq!(seqs, [2, 3, 4], "{v}");
    let v = reg
        .read(
            &Owner::Full,
            Some(&old),
            Detail::Full { limit: 50 },
            false,
            now,
            UnixMillis(0),
        )
        .unwrap();
    assert_eq!(
        v["updates"][0]["events"].as_array().unwrap().len(),
        1,
        "{v}"
    );
}

/// The log side of the same: a log read planned past a new subscription's start is left for
/// the next, planned from it.
#[test]
fn a_log_read_planned_past_a_new_subscriptions_start_is_left_for_the_next() {
    use crate::debug::log::level::{Category, Level};
    use crate::debug::log::line::LogLine;
    use crate::debug::log::ring::Snapshot;
    use crate::updates::feed::Starts;
    let log_line = |seq: u64| {
        Arc::new(LogLine {
            seq,
            time: UnixMillis(0),
            level: Level::Error,
            category: Category::App,
            text: format!("line {seq}").into(),
            kept: None,
        })
    };
    let read = |planned: u64, seqs: std::ops::RangeInclusive<u64>| PollData {
        raw: Vec::new(),
        log: Some(LogPoll {
            planned,
            after: planned,
            snapshot: Snapshot {
                lines: seqs.map(log_line).collect(),
                evicted_through: 0,
                oldest: None,
                scan: rete_redact::SecretSet::empty(),
                stalled: false,
            },
        }),
        clears: 0,
    };
    let mut reg = Registry::new();
    let now = Instant::now();
    let (old, new) = (SubId::from_bits(1), SubId::from_bits(2));
    let f = debug_filter(json!({"log": {}}));
    let at = |seq| Starts {
        raw: Vec::new(),
        log: Some(seq),
        clears: 0,
    };
    reg.subscribe_at(
        old.clone(),
        f.clone(),
        Holder::default(),
        &[],
        &at(30),
        now,
        UnixMillis(0),
    )
    .unwrap();
    assert_eq!(reg.poll_plan(&[]).unwrap().log, Some(30));
    reg.subscribe_at(
        new.clone(),
        f,
        Holder::default(),
        &[],
        &at(10),
        now,
        UnixMillis(0),
    )
    .unwrap();
    reg.apply_poll(&read(30, 31..=31), now);
    assert!(reg.has_event(&Owner::Full, Some(&old)));
    assert!(
        !reg.has_event(&Owner::Full, Some(&new)),
        "lines 11 to 30 were not in that read"
    );
    assert_eq!(reg.poll_plan(&[]).unwrap().log, Some(10));
    reg.apply_poll(&read(10, 11..=31), now);
    let v = read_digest(&mut reg, Some(&new), now, UnixMillis(0)).unwrap();
    assert_eq!(v["updates"][0]["log"], 21, "{v}");
}

/// The network the test session is named in its config.
const NETWORK: &str = "testnet";

fn grant_holder(key: &str, buffers: &[&str], queries: bool) -> Holder {
    Holder {
        owner: Owner::Grant(key.into()),
        reach: Reach::within(crate::grant::Scope {
            networks: vec![NETWORK.into()],
            buffers: buffers.iter().map(|b| b.to_string()).collect(),
            queries,
        }),
    }
}

/// Subscribes `holder` to PRIVMSG rows under `id`, made while no session ran.
fn subscribe_as(reg: &mut Registry, id: SubId, holder: Holder) -> Result<SubId, Full> {
    subscribe_with(reg, id, json!({"kinds": ["privmsg"]}), holder)
}

/// Subscribes `holder` with the filters `args` under `id`, made while no
/// session ran.
fn subscribe_with(
    reg: &mut Registry,
    id: SubId,
    args: Value,
    holder: Holder,
) -> Result<SubId, Full> {
    let (now, wall) = (Instant::now(), UnixMillis(0));
    reg.subscribe_at(
        id.clone(),
        filter(args),
        holder,
        &[],
        &Starts::default(),
        now,
        wall,
    )
    .map(|_| id)
}

/// A full read of `owner`'s subscription `id`, encoded.
fn full_read(reg: &mut Registry, owner: &Owner, id: &SubId) -> String {
    let (now, wall) = (Instant::now(), UnixMillis(0));
    let read = reg.read(
        owner,
        Some(id),
        Detail::Full { limit: 50 },
        false,
        now,
        wall,
    );
    encode(&read.unwrap())
}

fn named(buffer: &str, name: &str, kind: BufferKind, rows_in: Vec<Row>) -> BufferRows {
    BufferRows {
        name: name.into(),
        ..rows(buffer, kind, rows_in)
    }
}

#[test]
fn a_scoped_subscription_collects_only_its_reach_and_only_its_owner_sees_it() {
    let now = Instant::now();
    let mut reg = Registry::new();
    let full = SubId::from_bits(1);
    let scoped = SubId::from_bits(2);
    let mut other = grant_holder("g1", &["#RUST*"], false);
    subscribe_as(&mut reg, full.clone(), Holder::default()).unwrap();
    let grant = grant_holder("g1", &["#RUST*"], false);
    let owner = grant.owner.clone();
    subscribe_as(&mut reg, scoped.clone(), grant).unwrap();
    let (rust, secret, query) = (
        "0B0B0B0B-0000-5000-8000-00000000000A",
        "0B0B0B0B-0000-5000-8000-00000000000B",
        "0B0B0B0B-0000-5000-8000-00000000000C",
    );
    for b in [rust, secret, query] {
        reg.signal(&session(), &BufferId::from_client(b), 1);
    }
    let r = reg.take_batch(&session());
    let mut evicted_secret = named(
        secret,
        "#secret",
        BufferKind::Channel,
        vec![row(1, "qzed", "MARKER-secret", false)],
    );
    evicted_secret.lost = true;
    reg.apply_batch(
        &session(),
        answer(
            &r,
            vec![
                named(
                    rust,
                    "#rust-dev",
                    BufferKind::Channel,
                    vec![row(1, "ann", "in reach", false)],
                ),
                evicted_secret,
                named(
                    query,
                    "qzed",
                    BufferKind::Query,
                    vec![row(1, "qzed", "MARKER-query", false)],
                ),
            ],
        ),
        now,
    );
    let seen = full_read(&mut reg, &owner, &scoped);
    assert!(seen.contains("in reach"), "{seen}");
    for marker in ["MARKER", "#secret", secret, query, "qzed", "evicted"] {
        assert!(!seen.contains(marker), "{marker} in {seen}");
    }
    // The full token's subscription sees everything, the eviction too.
    let all = full_read(&mut reg, &Owner::Full, &full);
    assert!(
        all.contains("MARKER-query") && all.contains("\"evicted\":true"),
        "{all}"
    );

    // Neither sees the other's: their ids are unknown across owners.
    assert_eq!(
        reg.read(
            &owner,
            Some(&full),
            Detail::Digest,
            true,
            now,
            UnixMillis(0)
        ),
        Err(Unknown)
    );
    assert_eq!(reg.list(&owner, now).len(), 1);
    assert_eq!(reg.list(&owner, now)[0].id, scoped);
    assert_eq!(reg.list(&Owner::Full, now)[0].id, full);
    assert!(!reg.has_event(&Owner::Grant("g2".into()), None));
    assert_eq!(reg.unsubscribe(&Owner::Full, &scoped), Err(Unknown));
    assert_eq!(
        reg.unsubscribe(&Owner::Grant("g2".into()), &scoped),
        Err(Unknown)
    );

    // One grant holds at most four.
    for bits in 3..6 {
        subscribe_as(&mut reg, SubId::from_bits(bits), other.clone()).unwrap();
    }
    other.owner = owner.clone();
    assert_eq!(
        subscribe_as(&mut reg, SubId::from_bits(9), other).map(|_| ()),
        Err(Full)
    );
    assert!(subscribe_as(&mut reg, SubId::from_bits(10), Holder::default()).is_ok());
    assert_eq!(reg.unsubscribe(&owner, &scoped), Ok(()));

    // Grants together hold at most twelve: the full token keeps the rest.
    let mut bits = 20;
    for grant in ["g3", "g4", "g5"] {
        for _ in 0..4 {
            bits += 1;
            let _ = subscribe_as(
                &mut reg,
                SubId::from_bits(bits),
                grant_holder(grant, &[], false),
            );
        }
    }
    let grants = reg.subs.iter().filter(|s| s.owner != Owner::Full).count();
    assert_eq!(grants, 12);
    assert_eq!(reg.len(), 14);
    for more in 0..2 {
        assert!(subscribe_as(&mut reg, SubId::from_bits(40 + more), Holder::default()).is_ok());
    }
}

#[test]
fn a_scoped_raw_subscription_sees_only_lines_attributed_to_its_reach() {
    let now = Instant::now();
    let mut reg = Registry::new();
    let (part, whole) = (SubId::from_bits(1), SubId::from_bits(2));
    let raw = || json!({"raw": {}});
    subscribe_with(
        &mut reg,
        part.clone(),
        raw(),
        grant_holder("g1", &["#rust"], true),
    )
    .unwrap();
    subscribe_with(
        &mut reg,
        whole.clone(),
        raw(),
        grant_holder("g2", &[], true),
    )
    .unwrap();
    // The first poll takes where the tap ends; the second is new.
    reg.apply_poll(&tap(vec![raw_line(1, "PING :old")]), now);
    reg.apply_poll(
        &tap(vec![
            raw_line(2, ":eve PRIVMSG #secret :MARKER"),
            raw_line(3, ":ann PRIVMSG #rust :INSIDE"),
            raw_line(4, "PING :MARKER-unattributed"),
        ]),
        now,
    );
    let part_read = full_read(&mut reg, &Owner::Grant("g1".into()), &part);
    assert!(!part_read.contains("MARKER"), "{part_read}");
    assert!(part_read.contains("INSIDE"), "{part_read}");
    assert!(part_read.contains("withheld"), "{part_read}");
    let whole_read = full_read(&mut reg, &Owner::Grant("g2".into()), &whole);
    assert!(whole_read.contains("MARKER"), "{whole_read}");
}

#[test]
fn an_ended_grants_subscriptions_are_dropped_and_no_one_elses() {
    let mut reg = Registry::new();
    for (bits, holder) in [
        (1, Holder::default()),
        (2, grant_holder("kept", &[], false)),
        (3, grant_holder("ended", &[], false)),
        (4, grant_holder("ended", &[], false)),
    ] {
        subscribe_as(&mut reg, SubId::from_bits(bits), holder).unwrap();
    }
    let ended = reg.drop_ended_grants(|key| key == "kept");
    assert_eq!(ended, vec![Arc::<str>::from("ended")]);
    assert_eq!(reg.len(), 2);
    assert!(reg.owns(&Owner::Full, &SubId::from_bits(1)));
    assert!(reg.owns(&Owner::Grant("kept".into()), &SubId::from_bits(2)));
    assert!(reg.drop_ended_grants(|_| true).is_empty());
}
