//! reterm with AI access on, for tests that need its control server: the server refuses to
//! run as root, and serves only clients of its own user, so when the tests run as root (CI
//! does) reterm and every client run as `nobody` through `setpriv`, as Atheme and ZNC do.
//!
//! - [`home`] is a private home (0700) holding `.rete/reterm.toml`, owned by that user;
//! - [`reterm_binary`] is a copy of the built reterm that user can run (the build tree may
//!   be out of its reach);
//! - [`send_raw`] runs one `tools/call` of send_raw from a Python (standard library only)
//!   process of that user: it reads the token from the home's secrets file itself, so the
//!   token is on no command line and in no test output.

use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use tempfile::TempDir;
use tokio::process::{Child, Command};

use super::process::running_as_root;

/// `nobody` on Debian.
pub const NOBODY: u32 = 65534;

/// The uid reterm and the clients run as.
pub fn uid() -> u32 {
    if running_as_root() {
        NOBODY
    } else {
        // SAFETY: getuid has no preconditions and cannot fail.
        unsafe { libc::getuid() }
    }
}

/// `setpriv` arguments that make the rest of the command line run as [`NOBODY`] (none when
/// the tests do not run as root).
pub fn setpriv_prefix() -> Vec<String> {
    if running_as_root() {
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]
        .map(String::from)
        .to_vec()
    } else {
        Vec::new()
    }
}

/// A private home holding `.rete/reterm.toml` with `config`, owned by [`uid`].
pub fn home(config: &str) -> Result<TempDir> {
    let home = tempfile::Builder::new()
        .prefix("reterm-nobody-")
        .tempdir()?;
    let dir = home.path().join(".rete");
    fs::create_dir_all(&dir)?;
    let file = dir.join("reterm.toml");
    fs::write(&file, config)?;
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o700))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600))?;
    if running_as_root() {
        for path in [home.path(), dir.as_path(), file.as_path()] {
            chown(path, Some(NOBODY), Some(NOBODY))
                .with_context(|| format!("chown {}", path.display()))?;
        }
    }
    Ok(home)
}

/// The built `reterm` (the calling test's `env!("CARGO_BIN_EXE_reterm")`), copied once per
/// test process into a 0755 directory [`uid`] can reach.
pub fn reterm_binary(reterm: &str) -> Result<PathBuf> {
    static COPY: OnceLock<Result<(TempDir, PathBuf), String>> = OnceLock::new();
    let copied = COPY.get_or_init(|| {
        let copy = || -> Result<(TempDir, PathBuf)> {
            let dir = tempfile::Builder::new().prefix("reterm-bin-").tempdir()?;
            fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))?;
            let binary = dir.path().join("reterm");
            fs::copy(reterm, &binary)?;
            fs::set_permissions(&binary, fs::Permissions::from_mode(0o755))?;
            Ok((dir, binary))
        };
        copy().map_err(|e| format!("{e:#}"))
    });
    match copied {
        Ok((_, binary)) => Ok(binary.clone()),
        Err(e) => Err(anyhow!("copying reterm: {e}")),
    }
}

/// The client: one send_raw call; prints `{"isError": …, "text": …}` of the tool's answer.
const SEND_RAW: &str = r#"
import base64, json, os, sys, urllib.request
port, session, line = sys.argv[1:4]
with open(os.path.join(os.environ["HOME"], ".rete", "secrets.json")) as f:
    token = base64.b64decode(json.load(f)["mcp-token-reterm"]).decode()
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "send_raw",
                              "arguments": {"session": session, "line": line}}}).encode()
request = urllib.request.Request(
    f"http://127.0.0.1:{port}/mcp", data=body, method="POST",
    headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(request, timeout=60) as answer:
    result = json.load(answer)["result"]
print(json.dumps({"isError": bool(result.get("isError", False)),
                  "text": result["content"][0]["text"]}))
"#;

/// Starts one send_raw call on reterm's control server at `port`, as [`uid`]; its stdout is
/// the answer (see [`answer`]). Killing the child (or dropping it) closes the connection.
pub fn send_raw(home: &Path, port: u16, session: &str, line: &str) -> Result<Child> {
    let prefix = setpriv_prefix();
    let mut argv: Vec<String> = prefix;
    argv.extend(
        [
            "/usr/bin/python3",
            "-c",
            SEND_RAW,
            &port.to_string(),
            session,
            line,
        ]
        .map(String::from),
    );
    Command::new(&argv[0])
        .args(&argv[1..])
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the send_raw client")
}

/// The tool's answer a [`send_raw`] child printed: (isError, text).
pub async fn answer(child: Child) -> Result<(bool, String)> {
    let out = child.wait_with_output().await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim()).with_context(|| {
        format!(
            "the send_raw client printed {text:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    Ok((
        v["isError"].as_bool().unwrap_or(true),
        v["text"].as_str().unwrap_or_default().to_owned(),
    ))
}
