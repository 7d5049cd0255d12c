//! The /proc source: the kernel's whole TCP tables as text.
//!
//! The fallback when sock_diag cannot answer. Reading a table makes the
//! kernel walk its entire socket hash, about a millisecond or more on a
//! machine with much memory, so the IPv6 table is read only when the IPv4
//! one has no live socket for the client (a dual-stack client's socket is
//! AF_INET6 and listed only there).

use super::{has_live_socket, judge_peer, PeerCheck, TcpRow};
use std::io::{self, Read as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The IPv4 table: AF_INET sockets only.
pub(super) const TCP_TABLE: &str = "/proc/net/tcp";
/// The IPv6 table: AF_INET6 sockets, dual-stack ones included.
pub(super) const TCP6_TABLE: &str = "/proc/net/tcp6";

/// Room for a few hundred rows, so a table arrives in as few reads as the
/// kernel allows rather than in the small first reads of an unsized file.
const READ_CAPACITY: usize = 64 * 1024;

/// Judges the client from the /proc tables on this machine.
pub(super) fn check_peer_in_proc(
    client: SocketAddr,
    server: SocketAddr,
    our_uid: u32,
) -> PeerCheck {
    judge_tables(read_table, client, server, our_uid)
}

/// Reads one table in large chunks. /proc files report size 0, so
/// `fs::read_to_string` would start with small reads.
fn read_table(path: &str) -> io::Result<String> {
    let mut text = String::with_capacity(READ_CAPACITY);
    std::fs::File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// Judges the client from the tables `read` returns. An unreadable IPv4
/// table is [`PeerCheck::Unchecked`]. The IPv6 table is consulted only when
/// the IPv4 one has no live socket for the client; then an unreadable one
/// is [`PeerCheck::Unchecked`] too, except when it does not exist (a kernel
/// without IPv6), since then no client socket can be listed there.
pub(super) fn judge_tables(
    mut read: impl FnMut(&str) -> io::Result<String>,
    client: SocketAddr,
    server: SocketAddr,
    our_uid: u32,
) -> PeerCheck {
    let Ok(tcp) = read(TCP_TABLE) else {
        return PeerCheck::Unchecked;
    };
    let mut rows = parse_proc_net_tcp(&tcp);
    if !has_live_socket(&rows, client, server) {
        match read(TCP6_TABLE) {
            Ok(tcp6) => rows.extend(parse_proc_net_tcp(&tcp6)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(_) => return PeerCheck::Unchecked,
        }
    }
    judge_peer(&rows, client, server, our_uid)
}

/// Parses the text of /proc/net/tcp or /proc/net/tcp6. Addresses are hex
/// 32-bit words in the kernel's (host) byte order, ports hex in network
/// order. The heading and any line that does not parse are skipped; a row
/// skipped can only make the client unfound, so the check stays closed.
pub(crate) fn parse_proc_net_tcp(text: &str) -> Vec<TcpRow> {
    text.lines().filter_map(parse_row).collect()
}

fn parse_row(line: &str) -> Option<TcpRow> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [slot, local, remote, state, _queues, _timer, _retransmits, uid, _timeout, inode, ..] =
        fields.as_slice()
    else {
        return None;
    };
    let slot = slot.strip_suffix(':')?;
    if !is_digits(slot, 10) || !is_digits(state, 16) || !is_digits(uid, 10) || !is_digits(inode, 10)
    {
        return None;
    }
    Some(TcpRow {
        local: parse_endpoint(local)?,
        remote: parse_endpoint(remote)?,
        state: u8::from_str_radix(state, 16).ok()?,
        uid: uid.parse().ok()?,
        inode: inode.parse().ok()?,
    })
}

/// `0100007F:1CFE` (IPv4) or 32 hex digits `:` port (IPv6).
fn parse_endpoint(text: &str) -> Option<SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    if port.len() != 4 || !is_digits(port, 16) || !is_digits(addr, 16) {
        return None;
    }
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(addr)?.to_ne_bytes())),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_exact_mut(4).enumerate() {
                chunk.copy_from_slice(&word(addr.get(i * 8..i * 8 + 8)?)?.to_ne_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// One 32-bit word as the kernel printed it (`%08X` of the raw value).
fn word(hex: &str) -> Option<u32> {
    u32::from_str_radix(hex, 16).ok()
}

fn is_digits(text: &str, radix: u32) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_digit(radix))
}
