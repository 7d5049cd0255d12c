//! `rete-cloud` on PostgreSQL (a cluster of the test's own): a SQLite
//! database migrated whole, then served from PostgreSQL where SQLite
//! stopped, with every admin command on the URL. (Several nodes on one
//! database: `nodes.rs`.)

use crate::ws_client::{consecutive, says, seqs, Client};
use anyhow::{bail, Result};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use support::cloud::{add_local_network, binary, cli, Service, WAIT};
use support::{Bot, Inspircd, InspircdConfig, Postgres, PostgresConfig};

/// `rete-cloud ARGS` (no `--db`): its stdout, or its stderr as the error.
fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(binary()).args(args).output()?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Serves `db` until bob sees alice join; returns the service.
async fn serve(db: &Path, bob: &mut Bot) -> Result<Service> {
    let service = Service::start(db, &[]).await?;
    bob.wait_for(|l| l.starts_with(":alice!") && l.contains(" JOIN "), WAIT)
        .await?;
    Ok(service)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_database_migrated_to_postgresql_serves_on_where_it_stopped() -> Result<()> {
    let (ircd, pg) = tokio::try_join!(
        Inspircd::start(InspircdConfig::new()),
        Postgres::start(PostgresConfig::new())
    )?;
    let mut pg = pg;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("cloud.db");
    let token = cli(&file, &["user", "add", "alice"])?;
    let stream = add_local_network(&file, &format!("127.0.0.1:{}", ircd.port()))?;
    let mut bob = Bot::connect(ircd.port(), "bob").await?;
    bob.join("#rete").await?;

    // On SQLite: five rows, then a stop.
    let mut service = serve(&file, &mut bob).await?;
    let (mut c, _, _) = Client::attach(&service.addr, &token, json!([])).await?;
    for i in 0..5 {
        bob.privmsg("#rete", &format!("before {i}")).await?;
    }
    let seen = seqs(&c.until(|f| says(f, "before 4")).await?);
    let resume = *seen.last().unwrap_or(&0);
    drop(c);
    service.child.terminate()?;
    service.child.exit_status(WAIT).await?;
    bob.wait_for(|l| l.starts_with(":alice!") && l.contains(" QUIT "), WAIT)
        .await?;

    // Copied whole; a second copy into the filled database changes nothing.
    let url = pg.create_database()?;
    let from = file.to_str().unwrap_or_default();
    let copied = run(&["migrate", "--from", from, "--to", &url])?;
    assert!(
        copied.starts_with("copied 1 user(s), 1 network(s) and "),
        "{copied}"
    );
    let again = run(&["migrate", "--from", from, "--to", &url]).unwrap_err();
    assert!(
        format!("{again}").contains("holds users already; nothing changed"),
        "{again}"
    );
    let db = Path::new(&url);
    assert_eq!(cli(db, &["user", "list"])?, "alice networks=1 token");
    assert_eq!(
        cli(db, &["network", "list", "alice"])?,
        cli(&file, &["network", "list", "alice"])?
    );

    // Served from PostgreSQL: the old resume point goes on with exactly
    // the rows missed, numbered after SQLite's.
    let service = serve(db, &mut bob).await?;
    for i in 0..3 {
        bob.privmsg("#rete", &format!("after {i}")).await?;
    }
    let (mut c, _, mut frames) = Client::attach(
        &service.addr,
        &token,
        json!([{"stream": stream, "after": resume}]),
    )
    .await?;
    if !frames.iter().any(|f| says(f, "after 2")) {
        frames.extend(c.until(|f| says(f, "after 2")).await?);
    }
    let numbers = seqs(&frames);
    assert!(consecutive(resume, &numbers), "{numbers:?}");
    assert!(
        !frames.iter().any(|f| says(f, "before 4")),
        "nothing before the resume point again"
    );
    bob.privmsg("#rete", "live").await?;
    let live = seqs(&c.until(|f| says(f, "live")).await?);
    assert!(
        consecutive(*numbers.last().unwrap_or(&resume), &live),
        "{live:?}"
    );

    // The network is held by this node, and `network list` says so.
    let listed = cli(db, &["network", "list", "alice"])?;
    assert!(!listed.ends_with("node=-"), "{listed}");

    // A backup of PostgreSQL is a SQLite file a service can run on.
    let copy = dir.path().join("copy.db");
    cli(db, &["backup", "--to", copy.to_str().unwrap_or_default()])?;
    assert_eq!(cli(&copy, &["user", "list"])?, "alice networks=1 token");
    drop(service);
    Ok(())
}
