use super::*;

const GOOD: &str = "POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:7422\r\nContent-Length: 5\r\n\r\n";

/// Feeds everything at once and returns the outcome.
fn read(text: &[u8]) -> Result<Option<(RequestHead, Vec<u8>)>, HeadError> {
    HeadReader::new().push(text)
}

/// The error a head (given without its terminator) gets once completed.
fn err_of(lines: &str) -> HeadError {
    match read(format!("{lines}\r\n\r\n").as_bytes()) {
        Err(e) => e,
        Ok(other) => panic!("accepted {lines:?}: {other:?}"),
    }
}

fn ok_of(lines: &str) -> RequestHead {
    match read(format!("{lines}\r\n\r\n").as_bytes()) {
        Ok(Some((head, rest))) if rest.is_empty() => head,
        other => panic!("refused {lines:?}: {other:?}"),
    }
}

/// A head of exactly `len` bytes, padded with one filler header.
fn head_of_len(len: usize) -> Vec<u8> {
    let start = "GET /mcp HTTP/1.1\r\nX-Pad: ";
    let end = "\r\n\r\n";
    let pad = len - start.len() - end.len();
    format!("{start}{}{end}", "a".repeat(pad)).into_bytes()
}

#[test]
fn status_codes_are_the_contracts() {
    assert_eq!(HeadError::BadRequest.status(), 400);
    assert_eq!(HeadError::LengthRequired.status(), 411);
    assert_eq!(HeadError::PayloadTooLarge.status(), 413);
    assert_eq!(HeadError::HeaderTooLarge.status(), 431);
}

#[test]
fn a_good_head_parses_with_its_leftover() {
    let text = format!("{GOOD}hello");
    let (head, rest) = read(text.as_bytes()).unwrap().unwrap();
    assert_eq!(head.method(), "POST");
    assert_eq!(head.path(), "/mcp");
    assert_eq!(head.headers().len(), 2);
    assert_eq!(head.content_length(), Some(5));
    assert_eq!(rest, b"hello");
}

#[test]
fn byte_by_byte_gives_the_same_head() {
    let mut reader = HeadReader::new();
    let bytes = GOOD.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let out = reader.push(std::slice::from_ref(b)).unwrap();
        assert_eq!(out.is_some(), i == bytes.len() - 1, "at byte {i}");
        if let Some((head, rest)) = out {
            assert_eq!(head, read(bytes).unwrap().unwrap().0);
            assert!(rest.is_empty());
        }
    }
}

#[test]
fn every_split_point_gives_the_same_outcome() {
    let cases: Vec<Vec<u8>> = vec![
        GOOD.as_bytes().to_vec(),
        b"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nA: b\nc\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nA: b\r\n\r".to_vec(),
    ];
    for case in cases {
        let whole = read(&case);
        for cut in 0..=case.len() {
            let mut reader = HeadReader::new();
            let first = reader.push(&case[..cut]);
            let out = match first {
                Ok(None) => reader.push(&case[cut..]),
                other => other,
            };
            assert_eq!(out, whole, "cut {cut}");
        }
    }
}

#[test]
fn head_ends_at_the_first_crlfcrlf() {
    let (head, rest) = read(b"GET /mcp HTTP/1.1\r\nA: 1\r\n\r\nB: 2\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.header_values("a"), ["1"]);
    assert!(head.header_values("b").is_empty());
    assert_eq!(rest, b"B: 2\r\n\r\n");
}

#[test]
fn incomplete_head_needs_more() {
    let mut reader = HeadReader::new();
    assert_eq!(reader.push(b"GET /mcp HTTP/1.1\r\nA: 1\r\n"), Ok(None));
    assert_eq!(reader.push(b"\r"), Ok(None));
    assert!(reader.push(b"\n").unwrap().is_some());
}

#[test]
fn bare_lf_anywhere_is_400() {
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\nHost: a\r\n\r\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\r\nHost: a\n\r\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\r\nHost: a\r\n\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(
        read(b"\nGET /mcp HTTP/1.1\r\n\r\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(read(b"GET /mcp HTTP/1.1\n\n"), Err(HeadError::BadRequest));
}

#[test]
fn bare_cr_anywhere_is_400() {
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\rHost: a\r\n\r\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\r\nHost: a\r\r\n\r\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(
        read(b"GET /mcp HTTP/1.1\r\nHost: a\r\n\r\r\n"),
        Err(HeadError::BadRequest)
    );
}

#[test]
fn bare_cr_or_lf_straight_after_the_token_is_400() {
    let err = err_of("POST /mcp HTTP/1.1\r\nAuthorization: Bearer tok\n\r\nContent-Length: 0");
    assert_eq!(err, HeadError::BadRequest);
    let err = err_of("POST /mcp HTTP/1.1\r\nAuthorization: Bearer tok\r\rContent-Length: 0");
    assert_eq!(err, HeadError::BadRequest);
}

#[test]
fn a_bare_lf_is_refused_before_the_head_completes() {
    let mut reader = HeadReader::new();
    assert_eq!(
        reader.push(b"GET /mcp HTTP/1.1\r\nA: 1\n"),
        Err(HeadError::BadRequest)
    );
}

#[test]
fn a_trailing_cr_waits_for_its_next_byte() {
    let mut reader = HeadReader::new();
    assert_eq!(reader.push(b"GET /mcp HTTP/1.1\r"), Ok(None));
    assert_eq!(reader.push(b"x"), Err(HeadError::BadRequest));
}

#[test]
fn errors_are_sticky() {
    let mut reader = HeadReader::new();
    assert_eq!(
        reader.push(b"GET /mcp HTTP/1.1\n"),
        Err(HeadError::BadRequest)
    );
    assert_eq!(reader.push(b"\r\n\r\n"), Err(HeadError::BadRequest));
}

#[test]
fn the_reader_starts_afresh_after_a_head() {
    let mut reader = HeadReader::new();
    assert!(reader.push(b"GET /a HTTP/1.1\r\n\r\n").unwrap().is_some());
    let (head, _) = reader.push(b"GET /b HTTP/1.1\r\n\r\n").unwrap().unwrap();
    assert_eq!(head.path(), "/b");
}

#[test]
fn request_line_versions_accepted() {
    assert_eq!(ok_of("GET /mcp HTTP/1.1").method(), "GET");
    assert_eq!(ok_of("GET /mcp HTTP/1.0").method(), "GET");
}

#[test]
fn malformed_request_lines_are_400() {
    for line in [
        "GET /mcp HTTP/2.0",
        "GET /mcp HTTP/1.2",
        "GET /mcp http/1.1",
        "GET /mcp HTTP/1.1 ",
        "GET  /mcp HTTP/1.1",
        "GET /mcp  HTTP/1.1",
        " GET /mcp HTTP/1.1",
        "GET\t/mcp HTTP/1.1",
        "GET /mcp",
        "GET HTTP/1.1",
        "/mcp HTTP/1.1",
        "G(T /mcp HTTP/1.1",
        "GET /m\u{1}cp HTTP/1.1",
        "",
    ] {
        assert_eq!(err_of(line), HeadError::BadRequest, "{line:?}");
    }
}

#[test]
fn a_leading_empty_line_is_400() {
    assert_eq!(
        read(b"\r\nGET /mcp HTTP/1.1\r\n\r\n"),
        Err(HeadError::BadRequest)
    );
}

#[test]
fn malformed_header_lines_are_400() {
    for header in [
        "NoColon",
        ": empty-name",
        "Name : space before colon",
        "Name\t: tab before colon",
        " Folded: first line has leading space",
        "Bad(Name): x",
        "Ctl: a\u{1}b",
        "Del: a\u{7f}b",
    ] {
        let lines = format!("GET /mcp HTTP/1.1\r\n{header}");
        assert_eq!(err_of(&lines), HeadError::BadRequest, "{header:?}");
    }
}

#[test]
fn obs_fold_is_400() {
    let err = err_of("GET /mcp HTTP/1.1\r\nA: one\r\n  continued");
    assert_eq!(err, HeadError::BadRequest);
    let err = err_of("GET /mcp HTTP/1.1\r\nA: one\r\n\tcontinued");
    assert_eq!(err, HeadError::BadRequest);
}

#[test]
fn non_utf8_header_value_is_400() {
    let mut text = b"GET /mcp HTTP/1.1\r\nA: \xff\xfe\r\n\r\n".to_vec();
    assert_eq!(read(&text), Err(HeadError::BadRequest));
    text = "GET /mcp HTTP/1.1\r\nA: caf\u{e9}\r\n\r\n"
        .as_bytes()
        .to_vec();
    assert_eq!(
        read(&text).unwrap().unwrap().0.header_values("a"),
        ["caf\u{e9}"]
    );
}

#[test]
fn values_are_trimmed_of_spaces_and_tabs_only() {
    let head = ok_of("GET /mcp HTTP/1.1\r\nA: \t x y \t \r\nB:z\r\nC:");
    assert_eq!(head.header_values("a"), ["x y"]);
    assert_eq!(head.header_values("b"), ["z"]);
    assert_eq!(head.header_values("c"), [""]);
}

#[test]
fn header_names_keep_their_case_and_match_without_it() {
    let head = ok_of("GET /mcp HTTP/1.1\r\nHOST: a\r\nhost: b");
    assert_eq!(head.headers().next().unwrap().0, "HOST");
    assert_eq!(head.header_values("Host"), ["a", "b"]);
}

#[test]
fn content_length_must_be_all_digits() {
    for value in ["", "-1", "+5", "5 5", "5,5", "0x10", "1e3", "５"] {
        let lines = format!("POST /mcp HTTP/1.1\r\nContent-Length: {value}");
        assert_eq!(err_of(&lines), HeadError::BadRequest, "{value:?}");
    }
}

#[test]
fn content_length_is_trimmed_and_leading_zeros_allowed() {
    let head = ok_of("POST /mcp HTTP/1.1\r\nContent-Length: \t 007 ");
    assert_eq!(head.content_length(), Some(7));
}

#[test]
fn two_content_lengths_are_400_even_when_equal() {
    let err = err_of("POST /mcp HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5");
    assert_eq!(err, HeadError::BadRequest);
}

#[test]
fn transfer_encoding_is_411() {
    let err = err_of("POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked");
    assert_eq!(err, HeadError::LengthRequired);
    let err = err_of("GET /mcp HTTP/1.1\r\ntransfer-encoding: identity");
    assert_eq!(err, HeadError::LengthRequired);
    let err = err_of("POST /mcp HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked");
    assert_eq!(err, HeadError::LengthRequired);
}

#[test]
fn post_without_content_length_is_411_but_get_is_fine() {
    assert_eq!(err_of("POST /mcp HTTP/1.1"), HeadError::LengthRequired);
    assert_eq!(ok_of("GET /mcp HTTP/1.1").content_length(), None);
    // Methods are case-sensitive: "post" is not POST (it later gets 405).
    assert_eq!(ok_of("post /mcp HTTP/1.1").content_length(), None);
}

#[test]
fn content_length_limits() {
    let at = ok_of("POST /mcp HTTP/1.1\r\nContent-Length: 65536");
    assert_eq!(at.content_length(), Some(MAX_BODY));
    assert_eq!(
        ok_of("POST /mcp HTTP/1.1\r\nContent-Length: 0").content_length(),
        Some(0)
    );
    for value in ["65537", "18446744073709551615", "99999999999999999999999"] {
        let lines = format!("POST /mcp HTTP/1.1\r\nContent-Length: {value}");
        assert_eq!(err_of(&lines), HeadError::PayloadTooLarge, "{value}");
    }
}

#[test]
fn content_length_limit_applies_to_any_method() {
    let err = err_of("GET /mcp HTTP/1.1\r\nContent-Length: 70000");
    assert_eq!(err, HeadError::PayloadTooLarge);
}

#[test]
fn precedence_400_then_411_then_413() {
    // 400 beats 411: a bad Content-Length alongside Transfer-Encoding.
    let err = err_of("POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x");
    assert_eq!(err, HeadError::BadRequest);
    // 400 beats 413: two Content-Lengths, one huge.
    let err = err_of("POST /mcp HTTP/1.1\r\nContent-Length: 99999999\r\nContent-Length: 1");
    assert_eq!(err, HeadError::BadRequest);
    // 411 beats 413.
    let err = err_of("POST /mcp HTTP/1.1\r\nContent-Length: 99999999\r\nTransfer-Encoding: x");
    assert_eq!(err, HeadError::LengthRequired);
    // A malformed header line beats everything on a complete head.
    let err = err_of("POST /mcp HTTP/1.1\r\nTransfer-Encoding: x\r\nbad line");
    assert_eq!(err, HeadError::BadRequest);
}

#[test]
fn a_head_of_exactly_max_head_is_read() {
    let text = head_of_len(MAX_HEAD);
    assert_eq!(text.len(), MAX_HEAD);
    let (head, rest) = read(&text).unwrap().unwrap();
    assert_eq!(head.path(), "/mcp");
    assert!(rest.is_empty());
}

#[test]
fn a_head_one_byte_over_is_431() {
    assert_eq!(
        read(&head_of_len(MAX_HEAD + 1)),
        Err(HeadError::HeaderTooLarge)
    );
}

#[test]
fn an_oversized_head_is_refused_as_soon_as_it_passes_the_limit() {
    let mut reader = HeadReader::new();
    let filler = vec![b'a'; MAX_HEAD];
    assert_eq!(reader.push(&filler), Ok(None));
    assert_eq!(reader.push(b"a"), Err(HeadError::HeaderTooLarge));
}

#[test]
fn a_complete_head_after_the_limit_is_still_431() {
    let mut text = head_of_len(MAX_HEAD + 10);
    text.extend_from_slice(b"body");
    assert_eq!(read(&text), Err(HeadError::HeaderTooLarge));
}

#[test]
fn a_malformed_request_line_in_an_oversized_head_is_431() {
    let mut text = b"NOT A REQUEST LINE\r\n".to_vec();
    text.resize(MAX_HEAD + 1, b'a');
    assert_eq!(read(&text), Err(HeadError::HeaderTooLarge));
}

#[test]
fn a_bare_lf_within_the_limit_beats_431() {
    let mut text = b"GET /mcp HTTP/1.1\r\nA: b\nc".to_vec();
    text.resize(MAX_HEAD + 100, b'a');
    assert_eq!(read(&text), Err(HeadError::BadRequest));
}

#[test]
fn a_bare_cr_on_the_last_allowed_byte_beats_431() {
    let mut text = b"GET /mcp HTTP/1.1\r\nA: ".to_vec();
    text.resize(MAX_HEAD - 1, b'a');
    text.push(b'\r');
    let mut reader = HeadReader::new();
    assert_eq!(reader.push(&text), Ok(None));
    assert_eq!(reader.push(b"x"), Err(HeadError::BadRequest));
}

#[test]
fn a_bare_lf_past_the_limit_is_431() {
    let mut text = b"GET /mcp HTTP/1.1\r\nA: ".to_vec();
    text.resize(MAX_HEAD + 1, b'a');
    text.push(b'\n');
    assert_eq!(read(&text), Err(HeadError::HeaderTooLarge));
}

#[test]
fn header_values_and_expect_continue() {
    let head = ok_of("POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nExpect: 100-Continue");
    assert!(head.expects_continue());
    assert!(!ok_of("POST /mcp HTTP/1.1\r\nContent-Length: 1").expects_continue());
    let other = ok_of("POST /mcp HTTP/1.1\r\nContent-Length: 1\r\nExpect: something");
    assert!(!other.expects_continue());
}

#[test]
fn path_drops_only_the_query() {
    assert_eq!(ok_of("GET /mcp?a?b HTTP/1.1").path(), "/mcp");
    assert_eq!(ok_of("GET /mcp? HTTP/1.1").path(), "/mcp");
    assert_eq!(ok_of("GET /mcp#f HTTP/1.1").path(), "/mcp#f");
    assert_eq!(
        ok_of("GET http://127.0.0.1:7422/mcp HTTP/1.1").path(),
        "http://127.0.0.1:7422/mcp"
    );
}

#[test]
fn debug_never_shows_header_values() {
    let head = ok_of("GET /mcp HTTP/1.1\r\nAuthorization: Bearer s3cr3t-token");
    let shown = format!("{head:?}");
    assert!(shown.contains("Authorization"));
    assert!(!shown.contains("s3cr3t"));
}

#[test]
fn reader_debug_never_shows_buffered_bytes() {
    let mut reader = HeadReader::new();
    assert_eq!(
        reader.push(b"GET /mcp HTTP/1.1\r\nAuthorization: Bearer s3cr3t"),
        Ok(None)
    );
    let shown = format!("{reader:?}");
    assert!(shown.contains("buffered: 47"), "{shown}");
    assert!(
        !shown.contains("s3cr3t") && !shown.contains("115, 51"),
        "{shown}"
    );
}

/// Generated heads, each fed whole and then in generated chunks: the outcome never
/// depends on the split, a refusal is always one of the contract's head statuses, and a
/// head the reader accepts obeys every rule it promises (issue 19's generated heads;
/// `PROPTEST_CASES=1000000 cargo nextest run -p rete-mcp generated_heads` is the long run).
mod generated {
    use super::*;
    use proptest::prelude::*;

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("Host: 127.0.0.1:7422".to_owned()),
            Just("Content-Length: 5".to_owned()),
            Just("Content-Length: 99999999999999999999999".to_owned()),
            Just("Content-Length: 65537".to_owned()),
            Just("Content-Length: -1".to_owned()),
            Just("Content-Length: 5, 5".to_owned()),
            Just("Transfer-Encoding: chunked".to_owned()),
            Just("Authorization: Bearer t0k3n".to_owned()),
            Just("Accept: application/json, text/event-stream".to_owned()),
            Just("Expect: 100-continue".to_owned()),
            Just(" folded".to_owned()),
            Just("NoColon".to_owned()),
            Just("Bad Name: x".to_owned()),
            Just("X-Empty:".to_owned()),
            Just(String::new()),
            "[A-Za-z-]{1,20}: [ -~]{0,60}",
            "[ -~]{0,80}",
            "\\PC{0,30}",
        ]
    }

    fn request_line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("POST /mcp HTTP/1.1".to_owned()),
            Just("GET /mcp HTTP/1.1".to_owned()),
            Just("POST /mcp?x=1 HTTP/1.0".to_owned()),
            Just("POST  /mcp HTTP/1.1".to_owned()),
            Just("POST /mcp HTTP/2".to_owned()),
            Just("POST /mcp".to_owned()),
            "[A-Z]{1,8} /[ -~]{0,40} HTTP/1\\.[01]",
            "[ -~]{0,60}",
        ]
    }

    /// A head: a request line, headers, the terminator (usually), sometimes a bare CR or
    /// LF put anywhere, sometimes padding past the head limit, then maybe a body start.
    fn head() -> impl Strategy<Value = Vec<u8>> {
        (
            request_line(),
            prop::collection::vec(line(), 0..12),
            prop::bool::weighted(0.9),
            prop::option::weighted(
                0.15,
                (
                    any::<prop::sample::Index>(),
                    prop_oneof![Just(b'\r'), Just(b'\n')],
                ),
            ),
            prop::option::weighted(0.05, MAX_HEAD - 64..MAX_HEAD + 64),
            prop::collection::vec(any::<u8>(), 0..8),
        )
            .prop_map(|(request, lines, ended, bare, pad, body)| {
                let mut text = request;
                for l in lines {
                    text.push_str("\r\n");
                    text.push_str(&l);
                }
                if let Some(len) = pad {
                    text.push_str("\r\nX-Pad: ");
                    let room = len.saturating_sub(text.len() + 4);
                    text.push_str(&"a".repeat(room));
                }
                let mut bytes = text.into_bytes();
                if let Some((at, byte)) = bare {
                    let i = at.index(bytes.len() + 1);
                    bytes.insert(i, byte);
                }
                if ended {
                    bytes.extend_from_slice(b"\r\n\r\n");
                }
                bytes.extend(body);
                bytes
            })
    }

    /// Where to cut: sorted cut points into the bytes.
    fn cuts() -> impl Strategy<Value = Vec<prop::sample::Index>> {
        prop::collection::vec(any::<prop::sample::Index>(), 0..6)
    }

    fn chunked(
        bytes: &[u8],
        cuts: &[prop::sample::Index],
    ) -> Result<Option<(RequestHead, Vec<u8>)>, HeadError> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut reader = HeadReader::new();
        let mut from = 0;
        for p in points.into_iter().chain([bytes.len()]) {
            match reader.push(&bytes[from..p]) {
                Ok(None) => from = p,
                other => {
                    // The rest of the bytes, had the client sent them, follow the head.
                    return other.map(|o| {
                        o.map(|(h, mut rest)| {
                            rest.extend_from_slice(&bytes[p..]);
                            (h, rest)
                        })
                    });
                }
            }
        }
        Ok(None)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2_000),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn generated_heads_read_the_same_however_split(bytes in head(), cuts in cuts()) {
            let whole = read(&bytes);
            prop_assert_eq!(&chunked(&bytes, &cuts), &whole);
            match whole {
                Err(e) => prop_assert!([400, 411, 413, 431].contains(&e.status())),
                Ok(None) => prop_assert!(bytes.len() <= MAX_HEAD),
                Ok(Some((head, rest))) => {
                    let used = bytes.len() - rest.len();
                    prop_assert!(used <= MAX_HEAD);
                    prop_assert!(bytes[..used].ends_with(b"\r\n\r\n"));
                    prop_assert!(head.header_values("transfer-encoding").is_empty());
                    prop_assert!(head.header_values("content-length").len() <= 1);
                    if head.method() == "POST" {
                        prop_assert!(head.content_length().is_some_and(|n| n <= MAX_BODY));
                    }
                    for (name, value) in head.headers() {
                        prop_assert!(!name.is_empty() && !name.contains([' ', ':']));
                        prop_assert!(!value.contains(['\r', '\n']));
                    }
                }
            }
        }
    }
}
