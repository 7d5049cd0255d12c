//! Property: a session secret embedded anywhere in a buffer's rows (prefix, middle or suffix of
//! a message, a nick, a part/quit/kick reason, a kick victim, a new nick, a topic, a userhost,
//! an account, a msgid, a mode string, an invite's channel, CTCP arguments) never comes out of
//! read_messages' or read_since's page functions, and every row holding it is counted in
//! `withheld`. Rows without it are still returned.
//!
//! The rows are built into an engine `Buffer` directly and read through the tools' own
//! `Window::copy` + `page`, the same functions the live tools call inside a session read.

use proptest::prelude::*;
use rete_engine::buffer::{Buffer, BufferKind, NewRow};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::{BufferId, BufferKindTag, SessionId};
use rete_engine::row::{CompactString, Payload};
use rete_mcp::tools::cursor::Kind;
use rete_mcp::tools::paging::Binding;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::withheld::Withholder;
use rete_mcp::tools::{read_messages, read_since};
use serde_json::Value;
use support::tool_results::strings;
use support::tool_results::withheld;

const T0: i64 = 1_790_769_600_000;

/// Where in a row the secret is put.
#[derive(Clone, Copy, Debug)]
enum Field {
    Privmsg,
    Notice,
    Action,
    From,
    PartReason,
    QuitReason,
    KickReason,
    KickVictim,
    NewNick,
    Topic,
    Userhost,
    Account,
    Msgid,
    Modes,
    InviteChannel,
    CtcpArgs,
}

const FIELDS: [Field; 16] = [
    Field::Privmsg,
    Field::Notice,
    Field::Action,
    Field::From,
    Field::PartReason,
    Field::QuitReason,
    Field::KickReason,
    Field::KickVictim,
    Field::NewNick,
    Field::Topic,
    Field::Userhost,
    Field::Account,
    Field::Msgid,
    Field::Modes,
    Field::InviteChannel,
    Field::CtcpArgs,
];

/// One generated row: which field carries `text`, and whether the secret is spliced in.
#[derive(Clone, Debug)]
struct Spec {
    field: Field,
    text: String,
    /// None: no secret; Some(0..=2): at the start, in the middle, at the end of `text`.
    place: Option<u8>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..FIELDS.len(),
        "[a-z0-9 .,!?-]{0,24}",
        prop::option::weighted(0.4, 0u8..3),
    )
        .prop_map(|(f, text, place)| Spec {
            field: FIELDS[f],
            text,
            place,
        })
}

/// A secret the way a password or key looks: no JSON-escaped bytes, so its presence in the
/// encoded output is a plain substring check. At least 4 bytes: shorter ones are not scanned.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#%&*+=@^_~-]{4,16}"
}

fn splice(text: &str, secret: &str, place: Option<u8>) -> String {
    match place {
        None => text.to_owned(),
        Some(0) => format!("{secret}{text}"),
        Some(1) => {
            let mid = text.len() / 2;
            format!("{}{secret}{}", &text[..mid], &text[mid..])
        }
        Some(_) => format!("{text}{secret}"),
    }
}

fn row(i: usize, spec: &Spec, secret: &str) -> NewRow {
    let t = splice(&spec.text, secret, spec.place);
    let mut from: CompactString = format!("nick{i}").into();
    let mut msgid: Option<CompactString> = Some(format!("id{i}").into());
    let payload = match spec.field {
        Field::Privmsg => Payload::Privmsg { text: t.into() },
        Field::Notice => Payload::Notice { text: t.into() },
        Field::Action => Payload::Action { text: t.into() },
        Field::From => {
            from = t.into();
            Payload::Privmsg {
                text: "hello".into(),
            }
        }
        Field::PartReason => Payload::UserParted {
            reason: Some(t.into()),
        },
        Field::QuitReason => Payload::UserQuit {
            reason: Some(t.into()),
        },
        Field::KickReason => Payload::UserKicked {
            victim: "victim".into(),
            reason: Some(t.into()),
        },
        Field::KickVictim => Payload::UserKicked {
            victim: t.into(),
            reason: None,
        },
        Field::NewNick => Payload::NickChanged { new_nick: t.into() },
        Field::Topic => Payload::TopicChanged { topic: t.into() },
        Field::Userhost => Payload::UserJoined {
            account: None,
            userhost: Some(format!("u@{t}").into()),
        },
        Field::Account => Payload::UserJoined {
            account: Some(t.into()),
            userhost: None,
        },
        Field::Msgid => {
            msgid = Some(format!("id{i}-{t}").into());
            Payload::Privmsg {
                text: "plain".into(),
            }
        }
        Field::Modes => Payload::ModeChanged {
            modes: format!("+k {t}").into(),
        },
        Field::InviteChannel => Payload::Invited {
            target: "me".into(),
            channel: format!("#{t}").into(),
        },
        Field::CtcpArgs => Payload::Ctcp {
            command: "PING".into(),
            args: t.into(),
            reply: false,
        },
    };
    NewRow {
        time: UnixMillis(T0 + i as i64 * 1000),
        server_time: true,
        msgid,
        from,
        in_history_batch: false,
        older_batch: None,
        payload,
    }
}

/// The buffer holding `specs`, and how many of its rows hold `secret` in any field.
fn build(specs: &[Spec], secret: &str) -> (Buffer, usize) {
    let s = SessionId::parse("00000000-0000-4000-8000-000000000001")
        .unwrap_or_else(|_| unreachable!("a fixed v4 UUID parses"));
    let id = BufferId::derive(&s, BufferKindTag::Channel, "#props");
    let mut b = Buffer::new(id, "#props".into(), BufferKind::Channel, 10_000);
    for (i, sp) in specs.iter().enumerate() {
        b.push(row(i, sp, secret));
    }
    // Counted from what the buffer holds (the filler may happen to contain the secret too).
    let holding = b
        .since(0)
        .filter(|r| {
            let mut hit =
                r.from.contains(secret) || r.msgid.as_deref().is_some_and(|m| m.contains(secret));
            r.payload.for_each_text(|t| hit = hit || t.contains(secret));
            if let Payload::UserJoined {
                userhost: Some(uh), ..
            } = &r.payload
            {
                hit = hit || uh.contains(secret);
            }
            hit
        })
        .count();
    (b, holding)
}

fn assert_clean(v: &Value, secret: &str) -> Result<(), TestCaseError> {
    let text = encode(v);
    prop_assert!(!text.contains(secret), "secret in {text}");
    let mut all = Vec::new();
    strings(v, &mut all);
    prop_assert!(all.iter().all(|s| !s.contains(secret)));
    Ok(())
}

fn returned(v: &Value) -> usize {
    v["messages"].as_array().map_or(0, Vec::len)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// One read_since page over everything: exactly the secret-bearing rows are withheld.
    #[test]
    fn read_since_never_returns_a_secret(
        secret in secret(),
        specs in prop::collection::vec(spec(), 0..60),
    ) {
        let (b, holding) = build(&specs, &secret);
        let binding = Binding::new(Kind::Since, "read_since", "S", "B");
        let w = read_since::Window::copy(&b, None, 1000, Withholder::new([secret.as_str()]));
        let v = read_since::page(&w, &binding, BUDGET);
        assert_clean(&v, &secret)?;
        prop_assert_eq!(withheld(&v), holding as u64, "{}", encode(&v));
        prop_assert_eq!(returned(&v), specs.len() - holding);
    }

    /// read_since walked in small budget-cut pages: no page leaks, no row is lost, and the
    /// withheld counts sum to at least the number of secret-bearing rows.
    #[test]
    fn read_since_pages_never_return_a_secret(
        secret in secret(),
        specs in prop::collection::vec(spec(), 1..60),
        budget in 600usize..2000,
        limit in 1usize..20,
    ) {
        let (b, holding) = build(&specs, &secret);
        let binding = Binding::new(Kind::Since, "read_since", "S", "B");
        let (mut after, mut seen, mut withheld_sum, mut skipped) = (None, 0usize, 0u64, 0usize);
        for _ in 0..10_000 {
            let w = read_since::Window::copy(&b, after, limit, Withholder::new([secret.as_str()]));
            let v = read_since::page(&w, &binding, budget);
            assert_clean(&v, &secret)?;
            seen += returned(&v);
            withheld_sum += withheld(&v);
            skipped += v.get("skipped").and_then(Value::as_array).map_or(0, Vec::len);
            let cursor = v["cursor"].as_str().unwrap_or_default();
            let next = binding.open_seq(cursor).map_err(|_| TestCaseError::fail("cursor"))?;
            if v["truncated"] == Value::Bool(false) {
                break;
            }
            after = Some(next);
        }
        prop_assert!(withheld_sum >= holding as u64, "{withheld_sum} < {holding}");
        prop_assert!(seen + skipped >= specs.len() - holding);
    }

    /// read_messages newest page and its walk back: no page leaks, withheld covers them all.
    #[test]
    fn read_messages_never_returns_a_secret(
        secret in secret(),
        specs in prop::collection::vec(spec(), 1..60),
        budget in 600usize..(BUDGET + 1),
        limit in 1usize..80,
    ) {
        let (b, holding) = build(&specs, &secret);
        let binding = Binding::new(Kind::Messages, "read_messages", "S", "B");
        let mut request = read_messages::Request::Latest;
        let mut withheld_sum = 0u64;
        for _ in 0..10_000 {
            let w = read_messages::Window::copy(&b, &request, limit, Withholder::new([secret.as_str()]));
            let v = read_messages::page(&w, &binding, budget);
            assert_clean(&v, &secret)?;
            withheld_sum += withheld(&v);
            let Some(cursor) = v.get("next_cursor").and_then(Value::as_str) else {
                break;
            };
            let seq = binding.open_seq(cursor).map_err(|_| TestCaseError::fail("cursor"))?;
            request = read_messages::Request::Before(seq);
        }
        prop_assert!(withheld_sum >= holding as u64, "{withheld_sum} < {holding}");
    }

    /// `around` a message id: the anchored window leaks nothing either, even when the anchor
    /// row itself holds the secret.
    #[test]
    fn read_messages_around_never_returns_a_secret(
        secret in secret(),
        specs in prop::collection::vec(spec(), 1..60),
        pick in any::<prop::sample::Index>(),
    ) {
        let (b, _) = build(&specs, &secret);
        let anchor = b.since(0).nth(pick.index(b.len())).and_then(|r| r.msgid.clone());
        let Some(anchor) = anchor else { return Ok(()) };
        let binding = Binding::new(Kind::Messages, "read_messages", "S", "B");
        let w = read_messages::Window::copy(
            &b,
            &read_messages::Request::Around(anchor.to_string()),
            1000,
            Withholder::new([secret.as_str()]),
        );
        let held = w.rows.len();
        let w_holding = w.rows.iter().filter(|r| Withholder::new([secret.as_str()]).row(r)).count();
        let v = read_messages::page(&w, &binding, BUDGET);
        assert_clean(&v, &secret)?;
        prop_assert_eq!(withheld(&v), w_holding as u64);
        prop_assert_eq!(returned(&v), held - w_holding);
    }
}
