//! The snapshot: secrets never serialized, the WHO queue as the contract
//! names it, every section from one instant, and the index.

use super::*;
use crate::clock::{Mono, Now};
use crate::ids::SessionId;
use crate::sasl::{Credentials, Mechanism};
use crate::session::{ChannelSpec, SaslSettings, SessionConfig};
use crate::who_queue::WHO_TIMEOUT_MS;
use serde_json::{json, Value};

const SERVER_PASSWORD: &str = "srvpass-Zq81";
const SASL_PASSWORD: &str = "saslpw-Kx42";
const CHANNEL_KEY: &str = "chankey-Wm63";
const JOIN_KEY: &str = "joinkey-Pd27";
const OPER_PASSWORD: &str = "operpw-Jt74";
const SMSG_TEXT: &str = "smsgtext-Rv95";
const WALL: i64 = 1_790_769_600_000;

fn now(ms: u64) -> Now {
    Now {
        mono: Mono(1_000 + ms),
        wall: UnixMillis(WALL + ms as i64),
    }
}

fn config() -> SessionConfig {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    SessionConfig::new(id, "test", "rete")
}

/// Registered on a server offering WHOX, the lines it sent drained.
fn registered(config: SessionConfig) -> Session {
    let mut s = Session::new(config);
    s.handle_connected(now(0), "127.0.0.1:6667", None, [7; 18]);
    s.handle_line(now(0), ":srv 001 rete :Welcome");
    s.handle_line(now(0), ":srv 005 rete WHOX NETWORK=Test :are supported");
    drain(&mut s, 0);
    s
}

fn drain(s: &mut Session, ms: u64) -> Vec<String> {
    std::iter::from_fn(|| s.poll_transmit(now(ms).mono)).collect()
}

fn all(s: &Session, at: i64) -> Snapshot {
    s.view().state_sections(&Section::ALL, UnixMillis(at))
}

/// Every section's encoding, as one JSON text.
fn encoded(snap: &Snapshot) -> String {
    let values: Vec<&str> = snap.sections.iter().map(|(_, v)| v.as_str()).collect();
    format!("[{}]", values.join(","))
}

fn section(snap: &Snapshot, name: Section) -> Value {
    let text = &snap
        .sections
        .iter()
        .find(|(s, _)| *s == name)
        .unwrap_or_else(|| panic!("{name:?} missing"))
        .1;
    serde_json::from_str(text).unwrap()
}

/// A session holding every kind of secret at once: the server and SASL
/// passwords, a configured channel key and one given to /join, an OPER and
/// a PASS line still queued, and a /smsg text awaiting its echo.
fn holding_every_secret() -> Session {
    let mut c = config();
    c.password = Some(SERVER_PASSWORD.into());
    c.sasl = Some(SaslSettings {
        mechanism: Mechanism::Plain,
        credentials: Credentials {
            authcid: "rete".into(),
            password: SASL_PASSWORD.into(),
            authzid: None,
        },
    });
    c.channels = vec![ChannelSpec {
        name: "#keyed".into(),
        key: Some(CHANNEL_KEY.into()),
    }];
    let mut s = Session::new(c);
    s.handle_connected(now(0), "127.0.0.1:6667", None, [7; 18]);
    s.handle_line(now(0), ":srv CAP * LS :sasl echo-message");
    s.handle_line(now(0), ":srv CAP rete ACK :sasl echo-message");
    s.handle_line(now(0), "AUTHENTICATE +");
    s.handle_line(now(0), ":srv 001 rete :Welcome");
    s.handle_line(now(0), ":rete!u@h JOIN #keyed");
    let mut cmd = s.commands();
    cmd.oper("admin", OPER_PASSWORD).unwrap();
    cmd.join("#other", Some(JOIN_KEY)).unwrap();
    cmd.secret_privmsg("NickServ", SMSG_TEXT).unwrap();
    s
}

#[test]
fn no_section_holds_a_secret() {
    let s = holding_every_secret();
    // The secrets really are held: queued lines, a keyed join, SASL set up.
    assert!(s.queued_lines() >= 3, "queued: {}", s.queued_lines());
    let snap = all(&s, WALL);
    let text = encoded(&snap);
    for secret in [
        SERVER_PASSWORD,
        SASL_PASSWORD,
        CHANNEL_KEY,
        JOIN_KEY,
        OPER_PASSWORD,
        SMSG_TEXT,
    ] {
        assert!(!text.contains(secret), "{secret} in a section");
    }
    // Said to be set, never shown.
    let config = section(&snap, Section::Config);
    assert_eq!(config["hasPassword"], json!(true));
    assert_eq!(config["saslMechanism"], json!("PLAIN"));
    assert_eq!(
        config["channels"],
        json!([{"name": "#keyed", "hasKey": true}])
    );
    let wanted = &section(&snap, Section::Channels)["wanted"];
    assert_eq!(
        wanted,
        &json!([{"hasKey": true, "name": "#keyed"}, {"hasKey": true, "name": "#other"}])
    );
    assert_eq!(section(&snap, Section::Sasl)["configured"], json!(true));
    let flood = section(&snap, Section::Flood);
    assert!(flood["queued"].as_u64() >= Some(3), "{flood}");
    let index = serde_json::to_string(
        &s.view()
            .state_index()
            .iter()
            .map(|e| e.summary.clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!index.contains(CHANNEL_KEY) && !index.contains(SERVER_PASSWORD));
}

#[test]
fn whox_shows_the_queue_in_sending_order_and_the_deadline() {
    let mut s = registered(config());
    for chan in ["#b", "#A", "#c"] {
        s.handle_line(now(10), &format!(":rete!u@h JOIN {chan}"));
    }
    let sent = drain(&mut s, 10);
    assert!(sent.iter().any(|l| l.starts_with("WHO #b %")), "{sent:?}");

    let snap = all(&s, WALL + 20);
    let whox = section(&snap, Section::Whox);
    assert_eq!(whox["silentWhoInFlight"], json!("#b"));
    // 45 s after the WHO went (at 10 ms), to the whole second.
    let deadline = crate::timefmt::iso_seconds(UnixMillis(WALL + 10 + WHO_TIMEOUT_MS as i64));
    assert_eq!(whox["silentWhoDeadline"], json!(deadline));
    assert_eq!(whox["silentWhoQueued"], json!(["#A", "#c"]));
    assert_eq!(whox["whoxSupported"], json!(true));
    let entry = whox_entry(&s);
    assert_eq!(entry.count, 3);
    assert!(entry.summary.starts_with("WHO #b in flight"), "{entry:?}");

    // Its 315 sends the next, in queue order.
    s.handle_line(now(30), ":srv 315 rete #b :End of /WHO list.");
    drain(&mut s, 30);
    let whox = section(&all(&s, WALL + 40), Section::Whox);
    assert_eq!(whox["silentWhoInFlight"], json!("#A"));
    assert_eq!(whox["silentWhoQueued"], json!(["#c"]));
    assert_eq!(whox_entry(&s).count, 2);

    // Nothing in flight: null deadline, and the summary says so.
    s.handle_line(now(40), ":srv 315 rete #a :End of /WHO list.");
    drain(&mut s, 40);
    s.handle_line(now(50), ":srv 315 rete #c :End of /WHO list.");
    drain(&mut s, 50);
    let whox = section(&all(&s, WALL + 60), Section::Whox);
    assert_eq!(whox["silentWhoInFlight"], Value::Null);
    assert_eq!(whox["silentWhoDeadline"], Value::Null);
    assert_eq!(whox["silentWhoQueued"], json!([]));
    assert_eq!(whox_entry(&s).summary, "no WHO in flight, 0 queued");
}

fn whox_entry(s: &Session) -> IndexEntry {
    s.view()
        .state_index()
        .into_iter()
        .find(|e| e.section == Section::Whox)
        .unwrap()
}

#[test]
fn one_snapshot_is_one_instant() {
    let mut s = registered(config());
    s.handle_line(now(5), ":rete!u@h JOIN #one");
    s.handle_line(now(5), ":alice!a@h PRIVMSG rete :hi");
    let snap = s.view().state_sections(
        &[Section::Buffers, Section::Channels, Section::Queries],
        UnixMillis(WALL + 99),
    );
    assert_eq!(snap.taken_at.core, snap.taken_at.store);
    assert_eq!(snap.taken_at.core, UnixMillis(WALL + 99));
    // The sections agree with each other: server + 1 channel + 1 query.
    let buffers = section(&snap, Section::Buffers)["buffers"]
        .as_array()
        .unwrap()
        .clone();
    let kinds: Vec<&str> = buffers
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["server", "channel", "query"]);
    assert_eq!(section(&snap, Section::Channels)["joined"], json!(1));
    let queries = &section(&snap, Section::Queries)["queries"];
    assert_eq!(queries[0]["id"], buffers[2]["id"]);
    assert_eq!(queries[0]["name"], json!("alice"));
}

#[test]
fn unfilled_sections_are_unavailable_and_repeats_taken_once() {
    let s = registered(config());
    let snap = s.view().state_sections(
        &[
            Section::Scripts,
            Section::Connection,
            Section::Whois,
            Section::Connection,
            Section::Scripts,
        ],
        UnixMillis(WALL),
    );
    let names: Vec<Section> = snap.sections.iter().map(|(s, _)| *s).collect();
    assert_eq!(names, [Section::Connection]);
    assert_eq!(snap.unavailable, [Section::Scripts, Section::Whois]);
    let everything = all(&s, WALL);
    let unfilled: Vec<&str> = everything.unavailable.iter().map(|s| s.name()).collect();
    assert_eq!(
        unfilled,
        ["silentQueries", "markread", "silence", "whois", "scripts"]
    );
    assert_eq!(everything.sections.len(), 14);
}

#[test]
fn the_index_lists_filled_sections_in_order_with_one_line_summaries() {
    let mut s = registered(config());
    // A channel name with control characters and a long topic.
    let long = format!("#{}\u{2}x", "n".repeat(300));
    s.handle_line(now(5), &format!(":rete!u@h JOIN {long}"));
    let index = s.view().state_index();
    let names: Vec<&str> = index.iter().map(|e| e.section.name()).collect();
    assert_eq!(
        names,
        [
            "connection",
            "registration",
            "sasl",
            "capabilities",
            "isupport",
            "channels",
            "queries",
            "buffers",
            "whox",
            "chathistory",
            "batches",
            "reconnect",
            "flood",
            "config"
        ]
    );
    for e in &index {
        assert!(e.summary.len() <= MAX_SUMMARY_BYTES, "{e:?}");
        assert!(!e.summary.chars().any(char::is_control), "{e:?}");
        assert!(!e.summary.is_empty(), "{e:?}");
    }
    let channels = index
        .iter()
        .find(|e| e.section == Section::Channels)
        .unwrap();
    assert_eq!(channels.count, 1);
    assert!(channels.summary.ends_with('…'), "{channels:?}");
    let connection = &index[0];
    assert_eq!(
        connection.summary,
        "connected as rete to srv, 0 lines unparsable"
    );
    let isupport = index
        .iter()
        .find(|e| e.section == Section::Isupport)
        .unwrap();
    assert_eq!(isupport.count, 2);
    assert_eq!(
        isupport.summary,
        "NETWORK Test, 2 tokens, CASEMAPPING rfc1459, WHOX"
    );
}

#[test]
fn section_names_match_exactly() {
    for s in Section::ALL {
        assert_eq!(Section::parse(s.name()), Some(s));
    }
    for bad in ["Connection", " connection", "silentqueries", "", "whox "] {
        assert_eq!(Section::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn sections_use_camel_case_keys() {
    let s = registered(config());
    let text = encoded(&all(&s, WALL));
    let v: Value = serde_json::from_str(&text).unwrap();
    fn keys(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    // isupport's tokens and the offered capabilities are the
                    // server's own names, not ours.
                    if k != "tokens" && k != "available" {
                        keys(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    let mut all_keys = Vec::new();
    keys(&v, &mut all_keys);
    let snake: Vec<&String> = all_keys.iter().filter(|k| k.contains('_')).collect();
    assert!(snake.is_empty(), "{snake:?}");
}
