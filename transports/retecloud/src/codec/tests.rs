use super::*;
use crate::config::ConfigEntry;
use crate::frame::*;
use crate::secret::{IrcLine, Secret, Token};

fn code_of_client(text: &str) -> ErrorCode {
    decode_client(text).unwrap_err().code
}

#[test]
fn an_auth_frame_decodes() {
    let f = decode_client(r#"{"type":"auth","version":1,"token":"rct1_x","resume":[{"stream":"libera.1","after":41}]}"#)
        .unwrap();
    let ClientFrame::Auth(a) = f else {
        panic!("{f:?}")
    };
    assert_eq!(a.version, 1);
    assert_eq!(a.token, Token::new("rct1_x"));
    assert_eq!(a.resume[0].after, 41);
    assert!(!format!("{a:?}").contains("rct1_x"));
}

#[test]
fn each_bad_input_has_its_code() {
    let too_big = format!(
        r#"{{"type":"ping","n":1,"pad":"{}"}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    let cases: &[(&str, ErrorCode)] = &[
        (&too_big, ErrorCode::FrameTooLarge),
        ("not json", ErrorCode::MalformedFrame),
        (r#"{"type":"ping","n":1"#, ErrorCode::MalformedFrame),
        ("[1,2]", ErrorCode::MalformedFrame),
        (r#""auth""#, ErrorCode::MalformedFrame),
        (r#"{"n":1}"#, ErrorCode::MissingType),
        (r#"{"type":5}"#, ErrorCode::MissingType),
        (r#"{"type":"bogus"}"#, ErrorCode::UnknownType),
        (r#"{"type":"hello"}"#, ErrorCode::UnknownType),
        (
            r#"{"type":"ping","n":1,"extra":true}"#,
            ErrorCode::UnknownField,
        ),
        (r#"{"type":"ping"}"#, ErrorCode::MissingField),
        (r#"{"type":"ping","n":"one"}"#, ErrorCode::InvalidField),
        (r#"{"type":"ping","n":1,"n":2}"#, ErrorCode::InvalidField),
        (
            r#"{"type":"ping","type":"pong","n":1}"#,
            ErrorCode::InvalidField,
        ),
        (r#"{"type":"auth","version":1}"#, ErrorCode::MissingField),
        (
            r#"{"type":"auth","version":1,"token":"t","resume":[{"stream":"bad stream","after":1}]}"#,
            ErrorCode::InvalidField,
        ),
        (
            r#"{"type":"send","id":"s1","network":"libera","line":"PRIVMSG #a :hi\r\nQUIT"}"#,
            ErrorCode::BadLine,
        ),
        (
            r#"{"type":"send","id":"s1","network":"libera","line":""}"#,
            ErrorCode::BadLine,
        ),
        (
            r##"{"type":"fetch","id":"f1","stream":"libera.1","buffer":"#a","limit":0}"##,
            ErrorCode::InvalidField,
        ),
        (
            r#"{"type":"config_update","id":"c1","network":"libera","entries":[]}"#,
            ErrorCode::BadConfig,
        ),
        (
            r#"{"type":"config_update","id":"c1","network":"libera","entries":[{"key":"colour","value":"red"}]}"#,
            ErrorCode::InvalidField,
        ),
    ];
    for (text, code) in cases {
        let got = decode_client(text).unwrap_err();
        assert_eq!(got.code, *code, "{text:.80}: {got}");
        assert!(!got.message.is_empty());
    }
}

#[test]
fn the_other_sides_type_is_named_as_such() {
    let e = decode_client(r#"{"type":"hello"}"#).unwrap_err();
    assert_eq!(e.message, r#"type "hello" is a frame the service sends"#);
    let e = decode_server(r#"{"type":"auth"}"#).unwrap_err();
    assert_eq!(e.message, r#"type "auth" is a frame a client sends"#);
    let e = decode_client(r#"{"type":"bogus"}"#).unwrap_err();
    assert_eq!(e.message, r#"unknown type "bogus""#);
}

#[test]
fn an_error_message_never_quotes_a_value() {
    // A password where a number belongs, and a token of the wrong type.
    for text in [
        r#"{"type":"ping","n":"hunter2-secret"}"#,
        r#"{"type":"auth","version":"hunter2-secret","token":"t"}"#,
        r#"{"type":"token_ack","generation":"hunter2-secret"}"#,
        r#"{"type":"config_update","id":"c1","network":"n","entries":[{"key":"sasl_password","value":["hunter2-secret"]}]}"#,
        r#"{"type":"config_update","id":"c1","network":"n","entries":[{"key":"sasl_password","value":"pw\r\nhunter2-secret"}]}"#,
        r#"{"type":"send","id":"s","network":"n","line":"PASS hunter2-secret\r\n"}"#,
    ] {
        let e = decode_client(text).unwrap_err();
        assert!(!e.message.contains("hunter2"), "{text}: {}", e.message);
        assert!(!format!("{e:?}").contains("hunter2"));
    }
}

#[test]
fn a_field_error_names_the_request_and_is_not_fatal_once_authenticated() {
    let e =
        decode_client(r#"{"type":"send","id":"s9","network":"libera","line":"a\nb"}"#).unwrap_err();
    assert_eq!(e.id, Some(RequestId("s9".into())));
    let f = e.to_error_frame(true);
    assert!(!f.fatal);
    assert_eq!(f.id, Some(RequestId("s9".into())));
    assert!(
        e.to_error_frame(false).fatal,
        "before auth every error is fatal"
    );
    let e = decode_client(r#"{"type":"auth","version":1,"token":"t","extra":1}"#).unwrap_err();
    assert!(e.to_error_frame(true).fatal, "a bad auth is fatal");
    let e = decode_client("nope").unwrap_err();
    assert!(e.to_error_frame(true).fatal);
}

#[test]
fn encoding_refuses_what_decoding_would() {
    let send = ClientFrame::Send(Send {
        id: RequestId("s1".into()),
        network: NetworkId("libera".into()),
        line: IrcLine::new("PRIVMSG #a :x\r\nQUIT"),
    });
    assert_eq!(encode_client(&send).unwrap_err().code, ErrorCode::BadLine);
    let big = ServerFrame::Sync(Sync {
        stream: StreamId("libera.1".into()),
        lines: vec![IrcLine::new("x".repeat(8000)); 10],
    });
    assert_eq!(
        encode_server(&big).unwrap_err().code,
        ErrorCode::FrameTooLarge
    );
}

#[test]
fn config_update_round_trips_and_hides_its_secret_in_debug() {
    let f = ClientFrame::ConfigUpdate(ConfigUpdate {
        id: RequestId("c1".into()),
        network: NetworkId("libera".into()),
        entries: vec![
            ConfigEntry::Nick("rete".into()),
            ConfigEntry::SaslPassword(Some(Secret::new("hunter2"))),
        ],
    });
    let text = encode_client(&f).unwrap();
    assert_eq!(
        text,
        r#"{"type":"config_update","id":"c1","network":"libera","entries":[{"key":"nick","value":"rete"},{"key":"sasl_password","value":"hunter2"}]}"#
    );
    assert_eq!(decode_client(&text).unwrap(), f);
    assert!(!format!("{f:?}").contains("hunter2"));
}

#[test]
fn server_frames_decode_on_the_client_side() {
    let text = r#"{"type":"line","stream":"libera.1","seq":42,"time":1764644400000,"line":":a!b@c PRIVMSG #rete :hi","replay":true}"#;
    let f = decode_server(text).unwrap();
    let ServerFrame::Line(l) = &f else { panic!() };
    assert!(l.replay);
    assert_eq!(encode_server(&f).unwrap(), text);
    assert_eq!(code_of_client(text), ErrorCode::UnknownType);
    let e = decode_server(r#"{"type":"ready","extra":1}"#).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownField);
    assert!(decode_server(r#"{"type":"ready"}"#).is_ok());
}

#[test]
fn an_unknown_variant_is_not_quoted() {
    for text in [
        r#"{"type":"config_update","id":"c1","network":"n","entries":[{"key":"sasl_mechanism","value":"S3CRhunter2"}]}"#,
        r#"{"type":"config_update","id":"c1","network":"n","entries":[{"key":"S3CRhunter2","value":"x"}]}"#,
        r#"{"type":"fetch","id":"f","stream":"s","buffer":"b","before":{"S3CRhunter2":1},"limit":1}"#,
    ] {
        let e = decode_client(text).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidField, "{text}");
        assert!(!e.message.contains("S3CR"), "{text}: {}", e.message);
        assert!(
            e.message.contains("expected"),
            "says what is allowed: {}",
            e.message
        );
    }
}

#[test]
fn a_hello_with_an_impossible_extent_is_refused() {
    for (earliest, latest) in [(0, 5), (7, 5)] {
        let text = format!(
            r#"{{"type":"hello","version":1,"user":"u","heartbeat_ms":1,"max_frame_bytes":1,"networks":[{{"network":"n","stream":"s","name":"N","state":"connected","earliest":{earliest},"latest":{latest}}}]}}"#
        );
        assert_eq!(
            decode_server(&text).unwrap_err().code,
            ErrorCode::InvalidField,
            "{text}"
        );
    }
}
