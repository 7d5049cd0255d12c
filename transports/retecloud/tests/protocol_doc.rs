//! `PROTOCOL.md` is kept true: every example frame in it decodes
//! with the codec (`→` a client's, `←` a service's), every frame type has
//! an example, and the error table lists every code with its `fatal` rule.
// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_cloud_protocol::frame::{CLIENT_TYPES, SERVER_TYPES};
use rete_cloud_protocol::{decode_client, decode_server, ErrorCode};
use std::collections::BTreeSet;

const DOC: &str = include_str!("../PROTOCOL.md");

fn type_of(frame_text: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(frame_text).unwrap();
    v["type"].as_str().unwrap().to_owned()
}

#[test]
fn every_example_frame_decodes_and_every_type_has_one() {
    let mut client_seen = BTreeSet::new();
    let mut server_seen = BTreeSet::new();
    for line in DOC.lines() {
        if let Some(text) = line.strip_prefix("→ ") {
            if let Err(e) = decode_client(text) {
                panic!("{text}: {e}");
            }
            client_seen.insert(type_of(text));
        } else if let Some(text) = line.strip_prefix("← ") {
            if let Err(e) = decode_server(text) {
                panic!("{text}: {e}");
            }
            server_seen.insert(type_of(text));
        }
    }
    for t in CLIENT_TYPES {
        assert!(client_seen.contains(t), "no example of the client's {t}");
    }
    for t in SERVER_TYPES {
        assert!(server_seen.contains(t), "no example of the service's {t}");
    }
}

#[test]
fn the_error_table_lists_every_code_with_its_fatal_rule() {
    for code in ErrorCode::ALL {
        let fatal = if code.is_fatal_by_default() {
            "yes"
        } else {
            "no"
        };
        let row = format!("| `{}` | {fatal} |", code.as_str());
        assert!(DOC.contains(&row), "the error table has no row {row}");
    }
    let rows = DOC
        .lines()
        .filter(|l| l.starts_with("| `") && (l.contains("| yes |") || l.contains("| no |")))
        .count();
    assert_eq!(
        rows,
        ErrorCode::ALL.len(),
        "a code in the table that the code does not have"
    );
}

#[test]
fn the_frame_limit_in_the_document_is_the_codec_s() {
    let limit = rete_cloud_protocol::MAX_FRAME_BYTES;
    assert_eq!(limit, 65_536);
    assert!(DOC.contains("**65,536 bytes**"));
}
