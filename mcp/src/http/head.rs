//! The strict, incremental request-head reader.
//!
//! The gate can only judge a request once its head has parsed, and the
//! contract answers malformed heads before the gate (400, 411, 413, 431), so
//! this reader is the first thing every byte from a client meets. It is
//! deliberately stricter than RFC 9112 allows a server to be: there is one
//! client (Claude Code) and no reason to be lenient with anything else.
//!
//! What is accepted:
//! * a request line `METHOD SP target SP HTTP/1.1` or `HTTP/1.0`, single
//!   spaces, method a token, target any visible bytes (checked by `httparse`);
//! * header lines `name:value` with a token name, the colon straight after it,
//!   and a value of visible UTF-8 text, spaces and tabs;
//! * every line ended by CRLF, the head ended by the first CRLFCRLF.
//!
//! Precedence when several faults apply (one answer per request):
//! 1. a bare CR or LF is found byte by byte as the head arrives, so one that
//!    lies within the first [`MAX_HEAD`] bytes answers 400 even if the head
//!    would later have been too long;
//! 2. a head with no CRLFCRLF within its first [`MAX_HEAD`] bytes answers 431 as
//!    soon as byte `MAX_HEAD + 1` arrives, whatever else is wrong with it; a
//!    head of exactly `MAX_HEAD` bytes, its final CRLFCRLF included, is read;
//! 3. on a complete head, in the contract's table order: 400 (malformed line,
//!    leading empty line, non-UTF-8 value, a Content-Length not all digits,
//!    more than one Content-Length), then 411 (Transfer-Encoding, or POST
//!    without Content-Length), then 413 (Content-Length over [`MAX_BODY`], or
//!    all digits but too large for a `u64`).
//!
//! The outcome never depends on how the bytes were split across reads.

use std::fmt;

/// The longest head read, its final CRLFCRLF included; longer is 431.
pub(crate) const MAX_HEAD: usize = 16_384;
/// The largest body a request may announce; larger is 413.
pub(crate) const MAX_BODY: u64 = 65_536;

/// A request head that passed every head rule.
///
/// The head's text is kept whole, as it arrived, with the places of its
/// parts in it: one allocation for what was a string per method, target,
/// path and header name and value (every request reads one head).
///
/// `Debug` shows only the method, the path and the header names, because
/// the Authorization value is the access token and must never reach a log.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// The head as it arrived, its final CRLFCRLF included: UTF-8 (checked
    /// whole, which covers every rule the head's values have to meet).
    text: String,
    method: Span,
    /// The request target up to its `?query`, which routing ignores (the
    /// query is in the text; nothing reads it).
    path: Span,
    /// Headers in order: the name as sent, the value trimmed of spaces and
    /// tabs.
    headers: Vec<(Span, Span)>,
}

/// Where a part of the head lies in its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// The place of `part`, which is a slice of `text`. Every part starts
    /// and ends beside an ASCII byte (a space, a colon, a CR or a blank), so
    /// its ends are character boundaries of the text.
    fn of(text: &[u8], part: &[u8]) -> Span {
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        Span {
            start,
            end: start + part.len(),
        }
    }
}

/// How many times a header appears, and its value when once: what the gate
/// and the framing rules ask of a header, without collecting its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header<'a> {
    /// Not sent.
    Absent,
    /// Sent once, with this value.
    One(&'a str),
    /// Sent more than once.
    Repeated,
}

impl RequestHead {
    /// A head made of these parts, as the reader would keep it, with none
    /// of the head rules applied: for tests of what judges a head.
    #[cfg(test)]
    pub(crate) fn from_parts(method: &str, target: &str, headers: &[(&str, &str)]) -> RequestHead {
        let mut text = format!("{method} {target} HTTP/1.1\r\n");
        for (name, value) in headers {
            text.push_str(&format!("{name}:{value}\r\n"));
        }
        text.push_str("\r\n");
        let mut at = 0;
        let mut span = |len: usize, gap: usize| {
            let span = Span {
                start: at,
                end: at + len,
            };
            at += len + gap;
            span
        };
        let method = span(method.len(), 1);
        let target_span = span(target.len(), "HTTP/1.1\r\n".len() + 1);
        let path = Span {
            start: target_span.start,
            end: target_span.start + target.split('?').next().unwrap_or_default().len(),
        };
        let headers = headers
            .iter()
            .map(|(name, value)| (span(name.len(), 1), span(value.len(), 2)))
            .collect();
        RequestHead {
            text,
            method,
            path,
            headers,
        }
    }

    fn part(&self, span: Span) -> &str {
        // Always there, on character boundaries (see `Span::of`).
        self.text.get(span.start..span.end).unwrap_or_default()
    }

    /// The method, case as sent (methods are case-sensitive).
    pub(crate) fn method(&self) -> &str {
        self.part(self.method)
    }

    /// The target without its `?query`, which routing ignores.
    pub(crate) fn path(&self) -> &str {
        self.part(self.path)
    }

    /// The headers in order: name as sent, value trimmed of spaces and tabs.
    pub(crate) fn headers(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.headers
            .iter()
            .map(|&(name, value)| (self.part(name), self.part(value)))
    }

    /// All values of a header, in order; names match ignoring ASCII case, as
    /// HTTP requires.
    #[cfg(test)]
    pub(crate) fn header_values(&self, name: &str) -> Vec<&str> {
        self.values(name).collect()
    }

    /// Whether a header was sent once (and its value), not at all, or more
    /// than once: the gate's "exactly one" rules, names matched ignoring
    /// ASCII case.
    pub(crate) fn header(&self, name: &str) -> Header<'_> {
        let mut values = self.values(name);
        match (values.next(), values.next()) {
            (None, _) => Header::Absent,
            (Some(one), None) => Header::One(one),
            (Some(_), Some(_)) => Header::Repeated,
        }
    }

    fn values<'s, 'n>(&'s self, name: &'n str) -> impl Iterator<Item = &'s str> + use<'s, 'n> {
        self.headers()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// The announced body length; `None` when absent (or, on a head not made
    /// by [`HeadReader`], when not exactly one valid value).
    pub(crate) fn content_length(&self) -> Option<u64> {
        match self.header("content-length") {
            Header::One(one) if is_all_digits(one) => one.parse().ok(),
            _ => None,
        }
    }

    /// Whether the client waits for `100 Continue` before sending its body,
    /// which the listener sends only once gate, route and method passed.
    pub(crate) fn expects_continue(&self) -> bool {
        self.values("expect")
            .any(|v| v.eq_ignore_ascii_case("100-continue"))
    }
}

impl fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers().map(|(n, _)| n).collect();
        f.debug_struct("RequestHead")
            .field("method", &self.method())
            .field("path", &self.path())
            .field("header_names", &names)
            .finish_non_exhaustive()
    }
}

/// Why a head was refused; each maps to one status of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HeadError {
    /// Bare CR/LF, malformed line, bad or repeated Content-Length: 400.
    BadRequest,
    /// Transfer-Encoding, or POST without Content-Length: 411.
    LengthRequired,
    /// Content-Length over [`MAX_BODY`] or beyond a `u64`: 413.
    PayloadTooLarge,
    /// No CRLFCRLF within [`MAX_HEAD`] bytes: 431.
    HeaderTooLarge,
}

impl HeadError {
    /// The status the client is answered with (empty body); the gate's
    /// [`Refusal`](super::gate::Refusal) carries the same mapping at run time.
    #[cfg(test)]
    pub(crate) fn status(self) -> u16 {
        match self {
            HeadError::BadRequest => 400,
            HeadError::LengthRequired => 411,
            HeadError::PayloadTooLarge => 413,
            HeadError::HeaderTooLarge => 431,
        }
    }
}

/// Accumulates bytes until a complete head, judging them as they arrive so a
/// bad or oversized head is refused without waiting for the head deadline.
/// `Debug` shows only counts: the buffered bytes may hold the token.
#[derive(Default)]
pub(crate) struct HeadReader {
    buf: Vec<u8>,
    /// Bytes before this index have been checked for bare CR/LF.
    scanned: usize,
    /// Set once an error was returned; later pushes repeat it.
    failed: Option<HeadError>,
}

impl HeadReader {
    /// An empty reader for a fresh connection.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feed the bytes read so far; Ok(None) = need more; Ok(Some(head,
    /// leftover)) where leftover are the bytes after the head (the start of
    /// the body). After a head is returned the reader is empty again; after
    /// an error every later push returns the same error.
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
    ) -> Result<Option<(RequestHead, Vec<u8>)>, HeadError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        self.buf.extend_from_slice(bytes);
        let outcome = self.advance();
        if let Err(err) = outcome {
            self.failed = Some(err);
            self.buf = Vec::new();
        }
        outcome
    }

    fn advance(&mut self) -> Result<Option<(RequestHead, Vec<u8>)>, HeadError> {
        match self.scan()? {
            Some(end) => {
                let leftover = self.buf.split_off(end);
                let head = std::mem::take(&mut self.buf);
                self.scanned = 0;
                Ok(Some((parse_complete(head)?, leftover)))
            }
            None if self.buf.len() > MAX_HEAD => Err(HeadError::HeaderTooLarge),
            None => Ok(None),
        }
    }

    /// Checks the unscanned bytes within the head limit for bare CR/LF and
    /// returns the head's length once its CRLFCRLF is seen. A CR whose next
    /// byte has not arrived yet is left for the next push.
    fn scan(&mut self) -> Result<Option<usize>, HeadError> {
        let limit = self.buf.len().min(MAX_HEAD);
        while self.scanned < limit {
            // Only CR and LF need looking at: skip straight to the next one.
            let Some(offset) = memchr::memchr2(b'\r', b'\n', &self.buf[self.scanned..limit]) else {
                self.scanned = limit;
                break;
            };
            let i = self.scanned + offset;
            self.scanned = i;
            match self.buf[i] {
                b'\r' => match self.buf.get(i + 1) {
                    None => return Ok(None),
                    Some(b'\n') => {}
                    Some(_) => return Err(HeadError::BadRequest),
                },
                // Every earlier LF was checked to follow a CR, so LF CR LF
                // before this one means the blank line that ends the head.
                b'\n' if i >= 3 && &self.buf[i - 2..i] == b"\n\r" => return Ok(Some(i + 1)),
                b'\n' if i == 0 || self.buf[i - 1] != b'\r' => return Err(HeadError::BadRequest),
                _ => {}
            }
            self.scanned += 1;
        }
        Ok(None)
    }
}

impl fmt::Debug for HeadReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadReader")
            .field("buffered", &self.buf.len())
            .field("scanned", &self.scanned)
            .field("failed", &self.failed)
            .finish()
    }
}

/// Parses a complete head (ending in CRLFCRLF, no bare CR/LF) and applies the
/// framing rules in 400, 411, 413 order.
fn parse_complete(head: Vec<u8>) -> Result<RequestHead, HeadError> {
    // httparse skips empty lines before the request line; the contract does not.
    if head.starts_with(b"\r\n") {
        return Err(HeadError::BadRequest);
    }
    // The names and the method are tokens and httparse checks the target is
    // UTF-8, so the whole head is UTF-8 exactly when every value is.
    let text = String::from_utf8(head).map_err(|_| HeadError::BadRequest)?;
    // Every LF was checked to follow a CR, so LFs count the lines; the
    // header slots are on the stack unless there are more than a request
    // usually has.
    let line_count = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    let mut on_stack = [httparse::EMPTY_HEADER; STACK_SLOTS];
    let mut on_heap = Vec::new();
    let slots = if line_count <= STACK_SLOTS {
        &mut on_stack[..line_count]
    } else {
        on_heap.resize(line_count, httparse::EMPTY_HEADER);
        &mut on_heap[..]
    };
    let mut req = httparse::Request::new(slots);
    match req.parse(text.as_bytes()) {
        Ok(httparse::Status::Complete(n)) if n == text.len() => {}
        _ => return Err(HeadError::BadRequest),
    }
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Err(HeadError::BadRequest);
    };
    let mut headers = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        headers.push((
            Span::of(text.as_bytes(), h.name.as_bytes()),
            Span::of(text.as_bytes(), trim_blanks(h.value)),
        ));
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let (method, path) = (
        Span::of(text.as_bytes(), method.as_bytes()),
        Span::of(text.as_bytes(), path.as_bytes()),
    );
    let head = RequestHead {
        text,
        method,
        path,
        headers,
    };
    check_framing(&head)?;
    Ok(head)
}

/// Header slots kept on the stack while a head is parsed: more than the
/// lines of any request Claude Code sends.
const STACK_SLOTS: usize = 32;

/// The body-framing rules: only a single decimal Content-Length is accepted.
fn check_framing(head: &RequestHead) -> Result<(), HeadError> {
    let announced = match head.header("content-length") {
        Header::Absent => None,
        Header::One(one) if is_all_digits(one) => Some(one),
        Header::One(_) | Header::Repeated => return Err(HeadError::BadRequest),
    };
    if head.header("transfer-encoding") != Header::Absent {
        return Err(HeadError::LengthRequired);
    }
    let Some(announced) = announced else {
        return match head.method() {
            "POST" => Err(HeadError::LengthRequired),
            _ => Ok(()),
        };
    };
    // All digits, so a failed parse can only mean it overflows a u64.
    match announced.parse::<u64>() {
        Ok(n) if n <= MAX_BODY => Ok(()),
        _ => Err(HeadError::PayloadTooLarge),
    }
}

/// `value` without the spaces and tabs at its ends.
fn trim_blanks(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

fn is_all_digits(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests;
