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
//! The server is registered at Claude Code's user scope (this user, every
//! directory), or with `local DIR` at its local scope (this user, that
//! directory only), never the project scope, whose `.mcp.json` is meant to
//! be committed and shared. Claude Code 2.1.332 and later run the headers
//! helper of a local-scope server only in a directory the person has
//! trusted (accepted the trust prompt of `claude` there); a user-scope
//! server's helper runs everywhere. So a local registration, and
//! `/control status`, say what to do while the directory is not trusted.

use reterm::secrets::private_file::{self, FileMode};
use serde_json::json;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The name the server is registered under in Claude Code.
pub const NAME: &str = "rete";

/// The refusal for `/control register project`.
pub const NO_PROJECT_SCOPE: &str =
    "not at project scope: .mcp.json is shared with everyone who has the project; /control register registers at user scope, /control register local DIR for DIR only";

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

/// Where a registration goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Claude Code's user scope: every directory.
    User,
    /// Claude Code's local scope for this directory (absolute, resolved).
    Local(PathBuf),
}

impl Scope {
    /// `claude mcp`'s name for the scope.
    fn flag(&self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Local(_) => "local",
        }
    }

    /// Where claude runs for it: local scope is the directory claude runs
    /// in; user scope is any, so it runs in HOME rather than wherever
    /// reterm was started.
    fn directory(&self) -> PathBuf {
        match self {
            Scope::Local(dir) => dir.clone(),
            Scope::User => std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_dir())
                .unwrap_or_else(|| PathBuf::from("/")),
        }
    }
}

/// The directory of `/control register local DIR`: `~` is HOME, a relative
/// path is taken from reterm's working directory, links are resolved (Claude
/// Code keys its local scope by the directory it runs in). Err is the line
/// to print.
pub fn local_dir(typed: &str) -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let path = match (typed.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(typed),
    };
    let path = if path.is_absolute() {
        path
    } else {
        std::env::current_dir()
            .map_err(|e| format!("cannot register for {typed}: {}", e.kind()))?
            .join(path)
    };
    match std::fs::canonicalize(&path) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(_) => Err(format!(
            "cannot register for {}: not a directory",
            path.display()
        )),
        Err(e) => Err(format!(
            "cannot register for {}: {}",
            path.display(),
            e.kind()
        )),
    }
}

/// Registers the server on `port` with Claude Code at `scope`; the lines to
/// print. The headers file is written first, so a registration never points
/// at a missing or stale file.
pub async fn register(port: u16, token: &str, scope: &Scope) -> Vec<String> {
    let Some(path) = headers_path() else {
        return vec!["cannot register: HOME is not set".to_owned()];
    };
    if let Err(e) = write_headers(&path, token) {
        return vec![format!("cannot write {}: {}", path.display(), e.kind())];
    }
    register_entry(NAME, port, &path, scope).await
}

/// Registers the server on `port` with Claude Code at `scope` under the
/// name `name`, its headers helper reading the headers file `headers`
/// (written already); the lines to print.
pub async fn register_entry(name: &str, port: u16, headers: &Path, scope: &Scope) -> Vec<String> {
    let path = headers;
    let entry = entry(port, path);
    let Some(program) = find_claude() else {
        return by_hand(name, path, &entry);
    };
    let cwd = scope.directory();
    let flag = scope.flag();
    // An earlier registration under the name would make add-json fail; its
    // absence is not an error.
    if let Err(e) = claude(&program, &cwd, &["mcp", "remove", "--scope", flag, name]).await {
        return vec![cannot_run(&program, &e)];
    }
    match claude(
        &program,
        &cwd,
        &["mcp", "add-json", "--scope", flag, name, &entry],
    )
    .await
    {
        Ok(out) if out.status.success() => registered(name, scope, path),
        Ok(out) if matches!(out.status.code(), Some(126 | 127)) => {
            vec![format!(
                "cannot run {}: {}",
                program.display(),
                first_line(&out.stderr)
            )]
        }
        Ok(out) => vec![format!(
            "claude mcp add-json failed: {}",
            first_line(&out.stderr)
        )],
        Err(e) => vec![cannot_run(&program, &e)],
    }
}

/// The first line of a program's output that is not blank.
fn first_line(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_owned()
}

/// Removes `name` from Claude Code wherever its configuration has it (user
/// scope, and local scope in each directory): a revoked grant's
/// `rete-NAME`, which would otherwise stay and fail with a 403. The lines
/// to print; none when it is registered nowhere.
pub async fn unregister(name: &str) -> Vec<String> {
    let Some(config) = read_claude_config() else {
        return Vec::new();
    };
    let places = registrations(&config, name);
    if places.is_empty() {
        return Vec::new();
    }
    let Some(program) = find_claude() else {
        return vec![format!(
            "claude is not installed, so {name} stays in Claude Code's configuration ({}): remove it by hand",
            claude_config().map_or_else(|| "~/.claude.json".to_owned(), |p| p.display().to_string())
        )];
    };
    let mut lines = Vec::new();
    for scope in places {
        let place = match &scope {
            Scope::User => "user scope".to_owned(),
            Scope::Local(dir) => format!("local scope, for {}", dir.display()),
        };
        let cwd = scope.directory();
        if !cwd.is_dir() {
            lines.push(format!(
                "{name} stays registered with Claude Code at {place}: the directory is gone, so claude cannot be run there"
            ));
            continue;
        }
        let args = ["mcp", "remove", "--scope", scope.flag(), name];
        lines.push(match claude(&program, &cwd, &args).await {
            Ok(out) if out.status.success() => {
                format!("removed {name} from Claude Code at {place}")
            }
            Ok(out) => format!(
                "claude mcp remove {name} failed at {place}: {}",
                first_line(&out.stderr)
            ),
            Err(e) => cannot_run(&program, &e),
        });
    }
    lines
}

/// Where Claude Code's configuration registers `name`: user scope first,
/// then local scope in each directory.
fn registrations(config: &serde_json::Value, name: &str) -> Vec<Scope> {
    let has =
        |holder: &serde_json::Value| holder.get("mcpServers").and_then(|s| s.get(name)).is_some();
    let mut found = Vec::new();
    if has(config) {
        found.push(Scope::User);
    }
    if let Some(projects) = config
        .get("projects")
        .and_then(serde_json::Value::as_object)
    {
        for (dir, project) in projects {
            if has(project) {
                found.push(Scope::Local(PathBuf::from(dir)));
            }
        }
    }
    found
}

/// The answer to a registration done: where, and for a directory not
/// trusted yet what the person has to do.
fn registered(name: &str, scope: &Scope, headers: &Path) -> Vec<String> {
    match scope {
        Scope::User => vec![format!(
            "registered {name} with Claude Code at user scope ({}), for every directory; it reads the token from {}",
            claude_config().map_or_else(|| "~/.claude.json".to_owned(), |p| p.display().to_string()),
            headers.display()
        )],
        Scope::Local(dir) => {
            let mut lines = vec![format!(
                "registered {name} with Claude Code at local scope, for {} only; it reads the token from {}",
                dir.display(),
                headers.display()
            )];
            let config = read_claude_config();
            lines.extend(trust_advice(dir, config.as_ref()));
            lines
        }
    }
}

/// What to do while `dir` is not a workspace Claude Code trusts; nothing
/// when it is.
fn trust_advice(dir: &Path, config: Option<&serde_json::Value>) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if home.as_deref() == Some(dir) {
        return Some(format!(
            "Claude Code trusts your home directory for one session at a time, so it will not send the token from {}: register at user scope (/control register) or for a project directory",
            dir.display()
        ));
    }
    if trusted(config, dir) {
        return None;
    }
    Some(format!(
        "Claude Code sends the token only from a directory you trust: run claude once in {} and accept the trust prompt (until then claude mcp list there says it needs authentication)",
        dir.display()
    ))
}

/// Whether Claude Code's configuration records `dir` as trusted.
fn trusted(config: Option<&serde_json::Value>, dir: &Path) -> bool {
    config
        .and_then(|c| {
            c.get("projects")?
                .get(dir.to_str()?)?
                .get("hasTrustDialogAccepted")
        })
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// Claude Code's configuration file: `$CLAUDE_CONFIG_DIR/.claude.json`, else
/// `~/.claude.json`.
fn claude_config() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join(".claude.json"));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".claude.json"))
}

fn read_claude_config() -> Option<serde_json::Value> {
    let text = std::fs::read(claude_config()?).ok()?;
    serde_json::from_slice(&text).ok()
}

/// `/control status`'s lines about Claude Code: where the server is
/// registered, whether that registration reaches the server on `port`, and
/// what to do for a directory not trusted; then the same for each grant
/// registered (`rete-NAME`), saying so when `grants` (the names of the
/// grants that exist) no longer has it. Nothing when it is registered
/// nowhere.
pub fn status(port: u16, grants: &[String]) -> Vec<String> {
    let config = read_claude_config();
    status_from(config.as_ref(), port, headers_path().as_deref(), grants)
}

fn status_from(
    config: Option<&serde_json::Value>,
    port: u16,
    headers: Option<&Path>,
    grants: &[String],
) -> Vec<String> {
    let Some(config) = config else {
        return Vec::new();
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let stale = |server: &serde_json::Value| {
        let theirs = server.get("url").and_then(serde_json::Value::as_str);
        (theirs != Some(url.as_str())).then(|| {
            format!(
                " — but it points at {}, not port {port}: /control register again",
                theirs.unwrap_or("no URL")
            )
        })
    };
    let mut lines = Vec::new();
    if let Some(server) = config.get("mcpServers").and_then(|s| s.get(NAME)) {
        lines.push(format!(
            "Claude Code: registered at user scope, for every directory{}",
            stale(server).unwrap_or_default()
        ));
    }
    if let Some(projects) = config
        .get("projects")
        .and_then(serde_json::Value::as_object)
    {
        for (dir, project) in projects {
            let Some(server) = project.get("mcpServers").and_then(|s| s.get(NAME)) else {
                continue;
            };
            lines.push(format!(
                "Claude Code: registered at local scope, for {dir} only{}",
                stale(server).unwrap_or_default()
            ));
            lines.extend(trust_advice(Path::new(dir), Some(config)));
        }
    }
    if let Some(headers) = headers.filter(|h| !lines.is_empty() && !h.exists()) {
        lines.push(format!(
            "{} is missing, so Claude Code has no token: /control register again",
            headers.display()
        ));
    }
    lines.extend(grant_status(config, &url, grants));
    lines
}

/// The lines about each grant registered with Claude Code (as `rete-NAME`,
/// see `/control register NAME`): where, and what to do when it points
/// elsewhere or its grant is gone (revoked or ended and forgotten), which
/// leaves Claude Code a server that answers 403.
fn grant_status(config: &serde_json::Value, url: &str, grants: &[String]) -> Vec<String> {
    let registered = |servers: Option<&serde_json::Value>| -> Vec<(String, Option<String>)> {
        let Some(servers) = servers.and_then(serde_json::Value::as_object) else {
            return Vec::new();
        };
        servers
            .iter()
            .filter_map(|(key, server)| {
                let grant = key.strip_prefix(NAME)?.strip_prefix('-')?;
                let theirs = server.get("url").and_then(serde_json::Value::as_str);
                Some((grant.to_owned(), theirs.map(str::to_owned)))
            })
            .collect()
    };
    let advice = |grant: &str, theirs: &Option<String>| {
        if !grants.iter().any(|g| g == grant) {
            format!(" — but there is no grant {grant} now: claude mcp remove {NAME}-{grant}")
        } else if theirs.as_deref() != Some(url) {
            format!(
                " — but it points at {}, not {url}: /control register {grant} again",
                theirs.as_deref().unwrap_or("no URL")
            )
        } else {
            String::new()
        }
    };
    let mut lines = Vec::new();
    for (grant, theirs) in registered(config.get("mcpServers")) {
        lines.push(format!(
            "Claude Code: grant {grant} registered at user scope{}",
            advice(&grant, &theirs)
        ));
    }
    if let Some(projects) = config
        .get("projects")
        .and_then(serde_json::Value::as_object)
    {
        for (dir, project) in projects {
            for (grant, theirs) in registered(project.get("mcpServers")) {
                lines.push(format!(
                    "Claude Code: grant {grant} registered at local scope, for {dir} only{}",
                    advice(&grant, &theirs)
                ));
            }
        }
    }
    lines
}

/// The answer when `claude` is not installed: the entry to add by hand.
fn by_hand(name: &str, path: &Path, entry: &str) -> Vec<String> {
    vec![
        format!(
            "claude is not installed; the token is in {}. Add this entry as mcpServers.{name} in Claude Code's configuration:",
            path.display()
        ),
        entry.to_owned(),
    ]
}

/// The first `claude` on PATH, as the shell would find it: a file, not a
/// directory, executable or not (running it says why it cannot run).
fn find_claude() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                PathBuf::from(".").join("claude")
            } else {
                dir.join("claude")
            }
        })
        .find(|candidate| std::fs::symlink_metadata(candidate).is_ok() && !candidate.is_dir())
}

/// Why `program` could not be run, naming the file at fault.
fn cannot_run(program: &Path, e: &io::Error) -> String {
    let target = std::fs::canonicalize(program).ok();
    let shown = match &target {
        Some(t) if t != program => format!("{} (a link to {})", program.display(), t.display()),
        _ => program.display().to_string(),
    };
    let why = match e.kind() {
        io::ErrorKind::TimedOut => {
            format!("it did not answer within {}s", CLAUDE_TIMEOUT.as_secs())
        }
        _ => why_not(target.as_deref().unwrap_or(program), e),
    };
    format!("cannot run {shown}: {why}")
}

/// The reason behind a failed exec of `file` (links resolved).
fn why_not(file: &Path, e: &io::Error) -> String {
    let me = std::fs::metadata("/proc/self").ok().map(|m| m.uid());
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            let mut dirs: Vec<&Path> = file.ancestors().skip(1).collect();
            dirs.reverse();
            if let Some(dir) = dirs.into_iter().find(|dir| !can(dir, 0o1, me)) {
                let mode = std::fs::metadata(dir).map_or(0, |m| m.mode() & 0o7777);
                return format!(
                    "the directory {} (mode {mode:04o}) does not let this user reach it",
                    dir.display()
                );
            }
            match std::fs::metadata(file) {
                Ok(meta) if !can(file, 0o1, me) => format!(
                    "it is not executable by this user (mode {:04o})",
                    meta.mode() & 0o7777
                ),
                _ => "permission denied (is its file system mounted noexec?)".to_owned(),
            }
        }
        io::ErrorKind::NotFound if std::fs::metadata(file).is_err() => {
            "it is a link to a file that does not exist".to_owned()
        }
        io::ErrorKind::NotFound => match interpreter(file) {
            Some(program) => format!("its interpreter {program} is missing"),
            None => "a program it needs is missing".to_owned(),
        },
        _ if e.raw_os_error() == Some(8) => {
            "it is not a program this system can run (exec format error)".to_owned()
        }
        _ => e.to_string(),
    }
}

/// Whether the permission `bit` (1 execute/search) of `path` is granted to
/// the user `me`, by the owner's or the others' bits (the group's are
/// taken as granted: reterm does not know its groups).
fn can(path: &Path, bit: u32, me: Option<u32>) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    let mode = meta.mode();
    match me {
        Some(0) => true,
        Some(uid) if uid == meta.uid() => mode & (bit << 6) != 0,
        _ => mode & (bit | bit << 3) != 0,
    }
}

/// The program named on a script's `#!` line.
fn interpreter(file: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head.get(..n)?.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let program = String::from_utf8_lossy(line)
        .split_whitespace()
        .next()?
        .to_owned();
    Some(program)
}

/// Runs `program` with `args` in `cwd`, its output captured, stdin closed.
async fn claude(program: &Path, cwd: &Path, args: &[&str]) -> io::Result<std::process::Output> {
    let child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
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

    #[test]
    fn status_says_where_and_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let headers = dir.path().join("claude-headers.json");
        std::fs::write(&headers, "{}").unwrap();
        let server = json!({"type": "http", "url": "http://127.0.0.1:7421/mcp"});
        let config = json!({
            "mcpServers": {"rete": server},
            "projects": {
                "/src/a": {"mcpServers": {"rete": server}, "hasTrustDialogAccepted": true},
                "/src/b": {"mcpServers": {"rete": {"url": "http://127.0.0.1:9/mcp"}}},
                "/src/c": {"mcpServers": {}},
            },
        });
        assert_eq!(
            status_from(Some(&config), 7421, Some(&headers), &[]),
            [
                "Claude Code: registered at user scope, for every directory",
                "Claude Code: registered at local scope, for /src/a only",
                "Claude Code: registered at local scope, for /src/b only — but it points at http://127.0.0.1:9/mcp, not port 7421: /control register again",
                "Claude Code sends the token only from a directory you trust: run claude once in /src/b and accept the trust prompt (until then claude mcp list there says it needs authentication)",
            ]
        );
        std::fs::remove_file(&headers).unwrap();
        let lines = status_from(Some(&config), 7421, Some(&headers), &[]);
        assert_eq!(
            lines.last().unwrap(),
            &format!(
                "{} is missing, so Claude Code has no token: /control register again",
                headers.display()
            )
        );
        assert!(status_from(Some(&json!({})), 7421, Some(&headers), &[]).is_empty());
        assert!(status_from(None, 7421, Some(&headers), &[]).is_empty());
    }

    #[test]
    fn status_names_each_grant_registered_and_one_that_is_gone() {
        let here = json!({"type": "http", "url": "http://127.0.0.1:7421/mcp"});
        let config = json!({
            "mcpServers": {"rete-bot": here, "rete-old": here, "other": here},
            "projects": {"/src/a": {"mcpServers": {"rete-bot": {"url": "http://127.0.0.1:9/mcp"}}}},
        });
        assert_eq!(
            status_from(Some(&config), 7421, None, &["bot".to_owned()]),
            [
                "Claude Code: grant bot registered at user scope",
                "Claude Code: grant old registered at user scope — but there is no grant old now: claude mcp remove rete-old",
                "Claude Code: grant bot registered at local scope, for /src/a only — but it points at http://127.0.0.1:9/mcp, not http://127.0.0.1:7421/mcp: /control register bot again",
            ]
        );
    }

    #[test]
    fn a_registration_is_found_at_user_scope_and_in_each_directory() {
        let here = json!({"type": "http", "url": "http://127.0.0.1:7421/mcp"});
        let config = json!({
            "mcpServers": {"rete-bot": here, "rete-botany": here},
            "projects": {
                "/src/a": {"mcpServers": {"rete-bot": here}},
                "/src/b": {"mcpServers": {"other": here}},
                "/src/c": {},
            },
        });
        assert_eq!(
            registrations(&config, "rete-bot"),
            [Scope::User, Scope::Local(PathBuf::from("/src/a"))]
        );
        assert_eq!(registrations(&config, "rete-bo"), []);
        assert_eq!(registrations(&json!({}), "rete-bot"), []);
    }

    #[test]
    fn a_program_that_cannot_run_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("claude");
        std::fs::write(&program, "#!/nonexistent/node\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = std::process::Command::new(&program).spawn().unwrap_err();
        assert_eq!(
            cannot_run(&program, &e),
            format!(
                "cannot run {}: its interpreter /nonexistent/node is missing",
                program.display()
            )
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("gone"), &link).unwrap();
        let e = std::process::Command::new(&link).spawn().unwrap_err();
        assert_eq!(
            cannot_run(&link, &e),
            format!(
                "cannot run {}: it is a link to a file that does not exist",
                link.display()
            )
        );
    }

    #[test]
    fn a_local_directory_is_resolved_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(local_dir(&dir.path().to_string_lossy()).unwrap(), real);
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            local_dir(&file.to_string_lossy()).unwrap_err(),
            format!("cannot register for {}: not a directory", file.display())
        );
    }
}
