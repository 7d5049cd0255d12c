//! `reterm`: an IRC client on the Rete engine, full screen on a terminal
//! and in line mode otherwise.
//!
//! This file handles the command line and exit codes; `app` runs the client.

mod app;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: reterm [--config PATH] [--plain]
       reterm [--config PATH] retecloud-token NAME

An IRC client: full screen on a terminal, line mode when standard input or
output is not one. Type /help once it runs.

options:
  --config PATH   the config file (default ~/.rete/reterm.toml, created on first run)
  --plain         line mode even on a terminal
  --help          print this help
  --version       print the version

retecloud-token NAME  set the ReteCloud token of network NAME (transport =
                      \"retecloud\"): reads one line from standard input, not
                      echoed on a terminal, into ~/.rete/secrets.json";

enum Args {
    Run {
        config: Option<PathBuf>,
        plain: bool,
    },
    CloudToken {
        config: Option<PathBuf>,
        name: String,
    },
    Help,
    Version,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = None;
    let mut plain = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(Args::Help),
            "--version" | "-V" => return Ok(Args::Version),
            "--plain" => plain = true,
            "retecloud-token" => {
                let name = args.next().ok_or("retecloud-token needs a network name")?;
                if let Some(extra) = args.next() {
                    return Err(format!(
                        "unexpected argument after the network name: {extra}"
                    ));
                }
                return Ok(Args::CloudToken { config, name });
            }
            "--config" => {
                let path = args.next().ok_or("--config needs a path")?;
                config = Some(PathBuf::from(path));
            }
            other => match other.strip_prefix("--config=") {
                Some(path) => config = Some(PathBuf::from(path)),
                None => return Err(format!("unknown argument: {other}")),
            },
        }
    }
    Ok(Args::Run { config, plain })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("reterm: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (config, plain) = match args {
        Args::Help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Args::Version => {
            println!("reterm {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Args::Run { config, plain } => (config, plain),
        Args::CloudToken { config, name } => {
            let result = match config {
                Some(p) => Ok(p),
                None => reterm::config::default_path(),
            }
            .map_err(anyhow::Error::from)
            .and_then(|path| app::token_command::run(&path, &name));
            return match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("reterm: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
    };
    // Full screen only when both ends are a terminal: a pipe on either side
    // is a script, which reads and writes lines.
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let mode = if terminal && !plain {
        app::Mode::Screen
    } else {
        app::Mode::Line
    };
    // Diagnostics go to stderr; on a full screen that is the same terminal,
    // so there they are off unless RETERM_LOG asks for them (and stderr is
    // then best redirected to a file).
    let filter = tracing_subscriber::EnvFilter::try_from_env("RETERM_LOG").unwrap_or_else(|_| {
        let default = if mode == app::Mode::Screen && std::io::stderr().is_terminal() {
            "off"
        } else {
            "warn"
        };
        tracing_subscriber::EnvFilter::new(default)
    });
    // Beside the diagnostics, the control surface's log ring (read_log):
    // it has its own filter, and costs one atomic load per event until a
    // control server with control.debug on switches capture on.
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .with(rete_mcp::debug::log::layer())
        .init();
    match run(config, mode) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reterm: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Tells glibc's malloc to keep one arena, before the runtime's threads
/// start. By default each thread that allocates gets an arena of its own, so
/// the rows of three networks end up spread over several heaps, each with
/// its own free space; a client whose threads mostly wait gains nothing from
/// that and holds the memory (`scripts/bench-memory`).
fn one_malloc_arena() {
    // SAFETY: mallopt only sets a malloc parameter; no other thread runs yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

fn run(config: Option<PathBuf>, mode: app::Mode) -> anyhow::Result<()> {
    let path = match config {
        Some(p) => p,
        None => reterm::config::default_path()?,
    };
    // Load before starting the runtime: a bad config exits at once.
    let loaded = reterm::config::load_or_create(&path)?;
    one_malloc_arena();
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(async {
        let app = app::App::start(loaded, mode).await?;
        app.run().await
    });
    // Dropping a runtime waits for every blocking task without limit (a
    // stdin read among them); everything worth waiting for has been flushed
    // by now, so a blocked one must not keep reterm alive after /quit.
    runtime.shutdown_timeout(EXIT_GRACE);
    result
}

/// How long exiting waits for blocking tasks still running after shutdown.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
