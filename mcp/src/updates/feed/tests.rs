use super::*;
use rete_actors::Direction;
use rete_engine::clock::UnixMillis;

fn sid() -> SessionId {
    SessionId::parse("00000000-0000-4000-8000-000000000001").unwrap()
}

fn line(tap: u64, seq: u64) -> RawLine {
    RawLine {
        pos: Pos { tap, seq },
        time: UnixMillis(0),
        dir: Direction::In,
        text: format!("PING :{tap}.{seq}").into(),
        kept: None,
    }
}

fn seqs(lines: &[RawLine]) -> Vec<(u64, u64)> {
    lines.iter().map(|l| (l.pos.tap, l.pos.seq)).collect()
}

#[test]
fn a_pending_start_takes_the_end_and_later_lines_follow() {
    let mut feed = Feed::new();
    let first = [line(1, 1), line(1, 2)];
    assert!(
        feed.take_raw(&sid(), &first, None).lines.is_empty(),
        "history"
    );
    feed.raw_read_done();
    let next = [line(1, 1), line(1, 2), line(1, 3)];
    let take = feed.take_raw(&sid(), &next, None);
    assert_eq!(seqs(take.lines), [(1, 3)]);
    assert!(!take.evicted);
}

#[test]
fn an_empty_tap_when_taken_delivers_everything_after() {
    let mut feed = Feed::new();
    assert!(feed.take_raw(&sid(), &[], None).lines.is_empty());
    feed.raw_read_done();
    assert_eq!(
        seqs(feed.take_raw(&sid(), &[line(1, 7)], None).lines),
        [(1, 7)]
    );
}

#[test]
fn a_session_seen_later_and_a_new_tap_are_read_from_their_start() {
    let mut feed = Feed::new();
    let other = SessionId::parse("00000000-0000-4000-8000-000000000002").unwrap();
    let _ = feed.take_raw(&other, &[line(1, 1)], None);
    feed.raw_read_done();
    assert_eq!(
        seqs(feed.take_raw(&sid(), &[line(2, 1)], None).lines),
        [(2, 1)]
    );
    // A reconnect: the new tap sorts after every line of the old one.
    let lines = [line(1, 1), line(3, 1), line(3, 2)];
    let take = feed.take_raw(&other, &lines, None);
    assert_eq!(seqs(take.lines), [(3, 1), (3, 2)]);
    assert!(!take.evicted);
}

#[test]
fn a_gap_the_ring_dropped_at_capacity_is_evicted() {
    let mut feed = Feed::new();
    let _ = feed.take_raw(&sid(), &[line(1, 1)], None);
    feed.raw_read_done();
    let lines = [line(1, 5), line(1, 6)];
    let take = feed.take_raw(&sid(), &lines, Some(Pos { tap: 1, seq: 4 }));
    assert_eq!(seqs(take.lines), [(1, 5), (1, 6)]);
    assert!(take.evicted);
    // A gap the ring did not drop at capacity (lines cleared, say) is not evicted.
    let mut feed = Feed::new();
    let _ = feed.take_raw(&sid(), &[line(1, 1)], None);
    feed.raw_read_done();
    assert!(!feed.take_raw(&sid(), &lines, None).evicted);
}

#[test]
fn a_failed_read_keeps_a_pending_session_pending() {
    let mut feed = Feed::new();
    let other = SessionId::parse("00000000-0000-4000-8000-000000000002").unwrap();
    feed.keep_pending(&sid());
    let _ = feed.take_raw(&other, &[], None);
    feed.raw_read_done();
    assert_eq!(feed.raw_at(&sid()), RawAt::Pending);
    assert!(feed.take_raw(&sid(), &[line(1, 1)], None).lines.is_empty());
    assert_eq!(
        seqs(feed.take_raw(&sid(), &[line(1, 1), line(1, 2)], None).lines),
        [(1, 2)]
    );
}

#[test]
fn reset_makes_every_position_pending_again() {
    let mut feed = Feed::new();
    let _ = feed.take_raw(&sid(), &[line(1, 1)], None);
    feed.raw_read_done();
    assert!(feed.take_log(&[], 9).is_empty());
    feed.reset();
    assert_eq!(feed.raw_at(&sid()), RawAt::Pending);
    assert_eq!(feed.log_after(), None);
}

#[test]
fn at_most_200_a_rolling_minute() {
    let mut feed = Feed::new();
    let t0 = Instant::now();
    for _ in 0..MAX_PER_WINDOW {
        assert!(feed.admit(t0));
    }
    assert!(!feed.admit(t0 + Duration::from_secs(59)));
    assert!(feed.admit(t0 + RATE_WINDOW));
}

#[test]
fn a_line_dropped_at_capacity_across_a_reconnect_is_evicted() {
    use crate::debug::raw::ring::{stored, Rings};
    let mut rings = Rings::new(3);
    let push = |rings: &mut Rings, text: &str| {
        let (t, k) = stored(text);
        rings.push(&sid(), UnixMillis(0), Direction::In, t, k);
    };
    let mut feed = Feed::new();
    push(&mut rings, "a");
    let w = rings.window(&sid(), None, usize::MAX);
    assert!(
        feed.take_raw(&sid(), &w.lines, w.dropped_through)
            .lines
            .is_empty(),
        "history"
    );
    feed.raw_read_done();
    // "b" follows in the same tap, then a reconnect starts a new tap whose three lines push
    // "b" out before the next poll: a line this subscription would have read is gone.
    push(&mut rings, "b");
    rings.connecting(&sid());
    for text in ["c", "d", "e"] {
        push(&mut rings, text);
    }
    let w = rings.window(&sid(), None, usize::MAX);
    let take = feed.take_raw(&sid(), &w.lines, w.dropped_through);
    let texts: Vec<&str> = take.lines.iter().map(|l| &*l.text).collect();
    assert_eq!(texts, ["c", "d", "e"]);
    assert!(take.evicted, "b was dropped at capacity");
}

#[test]
fn a_start_read_when_subscribing_delivers_every_later_line() {
    let other = SessionId::parse("00000000-0000-4000-8000-000000000002").unwrap();
    let mut feed = Feed::starting(&Starts {
        raw: vec![(sid(), Some(Pos { tap: 1, seq: 2 })), (other.clone(), None)],
        log: Some(40),
        clears: 0,
    });
    // The first poll reads past the start: nothing after it is history.
    let lines = [line(1, 1), line(1, 2), line(1, 3), line(1, 4)];
    assert_eq!(
        seqs(feed.take_raw(&sid(), &lines, None).lines),
        [(1, 3), (1, 4)]
    );
    // A tap that did not answer is taken by the first poll that reads it.
    assert!(feed.take_raw(&other, &[line(5, 1)], None).lines.is_empty());
    assert_eq!(
        seqs(feed.take_raw(&other, &[line(5, 1), line(5, 2)], None).lines),
        [(5, 2)]
    );
    // The ring overtook the start: reported.
    let later = [line(1, 9)];
    let overtaken = feed.take_raw(&sid(), &later, Some(Pos { tap: 1, seq: 8 }));
    assert!(overtaken.evicted);
    assert_eq!(feed.log_after(), Some(40));
}

#[test]
fn with_no_session_read_when_subscribing_the_first_poll_takes_the_start() {
    let mut feed = Feed::starting(&Starts::default());
    assert_eq!(feed.raw_at(&sid()), RawAt::Pending);
    assert_eq!(feed.log_after(), None);
    assert!(feed.take_raw(&sid(), &[line(1, 1)], None).lines.is_empty());
}
