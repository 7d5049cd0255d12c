//! The examples/ programs, built and run as an embedder runs them, against a real InspIRCd (and the
//! rete-cloud service for the ReteCloud one), each checked by what it printed and by what the server's
//! other clients saw. The README's embedding example is one of them, byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use anyhow::{anyhow, bail, Context, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;
use support::cloud::CloudWorld;
use support::unprivileged::setpriv_prefix;
use support::{Bot, Inspircd, InspircdConfig, DEFAULT_TIMEOUT};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// How long an example may take to run to its end: each bounds its own waits well inside it.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The examples, built once per test binary (a no-op when up to date) in the target dir the running
/// test sits in; returns the path of example `name`. Each test asks before it starts a server, whose
/// clients could be timed out while idle through a build.
fn example(name: &str) -> PathBuf {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = DIR.get_or_init(|| build_examples().map_err(|e| format!("{e:#}")));
    match built {
        Ok(dir) => dir.join(name),
        Err(e) => panic!("building the examples: {e}"),
    }
}

fn build_examples() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let target = exe
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .ok_or_else(|| anyhow!("no target dir above {}", exe.display()))?;
    // The same package selection and features as the workspace's test run, so there it is a no-op.
    let status = support::process::cargo()
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--all-features",
            "--examples",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()?;
    if !status.success() {
        bail!("cargo build --examples failed");
    }
    Ok(target.join("debug").join("examples"))
}

/// Runs the example at `binary` to its end with `args` (and `env`); fails unless it exits 0.
async fn run(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let mut command = Command::new(binary);
    command.args(args).envs(env.iter().copied());
    finished(&binary.display().to_string(), command).await
}

/// Waits for `command` to exit, and returns its stdout; its stderr is in the error when it fails.
async fn finished(name: &str, mut command: Command) -> Result<String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out: Output = tokio::time::timeout(RUN_LIMIT, command.output())
        .await
        .map_err(|_| anyhow!("{name} did not finish within {RUN_LIMIT:?}"))??;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{name} exited with {}; stdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// InspIRCd with bob in #rete.
async fn server_with_bob() -> Result<(Inspircd, Bot, String)> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bob = Bot::connect(ircd.port(), "bob").await?;
    bob.join("#rete").await?;
    let addr = format!("127.0.0.1:{}", ircd.port());
    Ok((ircd, bob, addr))
}

/// True for a PRIVMSG to #rete from `nick` saying `text`.
fn said(line: &str, nick: &str, text: &str) -> bool {
    line.starts_with(&format!(":{nick}!")) && line.ends_with(&format!("PRIVMSG #rete :{text}"))
}

#[test]
fn the_readme_example_is_examples_one_network_byte_for_byte() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split_once("## Embedding the engine")
        .expect("the README has its embedding section")
        .1;
    let block = section
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .expect("the section opens with a rust block")
        .0;
    assert_eq!(
        block,
        include_str!("../../examples/one_network.rs"),
        "the README's embedding example is examples/one_network.rs pasted whole: paste it again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_network_reads_its_buffers_and_says_hello() -> Result<()> {
    let binary = example("one_network");
    let (_ircd, mut bob, addr) = server_with_bob().await?;
    let out = run(&binary, &[&addr, "#rete", "embedder"], &[]).await?;
    let buffers = out
        .lines()
        .find_map(|l| l.strip_prefix("buffers: "))
        .with_context(|| format!("no buffers line in:\n{out}"))?;
    assert!(
        buffers.split(' ').any(|b| b == "#rete"),
        "the buffers it read name #rete: {out}"
    );
    assert!(out.lines().any(|l| l == "sent: hello"), "{out}");
    bob.wait_for(|l| said(l, "embedder", "hello"), DEFAULT_TIMEOUT)
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_ui_shows_both_networks_messages_and_sends_on_the_one_named() -> Result<()> {
    let binary = example("line_ui");
    let (ircd, mut bob, _) = server_with_bob().await?;
    let a = format!("a=ui-a@127.0.0.1:{}", ircd.port());
    let b = format!("b=ui-b@127.0.0.1:{}", ircd.port());
    let mut child = Command::new(binary)
        .args(["#rete", &a, &b])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut ui = Printed {
        lines: BufReader::new(child.stdout.take().context("stdout")?).lines(),
        seen: Vec::new(),
    };

    ui.until("ready").await?;
    bob.privmsg("#rete", "hi from bob").await?;
    // Each network prints it, in whichever order their events come.
    ui.until_all(&["[a] #rete <bob> hi from bob", "[b] #rete <bob> hi from bob"])
        .await?;
    stdin.write_all(b"a hello from a\n").await?;
    bob.wait_for(|l| said(l, "ui-a", "hello from a"), DEFAULT_TIMEOUT)
        .await?;
    // Both sessions store it: a its own line, b what it received.
    ui.until("[b] #rete <ui-a> hello from a").await?;
    stdin.write_all(b"/quit\n").await?;
    let status = tokio::time::timeout(RUN_LIMIT, child.wait()).await??;
    assert!(status.success(), "line_ui exited with {status}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloud_session_attaches_reads_and_says_hello_through_the_service() -> Result<()> {
    let binary = example("cloud_session");
    let mut world = CloudWorld::start(&[]).await?;
    let url = world.service.url();
    let token = world.token.clone();
    let out = run(
        &binary,
        &[&url, "local", "#rete"],
        &[("RETE_CLOUD_TOKEN", &token)],
    )
    .await?;
    assert!(!out.contains(&token), "the token was printed: {out}");
    let attached = out
        .lines()
        .find_map(|l| l.strip_prefix("attached as alice; buffers: "))
        .with_context(|| format!("no attached line in:\n{out}"))?;
    assert!(attached.split(' ').any(|b| b == "#rete"), "{out}");
    world
        .bob
        .wait_for(
            |l| said(l, "alice", "hello through the cloud"),
            DEFAULT_TIMEOUT,
        )
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_updates_hears_the_talker_through_its_own_registry() -> Result<()> {
    let binary = example("live_updates");
    let (_ircd, _bob, addr) = server_with_bob().await?;
    let out = run(&binary, &[&addr, "#rete"], &[]).await?;
    assert!(out.lines().any(|l| l.starts_with("subscribed: ")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("update: talker said \"hello ")),
        "{out}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_host_serves_list_sessions_to_its_own_request() -> Result<()> {
    let built = example("control_host");
    let (_ircd, _bob, addr) = server_with_bob().await?;
    // The control server refuses root: run it as the tests' unprivileged user, from a copy that user
    // can reach (the build tree may be out of its reach).
    let dir = tempfile::Builder::new().prefix("control-host-").tempdir()?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))?;
    let binary = dir.path().join("control_host");
    fs::copy(built, &binary)?;
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755))?;
    let mut argv = setpriv_prefix();
    argv.extend([binary_str(&binary)?, addr, "#rete".into()]);
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    let out = finished("control_host", command).await?;
    assert!(
        out.lines().any(|l| l.starts_with("AI access on, port ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l == r#"list_sessions: "local" "connected" "host""#),
        "{out}"
    );
    Ok(())
}

/// What line_ui prints, read as it comes.
struct Printed {
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    seen: Vec<String>,
}

impl Printed {
    /// Reads lines until one is `want`.
    async fn until(&mut self, want: &str) -> Result<()> {
        self.until_all(&[want]).await
    }

    /// Reads lines until each of `wants` has come, in any order.
    async fn until_all(&mut self, wants: &[&str]) -> Result<()> {
        let mut missing: Vec<&str> = wants.to_vec();
        let found = tokio::time::timeout(DEFAULT_TIMEOUT, async {
            while let Some(line) = self.lines.next_line().await? {
                missing.retain(|w| *w != line);
                self.seen.push(line);
                if missing.is_empty() {
                    return Ok(());
                }
            }
            bail!("line_ui ended")
        })
        .await;
        found
            .map_err(|_| anyhow!("timed out"))
            .and_then(|r| r)
            .with_context(|| format!("waiting for {wants:?}; line_ui printed: {:#?}", self.seen))
    }
}

fn binary_str(path: &Path) -> Result<String> {
    path.to_str()
        .map(str::to_owned)
        .context("a temp path that is not UTF-8")
}
