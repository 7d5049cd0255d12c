use super::proc_table::parse_proc_net_tcp;
use super::*;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Captured on the build machine with a loopback connection open:
/// listener 127.0.0.1:41061, client 127.0.0.1:50306 (inode 125756), a
/// second client from a dual-stack socket ::ffff:127.0.0.1:50314, plus
/// TIME_WAIT rows. All sockets were root's (uid 0).
const CAPTURED_TCP: &str = include_str!("../../testdata/proc_net_tcp.txt");
/// The matching /proc/net/tcp6: listener [::1]:46907, client [::1]:59764
/// (inode 125759), and the dual-stack client's socket (inode 125761).
const CAPTURED_TCP6: &str = include_str!("../../testdata/proc_net_tcp6.txt");

const ESTABLISHED: u8 = 0x01;
const FIN_WAIT2: u8 = 0x05;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn row(local: &str, remote: &str, state: u8, uid: u32, inode: u64) -> TcpRow {
    TcpRow {
        local: addr(local),
        remote: addr(remote),
        state,
        uid,
        inode,
    }
}

const CLIENT: &str = "127.0.0.1:50000";
const SERVER: &str = "127.0.0.1:7422";

fn judge(rows: &[TcpRow], our_uid: u32) -> PeerCheck {
    judge_peer(rows, addr(CLIENT), addr(SERVER), our_uid)
}

fn captured_rows() -> Vec<TcpRow> {
    let mut rows = parse_proc_net_tcp(CAPTURED_TCP);
    rows.extend(parse_proc_net_tcp(CAPTURED_TCP6));
    rows
}

fn our_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    // Real, effective, saved, fs: sockets are owned by the effective uid.
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[cfg(target_endian = "little")]
#[test]
fn parses_captured_ipv4_table() {
    let rows = parse_proc_net_tcp(CAPTURED_TCP);
    assert_eq!(rows.len(), 9, "the heading is skipped");
    assert_eq!(
        rows[0],
        row("127.0.0.1:41061", "0.0.0.0:0", 0x0A, 0, 125_755)
    );
    assert_eq!(rows[1].local, addr("0.0.0.0:2024"));
    assert_eq!(
        rows[3],
        row("127.0.0.1:43545", "127.0.0.1:40644", TCP_TIME_WAIT, 0, 0)
    );
    assert_eq!(
        rows[7],
        row(
            "127.0.0.1:50306",
            "127.0.0.1:41061",
            ESTABLISHED,
            0,
            125_756
        )
    );
}

#[cfg(target_endian = "little")]
#[test]
fn parses_captured_ipv6_table() {
    let rows = parse_proc_net_tcp(CAPTURED_TCP6);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], row("[::1]:46907", "[::]:0", 0x0A, 0, 125_758));
    assert_eq!(
        rows[1],
        row("[::1]:59764", "[::1]:46907", ESTABLISHED, 0, 125_759)
    );
    let mapped = row(
        "[::ffff:127.0.0.1]:50314",
        "[::ffff:127.0.0.1]:41061",
        ESTABLISHED,
        0,
        125_761,
    );
    assert_eq!(rows[3], mapped);
}

#[cfg(target_endian = "little")]
#[test]
fn captured_client_is_found_and_judged_by_owner() {
    let rows = captured_rows();
    let (client, server) = (addr("127.0.0.1:50306"), addr("127.0.0.1:41061"));
    assert_eq!(judge_peer(&rows, client, server, 0), PeerCheck::SameUser);
    assert_eq!(
        judge_peer(&rows, client, server, 1000),
        PeerCheck::OtherUser
    );
}

#[cfg(target_endian = "little")]
#[test]
fn captured_dual_stack_client_matches_its_ipv4_address() {
    let rows = captured_rows();
    let server = addr("127.0.0.1:41061");
    assert_eq!(
        judge_peer(&rows, addr("127.0.0.1:50314"), server, 0),
        PeerCheck::SameUser
    );
    let as_v6 = addr("[::ffff:127.0.0.1]:50314");
    assert_eq!(judge_peer(&rows, as_v6, server, 0), PeerCheck::SameUser);
    assert_eq!(
        judge_peer(&rows, addr("127.0.0.1:50314"), server, 7),
        PeerCheck::OtherUser
    );
}

#[cfg(target_endian = "little")]
#[test]
fn captured_ipv6_client_is_found() {
    let rows = captured_rows();
    let (client, server) = (addr("[::1]:59764"), addr("[::1]:46907"));
    assert_eq!(judge_peer(&rows, client, server, 0), PeerCheck::SameUser);
}

#[cfg(target_endian = "little")]
#[test]
fn captured_time_wait_only_is_unchecked() {
    let rows = captured_rows();
    let (client, server) = (addr("127.0.0.1:43545"), addr("127.0.0.1:40644"));
    assert_eq!(judge_peer(&rows, client, server, 0), PeerCheck::Unchecked);
}

#[cfg(target_endian = "little")]
#[test]
fn crafted_line_round_trip() {
    let line = "   7: 0100007F:C350 0100007F:1CFE 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1";
    assert_eq!(
        parse_proc_net_tcp(line),
        [row(CLIENT, SERVER, ESTABLISHED, 1000, 4242)]
    );
}

#[test]
fn malformed_lines_are_skipped() {
    let good = " 7: 0100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242";
    assert_eq!(parse_proc_net_tcp(good).len(), 1);
    for bad in [
        "",
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
        " 7 0100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0",
        " 7: 100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F:C35 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F:+350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: +100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007G:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F-C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F:C350 0100007F:1CFE 101 0:0 0:0 0 1000 0 4242",
        " 7: 0100007F:C350 0100007F:1CFE 01 0:0 0:0 0 -1 0 4242",
        " 7: 0100007F:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 x",
        " 7: 0000000000000000FFFF00000100007:C350 0100007F:1CFE 01 0:0 0:0 0 1000 0 1",
    ] {
        assert!(parse_proc_net_tcp(bad).is_empty(), "{bad:?}");
    }
}

#[test]
fn one_live_row_decides_by_owner() {
    let rows = [row(CLIENT, SERVER, ESTABLISHED, 1000, 11)];
    assert_eq!(judge(&rows, 1000), PeerCheck::SameUser);
    assert_eq!(judge(&rows, 1001), PeerCheck::OtherUser);
}

#[test]
fn no_row_is_unchecked() {
    assert_eq!(judge(&[], 1000), PeerCheck::Unchecked);
    let elsewhere = [
        row("127.0.0.1:50001", SERVER, ESTABLISHED, 1000, 11),
        row(CLIENT, "127.0.0.1:7423", ESTABLISHED, 1000, 12),
        row("127.0.0.2:50000", SERVER, ESTABLISHED, 1000, 13),
    ];
    assert_eq!(judge(&elsewhere, 1000), PeerCheck::Unchecked);
}

#[test]
fn the_servers_own_end_is_not_the_client() {
    // Our accepted socket (local = server, remote = client) is ours; the
    // client's socket belongs to someone else and must decide.
    let rows = [
        row(SERVER, CLIENT, ESTABLISHED, 1000, 20),
        row(CLIENT, SERVER, ESTABLISHED, 2000, 21),
    ];
    assert_eq!(judge(&rows, 1000), PeerCheck::OtherUser);
    assert_eq!(judge(&rows[..1], 1000), PeerCheck::Unchecked);
}

#[test]
fn time_wait_and_syn_recv_are_not_counted() {
    let closing = row(CLIENT, SERVER, TCP_TIME_WAIT, 0, 0);
    let half_open = row(CLIENT, SERVER, TCP_SYN_RECV, 0, 0);
    assert_eq!(judge(&[closing, half_open], 0), PeerCheck::Unchecked);
    let live = row(CLIENT, SERVER, ESTABLISHED, 1000, 30);
    assert_eq!(
        judge(&[closing, live, half_open], 1000),
        PeerCheck::SameUser
    );
}

#[test]
fn other_states_are_live() {
    let orphan = row(CLIENT, SERVER, FIN_WAIT2, 0, 0);
    assert_eq!(judge(&[orphan], 1000), PeerCheck::OtherUser);
}

#[test]
fn the_same_inode_twice_counts_once() {
    let a = row(CLIENT, SERVER, ESTABLISHED, 1000, 40);
    let mut b = a;
    b.state = 0x08;
    assert_eq!(judge(&[a, b], 1000), PeerCheck::SameUser);
    assert_eq!(judge(&[a, a], 1000), PeerCheck::SameUser);
}

#[test]
fn identical_inode_zero_rows_count_once_but_differing_ones_do_not() {
    let a = row(CLIENT, SERVER, FIN_WAIT2, 1000, 0);
    assert_eq!(judge(&[a, a], 1000), PeerCheck::SameUser);
    let mut b = a;
    b.state = 0x04;
    assert_eq!(judge(&[a, b], 1000), PeerCheck::Unchecked);
}

#[test]
fn two_live_sockets_are_unchecked_even_if_both_are_ours() {
    let rows = [
        row(CLIENT, SERVER, ESTABLISHED, 1000, 50),
        row(CLIENT, SERVER, ESTABLISHED, 1000, 51),
    ];
    assert_eq!(judge(&rows, 1000), PeerCheck::Unchecked);
}

#[test]
fn one_inode_with_two_owners_is_unchecked() {
    let rows = [
        row(CLIENT, SERVER, ESTABLISHED, 1000, 60),
        row(CLIENT, SERVER, ESTABLISHED, 2000, 60),
    ];
    assert_eq!(judge(&rows, 1000), PeerCheck::Unchecked);
}

#[test]
fn ipv4_and_mapped_rows_for_one_client_are_two_sockets() {
    let rows = [
        row(CLIENT, SERVER, ESTABLISHED, 1000, 70),
        row(
            "[::ffff:127.0.0.1]:50000",
            "[::ffff:127.0.0.1]:7422",
            ESTABLISHED,
            1000,
            71,
        ),
    ];
    assert_eq!(judge(&rows, 1000), PeerCheck::Unchecked);
    assert_eq!(judge(&rows[1..], 1000), PeerCheck::SameUser);
}

#[test]
fn a_mapped_address_is_not_confused_with_native_ipv6() {
    let rows = [row("[::1]:50000", "[::1]:7422", ESTABLISHED, 1000, 80)];
    assert_eq!(judge(&rows, 1000), PeerCheck::Unchecked);
}

/// The outcome of reading one table in [`tables`].
#[derive(Clone, Copy)]
enum Table<'a> {
    Text(&'a str),
    Denied,
    Missing,
}

/// Judges the fallback's tables as given, and says which were read.
fn tables(tcp: Table, tcp6: Table, our_uid: u32) -> (PeerCheck, Vec<String>) {
    let mut read = Vec::new();
    let verdict = proc_table::judge_tables(
        |path| {
            read.push(path.to_owned());
            let table = match path {
                proc_table::TCP_TABLE => tcp,
                proc_table::TCP6_TABLE => tcp6,
                other => panic!("unexpected table {other}"),
            };
            match table {
                Table::Text(text) => Ok(text.to_owned()),
                Table::Denied => Err(io::Error::from(io::ErrorKind::PermissionDenied)),
                Table::Missing => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        },
        addr(CLIENT),
        addr(SERVER),
        our_uid,
    );
    (verdict, read)
}

/// The client's live socket as the IPv4 table lists it, owned by uid 1000.
fn client_line() -> String {
    format!(
        " 7: {} {} 01 0:0 0:0 0 1000 0 4242",
        hex(addr(CLIENT)),
        hex(addr(SERVER))
    )
}

#[test]
fn ipv4_table_with_the_client_is_enough() {
    let line = client_line();
    for tcp6 in [Table::Text(""), Table::Missing, Table::Denied] {
        let (verdict, read) = tables(Table::Text(&line), tcp6, 1000);
        assert_eq!(verdict, PeerCheck::SameUser);
        assert_eq!(read, [proc_table::TCP_TABLE], "tcp6 is not read");
    }
    assert_eq!(
        tables(Table::Text(&line), Table::Denied, 7).0,
        PeerCheck::OtherUser
    );
}

#[test]
fn unreadable_tables_fail_closed() {
    let line = client_line();
    for tcp in [Table::Denied, Table::Missing] {
        let (verdict, read) = tables(tcp, Table::Text(&line), 1000);
        assert_eq!(verdict, PeerCheck::Unchecked);
        assert_eq!(read, [proc_table::TCP_TABLE]);
    }
    let (verdict, read) = tables(Table::Text(""), Table::Denied, 1000);
    assert_eq!(verdict, PeerCheck::Unchecked);
    assert_eq!(read, [proc_table::TCP_TABLE, proc_table::TCP6_TABLE]);
    let (verdict, _) = tables(Table::Text(""), Table::Missing, 1000);
    assert_eq!(verdict, PeerCheck::Unchecked, "no IPv6: no row anywhere");
}

#[test]
fn ipv6_table_is_read_when_ipv4_has_no_live_client() {
    let closing = format!(
        " 3: {} {} 06 0:0 0:0 0 0 0 0",
        hex(addr(CLIENT)),
        hex(addr(SERVER))
    );
    let mapped = " 9: 0000000000000000FFFF00000100007F:C350 0000000000000000FFFF00000100007F:1CFE 01 0:0 0:0 0 1000 0 4343";
    let (verdict, read) = tables(Table::Text(&closing), Table::Text(mapped), 1000);
    assert_eq!(read, [proc_table::TCP_TABLE, proc_table::TCP6_TABLE]);
    #[cfg(target_endian = "little")]
    assert_eq!(verdict, PeerCheck::SameUser);
    #[cfg(target_endian = "little")]
    assert_eq!(
        tables(Table::Text(""), Table::Text(mapped), 7).0,
        PeerCheck::OtherUser
    );
}

/// An IPv4 endpoint as the kernel prints it on this host.
fn hex(addr: SocketAddr) -> String {
    let IpAddr::V4(v4) = addr.ip() else {
        panic!("IPv4 only")
    };
    format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(v4.octets()),
        addr.port()
    )
}

#[test]
fn live_loopback_client_is_ours() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let _client = TcpStream::connect(server).unwrap();
    let (_conn, client) = listener.accept().unwrap();
    let uid = our_uid();
    assert_eq!(check_peer(client, server, uid), PeerCheck::SameUser);
    assert_eq!(
        check_peer(client, server, uid.wrapping_add(1)),
        PeerCheck::OtherUser
    );
}

#[test]
fn live_dual_stack_client_is_ours() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let mapped = SocketAddr::new("::ffff:127.0.0.1".parse().unwrap(), server.port());
    let stream = TcpStream::connect(mapped).unwrap();
    assert!(
        stream.local_addr().unwrap().is_ipv6(),
        "the client socket is AF_INET6"
    );
    let (_conn, client) = listener.accept().unwrap();
    assert!(client.is_ipv4(), "the listener sees it as IPv4");
    assert_eq!(check_peer(client, server, our_uid()), PeerCheck::SameUser);
}

#[test]
fn live_unknown_client_is_unchecked() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let _client = TcpStream::connect(server).unwrap();
    let (_conn, client) = listener.accept().unwrap();
    let stranger = SocketAddr::new(client.ip(), client.port().wrapping_add(1));
    assert_eq!(
        check_peer(stranger, server, our_uid()),
        PeerCheck::Unchecked
    );
}

/// A live loopback connection: the listener, the client's stream, and the
/// addresses the server sees (client, server).
fn live_connection() -> (TcpListener, TcpStream, TcpStream, SocketAddr, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let client_stream = TcpStream::connect(server).unwrap();
    let (accepted, client) = listener.accept().unwrap();
    (listener, client_stream, accepted, client, server)
}

#[cfg(target_os = "linux")]
#[test]
fn sock_diag_finds_the_live_client_socket() {
    let (_listener, _client_stream, _accepted, client, server) = live_connection();
    let rows = sock_diag::client_rows(client, server).unwrap();
    assert_eq!(rows.len(), 1, "one exact answer: {rows:?}");
    assert_eq!((rows[0].local, rows[0].remote), (client, server));
    assert_eq!(rows[0].state, 0x01, "established");
    assert_ne!(rows[0].inode, 0, "held by this process");
    let uid = our_uid();
    assert_eq!(judge_peer(&rows, client, server, uid), PeerCheck::SameUser);
    assert_eq!(
        judge_peer(&rows, client, server, uid.wrapping_add(1)),
        PeerCheck::OtherUser
    );
}

#[cfg(target_os = "linux")]
#[test]
fn sock_diag_finds_a_dual_stack_client_under_its_mapped_address() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let mapped = SocketAddr::new("::ffff:127.0.0.1".parse().unwrap(), server.port());
    let _stream = TcpStream::connect(mapped).unwrap();
    let (_conn, client) = listener.accept().unwrap();
    let rows = sock_diag::client_rows(client, server).unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r.local.is_ipv6()),
        "the client's socket is AF_INET6: {rows:?}"
    );
    assert_eq!(
        judge_peer(&rows, client, server, our_uid()),
        PeerCheck::SameUser
    );
}

#[cfg(target_os = "linux")]
#[test]
fn sock_diag_does_not_find_a_reset_connection() {
    let (_listener, client_stream, _accepted, client, server) = live_connection();
    // SO_LINGER 0: close sends a reset and the socket is gone at once.
    let socket = std::os::fd::AsRawFd::as_raw_fd(&client_stream);
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized linger option.
    let set = unsafe {
        libc::setsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0);
    drop(client_stream);
    assert_eq!(sock_diag::client_rows(client, server).unwrap(), []);
    assert_eq!(check_peer(client, server, our_uid()), PeerCheck::Unchecked);
}

#[cfg(target_os = "linux")]
#[test]
fn sock_diag_sees_a_closed_client_in_time_wait_and_does_not_count_it() {
    let (_listener, client_stream, accepted, client, server) = live_connection();
    // The client closes first, so its socket ends in TIME_WAIT.
    drop(client_stream);
    drop(accepted);
    let deadline = Instant::now() + Duration::from_secs(5);
    let rows = loop {
        let rows = sock_diag::client_rows(client, server).unwrap();
        if rows.iter().any(|r| r.state == TCP_TIME_WAIT) || Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Both lookups (AF_INET, then AF_INET6 mapped) find the same entry.
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r.state == TCP_TIME_WAIT), "{rows:?}");
    assert_eq!(judge_peer(&rows, client, server, 0), PeerCheck::Unchecked);
    assert_eq!(check_peer(client, server, our_uid()), PeerCheck::Unchecked);
}

#[test]
fn proc_fallback_finds_the_live_client_socket() {
    let (_listener, _client_stream, _accepted, client, server) = live_connection();
    let uid = our_uid();
    assert_eq!(
        proc_table::check_peer_in_proc(client, server, uid),
        PeerCheck::SameUser
    );
    assert_eq!(
        proc_table::check_peer_in_proc(client, server, uid.wrapping_add(1)),
        PeerCheck::OtherUser
    );
    let stranger = SocketAddr::new(client.ip(), client.port().wrapping_add(1));
    assert_eq!(
        proc_table::check_peer_in_proc(stranger, server, uid),
        PeerCheck::Unchecked
    );
}

#[test]
fn proc_fallback_finds_a_dual_stack_client() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let mapped = SocketAddr::new("::ffff:127.0.0.1".parse().unwrap(), server.port());
    let _stream = TcpStream::connect(mapped).unwrap();
    let (_conn, client) = listener.accept().unwrap();
    assert_eq!(
        proc_table::check_peer_in_proc(client, server, our_uid()),
        PeerCheck::SameUser
    );
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// Prints what one check costs; run with
/// `cargo test -p rete-mcp --release peer_check_timing -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test of behaviour"]
fn peer_check_timing() {
    let (_listener, _client_stream, _accepted, client, server) = live_connection();
    let uid = our_uid();
    let fast = median(1000, || {
        assert_eq!(check_peer(client, server, uid), PeerCheck::SameUser);
    });
    let slow = median(100, || {
        assert_eq!(
            proc_table::check_peer_in_proc(client, server, uid),
            PeerCheck::SameUser
        );
    });
    println!("check_peer median of 1000: {fast:?}; /proc fallback median of 100: {slow:?}");
}

/// The sock_diag socket is kept per thread between checks: every answer
/// must still be the one to its own lookup, found or not found, in any order.
#[cfg(target_os = "linux")]
#[test]
fn one_threads_sock_diag_socket_answers_each_lookup_with_its_own_socket() {
    let connections: Vec<_> = (0..3).map(|_| live_connection()).collect();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody_there = SocketAddr::new("127.0.0.1".parse().unwrap(), 9);
    let server_without_client = listener.local_addr().unwrap();
    for round in 0..20 {
        for (i, (_, _, _, client, server)) in connections.iter().enumerate() {
            let rows = sock_diag::client_rows(*client, *server).unwrap();
            assert_eq!(rows.len(), 1, "round {round}, connection {i}: {rows:?}");
            assert_eq!((rows[0].local, rows[0].remote), (*client, *server));
            // A lookup the kernel answers "no such socket" in between.
            let none = sock_diag::client_rows(nobody_there, server_without_client).unwrap();
            assert_eq!(none, [], "round {round}");
        }
    }
}
