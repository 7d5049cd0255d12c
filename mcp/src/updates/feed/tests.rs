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
    assert!(feed.take_raw(&sid(), &first).lines.is_empty(), "history");
    feed.raw_read_done();
    let next = [line(1, 1), line(1, 2), line(1, 3)];
    let take = feed.take_raw(&sid(), &next);
    assert_eq!(seqs(take.lines), [(1, 3)]);
    assert!(!take.evicted);
}

#[test]
fn an_empty_tap_when_taken_delivers_everything_after() {
    let mut feed = Feed::new();
    assert!(feed.take_raw(&sid(), &[]).lines.is_empty());
    feed.raw_read_done();
    assert_eq!(seqs(feed.take_raw(&sid(), &[line(1, 7)]).lines), [(1, 7)]);
}

#[test]
fn a_session_seen_later_and_a_new_tap_are_read_from_their_start() {
    let mut feed = Feed::new();
    let other = SessionId::parse("00000000-0000-4000-8000-000000000002").unwrap();
    let _ = feed.take_raw(&other, &[line(1, 1)]);
    feed.raw_read_done();
    assert_eq!(seqs(feed.take_raw(&sid(), &[line(2, 1)]).lines), [(2, 1)]);
    // A reconnect: the new tap sorts after every line of the old one.
    let lines = [line(1, 1), line(3, 1), line(3, 2)];
    let take = feed.take_raw(&other, &lines);
    assert_eq!(seqs(take.lines), [(3, 1), (3, 2)]);
    assert!(!take.evicted);
}

#[test]
fn a_gap_in_the_same_tap_is_evicted() {
    let mut feed = Feed::new();
    let _ = feed.take_raw(&sid(), &[line(1, 1)]);
    feed.raw_read_done();
    let lines = [line(1, 5), line(1, 6)];
    let take = feed.take_raw(&sid(), &lines);
    assert_eq!(seqs(take.lines), [(1, 5), (1, 6)]);
    assert!(take.evicted);
}

#[test]
fn a_failed_read_keeps_a_pending_session_pending() {
    let mut feed = Feed::new();
    let other = SessionId::parse("00000000-0000-4000-8000-000000000002").unwrap();
    feed.keep_pending(&sid());
    let _ = feed.take_raw(&other, &[]);
    feed.raw_read_done();
    assert_eq!(feed.raw_at(&sid()), RawAt::Pending);
    assert!(feed.take_raw(&sid(), &[line(1, 1)]).lines.is_empty());
    assert_eq!(
        seqs(feed.take_raw(&sid(), &[line(1, 1), line(1, 2)]).lines),
        [(1, 2)]
    );
}

#[test]
fn reset_makes_every_position_pending_again() {
    let mut feed = Feed::new();
    let _ = feed.take_raw(&sid(), &[line(1, 1)]);
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
