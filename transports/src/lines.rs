//! Splitting a byte stream into IRC lines, and writing lines back.
//!
//! Servers in the wild end lines with CRLF, bare LF or (rarely) bare CR, and some still send legacy 8-bit text;
//! the reader accepts all of these so one misbehaving server or user cannot wedge the session.

use std::fmt;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

/// Longest line accepted, without its terminator: 8191 bytes of IRCv3 message tags plus the classic 512-byte message.
pub const MAX_LINE_LEN: usize = 8191 + 512;

/// How much room to make in the read buffer before each read; about one TLS record.
const READ_CHUNK: usize = 16 * 1024;

/// Decoder for IRC lines: splits on CR or LF, skips the empty lines this produces (an IRC line is never empty),
/// and drops overlong lines instead of failing, so memory stays bounded whatever the peer sends.
#[derive(Debug, Default)]
pub(crate) struct IrcLineCodec {
    /// True while the bytes being received belong to a line already known to be too long.
    discarding: bool,
    /// How many overlong lines were dropped so far.
    overlong_dropped: u64,
}

impl IrcLineCodec {
    /// Number of overlong lines dropped so far; the session reports it rather than treating it as fatal.
    pub(crate) fn overlong_dropped(&self) -> u64 {
        self.overlong_dropped
    }

    fn count_dropped(&mut self) {
        self.overlong_dropped += 1;
        tracing::warn!(
            max = MAX_LINE_LEN,
            "dropping an overlong line from the server"
        );
    }
}

impl Decoder for IrcLineCodec {
    type Item = String;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<String>> {
        loop {
            let Some(end) = buf.iter().position(|&b| b == b'\r' || b == b'\n') else {
                if self.discarding {
                    buf.clear();
                } else if buf.len() > MAX_LINE_LEN {
                    self.count_dropped();
                    self.discarding = true;
                    buf.clear();
                }
                return Ok(None);
            };
            let line = buf.split_to(end);
            buf.advance(1);
            if self.discarding {
                self.discarding = false;
                continue;
            }
            if line.len() > MAX_LINE_LEN {
                self.count_dropped();
                continue;
            }
            if !line.is_empty() {
                return Ok(Some(decode_text(&line)));
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<String>> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        // A last line without terminator is still a line; a discarded tail is not.
        let rest = buf.split();
        if self.discarding || rest.is_empty() {
            self.discarding = false;
            return Ok(None);
        }
        Ok(Some(decode_text(&rest)))
    }
}

/// Decodes UTF-8, falling back to Latin-1 (each byte one char) so legacy 8-bit text stays readable and lossless.
fn decode_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// The receiving half of a connection, yielding one IRC line at a time.
pub struct LineReader {
    stream: Box<dyn AsyncRead + Send + Unpin>,
    buf: BytesMut,
    codec: IrcLineCodec,
    eof: bool,
}

impl LineReader {
    /// Wraps any byte stream; `connect` uses it for TCP and TLS, tests can hand it an in-memory pipe.
    pub fn new(stream: impl AsyncRead + Send + Unpin + 'static) -> Self {
        Self {
            stream: Box::new(stream),
            buf: BytesMut::new(),
            codec: IrcLineCodec::default(),
            eof: false,
        }
    }

    /// Next line without its CR/LF. Invalid UTF-8 is decoded as Latin-1 (each byte a char). Lines longer than
    /// 8191 + 512 bytes are discarded (counted), not fatal; empty lines are skipped. `Ok(None)` at clean EOF.
    ///
    /// Cancel-safe: all state lives in `self`, so it can sit in a `tokio::select!` next to other events.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        loop {
            if self.eof {
                return self.codec.decode_eof(&mut self.buf);
            }
            if let Some(line) = self.codec.decode(&mut self.buf)? {
                return Ok(Some(line));
            }
            self.buf.reserve(READ_CHUNK);
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }

    /// Number of overlong lines dropped so far.
    pub fn overlong_dropped(&self) -> u64 {
        self.codec.overlong_dropped()
    }
}

impl fmt::Debug for LineReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineReader")
            .field("buffered", &self.buf.len())
            .field("codec", &self.codec)
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

/// The sending half of a connection; one line per call, flushed at once so commands are not held back.
pub struct LineWriter {
    stream: Box<dyn AsyncWrite + Send + Unpin>,
}

impl LineWriter {
    /// Wraps any byte sink; `connect` uses it for TCP and TLS, tests can hand it an in-memory pipe.
    pub fn new(stream: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self {
            stream: Box::new(stream),
        }
    }

    /// Writes line + "\r\n" and flushes. Refuses (`InvalidInput`) a line containing CR, LF or NUL, because those
    /// would let one string smuggle a second command to the server.
    pub async fn send_line(&mut self, line: &str) -> io::Result<()> {
        if line.bytes().any(|b| matches!(b, b'\r' | b'\n' | b'\0')) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an IRC line must not contain CR, LF or NUL",
            ));
        }
        let mut framed = Vec::with_capacity(line.len() + 2);
        framed.extend_from_slice(line.as_bytes());
        framed.extend_from_slice(b"\r\n");
        // One write for the whole line, so TLS sends it in one record.
        self.stream.write_all(&framed).await?;
        self.stream.flush().await
    }

    /// Closes the sending side (TLS close_notify, then TCP FIN) so the server sees an orderly end.
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.stream.shutdown().await
    }
}

impl fmt::Debug for LineWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineWriter").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut IrcLineCodec, input: &[u8]) -> Vec<String> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(line) = codec.decode(&mut buf).unwrap_or(None) {
            out.push(line);
        }
        while let Some(line) = codec.decode_eof(&mut buf).unwrap_or(None) {
            out.push(line);
        }
        out
    }

    #[test]
    fn splits_on_any_terminator_and_skips_empty_lines() {
        let mut codec = IrcLineCodec::default();
        let lines = decode_all(&mut codec, b"a\r\nb\nc\rd\r\n\r\ntail");
        assert_eq!(lines, ["a", "b", "c", "d", "tail"]);
    }

    #[test]
    fn crlf_split_across_reads_gives_one_line() {
        let mut codec = IrcLineCodec::default();
        let mut buf = BytesMut::from(&b"PING :x\r"[..]);
        assert_eq!(
            codec.decode(&mut buf).ok().flatten().as_deref(),
            Some("PING :x")
        );
        buf.extend_from_slice(b"\nPONG\r\n");
        assert_eq!(
            codec.decode(&mut buf).ok().flatten().as_deref(),
            Some("PONG")
        );
        assert_eq!(codec.decode(&mut buf).ok().flatten(), None);
    }

    #[test]
    fn latin1_fallback_keeps_every_byte() {
        let mut codec = IrcLineCodec::default();
        let lines = decode_all(&mut codec, b"caf\xe9 \xff\n\xc3\xa9\n");
        assert_eq!(lines, ["caf\u{e9} \u{ff}", "\u{e9}"]);
    }

    #[test]
    fn line_of_exactly_max_len_is_kept_one_more_is_dropped() {
        let mut codec = IrcLineCodec::default();
        let mut input = vec![b'x'; MAX_LINE_LEN];
        input.extend_from_slice(b"\r\n");
        input.extend(std::iter::repeat_n(b'y', MAX_LINE_LEN + 1));
        input.extend_from_slice(b"\r\nnext\r\n");
        let lines = decode_all(&mut codec, &input);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_LINE_LEN);
        assert_eq!(lines[1], "next");
        assert_eq!(codec.overlong_dropped(), 1);
    }

    #[test]
    fn overlong_line_arriving_in_pieces_is_dropped_with_bounded_buffer() {
        let mut codec = IrcLineCodec::default();
        let mut buf = BytesMut::new();
        for _ in 0..10 {
            buf.extend_from_slice(&[b'z'; 4096]);
            assert_eq!(codec.decode(&mut buf).ok().flatten(), None);
            assert!(buf.len() <= MAX_LINE_LEN + 4096);
        }
        buf.extend_from_slice(b"zzz\nok\n");
        assert_eq!(codec.decode(&mut buf).ok().flatten().as_deref(), Some("ok"));
        assert_eq!(codec.overlong_dropped(), 1);
    }

    #[test]
    fn unterminated_overlong_tail_at_eof_is_not_a_line() {
        let mut codec = IrcLineCodec::default();
        let input = vec![b'q'; MAX_LINE_LEN + 10];
        assert!(decode_all(&mut codec, &input).is_empty());
        assert_eq!(codec.overlong_dropped(), 1);
    }

    #[tokio::test]
    async fn writer_refuses_embedded_terminators_and_nul() {
        let (client, mut server) = tokio::io::duplex(1024);
        let mut writer = LineWriter::new(client);
        for bad in ["a\rb", "a\nb", "a\0b"] {
            let err = writer.send_line(bad).await.err().map(|e| e.kind());
            assert_eq!(err, Some(io::ErrorKind::InvalidInput), "{bad:?}");
        }
        writer.send_line("PRIVMSG #c :hi").await.ok();
        writer.shutdown().await.ok();
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.ok();
        assert_eq!(got, b"PRIVMSG #c :hi\r\n");
    }
}
