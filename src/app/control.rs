//! AI access in reterm: starting and stopping the control server as the
//! settings change, and the `/control` answers.
//!
//! Every answer here goes to the terminal only: the token is in the connect
//! command, so nothing of it is logged or written to a transcript.

use rete_actors::Rete;
use rete_mcp::grant::Grants;
use rete_mcp::{AccessLog, Approvals, ControlServer, ServerSettings, StartError, TokenStoreError};
use reterm::config::ControlConfig;
use reterm::secrets::{secrets_path, SecretsFile};
use std::sync::Arc;

/// The text for AI access switched off.
pub const OFF: &str = "AI access is off — /set control.enabled on";

/// Whether the server is serving, and why not when it is not.
enum State {
    Off,
    On(ControlServer),
    Failed(String),
}

/// The control server as reterm manages it.
pub struct Control {
    rete: Arc<Rete>,
    state: State,
    /// control.debug and control.port as last applied, so a port change
    /// after a failed start can start the server again.
    debug: bool,
    port: u16,
    /// control.send: never saved, off at every start.
    send: bool,
    /// Kept across stops and regenerations; gone when reterm quits.
    access_log: Arc<AccessLog>,
    /// control.approve and the lines waiting for the person: one for the
    /// whole run, handed to each server started, so the prompt row and
    /// `/control allow|deny` always look at the same queue.
    approvals: Approvals,
    /// The scoped grants: one list for the whole run, loaded at the start
    /// from the secrets file and handed to each server started, so a grant
    /// added or revoked acts on the running server at once.
    grants: Grants,
    /// What loading the grants had to say, shown once at the start.
    grants_notice: Option<String>,
    /// The grants that had ended and were forgotten at the start: their
    /// Claude Code registrations are removed once the start is done.
    grants_forgotten: Vec<String>,
}

impl Control {
    /// Control switched off, the grants kept in the secrets file loaded
    /// (those ended forgotten).
    pub fn new(rete: Arc<Rete>) -> Control {
        let loaded = match secrets_path() {
            Ok(path) => super::grants::load(&path, now_ms()),
            Err(_) => super::grants::Loaded::default(),
        };
        Control {
            rete,
            state: State::Off,
            debug: false,
            port: 0,
            send: false,
            access_log: Arc::new(AccessLog::new()),
            approvals: Approvals::new(),
            grants: Grants::new(loaded.live),
            grants_notice: loaded.notice,
            grants_forgotten: loaded.forgotten,
        }
    }

    /// What loading the grants had to say, once.
    pub fn take_grants_notice(&mut self) -> Option<String> {
        self.grants_notice.take()
    }

    /// Removes the grants forgotten at the start from Claude Code, as a
    /// revoke does (they could only answer 403 there); the lines to print,
    /// once.
    pub async fn unregister_forgotten_grants(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        for name in std::mem::take(&mut self.grants_forgotten) {
            lines.extend(super::register::unregister(&format!("rete-{name}")).await);
        }
        lines
    }

    /// The lines waiting for the person's approval.
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// control.approve changed (saved by the caller); the next request
    /// reads it.
    pub fn set_approve(&self, on: bool) {
        self.approvals.set_on(on);
    }

    /// Brings the server in line with the settings: starts it when enabled
    /// and not running, stops it when disabled. Returns a notice to show
    /// when starting failed.
    pub async fn apply(&mut self, settings: &ControlConfig) -> Option<String> {
        self.debug = settings.debug;
        self.port = settings.port;
        self.approvals.set_on(settings.approve);
        match (settings.enabled, &self.state) {
            (true, State::On(_)) => None,
            (true, _) => self.start().await,
            (false, _) => {
                self.stop().await;
                None
            }
        }
    }

    /// Starts the server with the settings last applied.
    async fn start(&mut self) -> Option<String> {
        let result = match secrets_path() {
            Ok(secrets) => {
                let server_settings = ServerSettings {
                    port: self.port,
                    debug: self.debug,
                    send: self.send,
                    tokens: Arc::new(SecretsFile { path: secrets }),
                    grants: self.grants.clone(),
                };
                ControlServer::start_with_approvals(
                    self.rete.clone(),
                    server_settings,
                    self.access_log.clone(),
                    self.approvals.clone(),
                )
                .await
            }
            Err(e) => Err(StartError::Token(TokenStoreError(e.to_string()))),
        };
        self.settle(result)
    }

    /// Stops serving (control.enabled off, or quitting); the grants' last
    /// use is saved.
    pub async fn stop(&mut self) {
        if let Ok(path) = secrets_path() {
            // Best effort: a last-use time is a convenience.
            let _ = super::grants::persist_last_use(&self.grants, &path);
        }
        if let State::On(server) = std::mem::replace(&mut self.state, State::Off) {
            server.stop().await;
        }
    }

    /// control.debug changed.
    pub fn set_debug(&mut self, on: bool) {
        self.debug = on;
        if let State::On(server) = &self.state {
            server.set_debug(on);
        }
    }

    /// Whether control.send is on (it lasts until reterm quits).
    pub fn send(&self) -> bool {
        self.send
    }

    /// control.send changed; it lasts until reterm quits.
    pub fn set_send(&mut self, on: bool) {
        self.send = on;
        if let State::On(server) = &self.state {
            server.set_send(on);
        }
    }

    /// control.port changed: a running server moves to it, and after a
    /// failed start (so while enabled) the start is tried again on it.
    pub async fn set_port(&mut self, port: u16) -> Option<String> {
        self.port = port;
        match std::mem::replace(&mut self.state, State::Off) {
            State::On(server) => {
                let result = server.set_port(port).await;
                self.settle(result)
            }
            State::Failed(_) => self.start().await,
            State::Off => None,
        }
    }

    /// `/control token [regenerate]`.
    pub async fn token(&mut self, regenerate: bool) -> String {
        // Only a running server is taken out of the state: off, or a failed
        // start and its reason, stay as they are.
        if regenerate && matches!(self.state, State::On(_)) {
            if let State::On(server) = std::mem::replace(&mut self.state, State::Off) {
                let result = server.regenerate_token().await;
                if let Some(failure) = self.settle(result) {
                    return failure;
                }
                if let Some(failure) = self.refresh_headers() {
                    return failure;
                }
            }
        }
        match &self.state {
            State::On(server) => server.connect_command(),
            State::Off => OFF.to_owned(),
            State::Failed(why) => why.clone(),
        }
    }

    /// `/control register [local DIR]`: Claude Code connected through the
    /// headers file, the token on no command line (see [`super::register`]).
    pub async fn register(&self, local: Option<&str>) -> Vec<String> {
        match &self.state {
            State::On(server) => {
                let scope = match local.map(super::register::local_dir) {
                    None => super::register::Scope::User,
                    Some(Ok(dir)) => super::register::Scope::Local(dir),
                    Some(Err(why)) => return vec![why],
                };
                super::register::register(server.port(), server.token().expose(), &scope).await
            }
            State::Off => vec![OFF.to_owned()],
            State::Failed(why) => vec![why.clone()],
        }
    }

    /// `/control grant add WORDS…`.
    pub fn grant_add(&self, words: &[String]) -> Vec<String> {
        match secrets_path() {
            Ok(path) => super::grants::add(&self.grants, &path, words, now_ms()),
            Err(e) => vec![format!("grant not added: {e}")],
        }
    }

    /// `/control grant list`.
    pub fn grant_list(&self) -> Vec<String> {
        match secrets_path() {
            Ok(path) => super::grants::list(&self.grants, &path, now_ms()),
            Err(e) => vec![e.to_string()],
        }
    }

    /// `/control grant revoke NAME`; a grant revoked is also removed from
    /// Claude Code (`rete-NAME`), which would otherwise keep a server that
    /// answers 403.
    pub async fn grant_revoke(&self, name: &str) -> Vec<String> {
        let path = match secrets_path() {
            Ok(path) => path,
            Err(e) => return vec![e.to_string()],
        };
        match super::grants::revoke(&self.grants, &path, name) {
            Ok(mut lines) => {
                lines.extend(super::register::unregister(&format!("rete-{name}")).await);
                lines
            }
            Err(lines) => lines,
        }
    }

    /// `/control register NAME [local DIR]`: Claude Code connected with the
    /// grant's token, as `rete-NAME`, through the grant's own headers file.
    pub async fn register_grant(&self, name: &str, local: Option<&str>) -> Vec<String> {
        let port = match &self.state {
            State::On(server) => server.port(),
            State::Off => return vec![OFF.to_owned()],
            State::Failed(why) => return vec![why.clone()],
        };
        let Some(record) = self.grants.list().into_iter().find(|r| r.name == name) else {
            return vec![super::grants::unknown(name)];
        };
        if !record.is_live(now_ms()) {
            return vec![format!(
                "grant {name} has ended: /control grant revoke {name}, then add it again"
            )];
        }
        let Some(headers) = super::grants::headers_path(name) else {
            return vec!["cannot register: HOME is not set".to_owned()];
        };
        if !headers.exists() {
            return vec![format!(
                "the token of grant {name} is not in {} any more (it is written only once): /control grant revoke {name}, then add it again",
                headers.display()
            )];
        }
        let scope = match local.map(super::register::local_dir) {
            None => super::register::Scope::User,
            Some(Ok(dir)) => super::register::Scope::Local(dir),
            Some(Err(why)) => return vec![why],
        };
        super::register::register_entry(&format!("rete-{name}"), port, &headers, &scope).await
    }

    /// Rewrites the headers file of an earlier `/control register` with the
    /// token now served, so the registration keeps working after a
    /// regeneration. Without that file there is nothing to keep working.
    fn refresh_headers(&self) -> Option<String> {
        let State::On(server) = &self.state else {
            return None;
        };
        let path = super::register::headers_path()?;
        if !path.exists() {
            return None;
        }
        super::register::write_headers(&path, server.token().expose())
            .err()
            .map(|e| {
                format!(
                    "token regenerated, but {} could not be rewritten ({}): Claude Code cannot connect until /control register",
                    path.display(),
                    e.kind()
                )
            })
    }

    /// `/control status`: the server's state, and while it serves where
    /// Claude Code has it registered and what that registration still needs.
    pub fn status(&self) -> Vec<String> {
        match &self.state {
            State::On(server) => {
                let mut lines = vec![server.status_line()];
                let grants: Vec<String> = self.grants.list().into_iter().map(|r| r.name).collect();
                lines.extend(super::register::status(server.port(), &grants));
                lines
            }
            State::Off => vec![OFF.to_owned()],
            State::Failed(why) => vec![why.clone()],
        }
    }

    /// `/control log`: the AI access log, oldest first.
    pub fn log(&self) -> Vec<String> {
        self.access_log.rows()
    }

    fn settle(&mut self, result: Result<ControlServer, StartError>) -> Option<String> {
        match result {
            Ok(server) => {
                self.state = State::On(server);
                None
            }
            Err(e) => {
                let why = e.to_string();
                self.state = State::Failed(why.clone());
                Some(why)
            }
        }
    }
}

/// The wall clock in Unix milliseconds, as grants' times are kept.
fn now_ms() -> i64 {
    rete_actors::wall_clock::now().0
}
