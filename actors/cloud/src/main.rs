//! `rete-cloud`: the ReteCloud service (see README, "rete-cloud").
//!
//! - `rete-cloud user add NAME --db PATH`: adds a user and prints its first
//!   token once (only its hash is stored).
//! - `rete-cloud network add USER NETWORK --db PATH --server HOST:PORT --nick N
//!   [--tls] [--channel #c]...`: adds a network to a user's account (a running
//!   service connects it within `--admin-poll-ms`, 2 s by default).
//! - `rete-cloud network remove USER NETWORK --db PATH`: removes a network
//!   from a user's account and deletes its settings and stored rows (a
//!   running service QUITs it within `--admin-poll-ms`).
//! - `rete-cloud rows prune USER NETWORK --db PATH --before SEQ`: drops a
//!   stream's rows older than SEQ.
//! - `rete-cloud serve --db PATH --listen ADDR [--cert PEM --key PEM]`: runs
//!   the service; plain ws:// only on a loopback address.

use clap::{Arg, ArgAction, ArgMatches, Command};
use rete_actors::wall_clock;
use rete_cloud::admission::{self, Limits};
use rete_cloud::hub::{self, Hub, HubOptions};
use rete_cloud::location::Location;
use rete_cloud::postgres::{notices, PostgresStore};
use rete_cloud::serve_lock::ServeLock;
use rete_cloud::store::{CloudStore, NetworkSettings, Node, StoreError, StoreItem, UserId};
use rete_cloud::tokens::new_token;
use rete_cloud::ws::{tls_acceptor, Listener};
use rete_cloud_protocol::config::ConfigEntry;
use rete_cloud_protocol::frame::NetworkId;
use rete_cloud_protocol::token_chain::TokenChain;
use rete_engine::flood::FloodConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

fn db_arg() -> Arg {
    Arg::new("db")
        .long("db")
        .required(true)
        .help("the database: a SQLite file, or a postgresql://user@host:port/db URL")
}

fn num(name: &'static str, help: &'static str, default: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .value_parser(clap::value_parser!(u64))
        .default_value(default)
        .help(help)
}

/// A number whose default is a constant of the library (said in the help).
fn limit(name: &'static str, help: &str, default: usize) -> Arg {
    Arg::new(name)
        .long(name)
        .value_parser(clap::value_parser!(u64).range(1..))
        .help(format!("{help} (default {default})"))
}

fn cli() -> Command {
    Command::new("rete-cloud")
        .about("Keeps IRC connected for its users; ReteCloud clients attach over WebSocket")
        .subcommand_required(true)
        .subcommand(
            Command::new("user")
                .subcommand_required(true)
                .subcommand(
                    Command::new("add")
                        .about("adds a user and prints its first token once")
                        .arg(Arg::new("name").required(true))
                        .arg(db_arg()),
                )
                .subcommand(
                    Command::new("list")
                        .about("lists the users: name, networks, whether a token still works")
                        .arg(db_arg()),
                )
                .subcommand(
                    Command::new("token")
                        .about(
                            "gives a user a new token, printed once, and revokes every token \
                             they had (their clients' next attach is refused token_revoked)",
                        )
                        .arg(Arg::new("name").required(true))
                        .arg(db_arg()),
                )
                .subcommand(
                    Command::new("remove")
                        .about(
                            "removes a user with every network, row and token of theirs (a \
                             running service QUITs their networks within --admin-poll-ms)",
                        )
                        .arg(Arg::new("name").required(true))
                        .arg(db_arg()),
                ),
        )
        .subcommand(
            Command::new("network")
                .subcommand_required(true)
                .subcommand(
                    Command::new("add")
                        .about("adds a network to a user's account")
                        .arg(Arg::new("user").required(true))
                        .arg(Arg::new("network").required(true))
                        .arg(db_arg())
                        .arg(
                            Arg::new("server")
                                .long("server")
                                .required(true)
                                .help("HOST:PORT"),
                        )
                        .arg(Arg::new("nick").long("nick").required(true))
                        .arg(Arg::new("tls").long("tls").action(ArgAction::SetTrue))
                        .arg(
                            Arg::new("channel")
                                .long("channel")
                                .action(ArgAction::Append),
                        ),
                )
                .subcommand(
                    Command::new("list")
                        .about("lists a user's networks and their settings (no password)")
                        .arg(Arg::new("user").required(true))
                        .arg(db_arg()),
                )
                .subcommand(
                    Command::new("set")
                        .about(
                            "changes a network's server, TLS, nick or channels (only what is \
                             given); a running service reconnects the network with them",
                        )
                        .arg(Arg::new("user").required(true))
                        .arg(Arg::new("network").required(true))
                        .arg(db_arg())
                        .arg(Arg::new("server").long("server").help("HOST:PORT"))
                        .arg(
                            Arg::new("tls")
                                .long("tls")
                                .value_parser(clap::value_parser!(bool))
                                .help("true or false"),
                        )
                        .arg(Arg::new("nick").long("nick"))
                        .arg(
                            Arg::new("channel")
                                .long("channel")
                                .action(ArgAction::Append)
                                .help("the whole list, repeated; replaces the channels"),
                        ),
                )
                .subcommand(
                    Command::new("remove")
                        .about(
                            "removes a network from a user's account: its settings and every \
                             stored row are deleted (a running service QUITs it within \
                             --admin-poll-ms); adding the name again starts a fresh stream",
                        )
                        .arg(Arg::new("user").required(true))
                        .arg(Arg::new("network").required(true))
                        .arg(db_arg()),
                ),
        )
        .subcommand(
            Command::new("backup")
                .about(
                    "writes a consistent copy of the database to --to (a new SQLite file), \
                     while a service may be running; a plain copy of a SQLite file can miss \
                     what is still in its write-ahead log",
                )
                .arg(db_arg())
                .arg(
                    Arg::new("to")
                        .long("to")
                        .required(true)
                        .value_parser(clap::value_parser!(PathBuf)),
                ),
        )
        .subcommand(
            Command::new("migrate")
                .about(
                    "copies a whole database into another that holds no user yet (a SQLite \
                     file into PostgreSQL, or back), in one transaction of the target; stop \
                     the service first, or rows it stores meanwhile are not copied",
                )
                .arg(
                    Arg::new("from")
                        .long("from")
                        .required(true)
                        .help("the database to copy: a SQLite file or a postgresql:// URL"),
                )
                .arg(
                    Arg::new("to")
                        .long("to")
                        .required(true)
                        .help("the database to fill: a SQLite file or a postgresql:// URL"),
                ),
        )
        .subcommand(
            Command::new("rows").subcommand_required(true).subcommand(
                Command::new("prune")
                    .about("drops a stream's rows older than --before")
                    .arg(Arg::new("user").required(true))
                    .arg(Arg::new("network").required(true))
                    .arg(db_arg())
                    .arg(
                        Arg::new("before")
                            .long("before")
                            .required(true)
                            .value_parser(clap::value_parser!(u64)),
                    ),
            ),
        )
        .subcommand(
            Command::new("serve")
                .about("runs the service")
                .arg(db_arg())
                .arg(Arg::new("node").long("node").help(
                    "this node's name, when several serve one PostgreSQL database (default: the host name)",
                ))
                .arg(
                    Arg::new("listen")
                        .long("listen")
                        .required(true)
                        .value_parser(clap::value_parser!(SocketAddr)),
                )
                .arg(
                    Arg::new("cert")
                        .long("cert")
                        .value_parser(clap::value_parser!(PathBuf))
                        .requires("key"),
                )
                .arg(
                    Arg::new("key")
                        .long("key")
                        .value_parser(clap::value_parser!(PathBuf))
                        .requires("cert"),
                )
                .arg(num("keep-rows", "rows kept per stream", "1000000"))
                .arg(num(
                    "grace-ms",
                    "how long a replaced token still works",
                    "300000",
                ))
                .arg(num(
                    "rotate-after-ms",
                    "rotate a token older than this, at attach and while attached (at most once a second)",
                    "86400000",
                ))
                .arg(num("heartbeat-ms", "heartbeat interval", "30000"))
                .arg(num(
                    "ingest-queue",
                    "received lines waiting to be stored, all networks together",
                    "8192",
                ))
                .arg(num(
                    "admin-poll-ms",
                    "how often to look for networks added while running",
                    "2000",
                ))
                .arg(limit(
                    "buffer-rows",
                    "rows each in-memory buffer keeps (clients read the store, which keeps every row)",
                    hub::DEFAULT_BUFFER_ROWS,
                ))
                .arg(num(
                    "flood-burst",
                    "lines each network may send back to back (its IRC server's flood limit)",
                    "5",
                ))
                .arg(num(
                    "flood-interval-ms",
                    "milliseconds per line past the burst (0: no pacing)",
                    "2000",
                ))
                .arg(limit(
                    "max-pending-per-address",
                    "connections not yet authenticated from one address (IPv6: one /64)",
                    admission::PENDING_PER_ADDRESS,
                ))
                .arg(limit(
                    "max-pending",
                    "connections not yet authenticated, in all",
                    admission::PENDING_TOTAL,
                ))
                .arg(limit(
                    "max-clients-per-user",
                    "clients one user may have attached at once",
                    admission::CLIENTS_PER_USER,
                )),
        )
}

fn location(m: &ArgMatches, name: &str) -> Result<Location, String> {
    Ok(Location::parse(arg(m, name)?))
}

fn open(m: &ArgMatches) -> Result<Box<dyn CloudStore>, String> {
    let at = location(m, "db")?;
    at.open().map_err(|e| format!("{at}: {e}"))
}

fn arg<'a>(m: &'a ArgMatches, name: &str) -> Result<&'a String, String> {
    m.get_one::<String>(name)
        .ok_or_else(|| format!("{name} is required"))
}

/// The user the `user` argument names, or `no user NAME`.
fn named_user(store: &dyn CloudStore, m: &ArgMatches) -> Result<UserId, String> {
    user_named(store, arg(m, "user")?)
}

fn user_named(store: &dyn CloudStore, name: &str) -> Result<UserId, String> {
    store
        .user_by_name(name)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no user {name}; nothing changed"))
}

/// Why `name` cannot be a user's name, or None: 1 to 64 of letters,
/// digits, `.`, `_` and `-` (it is typed on command lines and shown in
/// logs).
fn user_name_problem(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    (!ok).then(|| format!("user name {name:?}: use 1 to 64 of A-Z a-z 0-9 . _ -"))
}

/// Refuses with `problem`, saying nothing was changed.
fn refuse(problem: Option<String>) -> Result<(), String> {
    match problem {
        Some(p) => Err(format!("{p}; nothing changed")),
        None => Ok(()),
    }
}

fn user_add(m: &ArgMatches) -> Result<(), String> {
    let name = arg(m, "name")?;
    refuse(user_name_problem(name))?;
    let mut store = open(m)?;
    let token = new_token();
    let chain = TokenChain::new(&token, HubOptions::default().grace_ms);
    store
        .add_user(name, &chain, wall_clock::now().unsigned())
        .map_err(|e| e.to_string())?;
    // The only time the token is shown: the store keeps its hash alone.
    println!("{}", token.expose());
    Ok(())
}

fn user_list(m: &ArgMatches) -> Result<(), String> {
    let store = open(m)?;
    for u in store.users().map_err(|e| e.to_string())? {
        let token = if u.has_token { "token" } else { "revoked" };
        println!("{} networks={} {token}", u.name, u.networks);
    }
    Ok(())
}

fn user_token(m: &ArgMatches) -> Result<(), String> {
    let mut store = open(m)?;
    let user = user_named(store.as_ref(), arg(m, "name")?)?;
    let token = new_token();
    let chain = TokenChain::new(&token, HubOptions::default().grace_ms);
    store
        .replace_chain(user, &chain, wall_clock::now().unsigned())
        .map_err(|e| e.to_string())?;
    println!("{}", token.expose());
    Ok(())
}

fn user_remove(m: &ArgMatches) -> Result<(), String> {
    let mut store = open(m)?;
    let name = arg(m, "name")?;
    let user = user_named(store.as_ref(), name)?;
    store.remove_user(user).map_err(|e| e.to_string())?;
    println!("user {name} removed");
    Ok(())
}

fn network_list(m: &ArgMatches) -> Result<(), String> {
    let store = open(m)?;
    let user = named_user(store.as_ref(), m)?;
    for n in store.networks(user).map_err(|e| e.to_string())? {
        let s = &n.settings;
        let lease = store
            .lease_of(user, &n.network)
            .map_err(|e| e.to_string())?;
        println!(
            "{} server={}:{} tls={} nick={} channels={} stream={} node={}",
            n.network.0,
            s.host,
            s.port,
            s.tls,
            s.nick,
            s.channels.join(","),
            n.stream.0,
            lease.node.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

fn network_set(m: &ArgMatches) -> Result<(), String> {
    let network = NetworkId(arg(m, "network")?.clone());
    let server = m
        .get_one::<String>("server")
        .map(|s| host_port(s))
        .transpose()?;
    let nick = m.get_one::<String>("nick").cloned();
    let channels: Option<Vec<String>> = m
        .get_many::<String>("channel")
        .map(|c| c.cloned().collect());
    if let Some(nick) = &nick {
        refuse(ConfigEntry::Nick(nick.clone()).problem())?;
    }
    if let Some(channels) = &channels {
        refuse(ConfigEntry::Channels(channels.clone()).problem())?;
    }
    let tls = m.get_one::<bool>("tls").copied();
    if server.is_none() && nick.is_none() && channels.is_none() && tls.is_none() {
        return Err("give --server, --tls, --nick or --channel; nothing changed".into());
    }
    let mut store = open(m)?;
    let user = named_user(store.as_ref(), m)?;
    let mut record = store
        .networks(user)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|n| n.network == network)
        .ok_or_else(|| {
            format!(
                "user {} has no network {}; nothing changed",
                arg(m, "user").map_or("?", |s| s.as_str()),
                network.0
            )
        })?;
    let s = &mut record.settings;
    if let Some((host, port)) = server {
        s.host = host;
        s.port = port;
    }
    if let Some(tls) = tls {
        s.tls = tls;
    }
    if let Some(nick) = nick {
        s.nick = nick;
    }
    if let Some(channels) = channels {
        s.channels = channels;
    }
    store
        .save_settings(user, &network, &record.settings)
        .map_err(|e| e.to_string())?;
    println!(
        "network {} changed; a running service reconnects it with the new settings",
        network.0
    );
    Ok(())
}

fn backup(m: &ArgMatches) -> Result<(), String> {
    let store = open(m)?;
    let to = m.get_one::<PathBuf>("to").ok_or("--to is required")?;
    store.backup(to).map_err(|e| e.to_string())?;
    println!("copied to {}", to.display());
    Ok(())
}

fn migrate(m: &ArgMatches) -> Result<(), String> {
    let (from, to) = (location(m, "from")?, location(m, "to")?);
    if from == to {
        return Err(format!("--from and --to are both {from}; nothing changed"));
    }
    let source = from.open().map_err(|e| format!("{from}: {e}"))?;
    let mut target = to.open().map_err(|e| format!("{to}: {e}"))?;
    let (mut users, mut networks, mut rows) = (0u64, 0u64, 0u64);
    target
        .import(&mut |sink| {
            source.export(&mut |item| {
                match &item {
                    StoreItem::User { .. } => users += 1,
                    StoreItem::Network { .. } => networks += 1,
                    StoreItem::Row { .. } => rows += 1,
                    _ => {}
                }
                sink(item)
            })
        })
        .map_err(|e| match e {
            StoreError::Exists(_) => format!("{to} holds users already; nothing changed"),
            e => format!("{e}; nothing changed in {to}"),
        })?;
    println!("copied {users} user(s), {networks} network(s) and {rows} row(s) from {from} to {to}");
    Ok(())
}

/// `HOST:PORT`, a port from 1.
fn host_port(server: &str) -> Result<(String, u16), String> {
    server
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
        .filter(|(h, p)| !h.is_empty() && *p != 0 && !h.contains(char::is_whitespace))
        .ok_or_else(|| {
            "--server must be HOST:PORT (a port from 1 to 65535); nothing changed".into()
        })
}

fn network_add(m: &ArgMatches) -> Result<(), String> {
    let network = NetworkId(arg(m, "network")?.clone());
    refuse(network.problem())?;
    let (host, port) = host_port(arg(m, "server")?)?;
    let nick = arg(m, "nick")?.clone();
    let channels: Vec<String> = m
        .get_many::<String>("channel")
        .map(|c| c.cloned().collect())
        .unwrap_or_default();
    refuse(ConfigEntry::Nick(nick.clone()).problem())?;
    refuse(ConfigEntry::Channels(channels.clone()).problem())?;
    let mut store = open(m)?;
    let user = named_user(store.as_ref(), m)?;
    let settings = NetworkSettings {
        name: network.0.clone(),
        host,
        port,
        tls: m.get_flag("tls"),
        username: nick.clone(),
        realname: nick.clone(),
        nick,
        channels,
        sasl_mechanism: None,
        sasl_username: None,
        sasl_password: None,
        server_password: None,
    };
    let record = store
        .add_network(user, &network, &settings)
        .map_err(|e| e.to_string())?;
    println!("network {} stream {}", record.network.0, record.stream.0);
    Ok(())
}

fn network_remove(m: &ArgMatches) -> Result<(), String> {
    let mut store = open(m)?;
    let user = named_user(store.as_ref(), m)?;
    let network = NetworkId(arg(m, "network")?.clone());
    match store.remove_network(user, &network) {
        Ok(()) => {
            println!("network {} removed", network.0);
            Ok(())
        }
        Err(StoreError::Unknown(_)) => Err(format!(
            "user {} has no network {}; nothing changed",
            arg(m, "user")?,
            network.0
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn rows_prune(m: &ArgMatches) -> Result<(), String> {
    let mut store = open(m)?;
    let user = named_user(store.as_ref(), m)?;
    let network = NetworkId(arg(m, "network")?.clone());
    let before = *m.get_one::<u64>("before").ok_or("--before is required")?;
    store
        .evict_before(user, &network, before)
        .map_err(|e| e.to_string())
}

/// The connection budget: each limit given, the library's default for the
/// rest.
fn limits(m: &ArgMatches) -> Limits {
    let given = |name: &str, default: usize| {
        m.get_one::<u64>(name)
            .map_or(default, |&n| usize::try_from(n).unwrap_or(usize::MAX))
    };
    let d = Limits::default();
    Limits {
        pending_per_address: given("max-pending-per-address", d.pending_per_address),
        pending_total: given("max-pending", d.pending_total),
        clients_per_user: given("max-clients-per-user", d.clients_per_user),
        ..d
    }
}

/// Waits for the signal to stop: SIGINT (Ctrl-C), or SIGTERM, which
/// systemd and container runtimes send; either stops the service cleanly.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!(target: "rete::cloud", "cannot watch for SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// This machine's host name (the default `--node`), or `rete-cloud`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "rete-cloud".into())
}

async fn serve(m: &ArgMatches) -> Result<(), String> {
    // Before anything connects to IRC: a second service on this database
    // would connect every network again and store every line twice.
    let at = location(m, "db")?;
    let mut notices = None;
    let (store, _lock): (Box<dyn CloudStore>, _) = match &at {
        Location::Sqlite(path) => {
            let lock = ServeLock::take(path)?;
            (open(m)?, Some(lock))
        }
        // Nodes share it: each network is owned through a lease, and each
        // node hears of the others' rows.
        Location::Postgres(url) => {
            let store = PostgresStore::open(url).map_err(|e| format!("{at}: {e}"))?;
            notices = Some(notices::listen(store.config().clone()));
            (Box::new(store), None)
        }
    };
    let node = Node {
        name: match m.get_one::<String>("node") {
            Some(name) => name.clone(),
            None => host_name(),
        },
        instance: rete_cloud::tokens::new_uuid(),
    };
    let listen = *m
        .get_one::<SocketAddr>("listen")
        .ok_or("--listen is required")?;
    let tls = match (m.get_one::<PathBuf>("cert"), m.get_one::<PathBuf>("key")) {
        (Some(c), Some(k)) => Some(tls_acceptor(c, k).map_err(|e| e.to_string())?),
        _ => None,
    };
    let n = |name: &str| m.get_one::<u64>(name).copied().unwrap_or_default();
    let options = HubOptions {
        keep_rows: n("keep-rows"),
        grace_ms: n("grace-ms"),
        rotate_after_ms: n("rotate-after-ms"),
        heartbeat_ms: n("heartbeat-ms").clamp(1_000, 300_000),
        ingest_capacity: usize::try_from(n("ingest-queue").max(1)).unwrap_or(usize::MAX),
        admin_poll_ms: n("admin-poll-ms").max(100),
        limits: limits(m),
        buffer_rows: m
            .get_one::<u64>("buffer-rows")
            .map_or(hub::DEFAULT_BUFFER_ROWS, |&r| {
                usize::try_from(r).unwrap_or(usize::MAX)
            }),
        flood: FloodConfig {
            burst: u32::try_from(n("flood-burst")).unwrap_or(u32::MAX),
            interval_ms: n("flood-interval-ms"),
        },
    };
    let scheme = if tls.is_some() { "wss" } else { "ws" };
    // Refuse a plain non-loopback address before anything connects to IRC.
    let listener = Listener::bind(listen, tls)
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let hub = Hub::start(store, options, node, notices).await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    println!("rete-cloud listening on {scheme}://{addr}");
    let accept = tokio::spawn(listener.run(hub.clone(), stopped));
    stop_signal().await;
    tracing::info!(target: "rete::cloud", "stopping: clients told, networks quit");
    let _ = stop.send(true);
    let _ = accept.await;
    hub.shutdown().await;
    Ok(())
}

fn main() -> ExitCode {
    // Logs to stderr, `RUST_LOG` to choose (info by default). Nothing the
    // service logs holds a token, a password or a row's text.
    // Colour codes only for a terminal: a log file or journal keeps plain text.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let m = cli().get_matches();
    let result = match m.subcommand() {
        Some(("user", m)) => match m.subcommand() {
            Some(("list", m)) => user_list(m),
            Some(("token", m)) => user_token(m),
            Some(("remove", m)) => user_remove(m),
            Some((_, m)) => user_add(m),
            None => Err("user: add, list, token or remove".into()),
        },
        Some(("network", m)) => match m.subcommand() {
            Some(("remove", m)) => network_remove(m),
            Some(("list", m)) => network_list(m),
            Some(("set", m)) => network_set(m),
            Some((_, m)) => network_add(m),
            None => Err("network: add, list, set or remove".into()),
        },
        Some(("backup", m)) => backup(m),
        Some(("migrate", m)) => migrate(m),
        Some(("rows", m)) => rows_prune(m.subcommand().map_or(m, |(_, m)| m)),
        Some(("serve", m)) => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(serve(m)),
            Err(e) => Err(e.to_string()),
        },
        _ => Err("unknown command".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rete-cloud: {e}");
            ExitCode::FAILURE
        }
    }
}
