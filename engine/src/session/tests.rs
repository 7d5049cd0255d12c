//! Step tests for the session state machine: lines in, lines and rows out.

use super::*;
use crate::buffer::BufferKind;
use crate::clock::{Mono, Now, UnixMillis};
use crate::ids::SessionId;
use crate::row::{Kind, Payload};
use crate::sasl::{Credentials, Mechanism};

struct T {
    s: Session,
    now: Now,
}

fn config() -> SessionConfig {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    let mut c = SessionConfig::new(id, "test", "rete");
    c.channels = vec![ChannelSpec {
        name: "#rete".into(),
        key: None,
    }];
    c
}

impl T {
    fn new(config: SessionConfig) -> T {
        T {
            s: Session::new(config),
            now: Now {
                mono: Mono(1_000),
                wall: UnixMillis(1_790_769_600_000),
            },
        }
    }

    fn tick(&mut self, ms: u64) {
        self.now.mono = self.now.mono.plus_ms(ms);
        self.now.wall = UnixMillis(self.now.wall.0 + ms as i64);
    }

    /// Everything sent so far, letting the flood throttle release it all.
    fn sent(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..1000 {
            match self.s.poll_transmit(self.now.mono) {
                Some(l) => out.push(l),
                None => match self.s.poll_timeout(self.now.mono) {
                    Some(t) if self.s.queued_lines() > 0 => {
                        let wait = t.ms_since(self.now.mono).max(1);
                        self.tick(wait);
                    }
                    _ => break,
                },
            }
        }
        out
    }

    fn connect(&mut self) -> Vec<String> {
        self.s
            .handle_connected(self.now, "127.0.0.1:6667", None, [7; 18]);
        self.sent()
    }

    fn feed(&mut self, line: &str) {
        self.s.handle_line(self.now, line);
    }

    fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.s.poll_event()).collect()
    }

    /// Registers through CAP with the given offer and ACKs whatever is requested.
    fn register(&mut self, offer: &str) -> Vec<String> {
        self.connect();
        self.feed(&format!(":srv CAP * LS :{offer}"));
        let mut sent = self.sent();
        if let Some(req) = sent.iter().find(|l| l.starts_with("CAP REQ")) {
            let list = req
                .trim_start_matches("CAP REQ ")
                .trim_start_matches(':')
                .to_owned();
            self.feed(&format!(":srv CAP rete ACK :{list}"));
            sent.extend(self.sent());
        }
        self.feed(":srv 001 rete :Welcome");
        self.feed(":srv 005 rete CHANTYPES=# PREFIX=(ov)@+ NETWORK=TestNet WHOX CASEMAPPING=rfc1459 :are supported");
        sent.extend(self.sent());
        sent
    }

    fn buffer_rows(&self, kind: BufferKind, name: &str) -> Vec<(String, Payload, bool)> {
        let v = self.s.view();
        let id = v.find_buffer(kind, name).expect("buffer exists").clone();
        v.buffer(&id)
            .unwrap()
            .display()
            .map(|r| (r.from.to_string(), r.payload.clone(), r.history))
            .collect()
    }

    fn server_texts(&self) -> Vec<String> {
        let v = self.s.view();
        v.buffer(v.server_buffer())
            .unwrap()
            .display()
            .map(|r| {
                let mut t = String::new();
                r.payload.for_each_text(|x| {
                    t.push_str(x);
                    t.push(' ');
                });
                t
            })
            .collect()
    }
}

const OFFER: &str = "message-tags server-time batch echo-message multi-prefix away-notify account-notify extended-join userhost-in-names chghost cap-notify labeled-response setname account-tag invite-notify draft/unknown";

#[test]
fn registration_requests_only_offered_caps_then_ends_and_joins() {
    let mut t = T::new(config());
    let first = t.connect();
    assert_eq!(first, vec!["CAP LS 302", "NICK rete", "USER rete 0 * rete"]);
    t.feed(":srv CAP * LS * :multi-prefix sasl=PLAIN unknown-cap");
    assert!(t.sent().is_empty(), "waits for the last LS line");
    t.feed(":srv CAP * LS :server-time batch");
    assert_eq!(t.sent(), vec!["CAP REQ :server-time batch multi-prefix"]);
    t.feed(":srv CAP rete ACK :server-time batch multi-prefix");
    assert_eq!(t.sent(), vec!["CAP END"]);
    t.feed(":srv 001 rete :Welcome to IRC");
    assert_eq!(t.sent(), vec!["JOIN #rete"]);
    assert_eq!(t.s.view().state(), ConnState::Connected);
    let ev = t.events();
    assert!(ev.contains(&Event::Registered));
    assert!(ev.contains(&Event::State(ConnState::Connected)));
}

#[test]
fn nak_still_ends_negotiation() {
    let mut t = T::new(config());
    t.connect();
    t.feed(":srv CAP * LS :server-time");
    t.sent();
    t.feed(":srv CAP * NAK :server-time");
    assert_eq!(t.sent(), vec!["CAP END"]);
    assert!(!t.s.view().capabilities().has("server-time"));
}

#[test]
fn server_password_goes_before_nick() {
    let mut c = config();
    c.password = Some("hunter22".into());
    let mut t = T::new(c);
    assert_eq!(
        t.connect(),
        vec![
            "CAP LS 302",
            "PASS hunter22",
            "NICK rete",
            "USER rete 0 * rete"
        ]
    );
    // The password is never part of the serialized state.
    assert!(!t.s.view().state_json().to_string().contains("hunter22"));
}

#[test]
fn server_without_cap_registers_directly() {
    let mut t = T::new(config());
    t.connect();
    t.feed(":srv 001 rete :Welcome");
    assert_eq!(t.sent(), vec!["JOIN #rete"]);
    assert_eq!(t.s.view().state(), ConnState::Connected);
}

#[test]
fn nick_in_use_falls_back() {
    let mut t = T::new(config());
    t.connect();
    t.feed(":srv 433 * rete :Nickname is already in use");
    assert_eq!(t.sent(), vec!["NICK rete_"]);
    t.feed(":srv 433 * rete_ :Nickname is already in use");
    assert_eq!(t.sent(), vec!["NICK rete__"]);
    t.feed(":srv 001 rete__ :Welcome");
    assert_eq!(t.s.view().nick(), "rete__");
    let own: Vec<Event> = t
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::OwnNick(_)))
        .collect();
    assert_eq!(own.last(), Some(&Event::OwnNick("rete__".into())));
}

/// Registered under a fallback because our nick was taken, the session
/// takes it back when its holder leaves (QUIT) or changes nick: one NICK,
/// none while that NICK waits, and none when we hold it or chose another.
#[test]
fn a_nick_taken_at_registration_is_taken_back_when_its_holder_leaves() {
    let mut t = T::new(config());
    t.connect();
    t.feed(":srv 433 * rete :Nickname is already in use");
    assert_eq!(t.sent(), vec!["NICK rete_"]);
    t.feed(":srv 001 rete_ :Welcome");
    t.sent();
    t.feed(":rete_!u@me JOIN #a");
    t.feed(":rete!u@old JOIN #a");
    t.sent();
    t.feed(":bob!b@h QUIT :gone");
    let sent = t.sent();
    assert!(sent.is_empty(), "someone else left: {sent:?}");
    t.feed(":REte!u@old QUIT :Connection closed");
    assert_eq!(t.sent(), vec!["NICK rete"]);
    // The server repeats itself: still one NICK waiting.
    t.feed(":rete!u@old QUIT :Connection closed");
    assert!(t.sent().is_empty());
    // Taken again first: refused, and the next departure tries again.
    t.feed(":srv 433 rete_ rete :Nickname is already in use");
    t.feed(":rete!u@other NICK rete_away");
    assert_eq!(t.sent(), vec!["NICK rete"]);
    t.feed(":rete_!u@me NICK :rete");
    assert_eq!(t.s.view().nick(), "rete");
    t.feed(":rete!u@x QUIT :someone with our nick? we have it");
    assert!(t.sent().is_empty(), "we hold it");
}

fn sasl_config(mech: Mechanism) -> SessionConfig {
    let mut c = config();
    c.sasl = Some(SaslSettings {
        mechanism: mech,
        credentials: Credentials {
            authcid: "alice".into(),
            password: "s3cret-pw".into(),
            authzid: None,
        },
    });
    c
}

#[test]
fn sasl_plain_success() {
    let mut t = T::new(sasl_config(Mechanism::Plain));
    t.connect();
    t.feed(":srv CAP * LS :sasl=PLAIN,EXTERNAL server-time");
    assert_eq!(t.sent(), vec!["CAP REQ :server-time sasl"]);
    t.feed(":srv CAP * ACK :server-time sasl");
    assert_eq!(t.sent(), vec!["AUTHENTICATE PLAIN"]);
    t.feed("AUTHENTICATE +");
    // base64("alice\0alice\0s3cret-pw"): the authzid is the authcid.
    assert_eq!(t.sent(), vec!["AUTHENTICATE YWxpY2UAYWxpY2UAczNjcmV0LXB3"]);
    t.feed(":srv 900 rete rete!u@h alice :You are now logged in as alice");
    t.feed(":srv 903 rete :SASL authentication successful");
    assert_eq!(t.sent(), vec!["CAP END"]);
    assert!(t
        .server_texts()
        .iter()
        .any(|l| l.contains("SASL authentication succeeded")));
}

#[test]
fn sasl_failure_is_reported_and_registration_continues() {
    let mut t = T::new(sasl_config(Mechanism::Plain));
    t.connect();
    t.feed(":srv CAP * LS :sasl");
    t.sent();
    t.feed(":srv CAP * ACK :sasl");
    t.sent();
    t.feed("AUTHENTICATE +");
    t.sent();
    t.feed(":srv 904 rete :SASL authentication failed");
    assert_eq!(t.sent(), vec!["CAP END"]);
    t.feed(":srv 001 rete :Welcome");
    assert_eq!(t.s.view().state(), ConnState::Connected);
    let texts = t.server_texts();
    // The server's 904 text repeats our prefix: it is said once.
    assert!(
        texts
            .iter()
            .any(|l| l.trim_end().ends_with("SASL authentication failed")),
        "{texts:?}"
    );
    assert!(
        !texts
            .iter()
            .any(|l| l.contains("SASL authentication failed: SASL authentication failed")),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|l| l.contains("s3cret-pw")));
}

#[test]
fn a_sasl_failure_reason_that_adds_something_keeps_it() {
    let mut t = T::new(sasl_config(Mechanism::Plain));
    t.connect();
    t.feed(":srv CAP * LS :sasl");
    t.sent();
    t.feed(":srv CAP * ACK :sasl");
    t.sent();
    t.feed("AUTHENTICATE +");
    t.sent();
    t.feed(":srv 904 rete :SASL authentication failed: account suspended");
    let texts = t.server_texts();
    assert!(
        texts.iter().any(|l| l
            .trim_end()
            .ends_with("SASL authentication failed: account suspended")),
        "{texts:?}"
    );
}

#[test]
fn sasl_mechanism_not_offered_fails_without_trying() {
    let mut t = T::new(sasl_config(Mechanism::ScramSha256));
    t.connect();
    t.feed(":srv CAP * LS :sasl=PLAIN");
    t.sent();
    t.feed(":srv CAP * ACK :sasl");
    assert_eq!(t.sent(), vec!["CAP END"]);
    assert!(t
        .server_texts()
        .iter()
        .any(|l| l.contains("does not offer SCRAM-SHA-256")));
}

#[test]
fn join_names_who_and_modes_track_members() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed("@time=2026-09-30T12:00:00.000Z :rete!u@me JOIN #rete");
    let sent = t.sent();
    assert_eq!(sent, vec!["WHO #rete %tcuhnfar,417"]);
    t.feed(":srv 353 rete = #rete :@alice!a@ahost +bob!b@bhost rete!u@me");
    t.feed(":srv 366 rete #rete :End of /NAMES list.");
    t.feed(":srv 354 rete 417 #rete a ahost alice G alicesacct :Alice A");
    t.feed(":srv 315 rete #rete :End of /WHO list.");
    let v = t.s.view();
    let id = v.find_buffer(BufferKind::Channel, "#RETE").unwrap().clone();
    let members = v.members(&id).unwrap();
    let alice = members.iter().find(|m| m.nick == "alice").unwrap();
    assert_eq!(alice.modes, "o");
    assert!(alice.away);
    assert_eq!(alice.account.as_deref(), Some("alicesacct"));
    assert_eq!(alice.host.as_deref(), Some("ahost"));
    // WHO replies to our own WHO are state, not rows.
    assert!(!t.server_texts().iter().any(|l| l.contains("alicesacct")));

    t.feed(":alice!a@ahost MODE #rete +ov bob bob");
    t.feed(":bob!b@bhost NICK robert");
    t.feed(":alice!a@ahost KICK #rete robert :bye");
    let v = t.s.view();
    let members = v.members(&id).unwrap();
    let nicks: Vec<_> = members.iter().map(|m| m.nick.as_str()).collect();
    assert_eq!(nicks, vec!["alice", "rete"]);
    let kinds: Vec<Kind> = v.buffer(&id).unwrap().display().map(|r| r.kind()).collect();
    assert_eq!(kinds, vec![Kind::Join, Kind::Mode, Kind::Nick, Kind::Kick]);
}

#[test]
fn the_channels_own_modes_come_from_324_and_mode_lines_without_a_row() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    assert!(run_timers(&mut t).contains(&"MODE #rete".to_owned()));
    // The answer to our own query: state, not a row (the key is a secret).
    t.feed(":srv 324 rete #rete +ntkl hunter22 10");
    t.feed(":srv 329 rete #rete 1790000000");
    let modes = |t: &T| {
        let v = t.s.view();
        let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
        let c = v.channel(&id).unwrap();
        (c.modes.clone(), c.created_at)
    };
    let (m, created) = modes(&t);
    assert_eq!(m.letters.keys().collect::<String>(), "klnt");
    assert_eq!(m.key.as_ref().map(|k| k.expose()), Some("hunter22"));
    assert_eq!(created, Some(1_790_000_000));
    assert!(!t.server_texts().iter().any(|l| l.contains("hunter22")));
    let v = t.s.view();
    let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
    assert!(!format!("{:?}", v.channel(&id)).contains("hunter22"));
    // Later changes, a ban and a voice leave the channel's own modes right.
    t.feed(":alice!a@ahost MODE #rete -k+ib hunter22 *!*@bad");
    t.feed(":alice!a@ahost MODE #rete +v rete");
    let (m, _) = modes(&t);
    assert_eq!(m.letters.keys().collect::<String>(), "ilnt");
    assert_eq!(m.letters.get(&'l'), Some(&Some("10".to_owned())));
    assert!(m.key.is_none());
    // A 324 someone asked for with /mode is shown, as any server reply.
    t.feed(":srv 324 rete #rete +nt");
    assert!(t.server_texts().iter().any(|l| l.contains("#rete +nt")));
    assert_eq!(modes(&t).0.letters.keys().collect::<String>(), "nt");
}

/// Runs the session's timers until nothing is due within a minute; the lines sent.
fn run_timers(t: &mut T) -> Vec<String> {
    let mut out = t.sent();
    let end = t.now.mono.plus_ms(60_000);
    while let Some(due) = t.s.poll_timeout(t.now.mono).filter(|d| *d <= end) {
        t.tick(due.ms_since(t.now.mono).max(1));
        t.s.handle_timeout(t.now);
        out.extend(t.sent());
    }
    out
}

#[test]
fn mode_queries_use_only_spare_capacity_one_at_a_time() {
    let mut t = T::new(config());
    t.register(OFFER);
    for c in ["#a", "#b", "#c"] {
        t.feed(&format!(":rete!u@me JOIN {c}"));
    }
    // The joins' tokens are spent: no query yet, a person's line goes first.
    assert_eq!(t.sent(), vec!["WHO #a %tcuhnfar,417"]);
    t.s.commands().quote("PRIVMSG #a :hi").unwrap();
    assert_eq!(t.sent(), vec!["PRIVMSG #a :hi"]);
    // Each query waits for a full bucket, so a person always has the rest
    // of the burst.
    let burst = t.s.outbox.config().burst;
    let mut asked = Vec::new();
    while !t.s.modes_to_ask.is_empty() {
        let due = t.s.poll_timeout(t.now.mono).unwrap();
        t.tick(due.ms_since(t.now.mono).max(1));
        assert_eq!(t.s.outbox.tokens_at(t.now.mono), burst);
        t.s.handle_timeout(t.now);
        asked.extend(t.sent());
    }
    assert_eq!(asked, vec!["MODE #a", "MODE #b", "MODE #c"]);
    // Parted before its turn: never asked.
    t.feed(":rete!u@me JOIN #d");
    t.feed(":rete!u@me JOIN #e");
    t.feed(":rete!u@me PART #e");
    let rest = run_timers(&mut t);
    assert!(rest.contains(&"MODE #d".to_owned()), "{rest:?}");
    assert!(!rest.contains(&"MODE #e".to_owned()), "{rest:?}");
}

#[test]
fn the_topic_keeps_its_setter_and_set_time() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    t.feed(":srv 332 rete #rete :the topic");
    t.feed(":srv 333 rete #rete alice!a@ahost 1790000000");
    let topic = |t: &T| {
        let v = t.s.view();
        let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
        let c = v.channel(&id).unwrap();
        (c.topic.clone(), c.topic_set_by.clone(), c.topic_set_at)
    };
    assert_eq!(
        topic(&t),
        (
            Some("the topic".to_owned()),
            Some("alice".to_owned()),
            Some(UnixMillis(1_790_000_000_000))
        )
    );
    // A TOPIC line sets it at the line's time.
    t.feed("@time=2026-09-30T12:00:00.000Z :bob!b@bhost TOPIC #rete :new one");
    let at = crate::timefmt::parse_server_time("2026-09-30T12:00:00.000Z");
    assert_eq!(
        topic(&t),
        (Some("new one".to_owned()), Some("bob".to_owned()), at)
    );
    // A set time that is not a number is not invented.
    t.feed(":srv 333 rete #rete carol 12:00");
    assert_eq!(topic(&t).2, None);
}

/// What the server says on our join replaces the topic an earlier join left: after a
/// reconnect to a server that lost it (restarted), the old topic is gone, and a 331
/// (RPL_NOTOPIC) clears one too.
#[test]
fn a_rejoin_without_a_topic_forgets_the_old_one() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    t.feed(":srv 332 rete #rete :the old topic");
    t.feed(":srv 333 rete #rete alice!a@ahost 1790000000");
    let topic = |t: &T| {
        let v = t.s.view();
        let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
        let c = v.channel(&id).unwrap();
        (c.topic.clone(), c.topic_set_by.clone(), c.topic_set_at)
    };
    t.s.handle_disconnected(t.now, "connection reset");
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    assert_eq!(topic(&t), (None, None, None));
    // A topic again, then the server says there is none.
    t.feed(":srv 332 rete #rete :back");
    assert_eq!(topic(&t).0.as_deref(), Some("back"));
    t.events();
    t.feed(":srv 331 rete #rete :No topic is set.");
    assert_eq!(topic(&t), (None, None, None));
    assert!(t.events().iter().any(|e| matches!(e, Event::Topic(_))));
    assert!(!t.server_texts().iter().any(|l| l.contains("No topic")));
}

#[test]
fn a_reconnect_says_the_hosts_delay_until_it_connects() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.events();
    t.s.handle_disconnected(t.now, "connection reset");
    assert_eq!(t.s.view().retry_in(), None);
    t.s.handle_reconnecting_in(t.now, std::time::Duration::from_secs(4));
    assert_eq!(t.s.view().state(), ConnState::Reconnecting);
    assert_eq!(
        t.s.view().retry_in(),
        Some(std::time::Duration::from_secs(4))
    );
    assert!(t.events().contains(&Event::State(ConnState::Reconnecting)));
    // The attempt starts: the wait is over.
    t.connect();
    assert_eq!(t.s.view().retry_in(), None);
    // A person's /disconnect during the wait ends it too.
    t.s.handle_disconnected(t.now, "gone");
    t.s.handle_reconnecting_in(t.now, std::time::Duration::from_secs(8));
    t.s.handle_disconnected(t.now, "the person disconnected");
    assert_eq!(t.s.view().retry_in(), None);
}

#[test]
fn lag_is_probed_on_a_timer_and_its_pong_reaches_no_buffer() {
    use crate::lag::PROBE_INTERVAL_MS;
    let mut t = T::new(config());
    t.register(OFFER);
    t.sent();
    let rows_before = t.server_texts().len();
    assert_eq!(t.s.view().lag_ms(), None);
    // (step, input, sent, lag)
    let due = t.s.poll_timeout(t.now.mono).expect("a probe is scheduled");
    assert!(due.ms_since(t.now.mono) <= PROBE_INTERVAL_MS);
    t.tick(PROBE_INTERVAL_MS - 1);
    t.s.handle_timeout(t.now);
    assert!(t.sent().is_empty(), "not due yet");
    t.tick(1);
    t.s.handle_timeout(t.now);
    assert_eq!(t.sent(), ["PING rete-lag-1"]);
    t.tick(180);
    t.feed(":srv PONG srv :rete-lag-1");
    assert_eq!(t.s.view().lag_ms(), Some(180));
    // A PONG that is not ours does not measure.
    t.tick(20);
    t.feed(":srv PONG srv :somebody-else");
    assert_eq!(t.s.view().lag_ms(), Some(180));
    // Neither PONG became a row.
    assert_eq!(
        t.server_texts().len(),
        rows_before,
        "{:?}",
        t.server_texts()
    );
    // The next probe, unanswered, shows a growing lag; a disconnect clears it.
    t.tick(PROBE_INTERVAL_MS);
    t.s.handle_timeout(t.now);
    assert_eq!(t.sent(), ["PING rete-lag-2"]);
    t.tick(5_000);
    t.feed(":srv NOTICE rete :still here");
    assert_eq!(t.s.view().lag_ms(), Some(5_000));
    t.s.handle_disconnected(t.now, "gone");
    assert_eq!(t.s.view().lag_ms(), None);
}

#[test]
fn messages_land_in_channel_and_query_buffers() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    t.feed("@msgid=abc;time=2026-09-30T12:00:01.000Z :alice!a@h PRIVMSG #rete :hello there");
    t.feed(":alice!a@h PRIVMSG #rete :\u{1}ACTION waves\u{1}");
    t.feed(":carol!c@h PRIVMSG rete :psst");
    // echo-message of our own private message goes to the partner's query.
    t.feed(":rete!u@me PRIVMSG carol :hi back");
    t.feed(":NickServ!s@services NOTICE rete :This nickname is registered");
    t.feed(":irc.example NOTICE * :*** Looking up your hostname");

    let rows = t.buffer_rows(BufferKind::Channel, "#rete");
    assert_eq!(rows[1].0, "alice");
    assert_eq!(
        rows[1].1,
        Payload::Privmsg {
            text: "hello there".into()
        }
    );
    assert_eq!(
        rows[2].1,
        Payload::Action {
            text: "waves".into()
        }
    );
    let v = t.s.view();
    let chan = v.find_buffer(BufferKind::Channel, "#rete").unwrap();
    assert_eq!(
        v.buffer(chan).unwrap().get(2).unwrap().msgid.as_deref(),
        Some("abc")
    );

    let q = t.buffer_rows(BufferKind::Query, "carol");
    assert_eq!(q.len(), 2);
    assert_eq!(q[1].0, "rete");
    assert!(t
        .s
        .view()
        .find_buffer(BufferKind::Query, "nickserv")
        .is_none());
    let texts = t.server_texts();
    assert!(texts
        .iter()
        .any(|l| l.contains("This nickname is registered")));
    assert!(texts.iter().any(|l| l.contains("Looking up your hostname")));
}

#[test]
fn ctcp_version_and_ping_are_answered_nothing_else_is() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":alice!a@h PRIVMSG rete :\u{1}VERSION\u{1}");
    t.feed(":alice!a@h PRIVMSG rete :\u{1}PING 12345\u{1}");
    t.feed(":alice!a@h PRIVMSG rete :\u{1}SOURCE\u{1}");
    t.feed(":alice!a@h PRIVMSG rete :/quote QUIT :pwned");
    t.feed(":alice!a@h PRIVMSG #rete :JOIN #evil");
    let sent = t.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent[0].starts_with("NOTICE alice :\u{1}VERSION Rete "));
    assert_eq!(sent[1], "NOTICE alice :\u{1}PING 12345\u{1}");
}

/// A CTCP flood never makes the person's own line wait: replies come from
/// spare capacity only, behind the person's lines and leaving half the
/// burst (issue 32, item 9: after a flood the user's line waited 8 s
/// behind paced replies).
#[test]
fn a_ctcp_flood_leaves_the_person_their_burst() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.tick(60_000);
    t.sent();
    t.tick(60_000);
    let mut replies = 0;
    for i in 0..50 {
        t.feed(&format!(":alice!a@h PRIVMSG rete :\u{1}PING {i}\u{1}"));
        while let Some(l) = t.s.poll_transmit(t.now.mono) {
            assert!(l.starts_with("NOTICE alice :\u{1}PING"), "{l}");
            replies += 1;
        }
    }
    let burst = crate::flood::FloodConfig::default().burst;
    assert_eq!(replies, burst - burst / 2, "replies stop at half the burst");
    t.s.commands().privmsg("#rete", "mine").unwrap();
    assert_eq!(
        t.s.poll_transmit(t.now.mono).as_deref(),
        Some("PRIVMSG #rete mine"),
        "the person's line goes at once"
    );
}

/// A CTCP request is the protocol's, not a conversation: it is kept in the server buffer and
/// opens no query (which renumbered the person's buffers), even when one is open; an ACTION
/// is a message and opens one.
#[test]
fn ctcp_requests_go_to_the_server_buffer_and_open_no_query() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":alice!a@h PRIVMSG rete :\u{1}VERSION\u{1}");
    t.feed(":alice!a@h PRIVMSG rete :\u{1}TIME\u{1}");
    assert!(t.s.view().find_buffer(BufferKind::Query, "alice").is_none());
    let server = t.s.view().server_buffer().clone();
    let ctcps =
        t.s.view()
            .buffer(&server)
            .unwrap()
            .display()
            .filter(|r| matches!(r.payload, Payload::Ctcp { .. }) && &*r.from == "alice")
            .count();
    assert_eq!(ctcps, 2);
    t.feed(":alice!a@h PRIVMSG rete :\u{1}ACTION waves\u{1}");
    assert!(t.s.view().find_buffer(BufferKind::Query, "alice").is_some());
    t.feed(":alice!a@h PRIVMSG rete :\u{1}PING 1\u{1}");
    assert_eq!(t.buffer_rows(BufferKind::Query, "alice").len(), 1);
}

#[test]
fn ping_is_answered_ahead_of_queued_chat() {
    let mut t = T::new(config());
    t.register(OFFER);
    for i in 0..20 {
        t.s.commands()
            .privmsg("#rete", &format!("line {i}"))
            .unwrap();
    }
    // Drain the burst only.
    while t.s.poll_transmit(t.now.mono).is_some() {}
    t.feed("PING :tok");
    assert_eq!(t.s.poll_transmit(t.now.mono).as_deref(), Some("PONG tok"));
}

#[test]
fn history_batches_and_join_replay_are_marked_history() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed("@time=2026-09-30T12:00:00.000Z :rete!u@me JOIN #rete");
    // InspIRCd's +H replay: a chathistory batch closed with the `:-ref` form.
    t.feed("@time=2026-09-30T12:00:00.000Z :srv BATCH +b1 chathistory #rete");
    t.feed("@batch=b1;time=2026-09-30T11:00:00.000Z;msgid=m1 :alice!a@h PRIVMSG #rete :old one");
    t.feed("@batch=b1;time=2026-09-30T11:30:00.000Z;msgid=m2 :alice!a@h PRIVMSG #rete :old two");
    t.feed(":srv BATCH :-b1");
    t.feed("@time=2026-09-30T12:00:05.000Z :alice!a@h PRIVMSG #rete :live");
    // Without a batch, an older server time is history too.
    t.feed("@time=2026-09-30T11:45:00.000Z;msgid=m3 :bob!b@h PRIVMSG #rete :late");
    // The same history again (chathistory overlapping the replay) is dropped.
    t.feed("@time=2026-09-30T11:00:00.000Z;msgid=m1 :alice!a@h PRIVMSG #rete :old one");
    let rows = t.buffer_rows(BufferKind::Channel, "#rete");
    let texts: Vec<(String, bool)> = rows
        .iter()
        .filter_map(|(_, p, h)| match p {
            Payload::Privmsg { text } => Some((text.to_string(), *h)),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        vec![
            ("old one".into(), true),
            ("old two".into(), true),
            ("late".into(), true),
            ("live".into(), false)
        ]
    );
    // Seqs still follow arrival: "late" arrived after "live".
    let v = t.s.view();
    let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap();
    let seqs: Vec<u64> = v.buffer(id).unwrap().display().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![2, 3, 5, 1, 4]);
}

#[test]
fn quit_and_part_reach_every_shared_buffer() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #a");
    t.feed(":rete!u@me JOIN #b");
    t.feed(":alice!a@h JOIN #a");
    t.feed(":alice!a@h JOIN #b");
    t.feed(":alice!a@h PRIVMSG rete :hi");
    t.feed(":alice!a@h QUIT :Client quit");
    for (kind, name) in [
        (BufferKind::Channel, "#a"),
        (BufferKind::Channel, "#b"),
        (BufferKind::Query, "alice"),
    ] {
        let rows = t.buffer_rows(kind, name);
        assert_eq!(
            rows.last().unwrap().1,
            Payload::UserQuit {
                reason: Some("Client quit".into())
            },
            "{name}"
        );
    }
    let v = t.s.view();
    let a = v.find_buffer(BufferKind::Channel, "#a").unwrap();
    assert!(v.members(a).unwrap().iter().all(|m| m.nick != "alice"));
}

#[test]
fn casemapping_folds_buffer_names() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #Foo[]");
    t.feed(":alice!a@h PRIVMSG #foo{} :same channel");
    let v = t.s.view();
    let channels: Vec<_> = v
        .buffers()
        .filter(|b| b.kind() == BufferKind::Channel)
        .collect();
    assert_eq!(channels.len(), 1);
    assert_eq!(channels[0].name(), "#Foo[]");
}

#[test]
fn reconnect_rejoins_joined_and_configured_channels_with_keys() {
    let mut c = config();
    c.channels.push(ChannelSpec {
        name: "#locked".into(),
        key: Some("k3y".into()),
    });
    let mut t = T::new(c);
    let sent = t.register(OFFER);
    assert!(sent.contains(&"JOIN #locked k3y".to_string()), "{sent:?}");
    t.s.commands().join("#extra", None).unwrap();
    t.s.commands().part("#rete", None).unwrap();
    t.sent();
    t.s.handle_disconnected(t.now, "connection reset");
    assert_eq!(t.s.view().state(), ConnState::Disconnected);
    let sent = t.register(OFFER);
    let joins: Vec<_> = sent.iter().filter(|l| l.starts_with("JOIN")).collect();
    // The configured channel first, then the one joined since.
    assert_eq!(joins, vec!["JOIN #locked k3y", "JOIN #extra"]);
    assert!(t
        .server_texts()
        .iter()
        .any(|l| l.contains("Disconnected: connection reset")));
}

/// A QUIT the person sent (`/disconnect`, `/reconnect`) keeps the channels
/// wanted: the next registration joins the configured ones and those joined
/// since, as after a lost connection (a QUIT used to forget them all).
#[test]
fn the_connect_after_a_quit_joins_what_a_lost_connection_would() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.s.commands().join("#extra", None).unwrap();
    t.sent();
    t.s.commands().quit(Some("reconnecting")).unwrap();
    assert!(t.sent().contains(&"QUIT reconnecting".to_string()));
    t.s.handle_disconnected(t.now, "disconnected");
    let sent = t.register(OFFER);
    let joins: Vec<_> = sent.iter().filter(|l| l.starts_with("JOIN")).collect();
    assert_eq!(joins, vec!["JOIN #rete", "JOIN #extra"]);
}

/// The configured channels are joined in the config's order, not by name, so their buffers
/// open (and a host numbers them) as the person listed them; those joined since follow.
#[test]
fn configured_channels_are_joined_in_the_configs_order() {
    let mut c = config();
    c.channels = ["#zeta", "#Alpha", "#mid"]
        .into_iter()
        .map(|name| ChannelSpec {
            name: name.into(),
            key: None,
        })
        .collect();
    let mut t = T::new(c);
    let sent = t.register(OFFER);
    let joins: Vec<_> = sent.iter().filter(|l| l.starts_with("JOIN")).collect();
    assert_eq!(joins, vec!["JOIN #zeta", "JOIN #Alpha", "JOIN #mid"]);
    t.s.commands().join("#beta", None).unwrap();
    t.s.handle_disconnected(t.now, "connection reset");
    let sent = t.register(OFFER);
    let joins: Vec<_> = sent.iter().filter(|l| l.starts_with("JOIN")).collect();
    assert_eq!(
        joins,
        vec!["JOIN #zeta", "JOIN #Alpha", "JOIN #mid", "JOIN #beta"]
    );
}

#[test]
fn local_echo_without_echo_message_and_secret_messages_masked() {
    let mut t = T::new(config());
    t.register("server-time");
    t.feed(":rete!u@me JOIN #rete");
    t.s.commands().privmsg("#rete", "hello").unwrap();
    t.s.commands()
        .secret_privmsg("NickServ", "IDENTIFY hunter2")
        .unwrap();
    let sent = t.sent();
    assert!(sent.contains(&"PRIVMSG NickServ :IDENTIFY hunter2".to_string()));
    let rows = t.buffer_rows(BufferKind::Channel, "#rete");
    assert_eq!(
        rows.last().unwrap().1,
        Payload::Privmsg {
            text: "hello".into()
        }
    );
    let q = t.buffer_rows(BufferKind::Query, "nickserv");
    assert_eq!(
        q[0].1,
        Payload::Privmsg {
            text: SECRET_MASK.into()
        }
    );
}

#[test]
fn secret_message_echo_is_masked_once_within_ten_seconds() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.s.commands().secret_privmsg("carol", "my secret").unwrap();
    t.sent();
    t.feed(":rete!u@me PRIVMSG carol :my secret");
    t.feed(":rete!u@me PRIVMSG carol :my secret");
    let q = t.buffer_rows(BufferKind::Query, "carol");
    assert_eq!(
        q[0].1,
        Payload::Privmsg {
            text: SECRET_MASK.into()
        }
    );
    assert_eq!(
        q[1].1,
        Payload::Privmsg {
            text: "my secret".into()
        }
    );
    t.s.commands().secret_privmsg("carol", "later").unwrap();
    t.sent();
    t.tick(10_001);
    t.feed(":rete!u@me PRIVMSG carol :later");
    let q = t.buffer_rows(BufferKind::Query, "carol");
    assert_eq!(
        q[2].1,
        Payload::Privmsg {
            text: "later".into()
        }
    );
}

#[test]
fn commands_refuse_bad_input_and_change_nothing() {
    let mut t = T::new(config());
    assert_eq!(
        t.s.commands().privmsg("#rete", "hi"),
        Err(CommandError::NotConnected)
    );
    t.register(OFFER);
    assert!(t.s.commands().privmsg("#rete", "a\r\nQUIT").is_err());
    assert!(t.s.commands().privmsg("two words", "x").is_err());
    assert!(t.s.commands().quote("PRIVMSG #a :x\nQUIT").is_err());
    assert!(t.s.commands().join("nochan", None).is_err());
    assert!(t.sent().is_empty());
}

#[test]
fn long_messages_are_split_to_fit() {
    let mut t = T::new(config());
    t.register(OFFER);
    let text = "word ".repeat(200);
    t.s.commands().privmsg("#rete", &text).unwrap();
    let sent = t.sent();
    assert!(sent.len() >= 2);
    assert!(sent.iter().all(|l| l.len() <= 510));
}

#[test]
fn who_queue_sends_one_at_a_time() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #a");
    t.feed(":rete!u@me JOIN #b");
    // Only one WHO is in flight (mode queries wait for a full bucket).
    assert_eq!(t.sent(), vec!["WHO #a %tcuhnfar,417"]);
    t.feed(":srv 315 rete #a :End of /WHO list.");
    assert_eq!(t.sent(), vec!["WHO #b %tcuhnfar,417"]);
    // A WHO the person types goes out at once, never queued, and its replies are shown.
    t.s.commands().quote("WHO alice").unwrap();
    assert_eq!(t.sent(), vec!["WHO alice"]);
    t.feed(":srv 352 rete * a h srv alice H :0 Alice");
    t.feed(":srv 315 rete alice :End of /WHO list.");
    let texts = t.server_texts();
    assert!(texts.iter().any(|l| l.starts_with("352")), "{texts:?}");
}

#[test]
fn unparsable_lines_are_counted_and_ignored() {
    let mut t = T::new(config());
    t.feed("");
    t.feed("@only-tags");
    assert_eq!(t.s.connection.unparsable_lines, 2);
}

#[test]
fn own_nick_change_is_shown_in_channels_and_the_server_buffer() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    t.feed(":rete!u@me NICK newname");
    let rows = t.buffer_rows(BufferKind::Channel, "#rete");
    assert_eq!(
        rows.last().unwrap().1,
        Payload::NickChanged {
            new_nick: "newname".into()
        }
    );
    assert_eq!(t.s.view().nick(), "newname");
    assert!(t.server_texts().iter().any(|l| l.contains("newname")));
}

#[test]
fn quit_sends_what_is_queued_unpaced_then_quit() {
    let mut t = T::new(config());
    t.register(OFFER);
    for i in 0..8 {
        t.s.commands()
            .privmsg("#rete", &format!("line {i}"))
            .unwrap();
    }
    t.s.commands().quit(Some("bye")).unwrap();
    let mut out = Vec::new();
    while let Some(l) = t.s.poll_transmit(t.now.mono) {
        out.push(l);
    }
    assert_eq!(out.len(), 9, "{out:?}");
    assert_eq!(out.last().unwrap(), "QUIT bye");
}

#[test]
fn quit_takes_agent_lines_out_unsent_instead_of_hurrying_them() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.sent();
    for i in 0..8 {
        t.s.commands()
            .privmsg("#rete", &format!("line {i}"))
            .unwrap();
    }
    let first = t.s.commands().agent_line("PRIVMSG #rete :agent 1").unwrap();
    t.s.commands().privmsg("#rete", "line 8").unwrap();
    let second = t.s.commands().agent_line("PRIVMSG #rete :agent 2").unwrap();
    // Some lines have gone already; the agent's are still queued.
    let mut out = Vec::new();
    while let Some(l) = t.s.poll_transmit(t.now.mono) {
        out.push(l);
    }
    assert!(t.s.queued_lines() > 2, "{out:?}");
    t.s.commands().quit(Some("bye")).unwrap();
    assert_eq!(t.s.poll_unsent_agent_line(), Some(first));
    assert_eq!(t.s.poll_unsent_agent_line(), Some(second));
    assert_eq!(t.s.poll_unsent_agent_line(), None);
    // The person's lines still go at once, the QUIT last; no agent line.
    while let Some(l) = t.s.poll_transmit(t.now.mono) {
        out.push(l);
    }
    assert_eq!(out.len(), 10, "{out:?}");
    assert!(out.iter().all(|l| !l.contains("agent")), "{out:?}");
    assert_eq!(out.last().unwrap(), "QUIT bye");
    // A line an agent sends while the session is quitting is refused.
    assert!(matches!(
        t.s.commands().agent_line("PRIVMSG #rete :agent 3"),
        Err(CommandError::Invalid(_))
    ));
}

fn login_rows(t: &T) -> Vec<Payload> {
    t.buffer_rows(BufferKind::Query, "NickServ")
        .into_iter()
        .map(|r| r.1)
        .collect()
}

#[test]
fn service_login_local_echo_is_stored_masked_and_sent_in_full() {
    let mut t = T::new(config());
    t.register("server-time");
    t.s.commands()
        .privmsg("NickServ", "IDENTIFY hunter22")
        .unwrap();
    t.s.commands()
        .notice("nickserv", "GHOST rete hunter22")
        .unwrap();
    t.s.commands().privmsg("NickServ", "INFO rete").unwrap();
    let sent = t.sent();
    assert!(sent.contains(&"PRIVMSG NickServ :IDENTIFY hunter22".to_string()));
    assert!(sent.contains(&"NOTICE nickserv :GHOST rete hunter22".to_string()));
    assert_eq!(
        login_rows(&t),
        vec![
            Payload::Privmsg {
                text: "IDENTIFY ********".into()
            },
            Payload::Notice {
                text: "GHOST rete ********".into()
            },
            Payload::Privmsg {
                text: "INFO rete".into()
            },
        ]
    );
}

#[test]
fn service_login_echo_and_history_are_stored_masked() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.s.commands()
        .privmsg("NickServ", "IDENTIFY hunter22")
        .unwrap();
    assert!(t
        .sent()
        .contains(&"PRIVMSG NickServ :IDENTIFY hunter22".to_string()));
    // With echo-message nothing is stored until the server's copy arrives (the query
    // is open, and empty).
    assert!(t
        .s
        .view()
        .find_buffer(BufferKind::Query, "NickServ")
        .is_some());
    assert!(t.buffer_rows(BufferKind::Query, "NickServ").is_empty());
    t.feed("@msgid=e1 :rete!u@me PRIVMSG NickServ :IDENTIFY hunter22");
    // Replayed history of our own login.
    t.feed(":srv BATCH +h1 chathistory NickServ");
    t.feed("@batch=h1;msgid=e0;time=2026-09-30T11:00:00.000Z :rete!u@me PRIVMSG nickserv :SET PASSWORD hunter33");
    t.feed(":srv BATCH -h1");
    t.feed(":rete!u@me PRIVMSG NickServ :IDENTIFY");
    // A line sent under an earlier nick is masked too.
    t.feed(":old!u@me PRIVMSG NickServ :ID hunter44");
    let rows = t.buffer_rows(BufferKind::Query, "NickServ");
    let texts: Vec<(&Payload, bool)> = rows.iter().map(|r| (&r.1, r.2)).collect();
    assert_eq!(
        texts,
        vec![
            (
                &Payload::Privmsg {
                    text: "SET PASSWORD ********".into()
                },
                true
            ),
            (
                &Payload::Privmsg {
                    text: "IDENTIFY ********".into()
                },
                false
            ),
            (
                &Payload::Privmsg {
                    text: "IDENTIFY".into()
                },
                false
            ),
        ]
    );
    assert_eq!(
        t.buffer_rows(BufferKind::Query, "old")[0].1,
        Payload::Privmsg {
            text: "ID ********".into()
        }
    );
    let v = t.s.view();
    let all: String = v
        .buffers()
        .flat_map(|b| b.display())
        .map(|r| format!("{:?}", r.payload))
        .collect();
    assert!(
        !all.contains("hunter22") && !all.contains("hunter33") && !all.contains("hunter44"),
        "{all}"
    );
}

#[test]
fn secrets_hold_password_sasl_password_and_channel_keys() {
    let mut c = sasl_config(Mechanism::Plain);
    c.password = Some("hunter22".into());
    c.channels.push(ChannelSpec {
        name: "#keyed".into(),
        key: Some("chan-key-1".into()),
    });
    c.channels.push(ChannelSpec {
        name: "#short".into(),
        key: Some("abc".into()),
    });
    let mut t = T::new(c);
    let v = t.s.view();
    let secrets = v.secrets();
    assert_eq!(secrets.len(), 3);
    assert!(secrets.contains_secret("...hunter22..."));
    assert!(secrets.contains_secret("...s3cret-pw..."));
    assert!(secrets.contains_secret("...chan-key-1..."));
    assert!(
        !secrets.contains_secret("...abc..."),
        "3-byte keys are not scanned"
    );
    assert!(!secrets.contains_secret("...hunter2..."));
    assert!(!format!("{secrets:?}").contains("hunter22"));

    t.register("server-time");
    t.s.commands().join("#later", Some("sesame-42")).unwrap();
    t.s.commands().join("#tiny", Some("xyz")).unwrap();
    assert!(t
        .s
        .view()
        .secrets()
        .contains_secret("JOIN #later sesame-42"));
    assert!(!t.s.view().secrets().contains_secret("xyz"));
    // A key stays a secret after the channel is left.
    t.feed(":rete!u@me JOIN #later");
    t.s.commands().part("#later", None).unwrap();
    assert!(t.s.view().secrets().contains_secret("sesame-42"));
    assert!(!t.s.view().state_json().to_string().contains("sesame-42"));
}

/// Issue 37: every credential the session sends is held from the moment it leaves, whoever
/// wrote it — the person's command, a /quote, an agent's line — in any spelling of the
/// service table, so a service echoing it back is caught by the scan.
#[test]
fn every_credential_sent_is_held_from_when_it_leaves() {
    let mut t = T::new(config());
    t.register(OFFER);
    let held = |t: &T, text: &str| t.s.view().secrets().contains_secret(text);
    t.s.commands()
        .privmsg("NickServ", "IDENTIFY rete ns-pass-1")
        .unwrap();
    t.s.commands().oper("admin", "oper-pass-2").unwrap();
    t.s.commands().quote("PASS :quote-pass-3").unwrap();
    t.s.commands()
        .agent_line("PRIVMSG #rete,NickServ :\u{2}IDENTIFY\u{2} agent-pass-4")
        .unwrap();
    t.s.commands()
        .agent_line("@label=x :rete NS SET PASSWORD alias-pass-5")
        .unwrap();
    t.s.commands()
        .agent_line("PRIVMSG NickServ@services.example :ID server-pass-6")
        .unwrap();
    let secrets = [
        "ns-pass-1",
        "oper-pass-2",
        "quote-pass-3",
        "agent-pass-4",
        "alias-pass-5",
        "server-pass-6",
    ];
    // Queued is not sent: nothing is held yet.
    for pw in secrets {
        assert!(!held(&t, pw), "held before it was sent");
    }
    t.sent();
    for pw in secrets {
        assert!(held(&t, &format!("you are now identified with {pw}.")));
        assert!(held(&t, &pw.replace('-', "-\u{200B}")), "split by U+200B");
    }
    // The account name is not a secret: only the password is.
    assert!(!held(&t, "rete"));
    assert!(!format!("{:?}", t.s.view().secrets()).contains("pass"));
    // Held across a reconnect, and alongside a rotated transport secret.
    t.s.handle_disconnected(t.now, "gone");
    t.s.set_transport_secrets(["token-aaaa-1"]);
    t.s.set_transport_secrets(["token-bbbb-2"]);
    for pw in secrets {
        assert!(held(&t, pw), "lost after a reconnect");
    }
}

/// Issue 37: a login sent to `#rete,NickServ` comes back to `#rete` as our own plain message
/// (echo-message); the row stored there has the password masked, as does replayed history.
#[test]
fn our_own_echo_of_a_login_to_a_comma_list_is_stored_masked() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@me JOIN #rete");
    t.s.commands()
        .agent_line("PRIVMSG #rete,NickServ :IDENTIFY comma-pass-7")
        .unwrap();
    assert!(t
        .sent()
        .contains(&"PRIVMSG #rete,NickServ :IDENTIFY comma-pass-7".to_string()));
    t.feed("@msgid=c1 :rete!u@me PRIVMSG #rete :IDENTIFY comma-pass-7");
    t.feed(":rete!u@me NOTICE #rete :\u{1}ACTION says comma-pass-7\u{1}");
    // Another user saying it is conversation: stored as said (and withheld on the way out).
    t.feed(":bob!b@h PRIVMSG #rete :bob says comma-pass-7");
    let rows: Vec<Payload> = t
        .buffer_rows(BufferKind::Channel, "#rete")
        .into_iter()
        .filter(|r| !r.0.is_empty())
        .map(|r| r.1)
        .filter(|p| !matches!(p, Payload::UserJoined { .. }))
        .collect();
    assert_eq!(
        rows,
        vec![
            Payload::Privmsg {
                text: "IDENTIFY ********".into()
            },
            Payload::Action {
                text: "says ********".into()
            },
            Payload::Privmsg {
                text: "bob says comma-pass-7".into()
            },
        ]
    );
    assert!(t
        .s
        .view()
        .secrets()
        .contains_secret("bob says comma-pass-7"));
}

// ----- issue 12: what ngircd, ircd-hybrid and ZNC showed -----

fn own_nicks(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OwnNick(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

/// Connects without CAP and refuses every NICK the session sends, the way a
/// server with flood limits off would, and returns every NICK line sent.
fn refuse_every_nick(t: &mut T, code: &str) -> Vec<String> {
    let mut nicks: Vec<String> = t
        .connect()
        .into_iter()
        .filter(|l| l.starts_with("NICK "))
        .collect();
    let mut answered = 0;
    while answered < nicks.len() && answered < 1000 {
        let nick = nicks[answered].trim_start_matches("NICK ").to_owned();
        t.feed(&format!(":srv {code} * {nick} :Nickname refused"));
        answered += 1;
        nicks.extend(t.sent().into_iter().filter(|l| l.starts_with("NICK ")));
    }
    nicks
}

#[test]
fn refused_nicks_stop_after_a_few_tries_and_leave_the_session_waiting() {
    let mut t = T::new(config());
    let nicks = refuse_every_nick(&mut t, "433");
    assert_eq!(
        nicks,
        [
            "NICK rete",
            "NICK rete_",
            "NICK rete__",
            "NICK rete___",
            "NICK rete1",
            "NICK rete2"
        ]
    );
    assert!(nicks.len() <= super::nick_choice::MAX_NICK_TRIES);
    // Still connected (the TCP link is the host's), registering, no nick claimed.
    assert_eq!(t.s.view().state(), ConnState::Connecting);
    assert!(
        own_nicks(&t.events()).is_empty(),
        "a refused nick was announced"
    );
    assert_eq!(t.s.view().nick(), "rete");
    let texts = t.server_texts();
    let give_up: Vec<_> = texts
        .iter()
        .filter(|l| l.contains("No nick was accepted"))
        .collect();
    assert_eq!(give_up.len(), 1, "{texts:#?}");
    assert!(give_up[0].contains("/nick"), "{give_up:?}");
    // More refusals send nothing more.
    t.feed(":srv 433 * rete2 :Nickname is already in use");
    assert!(t.sent().is_empty());
}

#[test]
fn nick_fallbacks_go_through_the_flood_throttle() {
    let mut t = T::new(config());
    t.connect();
    let mut at_once = 0;
    for nick in ["rete", "rete_", "rete__", "rete___", "rete1"] {
        t.feed(&format!(":srv 433 * {nick} :Nickname is already in use"));
        while t.s.poll_transmit(t.now.mono).is_some() {
            at_once += 1;
        }
    }
    // The registration burst used the bucket up; the fallbacks wait for tokens.
    assert!(at_once < 5, "{at_once} fallbacks sent without waiting");
    assert!(t.s.queued_lines() > 0);
}

#[test]
fn a_slash_nick_after_giving_up_registers_and_is_kept_for_reconnects() {
    let mut t = T::new(config());
    refuse_every_nick(&mut t, "433");
    t.s.commands().nick("picked").unwrap();
    assert_eq!(t.sent(), ["NICK picked"]);
    t.feed(":srv 001 picked :Welcome");
    assert_eq!(t.s.view().state(), ConnState::Connected);
    assert_eq!(own_nicks(&t.events()), ["picked"]);
    // The next connection tries it first, then the configured nick.
    t.s.handle_disconnected(t.now, "connection reset");
    let first = t.connect();
    assert!(first.contains(&"NICK picked".to_owned()), "{first:?}");
    t.feed(":srv 433 * picked :Nickname is already in use");
    assert_eq!(t.sent(), ["NICK rete"]);
}

#[test]
fn a_nick_changed_with_slash_nick_is_tried_first_after_a_reconnect() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.s.commands().nick("renamed").unwrap();
    assert_eq!(t.sent(), ["NICK renamed"]);
    t.feed(":rete!u@h NICK :renamed");
    t.events();
    t.s.handle_disconnected(t.now, "connection reset");
    assert_eq!(t.s.view().nick(), "renamed");
    let first = t.connect();
    assert!(first.contains(&"NICK renamed".to_owned()), "{first:?}");
    t.feed(":srv 001 renamed :Welcome");
    assert!(own_nicks(&t.events()).is_empty(), "nick did not change");
    // A nick the server gave us on its own (not asked for) is not kept.
    t.feed(":renamed!u@h NICK :Guest42");
    t.s.handle_disconnected(t.now, "connection reset");
    let first = t.connect();
    assert!(first.contains(&"NICK renamed".to_owned()), "{first:?}");
}

#[test]
fn an_invalid_configured_nick_is_explained_as_invalid_not_taken() {
    let mut c = config();
    c.nick = "1rete".into();
    let mut t = T::new(c);
    let nicks = refuse_every_nick(&mut t, "432");
    // No fallback can fix a leading digit: one NICK, then the advice.
    assert_eq!(nicks, ["NICK 1rete"]);
    let texts = t.server_texts();
    assert!(
        texts
            .iter()
            .any(|l| l.contains("Nick 1rete is invalid on this server") && l.contains("/nick")),
        "{texts:#?}"
    );
    assert!(
        !texts.iter().any(|l| l.contains("not available")),
        "{texts:#?}"
    );
}

#[test]
fn fallbacks_fit_the_nick_length_a_432_teaches_and_isupport_gives() {
    let mut c = config();
    c.nick = "retebot12".into();
    let mut t = T::new(c);
    t.connect();
    t.feed(":srv 433 * retebot12 :Nickname is already in use");
    assert_eq!(t.sent(), ["NICK retebot12_"]);
    // ngircd with MaxNickLength = 9.
    t.feed(":srv 432 * retebot12_ :Nickname too long, max. 9 characters");
    assert_eq!(t.sent(), ["NICK retebot1_"]);
    t.feed(":srv 001 retebot1_ :Welcome");
    t.feed(":srv 005 retebot1_ NICKLEN=9 :are supported");
    assert_eq!(own_nicks(&t.events()), ["retebot1_"]);
    // Next connection: NICKLEN is known, so the first fallback fits at once
    // (no ten-character retebot12_ first).
    t.s.handle_disconnected(t.now, "connection reset");
    t.connect();
    t.feed(":srv 433 * retebot12 :Nickname is already in use");
    assert_eq!(t.sent(), ["NICK retebot1_"]);
}

#[test]
fn a_kicked_channel_is_not_rejoined_after_a_reconnect_until_joined_again() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@h JOIN #rete");
    t.feed(":op!o@h KICK #rete rete :out");
    t.s.handle_disconnected(t.now, "connection reset");
    let joins: Vec<String> = t
        .register(OFFER)
        .into_iter()
        .filter(|l| l.starts_with("JOIN"))
        .collect();
    assert!(joins.is_empty(), "{joins:?}");
    // A later /join puts it back in the set.
    t.s.commands().join("#rete", None).unwrap();
    t.feed(":rete!u@h JOIN #rete");
    t.s.handle_disconnected(t.now, "connection reset");
    let joins: Vec<String> = t
        .register(OFFER)
        .into_iter()
        .filter(|l| l.starts_with("JOIN"))
        .collect();
    assert!(joins.contains(&"JOIN #rete".to_owned()), "{joins:?}");
}

/// Texts and history flags of the channel's privmsg and notice rows, in display order.
fn said(t: &T, chan: &str) -> Vec<(String, bool)> {
    t.buffer_rows(BufferKind::Channel, chan)
        .into_iter()
        .filter_map(|(_, p, h)| match p {
            Payload::Privmsg { text } | Payload::Notice { text } => Some((text.to_string(), h)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_bouncer_replaying_its_whole_buffer_adds_only_what_is_new() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed("@time=2026-09-30T12:00:00.000Z :rete!u@h JOIN #rete");
    // Seen live while attached (ZNC 1.8 sends no msgids).
    t.feed("@time=2026-09-30T12:00:01.250Z :alice!a@h PRIVMSG #rete :live one");
    t.feed("@time=2026-09-30T12:00:02.000Z :alice!a@h NOTICE #rete :live notice");
    // Reattach: the whole buffer again, with what was said while detached.
    let replay = |t: &mut T, r: &str, extra: &[&str]| {
        t.feed(&format!(
            "@time=2026-09-30T12:10:00.000Z :znc.in BATCH +{r} znc.in/playback #rete"
        ));
        t.feed(&format!(
            "@batch={r};time=2026-09-30T12:00:01.250Z :alice!a@h PRIVMSG #rete :live one"
        ));
        t.feed(&format!(
            "@batch={r};time=2026-09-30T12:00:02.000Z :alice!a@h NOTICE #rete :live notice"
        ));
        for line in extra {
            t.feed(&format!("@batch={r};{line}"));
        }
        t.feed(&format!(
            "@time=2026-09-30T12:10:00.000Z :znc.in BATCH -{r}"
        ));
    };
    let away = [
        "time=2026-09-30T12:05:00.000Z :alice!a@h PRIVMSG #rete :while away",
        "time=2026-09-30T12:05:00.000Z :alice!a@h PRIVMSG #rete :while away",
        "time=2026-09-30T12:05:01.000Z :alice!a@h NOTICE #rete :away notice",
    ];
    replay(&mut t, "b1", &away);
    let once = vec![
        ("live one".to_owned(), false),
        ("live notice".to_owned(), false),
        // Said twice in one second: both kept, the replay's own rows never
        // count as repeats of each other.
        ("while away".to_owned(), true),
        ("while away".to_owned(), true),
        // A replayed notice is history like a replayed privmsg.
        ("away notice".to_owned(), true),
    ];
    assert_eq!(said(&t, "#rete"), once);
    // Another reattach with nothing new adds nothing.
    replay(&mut t, "b2", &away);
    assert_eq!(said(&t, "#rete"), once);
    // A reattach after a reconnect, with one more line, adds just that line.
    t.s.handle_disconnected(t.now, "connection reset");
    t.register(OFFER);
    let mut more = away.to_vec();
    more.push("time=2026-09-30T12:06:00.000Z :bob!b@h PRIVMSG #rete :new");
    replay(&mut t, "b3", &more);
    let mut expected = once.clone();
    expected.push(("new".to_owned(), true));
    assert_eq!(said(&t, "#rete"), expected);
}

#[test]
fn a_replayed_row_differing_in_sender_kind_text_or_second_is_kept() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed("@time=2026-09-30T12:00:00.000Z :rete!u@h JOIN #rete");
    t.feed("@time=2026-09-30T12:00:01.000Z :alice!a@h PRIVMSG #rete :hi");
    t.feed("@time=2026-09-30T12:10:00.000Z :znc.in BATCH +r znc.in/playback #rete");
    for line in [
        "time=2026-09-30T12:00:01.000Z :bob!b@h PRIVMSG #rete :hi",
        "time=2026-09-30T12:00:01.000Z :alice!a@h NOTICE #rete :hi",
        "time=2026-09-30T12:00:01.000Z :alice!a@h PRIVMSG #rete :hi!",
        "time=2026-09-30T12:00:03.000Z :alice!a@h PRIVMSG #rete :hi",
        "time=2026-09-30T12:00:01.400Z :alice!a@h PRIVMSG #rete :hi",
    ] {
        t.feed(&format!("@batch=r;{line}"));
    }
    t.feed(":znc.in BATCH -r");
    // Only the last one repeats the live row (same second, sender, kind, text).
    assert_eq!(said(&t, "#rete").len(), 5);
}

#[test]
fn a_wrong_password_refuses_registration_for_good() {
    // ZNC 1.8: 464, then the link closes.
    let mut t = T::new(config());
    t.connect();
    t.feed(":irc.znc.in 464 rete :Invalid Password");
    assert!(t.s.view().registration_refused().is_some());
    t.s.handle_disconnected(t.now, "connection closed by the server");
    let why = t.s.view().registration_refused().unwrap().to_owned();
    assert!(why.contains("Invalid Password"), "{why}");
    assert_eq!(t.s.view().state(), ConnState::Disconnected);
    let texts = t.server_texts();
    assert!(
        texts
            .iter()
            .any(|l| l.contains("Not reconnecting") && l.contains("/connect test")),
        "{texts:#?}"
    );
    // A new connection starts clean.
    t.connect();
    assert_eq!(t.s.view().registration_refused(), None);

    // ngircd 26 and InspIRCd 3: an ERROR before 001.
    for error in [
        "ERROR :Access denied: Bad password?",
        "ERROR :Closing link: (rete@127.0.0.1) [Access denied by configuration]",
    ] {
        let mut t = T::new(config());
        t.connect();
        t.feed(error);
        t.s.handle_disconnected(t.now, "connection closed by the server");
        assert!(t.s.view().registration_refused().is_some(), "{error}");
    }
}

#[test]
fn network_errors_and_errors_after_registration_are_not_refusals() {
    let mut t = T::new(config());
    t.connect();
    t.s.handle_disconnected(t.now, "connection reset");
    assert_eq!(t.s.view().registration_refused(), None);
    t.connect();
    t.feed("ERROR :Closing link: (rete@127.0.0.1) [Registration timeout]");
    t.s.handle_disconnected(t.now, "connection closed by the server");
    assert_eq!(t.s.view().registration_refused(), None);
    t.register(OFFER);
    t.feed("ERROR :Closing link: (rete@127.0.0.1) [Killed (oper (bad password joke))]");
    t.s.handle_disconnected(t.now, "connection closed by the server");
    assert_eq!(t.s.view().registration_refused(), None);
}

#[test]
fn sasl_refused_then_closed_before_welcome_is_a_refusal() {
    let mut t = T::new(sasl_config(Mechanism::Plain));
    t.connect();
    t.feed(":srv CAP * LS :sasl");
    t.sent();
    t.feed(":srv CAP * ACK :sasl");
    t.sent();
    t.feed("AUTHENTICATE +");
    t.sent();
    t.feed(":srv 904 rete :SASL authentication failed");
    assert_eq!(t.sent(), ["CAP END"]);
    // A server that does not require SASL would send 001 now; this one closes.
    t.s.handle_disconnected(t.now, "connection closed by the server");
    let why = t.s.view().registration_refused().unwrap_or("").to_owned();
    assert!(why.contains("requires SASL"), "{why}");
}

#[test]
fn giving_up_on_nicks_then_closed_is_a_refusal() {
    let mut t = T::new(config());
    refuse_every_nick(&mut t, "433");
    t.feed("ERROR :Closing link: (rete@127.0.0.1) [Registration timeout]");
    t.s.handle_disconnected(t.now, "connection closed by the server");
    let why = t.s.view().registration_refused().unwrap_or("").to_owned();
    assert!(why.contains("none of the nicks"), "{why}");
}

#[test]
fn text_for_a_channel_we_left_is_refused_and_not_shown() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.feed(":rete!u@h JOIN #rete");
    t.feed(":op!o@h KICK #rete rete :out");
    t.sent();
    let before = t.buffer_rows(BufferKind::Channel, "#rete").len();
    let err = t.s.commands().privmsg("#rete", "hello?").unwrap_err();
    assert_eq!(
        err.to_string(),
        "not sent: you are not in #rete (type /join #rete to join it again)"
    );
    assert!(t.s.commands().action("#rete", "waves").is_err());
    assert!(t.s.commands().notice("#REtE", "ops?").is_err());
    assert!(t.sent().is_empty());
    assert_eq!(t.buffer_rows(BufferKind::Channel, "#rete").len(), before);
    // A channel never joined is the server's to judge (`-n` channels).
    t.s.commands().privmsg("#elsewhere", "hi").unwrap();
    assert_eq!(t.sent(), ["PRIVMSG #elsewhere hi"]);
}

#[test]
fn a_private_notice_replayed_after_the_playback_batches_is_history() {
    let mut t = T::new(config());
    t.register(OFFER);
    // ZNC 1.8 on attach: our JOIN at its current time, the playback batch, and the query's
    // notices after it, untagged by any batch but with their old times.
    t.feed("@time=2026-09-30T12:10:00.000Z :rete!u@h JOIN #rete");
    t.feed("@time=2026-09-30T12:10:00.000Z :znc.in BATCH +q znc.in/playback alice");
    t.feed("@batch=q;time=2026-09-30T12:05:00.000Z :alice!a@h PRIVMSG rete :away private");
    t.feed("@time=2026-09-30T12:10:00.000Z :znc.in BATCH -q");
    t.feed("@time=2026-09-30T12:05:01.000Z :alice!a@h NOTICE rete :away notice");
    t.feed("@time=2026-09-30T12:10:02.000Z :alice!a@h NOTICE rete :live notice");
    let rows: Vec<(String, bool)> = t
        .buffer_rows(BufferKind::Query, "alice")
        .into_iter()
        .filter_map(|(_, p, h)| match p {
            Payload::Privmsg { text } | Payload::Notice { text } => Some((text.to_string(), h)),
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("away private".to_owned(), true),
            ("away notice".to_owned(), true),
            ("live notice".to_owned(), false)
        ]
    );
}

#[test]
fn scram_key_derivation_is_handed_to_the_host_and_the_session_keeps_answering() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut t = T::new(sasl_config(Mechanism::ScramSha256));
    t.connect();
    t.feed(":srv CAP * LS :sasl=SCRAM-SHA-256");
    t.sent();
    t.feed(":srv CAP * ACK :sasl");
    assert_eq!(t.sent(), ["AUTHENTICATE SCRAM-SHA-256"]);
    t.feed("AUTHENTICATE +");
    let first = t.sent();
    let client_first = b64
        .decode(first[0].trim_start_matches("AUTHENTICATE "))
        .unwrap();
    let client_first = String::from_utf8(client_first).unwrap();
    let nonce = client_first.rsplit_once("r=").unwrap().1.to_owned();
    let server_first = format!("r={nonce}srv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    t.feed(&format!("AUTHENTICATE {}", b64.encode(&server_first)));
    // Nothing is computed or sent yet: the derivation is the host's to run.
    assert!(t.sent().is_empty());
    let (id, work) = t.s.poll_key_derivation().expect("a derivation is due");
    assert_eq!(work.iterations(), 4096);
    assert!(!format!("{work:?}").contains("s3cret-pw"));
    assert!(t.s.poll_key_derivation().is_none(), "handed out once");
    // Meanwhile the session answers the server.
    t.feed("PING :still-there");
    assert_eq!(t.sent(), ["PONG still-there"]);
    // A result for an older id is ignored; the right one sends client-final.
    let salted = work.derive();
    t.s.handle_key_derived(t.now, id + 1, &salted);
    assert!(t.sent().is_empty());
    t.s.handle_key_derived(t.now, id, &salted);
    let fin = t.sent();
    assert_eq!(fin.len(), 1, "{fin:?}");
    let client_final = b64
        .decode(fin[0].trim_start_matches("AUTHENTICATE "))
        .unwrap();
    let client_final = String::from_utf8(client_final).unwrap();
    assert!(
        client_final.starts_with(&format!("c=biws,r={nonce}srv,p=")),
        "{client_final}"
    );
    // A late duplicate of the result changes nothing.
    t.s.handle_key_derived(t.now, id, &salted);
    assert!(t.sent().is_empty());
}

#[test]
fn a_scram_result_arriving_after_a_reconnect_is_ignored() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut t = T::new(sasl_config(Mechanism::ScramSha256));
    t.connect();
    t.feed(":srv CAP * LS :sasl=SCRAM-SHA-256");
    t.feed(":srv CAP * ACK :sasl");
    t.feed("AUTHENTICATE +");
    let first = t.sent();
    let client_first = String::from_utf8(
        b64.decode(first.last().unwrap().trim_start_matches("AUTHENTICATE "))
            .unwrap(),
    )
    .unwrap();
    let nonce = client_first.rsplit_once("r=").unwrap().1.to_owned();
    let server_first = format!("r={nonce}srv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    t.feed(&format!("AUTHENTICATE {}", b64.encode(&server_first)));
    let (id, work) = t.s.poll_key_derivation().unwrap();
    t.s.handle_disconnected(t.now, "connection reset");
    t.connect();
    t.s.handle_key_derived(t.now, id, &work.derive());
    assert!(
        !t.sent().iter().any(|l| l.starts_with("AUTHENTICATE")),
        "client-final of the old connection sent"
    );
}

#[test]
fn private_messages_from_many_nicks_open_at_most_the_allowed_query_buffers() {
    let mut c = config();
    c.max_query_buffers = 3;
    let mut t = T::new(c);
    t.register(OFFER);
    for i in 0..10 {
        t.feed(&format!(":n{i}!u@h PRIVMSG rete :hi {i}"));
    }
    // Known partners still get their own buffer.
    t.feed(":n1!u@h PRIVMSG rete :again");
    let v = t.s.view();
    let queries = v
        .buffers()
        .filter(|b| b.kind() == BufferKind::Query)
        .count();
    assert_eq!(queries, 3);
    assert_eq!(t.buffer_rows(BufferKind::Query, "n1").len(), 2);
    // The rest are in the server buffer under their senders: nothing lost.
    let v = t.s.view();
    let server: Vec<(String, String)> = v
        .buffer(v.server_buffer())
        .unwrap()
        .display()
        .filter_map(|r| match &r.payload {
            Payload::Privmsg { text } => Some((r.from.to_string(), text.to_string())),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> = (3..10)
        .map(|i| (format!("n{i}"), format!("hi {i}")))
        .collect();
    assert_eq!(server, expected);
    let notes = t
        .server_texts()
        .into_iter()
        .filter(|l| l.contains("query buffers are open"))
        .count();
    assert_eq!(notes, 1);
    // The person's own /msg still opens a query (with echo-message, on its echo).
    t.s.commands().privmsg("someone", "hello").unwrap();
    t.feed(":rete!u@h PRIVMSG someone :hello");
    assert!(t
        .s
        .view()
        .find_buffer(BufferKind::Query, "someone")
        .is_some());
}

#[test]
fn echoes_of_messages_we_never_sent_open_no_query_past_the_cap() {
    // With echo-message a server can claim we sent to anyone: those copies must not
    // open query buffers beyond the cap (found by tests/hostile_server.rs).
    let mut c = config();
    c.max_query_buffers = 3;
    let mut t = T::new(c);
    t.register(OFFER);
    assert!(t.s.view().capabilities().has("echo-message"));
    for i in 0..10 {
        t.feed(&format!(":rete!u@h PRIVMSG v{i} :forged {i}"));
    }
    let queries = |t: &T| {
        t.s.view()
            .buffers()
            .filter(|b| b.kind() == BufferKind::Query)
            .count()
    };
    assert_eq!(queries(&t), 3);
    // The person's own /msg opens its query when sent, so even past the cap its
    // echo has a buffer to land in.
    t.s.commands().privmsg("friend", "hello").unwrap();
    assert!(t
        .s
        .view()
        .find_buffer(BufferKind::Query, "friend")
        .is_some());
    t.feed(":rete!u@h PRIVMSG friend :hello");
    assert_eq!(t.buffer_rows(BufferKind::Query, "friend").len(), 1);
}

#[test]
fn a_notice_znc_read_in_the_millisecond_of_the_attach_is_still_history() {
    let mut t = T::new(config());
    t.register(OFFER);
    // Observed from ZNC 1.8 in front of ngircd (no server-time upstream): ZNC stamps what it
    // buffers with the time it read it, here the very millisecond of the attach; the query
    // notices come after the playback batch, and our JOIN only after them.
    t.feed("@time=2026-09-30T12:00:00.000Z :srv 001 rete :Welcome");
    t.feed("@time=2026-09-30T12:10:00.495Z :znc.in BATCH +q znc.in/playback alice");
    t.feed("@batch=q;time=2026-09-30T12:10:00.495Z :alice!a@h PRIVMSG rete :away");
    t.feed("@time=2026-09-30T12:10:00.495Z :znc.in BATCH -q");
    t.feed("@time=2026-09-30T12:10:00.495Z :alice!a@h NOTICE rete :away notice");
    t.feed("@time=2026-09-30T12:10:01.496Z :rete!u@h JOIN #rete");
    t.feed("@time=2026-09-30T12:10:02.000Z :alice!a@h NOTICE rete :live notice");
    let rows: Vec<(String, bool)> = t
        .buffer_rows(BufferKind::Query, "alice")
        .into_iter()
        .filter_map(|(_, p, h)| match p {
            Payload::Privmsg { text } | Payload::Notice { text } => Some((text.to_string(), h)),
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("away".to_owned(), true),
            ("away notice".to_owned(), true),
            ("live notice".to_owned(), false)
        ]
    );
}

#[test]
fn an_agent_line_keeps_its_ticket_and_waits_its_turn_like_any_command() {
    let mut t = T::new(config());
    assert_eq!(
        t.s.commands().agent_line("PING x"),
        Err(CommandError::NotConnected)
    );
    t.register(OFFER);
    t.sent();
    // A burst of ordinary lines takes the throttle's tokens first.
    for n in 0..10 {
        t.s.commands()
            .quote(&format!("PRIVMSG #rete :{n}"))
            .unwrap();
    }
    let first = t.s.commands().agent_line("PONG :from-an-agent").unwrap();
    let second = t.s.commands().agent_line("PASS :secret").unwrap();
    assert_ne!(first, second);
    let mut order = Vec::new();
    for _ in 0..1000 {
        match t.s.poll_transmit_ticketed(t.now.mono) {
            Some(sent) => order.push(sent),
            None if t.s.queued_lines() > 0 => t.tick(100),
            None => break,
        }
    }
    let lines: Vec<&str> = order.iter().map(|(l, _)| l.as_str()).collect();
    // The agent's PONG is not sent ahead of the queue, as the engine's own PONG would be.
    assert_eq!(
        lines[10..],
        ["PONG :from-an-agent", "PASS :secret"],
        "{lines:?}"
    );
    assert!(order[..10].iter().all(|(_, ticket)| ticket.is_none()));
    assert_eq!(order[10].1, Some(first));
    assert_eq!(order[11].1, Some(second));
    assert!(t.s.commands().agent_line("PING a\r\nQUIT").is_err());
}

#[test]
fn a_sent_agent_line_leaves_an_audit_row_in_the_server_buffer() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.s.note_agent_line_sent("PASS :********");
    let texts = t.server_texts();
    assert_eq!(
        texts.last().map(|t| t.trim_end()),
        Some("AI access sent: PASS :********"),
        "{texts:?}"
    );
}

#[test]
fn our_who_times_out_only_45_s_after_it_was_written_not_queued() {
    let mut t = T::new(config());
    t.register(OFFER);
    t.sent();
    // A backlog the throttle releases over about 80 s (a burst of 5, then one per 2 s).
    for n in 0..40 {
        t.s.commands().quote(&format!("PRIVMSG #x :{n}")).unwrap();
    }
    t.feed(":rete!u@me JOIN #a");
    t.feed(":rete!u@me JOIN #b");
    // Run the session's clock for 100 s, writing what the throttle lets go.
    let mut sent = Vec::new();
    let end = t.now.mono.plus_ms(100_000);
    while t.now.mono < end {
        while let Some(line) = t.s.poll_transmit(t.now.mono) {
            sent.push(line);
        }
        let next = t.s.poll_timeout(t.now.mono).unwrap_or(end).min(end);
        let wait = next.ms_since(t.now.mono).max(1);
        t.tick(wait);
        t.s.handle_timeout(t.now);
    }
    let whos: Vec<&String> = sent.iter().filter(|l| l.starts_with("WHO ")).collect();
    // #a's WHO waited ~80 s behind the backlog but has been on the wire for only ~20 s:
    // it has not timed out, so #b's still waits for its 315.
    assert_eq!(whos, ["WHO #a %tcuhnfar,417"], "{sent:#?}");
    assert_eq!(t.s.who.timed_out(), 0);
    assert!(
        t.s.who.in_flight_deadline().is_some(),
        "its deadline runs from the write"
    );
}
