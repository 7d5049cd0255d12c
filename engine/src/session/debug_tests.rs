//! No session secret appears in the `Debug` form of the engine's state.
//!
//! `{:?}` of a session ends up in panic messages, test failures and any
//! `tracing` field an embedder adds, so every state type that can hold a
//! secret must print it masked. This builds a session that holds each kind of
//! secret at once — the server password and SASL password in its config, a
//! channel key, PASS and AUTHENTICATE and OPER lines still queued for the
//! flood throttle, a `/smsg` text awaiting its echo — and formats it.

use super::*;
use crate::clock::{Mono, Now, UnixMillis};
use crate::ids::SessionId;
use crate::sasl::{Credentials, Mechanism};
use base64::Engine as _;

const SERVER_PASSWORD: &str = "srvpass-Zq81";
const SASL_PASSWORD: &str = "saslpw-Kx42";
const CHANNEL_KEY: &str = "chankey-Wm63";
const OPER_PASSWORD: &str = "operpw-Jt74";
const SMSG_TEXT: &str = "smsgtext-Rv95";

fn now() -> Now {
    Now {
        mono: Mono(1_000),
        wall: UnixMillis(1_790_769_600_000),
    }
}

fn session_holding_every_secret() -> Session {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    let mut config = SessionConfig::new(id, "test", "rete");
    config.password = Some(SERVER_PASSWORD.into());
    config.sasl = Some(SaslSettings {
        mechanism: Mechanism::Plain,
        credentials: Credentials {
            authcid: "rete".into(),
            password: SASL_PASSWORD.into(),
            authzid: None,
        },
    });
    config.channels = vec![ChannelSpec {
        name: "#keyed".into(),
        key: Some(CHANNEL_KEY.into()),
    }];
    let mut s = Session::new(config);
    // Nothing is polled out, so PASS stays queued beside everything below.
    s.handle_connected(now(), "127.0.0.1:6667", None, [7; 18]);
    s.handle_line(now(), ":srv CAP * LS :sasl echo-message");
    s.handle_line(now(), ":srv CAP rete ACK :sasl echo-message");
    s.handle_line(now(), "AUTHENTICATE +");
    s.handle_line(now(), ":srv 001 rete :Welcome");
    s.handle_line(now(), ":srv 005 rete CHANTYPES=# :are supported");
    s.handle_line(now(), ":rete!u@h JOIN #keyed");
    let mut c = s.commands();
    c.oper("admin", OPER_PASSWORD).unwrap();
    c.join("#other", Some(CHANNEL_KEY)).unwrap();
    c.secret_privmsg("NickServ", SMSG_TEXT).unwrap();
    s
}

#[test]
fn a_smsg_line_is_shown_masked_to_the_raw_views() {
    let mut s = session_holding_every_secret();
    for line in [
        format!("PRIVMSG NickServ :{SMSG_TEXT}"),
        format!(":rete!u@h PRIVMSG NickServ :{SMSG_TEXT}"),
    ] {
        let shown = s.raw_shown(&line).into_owned();
        assert!(
            !shown.contains(SMSG_TEXT) && shown.ends_with(":********"),
            "{shown}"
        );
    }
    assert_eq!(s.raw_shown("PRIVMSG #rete :hello"), "PRIVMSG #rete :hello");
}

#[test]
fn a_session_holding_every_kind_of_secret_prints_none_of_them() {
    let s = session_holding_every_secret();
    // The lines really are queued: the test would prove nothing otherwise.
    assert!(s.queued_lines() >= 3, "queued: {}", s.queued_lines());
    assert!(!s.pending_secrets.is_empty());
    let printed = format!("{s:?}");
    let pretty = format!("{s:#?}");
    for secret in [
        SERVER_PASSWORD,
        SASL_PASSWORD,
        CHANNEL_KEY,
        OPER_PASSWORD,
        SMSG_TEXT,
    ] {
        assert!(!printed.contains(secret), "{secret} in {{:?}}");
        assert!(!pretty.contains(secret), "{secret} in {{:#?}}");
    }
    // The base64 of the SASL PLAIN payload would carry the password too.
    let plain =
        base64::engine::general_purpose::STANDARD.encode(format!("rete\0rete\0{SASL_PASSWORD}"));
    assert!(!printed.contains(&plain), "AUTHENTICATE payload in {{:?}}");
}

#[test]
fn the_masked_parts_still_say_how_much_they_hold() {
    let printed = format!("{:?}", session_holding_every_secret());
    // Masked, not dropped: a reader of the Debug form still sees what waits.
    assert!(printed.contains("QueuedLine(PASS …"), "{printed}");
    assert!(printed.contains("QueuedLine(OPER …"), "{printed}");
    assert!(
        printed.contains(r#"PendingSecret { target_folded: "nickserv", text: "********""#),
        "{printed}"
    );
}
