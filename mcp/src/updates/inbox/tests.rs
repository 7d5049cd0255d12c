use super::*;
use crate::read::result::encoded_len;
use crate::updates::Source;
use serde_json::json;

/// A collected privmsg in buffer `buffer` (named `#<buffer>` lower-cased)
/// from `from`, with `text` as its payload; shared with the render tests.
pub(in crate::updates) fn event(buffer: &str, from: &str, text: &str, at: Instant) -> Event {
    let json = json!({
        "buffer": buffer,
        "message": {
            "from": from,
            "kind": "privmsg",
            "payload": {"caseName": "privmsg", "text": text},
            "seq": 1,
            "time": "2026-09-30T12:00:00Z",
            "untrusted": true
        },
        "type": "message"
    });
    Event {
        source: Source::Message(BufferId::from_client(buffer)),
        buffer_name: format!("#{}", buffer.to_lowercase()),
        from: from.into(),
        mention: false,
        collected: at,
        size: encoded_len(&json),
        json,
    }
}

/// The payload text of a held event, to tell events apart.
fn text(e: &Event) -> &str {
    e.json["message"]["payload"]["text"].as_str().unwrap()
}

fn texts(inbox: &Inbox) -> Vec<&str> {
    inbox.events().iter().map(|e| text(e)).collect()
}

/// An event whose `size` is exactly `size` bytes (ASCII text).
fn sized(size: usize, at: Instant) -> Arc<Event> {
    let overhead = event("B1", "a", "", at).size;
    let e = event("B1", "a", &"x".repeat(size - overhead), at);
    assert_eq!(e.size, size);
    Arc::new(e)
}

#[test]
fn the_501st_event_drops_the_oldest() {
    let now = Instant::now();
    let mut inbox = Inbox::new();
    for i in 0..MAX_EVENTS {
        inbox.push(Arc::new(event("B1", "a", &i.to_string(), now)), now);
    }
    assert_eq!((inbox.pending(), inbox.dropped()), (500, 0));
    inbox.push(Arc::new(event("B1", "a", "500", now)), now);
    assert_eq!((inbox.pending(), inbox.dropped()), (500, 1));
    assert_eq!(texts(&inbox)[0], "1");
    assert_eq!(texts(&inbox)[499], "500");
}

#[test]
fn the_byte_cap_drops_oldest_only_when_exceeded() {
    let now = Instant::now();
    let mut inbox = Inbox::new();
    inbox.push(sized(MAX_BYTES / 2, now), now);
    inbox.push(sized(MAX_BYTES / 2, now), now);
    assert_eq!(
        (inbox.pending(), inbox.dropped()),
        (2, 0),
        "exactly at the cap"
    );
    inbox.push(sized(200, now), now);
    assert_eq!((inbox.pending(), inbox.dropped()), (2, 1));
    assert_eq!(inbox.events()[1].size, 200);
}

#[test]
fn draining_frees_bytes() {
    let now = Instant::now();
    let mut inbox = Inbox::new();
    inbox.push(sized(MAX_BYTES / 2, now), now);
    inbox.push(sized(MAX_BYTES / 2, now), now);
    inbox.drain_front(1);
    inbox.push(sized(MAX_BYTES / 2, now), now);
    assert_eq!((inbox.pending(), inbox.dropped()), (2, 0));
}

#[test]
fn events_older_than_an_hour_go() {
    let t0 = Instant::now();
    let mut inbox = Inbox::new();
    inbox.push(Arc::new(event("B1", "a", "old", t0)), t0);
    let t1 = t0 + Duration::from_secs(10);
    inbox.push(Arc::new(event("B1", "a", "newer", t1)), t1);
    inbox.expire(t0 + MAX_AGE);
    assert_eq!(inbox.pending(), 2, "exactly an hour is not older");
    inbox.expire(t0 + MAX_AGE + Duration::from_millis(1));
    assert_eq!(texts(&inbox), ["newer"]);
    assert_eq!(inbox.dropped(), 1);
    // A push ages out the front too.
    let t2 = t1 + MAX_AGE + Duration::from_secs(1);
    inbox.push(Arc::new(event("B1", "a", "newest", t2)), t2);
    assert_eq!(texts(&inbox), ["newest"]);
    assert_eq!(inbox.dropped(), 2);
}

#[test]
fn counters_make_a_report_but_not_an_event() {
    let mut inbox = Inbox::new();
    let b = BufferId::from_client("B1");
    inbox.add_backfilled(&b, "#a", 0);
    inbox.add_withheld(&b, "#a", 0);
    assert!(!inbox.has_report(), "zero counts are no report");
    inbox.add_withheld(&b, "#a", 2);
    assert!(inbox.has_report());
    assert!(!inbox.has_event());
    inbox.reset_all_counters();
    inbox.mark_evicted(&b, "#a");
    assert!(inbox.has_report());
}

#[test]
fn dropped_alone_is_a_report() {
    let now = Instant::now();
    let mut inbox = Inbox::new();
    inbox.push(sized(MAX_BYTES + 1, now), now);
    assert_eq!((inbox.pending(), inbox.dropped()), (0, 1));
    assert!(inbox.has_report());
    assert!(!inbox.has_event());
}

#[test]
fn counters_keep_first_order_and_latest_name() {
    let now = Instant::now();
    let mut inbox = Inbox::new();
    let (b1, b2) = (BufferId::from_client("B1"), BufferId::from_client("B2"));
    inbox.add_backfilled(&b2, "#two", 1);
    inbox.push(Arc::new(event("B1", "a", "x", now)), now);
    inbox.add_withheld(&b1, "#one", 1);
    inbox.add_backfilled(&b2, "#Two", 5);
    inbox.mark_evicted(&b1, "#One");
    let list = inbox.counters_in_order();
    let got: Vec<_> = list
        .iter()
        .map(|(b, c)| {
            (
                b.as_str(),
                c.name.as_str(),
                c.backfilled,
                c.withheld,
                c.evicted,
                c.first,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("B2", "#Two", 6, 0, false, 0),
            ("B1", "#One", 0, 1, true, 1)
        ]
    );
    inbox.reset_counters(&b2);
    inbox.add_backfilled(&b2, "#two", 1);
    let order: Vec<_> = inbox
        .counters_in_order()
        .iter()
        .map(|(b, _)| b.as_str())
        .collect();
    assert_eq!(
        order,
        ["B1", "B2"],
        "a reset buffer starts again at the end"
    );
}
