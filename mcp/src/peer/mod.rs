//! The Linux peer check: who owns the other end of a loopback connection.
//!
//! The port is reachable by every local process, so on Linux reTerm also
//! refuses, unanswered, any client whose socket does not belong to its own
//! user. The client's socket is the one whose local end is the client's
//! address and whose remote end is ours; the kernel tells its owner.
//!
//! Two sources, one set of rules: the kernel's sock_diag netlink interface
//! answers an exact lookup of that socket in microseconds (`sock_diag.rs`);
//! /proc/net/tcp and /proc/net/tcp6 list every socket but cost milliseconds
//! to read on a machine with a large socket hash (`proc_table.rs`). Either
//! way the rows found go through [`judge_peer`]. The check fails closed:
//! anything it cannot establish for certain is [`PeerCheck::Unchecked`],
//! which the listener refuses like another user.

mod proc_table;
mod sock_diag;

use std::net::{IpAddr, SocketAddr};

/// `st` of a socket that is closing; it no longer belongs to anyone's client.
pub(crate) const TCP_TIME_WAIT: u8 = 0x06;
/// `st` of a connection not yet accepted; never the client's own socket.
pub(crate) const TCP_SYN_RECV: u8 = 0x03;

/// One socket as the kernel lists it, the fields the check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TcpRow {
    /// The socket's own address.
    pub(crate) local: SocketAddr,
    /// The address it is connected to (all zeros for a listener).
    pub(crate) remote: SocketAddr,
    /// The kernel's TCP state number (`st`, hex in the table).
    pub(crate) state: u8,
    /// The user that owns the socket.
    pub(crate) uid: u32,
    /// The socket's inode; 0 for sockets no process holds any more.
    pub(crate) inode: u64,
}

/// The verdict on one connection's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerCheck {
    /// Exactly one live client socket, owned by our user: serve it.
    SameUser,
    /// Exactly one live client socket, owned by someone else: refuse.
    OtherUser,
    /// No row, several live candidates, or no table: refuse (fail closed).
    Unchecked,
}

/// Finds the client's socket (local = `client`, remote = `server`), not
/// counting TIME_WAIT or SYN_RECV rows, and counting rows for the same socket
/// (same inode and owner, or identical rows) once. Exactly one live socket
/// decides by its owner; none or several is [`PeerCheck::Unchecked`].
pub(crate) fn judge_peer(
    rows: &[TcpRow],
    client: SocketAddr,
    server: SocketAddr,
    our_uid: u32,
) -> PeerCheck {
    match live_sockets(rows, client, server).as_slice() {
        [one] if one.uid == our_uid => PeerCheck::SameUser,
        [_] => PeerCheck::OtherUser,
        _ => PeerCheck::Unchecked,
    }
}

/// Judges the client's socket: first by an exact sock_diag lookup, else
/// from /proc.
///
/// /proc is read when netlink is unavailable (no socket, refused, an answer
/// that does not parse) and also when the lookup finds no live socket for
/// the client: the kernel answers a lookup with the first entry for the
/// address pair, which could be a closing one, and /proc lists them all. That
/// second look can only refuse or confirm one socket by the same rules, so
/// it never serves a client the lookup could have refused, and it costs the
/// slow read only for connections that are refused anyway or already gone.
pub(crate) fn check_peer(client: SocketAddr, server: SocketAddr, our_uid: u32) -> PeerCheck {
    match sock_diag::client_rows(client, server) {
        Ok(rows) if has_live_socket(&rows, client, server) => {
            judge_peer(&rows, client, server, our_uid)
        }
        Ok(_) => proc_table::check_peer_in_proc(client, server, our_uid),
        Err(err) => {
            tracing::debug!(error = %err, "sock_diag lookup unavailable; reading /proc");
            proc_table::check_peer_in_proc(client, server, our_uid)
        }
    }
}

/// True when `rows` hold at least one live socket for the client, so a
/// source listed after them need not be consulted.
fn has_live_socket(rows: &[TcpRow], client: SocketAddr, server: SocketAddr) -> bool {
    let (want_local, want_remote) = (canonical(client), canonical(server));
    rows.iter()
        .any(|r| is_live_client_row(r, want_local, want_remote))
}

/// The distinct live sockets among `rows` whose local end is the client and
/// whose remote end is the server.
fn live_sockets(rows: &[TcpRow], client: SocketAddr, server: SocketAddr) -> Vec<&TcpRow> {
    let (want_local, want_remote) = (canonical(client), canonical(server));
    let mut live: Vec<&TcpRow> = Vec::new();
    let candidates = rows
        .iter()
        .filter(|r| is_live_client_row(r, want_local, want_remote));
    for row in candidates {
        if !live.iter().any(|seen| same_socket(seen, row)) {
            live.push(row);
        }
    }
    live
}

/// A row for the client's socket (local end the client, remote end the
/// server) that is neither closing nor not yet accepted.
fn is_live_client_row(row: &TcpRow, want_local: (IpAddr, u16), want_remote: (IpAddr, u16)) -> bool {
    row.state != TCP_TIME_WAIT
        && row.state != TCP_SYN_RECV
        && canonical(row.local) == want_local
        && canonical(row.remote) == want_remote
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

/// Rows for one socket listed twice. Inode 0 (an orphaned socket) identifies
/// nothing, so such rows are the same only when identical.
fn same_socket(a: &TcpRow, b: &TcpRow) -> bool {
    (a.inode != 0 && a.inode == b.inode && a.uid == b.uid) || a == b
}

#[cfg(test)]
mod tests;
