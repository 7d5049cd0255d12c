//! The sock_diag source: an exact lookup of the client's socket.
//!
//! One NETLINK_SOCK_DIAG request carrying the client's and the server's
//! address asks the kernel for that one TCP socket, and the answer is its
//! state, owner and inode, or "no such socket" (ENOENT). It costs a few
//! system calls and a hash lookup, where reading /proc walks every socket.
//! Anything unexpected is an error, so that the caller reads /proc instead.

use super::{canonical, has_live_socket, TcpRow};
use std::io;
use std::net::{IpAddr, SocketAddr};

/// The socket rows the kernel returns for the client's address pair.
///
/// An IPv4 client is looked up as AF_INET first; only if that finds no live
/// socket is it looked up again as AF_INET6 with IPv4-mapped addresses,
/// where a client on a dual-stack socket lives. A native IPv6 client is
/// looked up as AF_INET6 only. Rows are returned unjudged: the caller
/// applies the same rules as to /proc rows. `Ok` with no rows means the
/// kernel has no such socket.
pub(super) fn client_rows(client: SocketAddr, server: SocketAddr) -> io::Result<Vec<TcpRow>> {
    let lookups = lookups(client, server);
    let mut rows = Vec::new();
    if lookups.is_empty() {
        return Ok(rows);
    }
    netlink::with_diag(|diag| {
        for lookup in lookups {
            rows.extend(diag.find(&lookup)?);
            if has_live_socket(&rows, client, server) {
                break;
            }
        }
        Ok(rows)
    })
}

/// One exact lookup: the client's socket as the kernel would key it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lookup {
    /// The address family of the socket looked for.
    ipv6: bool,
    /// The socket's own end: the client.
    local: SocketAddr,
    /// Its peer: the server.
    remote: SocketAddr,
}

/// The lookups to make, in order. A pair mixing IPv4 and native IPv6 can
/// name no socket, so it needs none.
fn lookups(client: SocketAddr, server: SocketAddr) -> Vec<Lookup> {
    let ((client_ip, client_port), (server_ip, server_port)) =
        (canonical(client), canonical(server));
    match (client_ip, server_ip) {
        (IpAddr::V4(c), IpAddr::V4(s)) => vec![
            Lookup {
                ipv6: false,
                local: SocketAddr::new(c.into(), client_port),
                remote: SocketAddr::new(s.into(), server_port),
            },
            Lookup {
                ipv6: true,
                local: SocketAddr::new(c.to_ipv6_mapped().into(), client_port),
                remote: SocketAddr::new(s.to_ipv6_mapped().into(), server_port),
            },
        ],
        (IpAddr::V6(c), IpAddr::V6(s)) => vec![Lookup {
            ipv6: true,
            local: SocketAddr::new(c.into(), client_port),
            remote: SocketAddr::new(s.into(), server_port),
        }],
        _ => Vec::new(),
    }
}

#[cfg(target_os = "linux")]
mod netlink {
    use super::{Lookup, TcpRow};
    use netlink_packet_core::{
        NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload, Parseable, NLM_F_REQUEST,
    };
    use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
    use netlink_packet_sock_diag::inet::{
        ExtensionFlags, InetRequest, InetResponseHeader, SocketId, StateFlags,
    };
    use netlink_packet_sock_diag::SockDiagMessage;
    use netlink_packet_sock_diag::SOCK_DIAG_BY_FAMILY;
    use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NetlinkAddr};
    use std::cell::{Cell, RefCell};
    use std::io;
    use std::net::SocketAddr;

    /// A sock_diag socket connected to the kernel, and the sequence number
    /// its last request carried.
    pub(super) struct Diag {
        socket: Socket,
        sequence: Cell<u32>,
    }

    /// `INET_DIAG_NOCOOKIE`: match the socket by its addresses alone.
    const NO_COOKIE: [u8; 8] = [0xff; 8];
    /// An answer is one socket's header and a few small attributes, about a
    /// hundred bytes; a larger one is an error (`MSG_TRUNC`), so /proc is read
    /// instead. Kept under 1 KiB, which glibc's allocator serves from its
    /// per-thread cache, where a larger buffer cost a heap consolidation
    /// per connection.
    const ANSWER_CAPACITY: usize = 768;

    thread_local! {
        /// This thread's socket, kept between checks: opening, connecting
        /// and closing one per connection cost three system calls.
        static DIAG: RefCell<Option<Diag>> = const { RefCell::new(None) };
    }

    /// Runs `check` with this thread's socket, opening it first if needed.
    /// After an error the socket is closed, so that no answer left in it can
    /// be taken for the next request's, and the next check opens a new one.
    pub(super) fn with_diag<T>(check: impl FnOnce(&Diag) -> io::Result<T>) -> io::Result<T> {
        DIAG.with(|cell| {
            let mut slot = cell.borrow_mut();
            let diag = match slot.take() {
                Some(diag) => diag,
                None => Diag::open()?,
            };
            let outcome = check(&diag);
            if outcome.is_ok() {
                *slot = Some(diag);
            }
            outcome
        })
    }

    impl Diag {
        fn open() -> io::Result<Self> {
            let socket = Socket::new(NETLINK_SOCK_DIAG)?;
            socket.connect(&NetlinkAddr::new(0, 0))?;
            Ok(Self {
                socket,
                sequence: Cell::new(0),
            })
        }

        /// The socket the kernel finds for `lookup`, `None` if it has none.
        ///
        /// The kernel serves a sock_diag request while it is being sent, so
        /// the answer is already queued when `send` returns: it is read
        /// without waiting, and its absence is an error rather than a stall
        /// of the caller's thread. Each request carries a new sequence
        /// number and the answer must carry it too.
        pub(super) fn find(&self, lookup: &Lookup) -> io::Result<Option<TcpRow>> {
            let sequence = self.sequence.get().wrapping_add(1);
            self.sequence.set(sequence);
            self.socket.send(&request(lookup, sequence), 0)?;
            let mut answer = Vec::with_capacity(ANSWER_CAPACITY);
            let size = self
                .socket
                .recv(&mut answer, libc::MSG_DONTWAIT | libc::MSG_TRUNC)?;
            if size > answer.len() {
                return Err(malformed("the answer was larger than expected"));
            }
            parse_answer(&answer, sequence)
        }
    }

    /// The request for one socket: no dump flag, so the kernel looks the
    /// exact address pair up instead of listing every socket.
    fn request(lookup: &Lookup, sequence: u32) -> Vec<u8> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST;
        header.sequence_number = sequence;
        let inet = InetRequest {
            family: if lookup.ipv6 { AF_INET6 } else { AF_INET },
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: SocketId {
                source_port: lookup.local.port(),
                destination_port: lookup.remote.port(),
                source_address: lookup.local.ip(),
                destination_address: lookup.remote.ip(),
                interface_id: 0,
                cookie: NO_COOKIE,
            },
        };
        let mut message = NetlinkMessage::new(header, SockDiagMessage::InetRequest(inet).into());
        message.finalize();
        let mut bytes = vec![0; message.buffer_len()];
        message.serialize(&mut bytes);
        bytes
    }

    /// Reads the kernel's answer: exactly one message, ours, either the
    /// socket or ENOENT. Any other error the kernel reports, or anything
    /// else in the datagram, is an error.
    ///
    /// A socket's answer is read only as far as its fixed header, which
    /// holds every field the check uses: the attributes after it (shutdown
    /// state, cgroup, socket options, as the kernel chooses) are not parsed,
    /// where the crate's full message parse spent more than the rest of the
    /// check building them.
    fn parse_answer(datagram: &[u8], sequence: u32) -> io::Result<Option<TcpRow>> {
        let buffer =
            NetlinkBuffer::new_checked(datagram).map_err(|err| malformed(&err.to_string()))?;
        let length = buffer.length() as usize;
        if length.next_multiple_of(4) != datagram.len().next_multiple_of(4) {
            return Err(malformed("the answer is not exactly one message"));
        }
        if buffer.sequence_number() != sequence {
            return Err(malformed("the answer is not to our request"));
        }
        if buffer.message_type() == SOCK_DIAG_BY_FAMILY {
            let payload = buffer.payload();
            return match payload.first().copied() {
                Some(AF_INET | AF_INET6) => InetResponseHeader::parse(payload)
                    .map(|header| Some(row(&header)))
                    .map_err(|err| malformed(&err.to_string())),
                _ => Err(malformed("the answer is not an internet socket")),
            };
        }
        let message = NetlinkMessage::<SockDiagMessage>::deserialize(datagram)
            .map_err(|err| malformed(&err.to_string()))?;
        match message.payload {
            NetlinkPayload::Error(error) if error.raw_code() == -libc::ENOENT => Ok(None),
            NetlinkPayload::Error(error) if error.code.is_some() => Err(error.to_io()),
            _ => Err(malformed("the answer is neither a socket nor an error")),
        }
    }

    fn row(header: &InetResponseHeader) -> TcpRow {
        let id = &header.socket_id;
        TcpRow {
            local: SocketAddr::new(id.source_address, id.source_port),
            remote: SocketAddr::new(id.destination_address, id.destination_port),
            state: header.state,
            uid: header.uid,
            inode: u64::from(header.inode),
        }
    }

    fn malformed(what: &str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {what}"))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use netlink_packet_core::ErrorMessage;
        use std::num::NonZeroI32;

        const SEQUENCE: u32 = 7;

        /// A datagram holding one NLMSG_ERROR with `code` (0: an ACK).
        fn error_answer(code: i32, sequence: u32) -> Vec<u8> {
            let mut header = NetlinkHeader::default();
            header.sequence_number = sequence;
            let mut error = ErrorMessage::default();
            error.code = NonZeroI32::new(code);
            let mut message =
                NetlinkMessage::<SockDiagMessage>::new(header, NetlinkPayload::Error(error));
            message.finalize();
            let mut bytes = vec![0; message.buffer_len()];
            message.serialize(&mut bytes);
            bytes
        }

        /// A datagram holding one socket's answer, with attributes after its
        /// header as the kernel adds them.
        fn socket_answer(sequence: u32, family: u8) -> Vec<u8> {
            use netlink_packet_sock_diag::inet::{nlas::Nla, InetResponse};
            let mut header = NetlinkHeader::default();
            header.sequence_number = sequence;
            let v4 = |a: [u8; 4]| std::net::IpAddr::from(a);
            let response = InetResponse {
                header: InetResponseHeader {
                    family,
                    state: 1,
                    timer: None,
                    socket_id: SocketId {
                        source_port: 40_000,
                        destination_port: 7422,
                        source_address: v4([127, 0, 0, 1]),
                        destination_address: v4([127, 0, 0, 1]),
                        interface_id: 0,
                        cookie: [1; 8],
                    },
                    recv_queue: 0,
                    send_queue: 0,
                    uid: 1000,
                    inode: 4242,
                },
                nlas: [Nla::Shutdown(0), Nla::Congestion("cubic".to_owned())]
                    .into_iter()
                    .collect(),
            };
            let mut message = NetlinkMessage::new(
                header,
                SockDiagMessage::InetResponse(Box::new(response)).into(),
            );
            message.finalize();
            let mut bytes = vec![0; message.buffer_len()];
            message.serialize(&mut bytes);
            bytes
        }

        #[test]
        fn a_socket_is_read_from_its_header() {
            let answer = socket_answer(SEQUENCE, AF_INET);
            let row = parse_answer(&answer, SEQUENCE).unwrap().unwrap();
            assert_eq!(row.local, "127.0.0.1:40000".parse().unwrap());
            assert_eq!(row.remote, "127.0.0.1:7422".parse().unwrap());
            assert_eq!((row.state, row.uid, row.inode), (1, 1000, 4242));
            // Its header alone, the attributes cut off, is still not accepted
            // as a whole message.
            assert!(parse_answer(&answer[..answer.len() - 8], SEQUENCE).is_err());
            assert!(parse_answer(&socket_answer(SEQUENCE + 1, AF_INET), SEQUENCE).is_err());
        }

        #[test]
        fn a_socket_of_another_family_is_an_error() {
            let mut answer = socket_answer(SEQUENCE, AF_INET);
            answer[16] = libc::AF_UNIX as u8;
            assert!(parse_answer(&answer, SEQUENCE).is_err());
        }

        #[test]
        fn no_such_socket_is_no_row() {
            let answer = error_answer(-libc::ENOENT, SEQUENCE);
            assert_eq!(parse_answer(&answer, SEQUENCE).unwrap(), None);
        }

        #[test]
        fn other_kernel_errors_are_errors() {
            let answer = error_answer(-libc::EPERM, SEQUENCE);
            let err = parse_answer(&answer, SEQUENCE).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EPERM));
            assert!(
                parse_answer(&error_answer(0, SEQUENCE), SEQUENCE).is_err(),
                "an ACK"
            );
        }

        #[test]
        fn unexpected_datagrams_are_errors() {
            let other_request = error_answer(-libc::ENOENT, SEQUENCE + 1);
            assert!(parse_answer(&other_request, SEQUENCE).is_err());
            let mut two = error_answer(-libc::ENOENT, SEQUENCE);
            two.extend(error_answer(-libc::ENOENT, SEQUENCE));
            assert!(parse_answer(&two, SEQUENCE).is_err());
            let answer = error_answer(-libc::ENOENT, SEQUENCE);
            assert!(parse_answer(&answer[..answer.len() - 4], SEQUENCE).is_err());
            assert!(parse_answer(&[], SEQUENCE).is_err());
        }
    }
}

/// Elsewhere there is no sock_diag; the caller falls back to /proc.
#[cfg(not(target_os = "linux"))]
mod netlink {
    use super::{Lookup, TcpRow};
    use std::io;

    /// Stands in for the Linux socket; it cannot be opened.
    pub(super) struct Diag;

    /// There is no socket to run `check` with.
    pub(super) fn with_diag<T>(_check: impl FnOnce(&Diag) -> io::Result<T>) -> io::Result<T> {
        Err(io::ErrorKind::Unsupported.into())
    }

    impl Diag {
        pub(super) fn find(&self, _lookup: &Lookup) -> io::Result<Option<TcpRow>> {
            Err(io::ErrorKind::Unsupported.into())
        }
    }
}
