//! Response bytes: the server answers one request per connection, so every
//! response says `Connection: close` and carries an exact `Content-Length`.

/// The interim answer to `Expect: 100-continue`, sent only once the head has
/// passed the gate, the route and the method check.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// An empty-bodied answer, as every refusal is; 405 adds the `Allow: POST`
/// the contract requires.
pub(crate) fn empty(status: u16) -> Vec<u8> {
    let extra: &[(&str, &str)] = if status == 405 {
        &[("Allow", "POST")]
    } else {
        &[]
    };
    build(status, None, b"", extra)
}

/// An answer with a body (the MCP JSON-RPC replies). `content_type` and
/// `extra_headers` are the caller's fixed strings; any header whose name or
/// value holds a CR or LF is left out rather than allowed to split the
/// response.
pub(crate) fn with_body(
    status: u16,
    content_type: &str,
    body: &[u8],
    extra_headers: &[(&str, &str)],
) -> Vec<u8> {
    build(status, Some(content_type), body, extra_headers)
}

fn build(status: u16, content_type: Option<&str>, body: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    // Written straight into the answer's one buffer, piece by piece: this
    // runs for every request, where a `format!` string per line, and then
    // `write!`'s formatter, cost more than the rest of the head.
    let mut digits = itoa::Buffer::new();
    let mut out = Vec::with_capacity(160 + body.len());
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(digits.format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    let add = |out: &mut Vec<u8>, name: &str, value: &str| {
        if !has_line_break(name) && !has_line_break(value) {
            for piece in [name, ": ", value, "\r\n"] {
                out.extend_from_slice(piece.as_bytes());
            }
        }
    };
    if let Some(ct) = content_type {
        add(&mut out, "Content-Type", ct);
    }
    // Digits only: no line break to check for.
    add(&mut out, "Content-Length", digits.format(body.len()));
    add(&mut out, "Connection", "close");
    for (name, value) in extra {
        add(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn has_line_break(text: &str) -> bool {
    text.contains(['\r', '\n'])
}

/// RFC 9110 reason phrases for the statuses this server answers with; any
/// other status gets an empty phrase, which HTTP/1.1 allows.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn empty_403_is_exact() {
        let want = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        assert_eq!(text(empty(403)), want);
    }

    #[test]
    fn empty_405_carries_allow_post() {
        let want = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\nAllow: POST\r\n\r\n";
        assert_eq!(text(empty(405)), want);
    }

    #[test]
    fn only_405_carries_allow() {
        for status in [400, 403, 404, 411, 413, 431, 500, 504, 202] {
            assert!(!text(empty(status)).contains("Allow"), "{status}");
        }
    }

    #[test]
    fn every_refusal_status_has_its_reason_phrase() {
        let table = [
            (400, "Bad Request"),
            (404, "Not Found"),
            (411, "Length Required"),
            (413, "Content Too Large"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (504, "Gateway Timeout"),
            (202, "Accepted"),
        ];
        for (status, phrase) in table {
            let line = format!("HTTP/1.1 {status} {phrase}\r\n");
            assert!(text(empty(status)).starts_with(&line), "{status}");
        }
    }

    #[test]
    fn an_unknown_status_keeps_the_space_before_an_empty_phrase() {
        assert!(text(empty(299)).starts_with("HTTP/1.1 299 \r\n"));
    }

    #[test]
    fn with_body_is_exact() {
        let got = with_body(200, "application/json", b"{\"a\":1}", &[("X-A", "b")]);
        let want = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\nX-A: b\r\n\r\n{\"a\":1}";
        assert_eq!(text(got), want);
    }

    #[test]
    fn with_body_counts_bytes_not_chars() {
        let body = "\u{e9}t\u{e9}".as_bytes();
        assert!(
            text(with_body(406, "application/json", body, &[])).contains("Content-Length: 5\r\n")
        );
    }

    #[test]
    fn headers_with_line_breaks_are_left_out() {
        let got = text(with_body(
            200,
            "text/plain\r\nX-Evil: 1",
            b"",
            &[("X-B", "1\nX-Evil: 2"), ("X-C\r", "3"), ("X-D", "4")],
        ));
        assert!(!got.contains("Evil"));
        assert!(!got.contains("Content-Type"));
        assert!(!got.contains("X-C"));
        assert!(got.contains("X-D: 4\r\n"));
    }

    #[test]
    fn continue_is_exact() {
        assert_eq!(CONTINUE, b"HTTP/1.1 100 Continue\r\n\r\n");
    }
}
