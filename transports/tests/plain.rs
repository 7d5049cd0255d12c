//! Plain TCP connections to a listener on 127.0.0.1.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::ErrorKind;

use common::config;
use rete_transports::{connect, ConnectError, MAX_LINE_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::test]
async fn lines_with_every_ending_latin1_and_an_overlong_line() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut payload = Vec::new();
    payload.extend_from_slice(b"crlf\r\nlf\ncr\r");
    payload.extend_from_slice(b"caf\xe9\r\n");
    payload.extend_from_slice("utf8 \u{263a}\r\n".as_bytes());
    payload.extend(std::iter::repeat_n(b'x', MAX_LINE_LEN * 3));
    payload.extend_from_slice(b"\r\nafter overlong\r\nno terminator at eof");
    let server = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        // Small pieces, so lines and terminators straddle reads.
        for piece in payload.chunks(1000) {
            tcp.write_all(piece).await.unwrap();
            tcp.flush().await.unwrap();
        }
        tcp.shutdown().await.unwrap();
        let mut got = Vec::new();
        tcp.read_to_end(&mut got).await.unwrap();
        got
    });

    let mut conn = connect(&config("127.0.0.1", port, false)).await.unwrap();
    assert!(conn.tls.is_none());
    let mut lines = Vec::new();
    while let Some(line) = conn.reader.next_line().await.unwrap() {
        lines.push(line);
    }
    assert_eq!(
        lines,
        [
            "crlf",
            "lf",
            "cr",
            "caf\u{e9}",
            "utf8 \u{263a}",
            "after overlong",
            "no terminator at eof"
        ]
    );
    assert_eq!(conn.reader.overlong_dropped(), 1);
    // EOF stays EOF.
    assert_eq!(conn.reader.next_line().await.unwrap(), None);

    conn.writer.send_line("QUIT :bye").await.unwrap();
    assert_eq!(
        conn.writer
            .send_line("PRIVMSG #a :x\r\nQUIT")
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    conn.writer.shutdown().await.unwrap();
    assert_eq!(server.await.unwrap(), b"QUIT :bye\r\n");
}

#[tokio::test]
async fn reader_and_writer_work_from_separate_tasks() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // An echo server: whatever the client sends comes back.
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let (mut read, mut write) = tcp.into_split();
        tokio::io::copy(&mut read, &mut write).await.unwrap();
        write.shutdown().await.unwrap();
    });

    let conn = connect(&config("127.0.0.1", port, false)).await.unwrap();
    let mut reader = conn.reader;
    let mut writer = conn.writer;
    let received = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            got.push(line);
        }
        got
    });
    let sent = tokio::spawn(async move {
        for i in 0..100 {
            writer.send_line(&format!("PRIVMSG #c :{i}")).await.unwrap();
        }
        writer.shutdown().await.unwrap();
    });
    sent.await.unwrap();
    let got = received.await.unwrap();
    let want: Vec<String> = (0..100).map(|i| format!("PRIVMSG #c :{i}")).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn closed_port_is_a_clear_io_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);

    let err = connect(&config("127.0.0.1", port, false))
        .await
        .unwrap_err();
    match &err {
        ConnectError::Io(io) => assert_eq!(io.kind(), ErrorKind::ConnectionRefused),
        other => panic!("expected an I/O error, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.starts_with("connection failed: "), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
}

#[tokio::test]
async fn unresolvable_host_is_a_resolve_error() {
    // ".invalid" is reserved and never resolves (RFC 6761).
    let err = connect(&config("no-such-host.invalid", 6667, false))
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::Resolve(_)), "{err:?}");
    assert!(err.to_string().contains("no-such-host.invalid"), "{err}");
}
