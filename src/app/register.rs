//! `/control register`: connects Claude Code to the control server without
//! the token on any command line.
//!
//! The contract's `claude mcp add … --header "Authorization: Bearer <token>"`
//! puts the token in the shell history, in `ps` and in `~/.claude.json`.
//! Here the token goes only into `~/.rete/claude-headers.json` (0600,
//! replaced atomically), and Claude Code is registered with a *headers
//! helper*: a command it runs before connecting whose output is the headers
//! to send, here `cat` of that file. The `claude mcp add-json` argument
//! vector holds the URL and the helper, never the token; nothing printed
//! holds it either. A regenerated token rewrites the file, so the
//! registration keeps working.
//!
//! The server is registered at Claude Code's local scope (this user, this
//! directory), never the project scope, whose `.mcp.json` is meant to be
//! committed and shared.

use reterm::secrets::private_file::{self, FileMode};
use serde_json::json;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The name the server is registered under in Claude Code.
pub const NAME: &str = "rete";

/// The refusal for `/control register project`.
pub const NO_PROJECT_SCOPE: &str =
    "not at project scope: .mcp.json is shared with everyone who has the project; /control register registers at local scope";

/// How long one `claude` command may take.
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(60);

/// `~/.rete/claude-headers.json`; None without a HOME.
pub fn headers_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(
        PathBuf::from(home)
            .join(".rete")
            .join("claude-headers.json"),
    )
}

/// Writes the headers file for `token`: 0600 from the start, replaced
/// atomically, in a 0700 directory made when missing.
pub fn write_headers(path: &Path, token: &str) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let body = json!({ "Authorization": format!("Bearer {token}") }).to_string();
    private_file::replace(path, body.as_bytes(), FileMode::Exactly(0o600))
}

/// The server's entry in Claude Code's configuration: URL and headers
/// helper, no token.
pub fn entry(port: u16, headers: &Path) -> String {
    json!({
        "type": "http",
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headersHelper": format!("cat {}", shell_quote(&headers.to_string_lossy())),
    })
    .to_string()
}

/// `text` as one word for a POSIX shell (the helper runs through one).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Registers the server on `port` with Claude Code; the lines to print.
/// The headers file is written first, so a registration never points at a
/// missing or stale file.
pub async fn register(port: u16, token: &str) -> Vec<String> {
    let Some(path) = headers_path() else {
        return vec!["cannot register: HOME is not set".to_owned()];
    };
    if let Err(e) = write_headers(&path, token) {
        return vec![format!("cannot write {}: {}", path.display(), e.kind())];
    }
    let entry = entry(port, &path);
    // An earlier registration under the name would make add-json fail; its
    // absence is not an error.
    match claude(&["mcp", "remove", "--scope", "local", NAME]).await {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return by_hand(&path, &entry),
        _ => {}
    }
    match claude(&["mcp", "add-json", "--scope", "local", NAME, &entry]).await {
        Ok(out) if out.status.success() => vec![format!(
            "registered {NAME} with Claude Code (local scope); it reads the token from {}",
            path.display()
        )],
        Ok(out) => {
            let why = String::from_utf8_lossy(&out.stderr);
            let why = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            vec![format!("claude mcp add-json failed: {why}")]
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => by_hand(&path, &entry),
        Err(e) => vec![format!("claude mcp add-json failed: {e}")],
    }
}

/// The answer when `claude` is not installed: the entry to add by hand.
fn by_hand(path: &Path, entry: &str) -> Vec<String> {
    vec![
        format!(
            "claude is not installed; the token is in {}. Add this entry as mcpServers.{NAME} in Claude Code's configuration:",
            path.display()
        ),
        entry.to_owned(),
    ]
}

/// Runs `claude` with `args`, its output captured, stdin closed.
async fn claude(args: &[&str]) -> io::Result<std::process::Output> {
    let child = tokio::process::Command::new("claude")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    match tokio::time::timeout(CLAUDE_TIMEOUT, child.wait_with_output()).await {
        Ok(out) => out,
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "claude timed out")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_entry_names_the_helper_not_the_token() {
        let e: serde_json::Value =
            serde_json::from_str(&entry(7421, Path::new("/h/it's/.rete/claude-headers.json")))
                .unwrap();
        assert_eq!(
            e,
            json!({
                "type": "http",
                "url": "http://127.0.0.1:7421/mcp",
                "headersHelper": r"cat '/h/it'\''s/.rete/claude-headers.json'",
            })
        );
    }

    #[test]
    fn the_headers_file_is_private_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".rete").join("claude-headers.json");
        write_headers(&path, "first").unwrap();
        write_headers(&path, "second").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v, json!({"Authorization": "Bearer second"}));
    }
}
