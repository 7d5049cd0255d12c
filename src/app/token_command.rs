//! `reterm retecloud-token NAME`: sets the ReteCloud token of network NAME
//! in the secrets file (the token of its service account, so of every
//! network with the same `url`). It reads one line from standard input, without echo
//! when that is a terminal, so the token appears on no screen, in no shell
//! history and on no command line; and it never prints the token back.

use anyhow::{bail, Context as _};
use rete_cloud_protocol::secret::TOKEN_PREFIX;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;

/// Reads the token and stores it for `name`; says where.
pub fn run(config_path: &Path, name: &str) -> anyhow::Result<()> {
    let loaded = reterm::config::load_or_create(config_path)?;
    let Some(net) = loaded
        .config
        .networks
        .iter()
        .find(|n| n.name.eq_ignore_ascii_case(name))
    else {
        bail!("no network named {name:?} in {}", config_path.display());
    };
    if net.cloud.is_none() {
        bail!(
            "network {:?} does not use transport = \"retecloud\"; its token would never be used",
            net.name
        );
    }
    let token = read_token(&net.name)?;
    check_token(&token)?;
    let path = reterm::secrets::secrets_path()?;
    reterm::secrets::store_secret(&path, &net.cloud_token_key(), &token)?;
    let sharing: Vec<&str> = loaded
        .config
        .networks
        .iter()
        .filter(|n| n.cloud_token_key() == net.cloud_token_key())
        .map(|n| n.name.as_str())
        .collect();
    println!(
        "The ReteCloud token of {} is stored in {} (readable by you only), for every network of that service account: {}. A running reterm uses it from its next connection there (/connect {} for now).",
        net.name,
        path.display(),
        sharing.join(", "),
        net.name
    );
    Ok(())
}

/// `rct1_` and 64 lower-case hex digits, as `rete-cloud user add` prints it.
/// The error never quotes what was typed.
fn check_token(token: &str) -> anyhow::Result<()> {
    let hex = token.strip_prefix(TOKEN_PREFIX).unwrap_or("");
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "that is not a ReteCloud token ({TOKEN_PREFIX} and 64 hex digits); nothing was stored"
        );
    }
    Ok(())
}

fn read_token(name: &str) -> anyhow::Result<String> {
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the token from standard input")?;
        return Ok(line.trim().to_owned());
    }
    eprint!("ReteCloud token for {name} (not shown): ");
    let _ = std::io::stderr().flush();
    crossterm::terminal::enable_raw_mode().context("switching the terminal's echo off")?;
    let typed = read_hidden();
    let _ = crossterm::terminal::disable_raw_mode();
    eprintln!();
    typed
}

/// Keys until Enter, echoing nothing; Ctrl-C or Esc gives up.
fn read_hidden() -> anyhow::Result<String> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let mut typed = String::new();
    loop {
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        match key.code {
            KeyCode::Enter => return Ok(typed.trim().to_owned()),
            KeyCode::Esc => bail!("cancelled; nothing was stored"),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                bail!("cancelled; nothing was stored")
            }
            KeyCode::Backspace => {
                typed.pop();
            }
            KeyCode::Char(c) => typed.push(c),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_token;

    #[test]
    fn only_a_token_of_the_services_form_is_taken() {
        assert!(check_token(&format!("rct1_{}", "a1".repeat(32))).is_ok());
        assert!(check_token("").is_err());
        assert!(check_token("rct1_").is_err());
        for bad in ["rct1_xyz", "hunter2", &format!("rct2_{}", "a".repeat(64))] {
            let e = check_token(bad).unwrap_err().to_string();
            assert!(!e.contains(bad), "the error quotes no input: {e}");
        }
    }
}
