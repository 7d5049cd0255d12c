//! `reterm`: a line-mode IRC client on the Rete engine.
//!
//! This file handles the command line and exit codes; `app` runs the client.

mod app;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: reterm [--config PATH]

A line-mode IRC client. Type /help once it runs.

options:
  --config PATH   the config file (default ~/.rete/reterm.toml, created on first run)
  --help          print this help
  --version       print the version";

enum Args {
    Run { config: Option<PathBuf> },
    Help,
    Version,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(Args::Help),
            "--version" | "-V" => return Ok(Args::Version),
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
    Ok(Args::Run { config })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("reterm: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = match args {
        Args::Help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Args::Version => {
            println!("reterm {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Args::Run { config } => config,
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RETERM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reterm: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(config: Option<PathBuf>) -> anyhow::Result<()> {
    let path = match config {
        Some(p) => p,
        None => reterm::config::default_path()?,
    };
    // Load before starting the runtime: a bad config exits at once.
    let loaded = reterm::config::load_or_create(&path)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let app = app::App::start(loaded).await?;
        app.run().await
    })
}
