use super::*;

const TOKEN: &str = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd";
const PORT: u16 = 7422;

/// A head built directly, as the head reader would give it.
fn head(method: &str, target: &str, headers: &[(&str, &str)]) -> RequestHead {
    RequestHead::from_parts(method, target, headers)
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// A request that passes the gate, plus `extra` headers.
fn with(extra: &[(&str, &str)]) -> RequestHead {
    let auth = bearer();
    let mut all = vec![("Authorization", auth.as_str()), ("Host", "127.0.0.1:7422")];
    all.extend_from_slice(extra);
    head("POST", "/mcp", &all)
}

/// A request that passes the gate except for one header, replaced.
fn replacing(name: &str, values: &[&str]) -> RequestHead {
    let auth = bearer();
    let mut all: Vec<(&str, &str)> = vec![("Authorization", &auth), ("Host", "127.0.0.1:7422")];
    all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    all.extend(values.iter().map(|v| (name, *v)));
    head("POST", "/mcp", &all)
}

#[test]
fn a_correct_request_passes() {
    assert_eq!(judge(&with(&[]), TOKEN, PORT), Ok(Principal::Full));
    assert_eq!(route(&with(&[])), Ok(()));
}

#[test]
fn token_rules() {
    let wrong_last = format!("Bearer {}X", &TOKEN[..TOKEN.len() - 1]);
    let longer = format!("Bearer {TOKEN}x");
    let shorter = format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]);
    let two_spaces = format!("Bearer  {TOKEN}");
    let tab = format!("Bearer\t{TOKEN}");
    let lower = format!("bearer {TOKEN}");
    let upper = format!("BEARER {TOKEN}");
    let basic = format!("Basic {TOKEN}");
    for value in [
        wrong_last.as_str(),
        &longer,
        &shorter,
        &two_spaces,
        &tab,
        &lower,
        &upper,
        &basic,
        TOKEN,
        "Bearer",
        "",
    ] {
        let h = replacing("Authorization", &[value]);
        assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Token), "{value:?}");
    }
}

#[test]
fn authorization_missing_or_repeated_is_refused() {
    assert_eq!(
        judge(&replacing("Authorization", &[]), TOKEN, PORT),
        Err(Refusal::Token)
    );
    let good = bearer();
    let twice = replacing("Authorization", &[&good, &good]);
    assert_eq!(judge(&twice, TOKEN, PORT), Err(Refusal::Token));
}

#[test]
fn authorization_name_matches_ignoring_case() {
    let good = bearer();
    let h = replacing("AUTHORIZATION", &[&good]);
    assert_eq!(judge(&h, TOKEN, PORT), Ok(Principal::Full));
    let twice = head(
        "POST",
        "/mcp",
        &[
            ("authorization", &good),
            ("Authorization", &good),
            ("Host", "localhost:7422"),
        ],
    );
    assert_eq!(judge(&twice, TOKEN, PORT), Err(Refusal::Token));
}

#[test]
fn token_is_accepted_from_no_other_place() {
    let h = head(
        "POST",
        &format!("/mcp?token={TOKEN}"),
        &[("Host", "127.0.0.1:7422"), ("X-Token", TOKEN)],
    );
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Token));
}

#[test]
fn an_empty_stored_token_matches_nothing() {
    let h = replacing("Authorization", &["Bearer "]);
    assert_eq!(judge(&h, "", PORT), Err(Refusal::Token));
}

#[test]
fn host_rules() {
    for ok in ["127.0.0.1:7422", "localhost:7422"] {
        assert_eq!(
            judge(&replacing("Host", &[ok]), TOKEN, PORT),
            Ok(Principal::Full),
            "{ok}"
        );
    }
    for bad in [
        "127.0.0.1:7421",
        "127.0.0.1",
        "localhost",
        "LOCALHOST:7422",
        "[::1]:7422",
        "127.0.0.2:7422",
        "evil.example:7422",
        "127.0.0.1:07422",
        "",
    ] {
        assert_eq!(
            judge(&replacing("Host", &[bad]), TOKEN, PORT),
            Err(Refusal::Host),
            "{bad}"
        );
    }
}

#[test]
fn host_missing_or_repeated_is_refused() {
    assert_eq!(
        judge(&replacing("Host", &[]), TOKEN, PORT),
        Err(Refusal::Host)
    );
    let twice = replacing("Host", &["127.0.0.1:7422", "127.0.0.1:7422"]);
    assert_eq!(judge(&twice, TOKEN, PORT), Err(Refusal::Host));
    let h = replacing("hOsT", &["localhost:7422"]);
    assert_eq!(judge(&h, TOKEN, PORT), Ok(Principal::Full));
}

#[test]
fn the_port_is_the_one_passed() {
    let h = replacing("Host", &["127.0.0.1:1024"]);
    assert_eq!(judge(&h, TOKEN, 1024), Ok(Principal::Full));
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Host));
}

#[test]
fn origin_rules() {
    assert_eq!(judge(&with(&[]), TOKEN, PORT), Ok(Principal::Full));
    for ok in ["http://127.0.0.1:7422", "http://localhost:7422"] {
        assert_eq!(
            judge(&with(&[("Origin", ok)]), TOKEN, PORT),
            Ok(Principal::Full),
            "{ok}"
        );
    }
    for bad in [
        "null",
        "https://127.0.0.1:7422",
        "http://127.0.0.1:7422/",
        "http://localhost",
        "http://evil.example",
        "HTTP://localhost:7422",
        "127.0.0.1:7422",
        "",
    ] {
        assert_eq!(
            judge(&with(&[("Origin", bad)]), TOKEN, PORT),
            Err(Refusal::Origin),
            "{bad}"
        );
    }
    let twice = with(&[
        ("Origin", "http://localhost:7422"),
        ("origin", "http://localhost:7422"),
    ]);
    assert_eq!(judge(&twice, TOKEN, PORT), Err(Refusal::Origin));
}

#[test]
fn options_is_refused_at_the_gate() {
    let auth = bearer();
    let passing = [("Authorization", auth.as_str()), ("Host", "127.0.0.1:7422")];
    let h = head("OPTIONS", "/mcp", &passing);
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Options));
    let h = head("options", "/mcp", &passing);
    assert_eq!(judge(&h, TOKEN, PORT), Ok(Principal::Full));
    assert_eq!(route(&h), Err(Refusal::Method));
}

#[test]
fn gate_order_is_token_host_origin_options() {
    let good = bearer();
    let auth = ("Authorization", good.as_str());
    let h = head("OPTIONS", "/x", &[("Host", "bad"), ("Origin", "bad")]);
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Token));
    let h = head("OPTIONS", "/x", &[("Host", "bad"), ("Origin", "bad"), auth]);
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Host));
    let h = head(
        "OPTIONS",
        "/x",
        &[("Host", "localhost:7422"), ("Origin", "bad"), auth],
    );
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Origin));
    let origin = ("Origin", "http://localhost:7422");
    let h = head("OPTIONS", "/x", &[("Host", "localhost:7422"), origin, auth]);
    assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Options));
}

#[test]
fn route_path_rules() {
    assert_eq!(route(&head("POST", "/mcp?x=1", &[])), Ok(()));
    for target in [
        "/",
        "/mcp/",
        "/MCP",
        "/mcp2",
        "//mcp",
        "/mcp#x",
        "*",
        "http://127.0.0.1:7422/mcp",
    ] {
        assert_eq!(
            route(&head("POST", target, &[])),
            Err(Refusal::UnknownPath),
            "{target}"
        );
    }
}

#[test]
fn route_method_rules_after_path() {
    for method in ["GET", "PUT", "DELETE", "post", "HEAD"] {
        assert_eq!(
            route(&head(method, "/mcp", &[])),
            Err(Refusal::Method),
            "{method}"
        );
    }
    assert_eq!(
        route(&head("GET", "/other", &[])),
        Err(Refusal::UnknownPath)
    );
}

#[test]
fn statuses_are_the_contracts() {
    let table = [
        (Refusal::Token, Some(403)),
        (Refusal::Host, Some(403)),
        (Refusal::Origin, Some(403)),
        (Refusal::Options, Some(403)),
        (Refusal::UnknownPath, Some(404)),
        (Refusal::Method, Some(405)),
        (Refusal::BadRequest, Some(400)),
        (Refusal::LengthRequired, Some(411)),
        (Refusal::PayloadTooLarge, Some(413)),
        (Refusal::HeadTooLarge, Some(431)),
        (Refusal::HeadDeadline, None),
        (Refusal::ReadDeadline, None),
        (Refusal::HandlerDeadline, Some(504)),
        (Refusal::HandlerOverran, None),
        (Refusal::PeerOtherUser, None),
        (Refusal::PeerUnchecked, None),
    ];
    for (refusal, status) in table {
        assert_eq!(refusal.status(), status, "{refusal:?}");
    }
}

#[test]
fn class_names_are_distinct_and_free_of_detail() {
    let all = [
        Refusal::Token,
        Refusal::Host,
        Refusal::Origin,
        Refusal::Options,
        Refusal::UnknownPath,
        Refusal::Method,
        Refusal::BadRequest,
        Refusal::LengthRequired,
        Refusal::PayloadTooLarge,
        Refusal::HeadTooLarge,
        Refusal::HeadDeadline,
        Refusal::ReadDeadline,
        Refusal::HandlerDeadline,
        Refusal::HandlerOverran,
        Refusal::PeerOtherUser,
        Refusal::PeerUnchecked,
    ];
    let names: std::collections::HashSet<_> = all.iter().map(|r| r.class_name()).collect();
    assert_eq!(names.len(), all.len());
    assert_eq!(Refusal::Token.class_name(), "bad or missing token");
    assert_eq!(
        Refusal::PeerUnchecked.class_name(),
        "peer user could not be checked"
    );
}

#[test]
fn head_errors_map_to_their_classes() {
    for err in [
        HeadError::BadRequest,
        HeadError::LengthRequired,
        HeadError::PayloadTooLarge,
        HeadError::HeaderTooLarge,
    ] {
        assert_eq!(Refusal::from(err).status(), Some(err.status()));
    }
}

#[test]
fn the_port_is_compared_as_written() {
    for (port, ok) in [(1, "1"), (80, "80"), (65535, "65535"), (0, "0")] {
        let h = replacing("Host", &[&format!("127.0.0.1:{ok}")]);
        assert_eq!(judge(&h, TOKEN, port), Ok(Principal::Full), "{ok}");
    }
    for bad in ["+7422", "7422 ", "74220", "742", "07422", "7422a", "٧٤٢٢"] {
        let h = replacing("Host", &[&format!("localhost:{bad}")]);
        assert_eq!(judge(&h, TOKEN, PORT), Err(Refusal::Host), "{bad}");
    }
}

#[test]
fn a_live_grants_token_passes_as_that_grant_until_it_is_revoked() {
    use crate::grant::{GrantRecord, GrantSpec};
    let grants = Grants::default();
    let spec = GrantSpec::parse(&["watcher", "buffers=#rust"]).unwrap();
    let (record, grant_token) = GrantRecord::issue(spec, crate::grant::now_ms());
    grants.add(record).unwrap();
    let gate = Gate::new(TOKEN, PORT, grants.clone());
    let bearer = format!("Bearer {}", grant_token.expose());
    let h = replacing("Authorization", &[&bearer]);
    match gate.judge(&h) {
        Ok(Principal::Grant(g)) => assert_eq!(&*g.name, "watcher"),
        other => panic!("{other:?}"),
    }
    // The full token is still the full token.
    assert_eq!(gate.judge(&with(&[])), Ok(Principal::Full));
    // A grant's token without the scheme is no token.
    let bare = replacing("Authorization", &[grant_token.expose()]);
    assert_eq!(gate.judge(&bare), Err(Refusal::Token));
    grants.revoke("watcher").unwrap();
    assert_eq!(gate.judge(&h), Err(Refusal::Token));
}
