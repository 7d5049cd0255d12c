//! The Linux peer check: who owns the other end of a loopback connection.
//!
//! The port is reachable by every local process, so on Linux reTerm also
//! refuses, unanswered, any client whose socket does not belong to its own
//! user. The kernel lists every TCP socket with its owner in /proc/net/tcp
//! and /proc/net/tcp6; the client's socket is the row whose local end is the
//! client's address and whose remote end is ours. The check fails closed:
//! anything it cannot establish for certain is [`PeerCheck::Unchecked`],
//! which the listener refuses like another user.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `st` of a socket that is closing; it no longer belongs to anyone's client.
pub const TCP_TIME_WAIT: u8 = 0x06;
/// `st` of a connection not yet accepted; never the client's own socket.
pub const TCP_SYN_RECV: u8 = 0x03;

/// One row of /proc/net/tcp or /proc/net/tcp6, the fields the check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRow {
    /// The socket's own address.
    pub local: SocketAddr,
    /// The address it is connected to (all zeros for a listener).
    pub remote: SocketAddr,
    /// The kernel's TCP state number (`st`, hex in the table).
    pub state: u8,
    /// The user that owns the socket.
    pub uid: u32,
    /// The socket's inode; 0 for sockets no process holds any more.
    pub inode: u64,
}

/// The verdict on one connection's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerCheck {
    /// Exactly one live client socket, owned by our user: serve it.
    SameUser,
    /// Exactly one live client socket, owned by someone else: refuse.
    OtherUser,
    /// No row, several live candidates, or no table: refuse (fail closed).
    Unchecked,
}

/// Parses the text of /proc/net/tcp or /proc/net/tcp6. Addresses are hex
/// 32-bit words in the kernel's (host) byte order, ports hex in network
/// order. The heading and any line that does not parse are skipped; a row
/// skipped can only make the client unfound, so the check stays closed.
pub fn parse_proc_net_tcp(text: &str) -> Vec<TcpRow> {
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

/// An address as compared: an IPv4-mapped IPv6 address (a dual-stack client
/// socket) is the IPv4 address it carries; scope and flow are ignored.
fn canonical(addr: SocketAddr) -> (IpAddr, u16) {
    let ip = match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    (ip, addr.port())
}

/// Finds the client's socket (local = `client`, remote = `server`), not
/// counting TIME_WAIT or SYN_RECV rows, and counting rows for the same socket
/// (same inode and owner, or identical rows) once. Exactly one live socket
/// decides by its owner; none or several is [`PeerCheck::Unchecked`].
pub fn judge_peer(
    rows: &[TcpRow],
    client: SocketAddr,
    server: SocketAddr,
    our_uid: u32,
) -> PeerCheck {
    let (want_local, want_remote) = (canonical(client), canonical(server));
    let mut live: Vec<&TcpRow> = Vec::new();
    let candidates = rows.iter().filter(|r| {
        r.state != TCP_TIME_WAIT
            && r.state != TCP_SYN_RECV
            && canonical(r.local) == want_local
            && canonical(r.remote) == want_remote
    });
    for row in candidates {
        if !live.iter().any(|seen| same_socket(seen, row)) {
            live.push(row);
        }
    }
    match live.as_slice() {
        [one] if one.uid == our_uid => PeerCheck::SameUser,
        [_] => PeerCheck::OtherUser,
        _ => PeerCheck::Unchecked,
    }
}

/// Rows for one socket listed twice. Inode 0 (an orphaned socket) identifies
/// nothing, so such rows are the same only when identical.
fn same_socket(a: &TcpRow, b: &TcpRow) -> bool {
    (a.inode != 0 && a.inode == b.inode && a.uid == b.uid) || a == b
}

/// Reads the kernel's tables and judges the client. An unreadable
/// /proc/net/tcp is [`PeerCheck::Unchecked`]; so is an unreadable
/// /proc/net/tcp6, except when it does not exist (a kernel without IPv6),
/// since then no client socket can be listed there.
pub fn check_peer(client: SocketAddr, server: SocketAddr, our_uid: u32) -> PeerCheck {
    let tcp = std::fs::read_to_string("/proc/net/tcp");
    let tcp6 = std::fs::read_to_string("/proc/net/tcp6");
    judge_tables(tcp, tcp6, client, server, our_uid)
}

fn judge_tables(
    tcp: io::Result<String>,
    tcp6: io::Result<String>,
    client: SocketAddr,
    server: SocketAddr,
    our_uid: u32,
) -> PeerCheck {
    let Ok(tcp) = tcp else {
        return PeerCheck::Unchecked;
    };
    let tcp6 = match tcp6 {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
        Err(_) => return PeerCheck::Unchecked,
    };
    let mut rows = parse_proc_net_tcp(&tcp);
    rows.extend(parse_proc_net_tcp(&tcp6));
    judge_peer(&rows, client, server, our_uid)
}

#[cfg(test)]
mod tests;
