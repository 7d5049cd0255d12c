//! TLS connections against a real rustls server on 127.0.0.1 with throwaway certificates.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{
    client_ca_and_cert, config, self_signed_ca_server, self_signed_server, server_config,
    spawn_tls_server,
};
use rete_transports::{connect, ConnectError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Formats a lower-hex fingerprint the way users often paste it: upper case, colon-separated.
fn colon_upper(hex: &str) -> String {
    hex.as_bytes()
        .chunks(2)
        .map(|pair| String::from_utf8_lossy(pair).to_uppercase())
        .collect::<Vec<_>>()
        .join(":")
}

#[tokio::test]
async fn pinned_fingerprint_is_accepted_and_lines_flow_both_ways() {
    let server = self_signed_server();
    let (port, accepted) = spawn_tls_server(server_config(&server, None)).await;
    let mut cfg = config("localhost", port, true);
    cfg.tls_fingerprint = Some(colon_upper(&server.sha256_hex()));

    let mut conn = connect(&cfg).await.unwrap();
    let info = conn.tls.clone().unwrap();
    assert_eq!(info.peer_fingerprint_sha256, server.sha256_hex());
    assert_eq!(info.protocol, "TLSv1_3");
    assert!(info.cipher.starts_with("TLS13_"), "{}", info.cipher);
    assert_eq!(conn.peer.ip().to_string(), "127.0.0.1");

    let tls = accepted.await.unwrap().unwrap();
    // SNI carries the DNS name even though the name is not verified under a pin.
    assert_eq!(tls.get_ref().1.server_name(), Some("localhost"));
    let (server_read, mut server_write) = tokio::io::split(tls);

    // Client writes from one task while reading in another: the halves are independent.
    let mut writer = conn.writer;
    let sender = tokio::spawn(async move {
        writer.send_line("NICK rete").await.unwrap();
        writer.send_line("USER rete 0 * :Rete").await.unwrap();
        writer.shutdown().await.unwrap();
    });
    server_write
        .write_all(b":srv 001 rete :Welcome\r\nPING :123\r\n")
        .await
        .unwrap();
    assert_eq!(
        conn.reader.next_line().await.unwrap().as_deref(),
        Some(":srv 001 rete :Welcome")
    );
    assert_eq!(
        conn.reader.next_line().await.unwrap().as_deref(),
        Some("PING :123")
    );

    sender.await.unwrap();
    let mut lines = BufReader::new(server_read).lines();
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("NICK rete")
    );
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("USER rete 0 * :Rete")
    );
    // The client's shutdown ends the stream cleanly (close_notify).
    assert_eq!(lines.next_line().await.unwrap(), None);

    server_write.shutdown().await.unwrap();
    assert_eq!(conn.reader.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn wrong_fingerprint_is_refused_as_a_certificate_error() {
    let server = self_signed_server();
    let (port, accepted) = spawn_tls_server(server_config(&server, None)).await;
    let mut cfg = config("127.0.0.1", port, true);
    cfg.tls_fingerprint = Some("ab".repeat(32));

    let err = connect(&cfg).await.unwrap_err();
    match &err {
        ConnectError::Certificate(msg) => {
            assert!(msg.contains(&server.sha256_hex()), "{msg}");
            assert!(msg.contains("does not match"), "{msg}");
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }
    assert!(
        err.to_string().starts_with("server certificate refused:"),
        "{err}"
    );
    // The server saw the handshake fail too.
    assert!(accepted.await.unwrap().is_err());
}

#[tokio::test]
async fn malformed_fingerprint_fails_before_connecting() {
    let mut cfg = config("127.0.0.1", 1, true);
    cfg.tls_fingerprint = Some("not-hex".to_owned());
    let err = connect(&cfg).await.unwrap_err();
    assert!(matches!(err, ConnectError::Tls(_)), "{err:?}");
    assert!(err.to_string().contains("not-hex"), "{err}");
}

#[tokio::test]
async fn self_signed_without_pin_is_refused_by_system_roots() {
    let server = self_signed_server();
    let (port, _accepted) = spawn_tls_server(server_config(&server, None)).await;
    let cfg = config("localhost", port, true);

    let err = connect(&cfg).await.unwrap_err();
    match &err {
        ConnectError::Certificate(msg) => {
            assert!(msg.contains("not signed by an authority"), "{msg}")
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }
}

/// The usual self-signed certificate (made as an authority's) is refused with a hint at the fix, not webpki's
/// bare `CaUsedAsEndEntity` (issue 32, item 9); pinned, it is accepted.
#[tokio::test]
async fn a_self_signed_authority_certificate_is_refused_with_the_pin_named() {
    let server = self_signed_ca_server();
    let (port, _accepted) = spawn_tls_server(server_config(&server, None)).await;
    let mut cfg = config("localhost", port, true);
    match connect(&cfg).await.unwrap_err() {
        ConnectError::Certificate(msg) => {
            assert!(
                msg.contains("tls_fingerprint") && !msg.contains("CaUsedAsEndEntity"),
                "{msg}"
            )
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }
    let (port, _accepted) = spawn_tls_server(server_config(&server, None)).await;
    cfg.port = port;
    cfg.tls_fingerprint = Some(server.sha256_hex());
    connect(&cfg).await.unwrap();
}

#[tokio::test]
async fn server_requiring_client_auth_sees_the_certificate_from_the_pem_file() {
    let server = self_signed_server();
    let (ca, client) = client_ca_and_cert();
    let (port, accepted) = spawn_tls_server(server_config(&server, Some(&ca))).await;
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("client.pem");
    std::fs::write(&pem_path, &client.pem).unwrap();
    let mut cfg = config("127.0.0.1", port, true);
    cfg.tls_fingerprint = Some(server.sha256_hex());
    cfg.client_cert = Some(pem_path);

    let mut conn = connect(&cfg).await.unwrap();
    let tls = accepted.await.unwrap().unwrap();
    let seen = tls.get_ref().1.peer_certificates().unwrap();
    assert_eq!(seen.first(), Some(&client.cert));

    conn.writer.send_line("CAP LS 302").await.unwrap();
    let mut lines = BufReader::new(tls).lines();
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("CAP LS 302")
    );
}

#[tokio::test]
async fn server_requiring_client_auth_rejects_a_client_without_one() {
    let server = self_signed_server();
    let (ca, _client) = client_ca_and_cert();
    let (port, accepted) = spawn_tls_server(server_config(&server, Some(&ca))).await;
    let mut cfg = config("127.0.0.1", port, true);
    cfg.tls_fingerprint = Some(server.sha256_hex());

    // In TLS 1.3 the client may finish its side first; the refusal then arrives as the first read.
    match connect(&cfg).await {
        Err(err) => assert!(matches!(err, ConnectError::Tls(_)), "{err:?}"),
        Ok(mut conn) => assert!(conn.reader.next_line().await.is_err()),
    }
    assert!(accepted.await.unwrap().is_err());
}

#[tokio::test]
async fn unusable_client_certificate_files_are_client_cert_errors() {
    let server = self_signed_server();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let cert_only = dir.path().join("cert-only.pem");
    let first_key_line = server.pem.find("-----BEGIN PRIVATE KEY").unwrap();
    std::fs::write(&cert_only, &server.pem[..first_key_line]).unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "hello\n").unwrap();

    for (path, why) in [
        (missing, "No such file"),
        (cert_only, "no private key"),
        (garbage, "no certificate"),
    ] {
        let mut cfg = config("127.0.0.1", 1, true);
        cfg.tls_fingerprint = Some(server.sha256_hex());
        cfg.client_cert = Some(path.clone());
        let err = connect(&cfg).await.unwrap_err();
        match &err {
            ConnectError::ClientCert(msg) => {
                assert!(msg.contains(why), "{msg}");
                assert!(msg.contains(&path.display().to_string()), "{msg}");
            }
            other => panic!("expected a client certificate error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn handshake_that_never_completes_times_out() {
    // Accepts TCP but never answers the ClientHello.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let holder = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(tcp);
    });
    let mut cfg = config("127.0.0.1", port, true);
    cfg.tls_fingerprint = Some("00".repeat(32));
    cfg.connect_timeout = Duration::from_millis(200);

    let started = Instant::now();
    let err = connect(&cfg).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, ConnectError::Timeout), "{err:?}");
    assert_eq!(err.to_string(), "connection timed out");
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
    holder.abort();
}
