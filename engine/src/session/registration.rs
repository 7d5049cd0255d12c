//! Registration: CAP negotiation, SASL, PASS/NICK/USER, the welcome and ISUPPORT.
//!
//! The steps, as a transition table:
//!
//! | step      | input                         | next      | sends                     |
//! |-----------|-------------------------------|-----------|---------------------------|
//! | (connect) | -                             | CapLs     | CAP LS 302, PASS, NICK, USER |
//! | CapLs     | CAP LS (last line)            | CapReq    | CAP REQ ... (or CAP END)  |
//! | CapReq    | CAP ACK/NAK, all answered     | Sasl      | `AUTHENTICATE <mech>`     |
//! | CapReq    | CAP ACK/NAK, no SASL to do    | AwaitWelcome | CAP END                |
//! | Sasl      | 903, or 902/904-908 (failure) | AwaitWelcome | CAP END                |
//! | any       | 001                           | Registered | JOINs                    |
//!
//! A server that does not speak CAP answers 001 straight away, which the
//! table covers from any step.

use super::Session;
use crate::buffer::BufferKind;
use crate::cap;
use crate::event::{ConnState, Event};
use crate::line::{Line, OutLine};
use crate::sasl::{
    encode_authenticate, AuthenticateAssembler, KeyDerivation, SaltedPassword, SaslClient, Step,
};
use base64::Engine as _;
use serde::Serialize;

/// Where registration stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegStep {
    /// Not connected.
    #[default]
    Idle,
    /// Waiting for the CAP LS reply.
    CapLs,
    /// Waiting for answers to CAP REQ.
    CapReq,
    /// Authenticating.
    Sasl,
    /// CAP END sent (or never needed); waiting for 001.
    AwaitWelcome,
    /// Registered.
    Registered,
}

/// Registration progress.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Registration {
    /// The current step.
    pub step: RegStep,
    /// How many nick fallbacks were tried.
    pub nick_attempts: u32,
    /// Every nick sent on this connection before 001, in order.
    pub tried_nicks: Vec<String>,
    /// The nick length a 432 taught us, when ISUPPORT has not said.
    pub learned_nicklen: Option<usize>,
    /// True once every fallback was refused: the session waits for `/nick`.
    pub nick_exhausted: bool,
    /// True when the server refused our SASL credentials (904) on this
    /// connection; if it then closes before 001, it requires SASL.
    pub sasl_refused: bool,
    /// True once CAP END was sent on this connection.
    pub cap_end_sent: bool,
    /// True while a NICK taking our nick back (its holder left) waits for
    /// the server's answer: one at a time.
    pub regaining_nick: bool,
}

/// How the SASL exchange stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum SaslOutcome {
    /// Nothing tried on this connection.
    #[default]
    NotTried,
    /// Exchange under way.
    InProgress,
    /// Logged in.
    Succeeded,
    /// Failed; the text says why.
    Failed(String),
}

/// SASL state: the outcome and the running exchange (never serialized).
#[derive(Default, Serialize)]
pub struct SaslState {
    /// The outcome on this connection.
    pub outcome: SaslOutcome,
    /// The account we are logged in as (900), when known.
    pub account: Option<String>,
    #[serde(skip)]
    client: Option<SaslClient>,
    #[serde(skip)]
    assembler: AuthenticateAssembler,
    #[serde(skip)]
    nonce: String,
    /// A SCRAM key derivation for the host to run, until it is polled.
    #[serde(skip)]
    derivation: Option<(u64, KeyDerivation)>,
    /// The id of the derivation whose result is awaited (0: none). Bumped
    /// for every derivation and on reset, so a late result is dropped.
    #[serde(skip)]
    derivation_id: u64,
    #[serde(skip)]
    awaiting_derivation: bool,
}

impl std::fmt::Debug for SaslState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslState")
            .field("outcome", &self.outcome)
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl SaslState {
    pub(super) fn reset(&mut self) {
        self.outcome = SaslOutcome::NotTried;
        self.client = None;
        self.assembler = AuthenticateAssembler::default();
        self.derivation = None;
        self.awaiting_derivation = false;
        self.derivation_id += 1;
    }
}

impl Session {
    pub(super) fn start_registration(&mut self, entropy: [u8; 18]) {
        self.sasl.nonce = base64::engine::general_purpose::STANDARD.encode(entropy);
        self.registration.step = RegStep::CapLs;
        self.send_urgent(OutLine::new("CAP").param("LS").param("302"));
        if let Some(pass) = self.config.password.clone() {
            self.send_urgent(OutLine::new("PASS").param(pass));
        }
        // The first nick goes with the registration burst, unpaced like it;
        // fallbacks after a refusal are paced (see `on_nick_refused`). A
        // configured nick no server takes (a leading digit) is still sent
        // once, so the server's 432 can say why.
        let nick = self
            .next_registration_nick()
            .unwrap_or_else(|| self.config.nick.clone());
        self.registration.tried_nicks.push(nick.clone());
        self.send_urgent(OutLine::new("NICK").param(nick));
        let (user, real) = (self.config.username.clone(), self.config.realname.clone());
        self.send_urgent(
            OutLine::new("USER")
                .param(user)
                .param("0")
                .param("*")
                .param(real),
        );
    }

    pub(super) fn on_cap(&mut self, line: &Line<'_>) {
        // CAP <target> <sub> [*] :<list>
        let sub = line.param(1).unwrap_or("").to_ascii_uppercase();
        let params = line.params();
        let list = params.last().copied().unwrap_or("");
        let more = params.len() >= 4 && params[2] == "*";
        match sub.as_str() {
            "LS" => {
                self.caps.offer(list);
                self.caps.ls_in_progress = more;
                self.caps.negotiated = true;
                if !more && self.registration.step == RegStep::CapLs {
                    self.request_caps();
                }
            }
            "NEW" => {
                self.caps.offer(list);
                if self.registration.step == RegStep::Registered {
                    let wanted = self.caps.to_request(false);
                    self.send_cap_req(&wanted);
                }
            }
            "DEL" => self.caps.withdraw(list),
            "ACK" => {
                self.caps.ack(list);
                self.after_cap_answer();
            }
            "NAK" => {
                self.caps.nak(list);
                self.after_cap_answer();
            }
            _ => {}
        }
    }

    fn request_caps(&mut self) {
        let wanted = self.caps.to_request(self.config.sasl.is_some());
        if wanted.is_empty() {
            self.end_cap();
        } else {
            self.registration.step = RegStep::CapReq;
            self.send_cap_req(&wanted);
        }
    }

    fn send_cap_req(&mut self, caps: &[&str]) {
        self.caps.requested(caps);
        for list in cap::req_lines(caps) {
            self.send_urgent(OutLine::new("CAP").param("REQ").param(list));
        }
    }

    fn after_cap_answer(&mut self) {
        if self.registration.step != RegStep::CapReq || !self.caps.pending.is_empty() {
            return;
        }
        if self.caps.has("sasl") && self.config.sasl.is_some() {
            self.start_sasl();
        } else {
            self.end_cap();
        }
    }

    fn start_sasl(&mut self) {
        let Some(settings) = self.config.sasl.clone() else {
            self.end_cap();
            return;
        };
        let name = settings.mechanism.name();
        // `sasl=PLAIN,EXTERNAL` lists what the server takes; no value means "ask".
        let offered = self.caps.value("sasl").unwrap_or("");
        if !offered.is_empty() && !offered.split(',').any(|m| m.eq_ignore_ascii_case(name)) {
            self.sasl_failed(&format!(
                "the server does not offer {name} (it offers {offered})"
            ));
            return;
        }
        self.registration.step = RegStep::Sasl;
        self.sasl.outcome = SaslOutcome::InProgress;
        self.sasl.client = Some(SaslClient::new(
            settings.mechanism,
            settings.credentials,
            self.sasl.nonce.clone(),
        ));
        self.send_urgent(OutLine::new("AUTHENTICATE").param(name));
    }

    pub(super) fn on_authenticate(&mut self, line: &Line<'_>) {
        if self.sasl.outcome != SaslOutcome::InProgress {
            return;
        }
        let chunk = line.param(0).unwrap_or("+");
        let challenge = match self.sasl.assembler.push(chunk) {
            Ok(Some(data)) => data,
            Ok(None) => return,
            Err(e) => {
                self.abort_sasl(&e.to_string());
                return;
            }
        };
        if self.sasl.awaiting_derivation {
            self.abort_sasl("the server sent a challenge before the key was derived");
            return;
        }
        let Some(client) = self.sasl.client.as_mut() else {
            return;
        };
        match client.step_deferred(&challenge) {
            Ok(Step::Respond(response)) => self.send_sasl_response(&response),
            Ok(Step::Derive(work)) => {
                // PBKDF2 is slow; the host runs it off the session and
                // answers with `handle_key_derived`.
                self.sasl.derivation_id += 1;
                self.sasl.awaiting_derivation = true;
                self.sasl.derivation = Some((self.sasl.derivation_id, work));
            }
            Err(e) => self.abort_sasl(&e.to_string()),
        }
    }

    fn send_sasl_response(&mut self, response: &[u8]) {
        for chunk in encode_authenticate(response) {
            self.send_urgent(OutLine::new("AUTHENTICATE").param(chunk));
        }
    }

    /// The SCRAM key derivation the host should run, if one is due. Call it
    /// after every input, beside `poll_transmit`.
    #[must_use]
    pub fn poll_key_derivation(&mut self) -> Option<(u64, KeyDerivation)> {
        self.sasl.derivation.take()
    }

    /// The host ran derivation `id`: finish the SCRAM step with its result.
    /// A result for a derivation no longer awaited (the connection was reset
    /// since) is ignored.
    pub fn handle_key_derived(&mut self, now: crate::clock::Now, id: u64, salted: &SaltedPassword) {
        self.now = now;
        if !self.sasl.awaiting_derivation || id != self.sasl.derivation_id {
            return;
        }
        self.sasl.awaiting_derivation = false;
        let Some(client) = self.sasl.client.as_mut() else {
            return;
        };
        match client.resume(salted) {
            Ok(response) => self.send_sasl_response(&response),
            Err(e) => self.abort_sasl(&e.to_string()),
        }
    }

    /// Gives up on an exchange the server is still in: `AUTHENTICATE *`
    /// aborts it, and the server answers 906, which ends registration's SASL step.
    fn abort_sasl(&mut self, why: &str) {
        self.send_urgent(OutLine::new("AUTHENTICATE").param("*"));
        self.sasl_failed(why);
    }

    fn sasl_failed(&mut self, why: &str) {
        self.sasl.outcome = SaslOutcome::Failed(why.to_owned());
        self.sasl.client = None;
        self.status(&sasl_failure_line(why));
        self.end_cap();
    }

    fn sasl_numeric(&mut self, code: &str, line: &Line<'_>) {
        let text = line.params().last().copied().unwrap_or("").to_owned();
        match code {
            // RPL_LOGGEDIN: <nick> <nick!ident@host> <account> :text
            "900" => {
                self.sasl.account = line.param(2).map(str::to_owned);
                self.push_server_reply(code, line);
            }
            "901" => {
                self.sasl.account = None;
                self.push_server_reply(code, line);
            }
            "903" => {
                if self.sasl.outcome == SaslOutcome::InProgress {
                    self.sasl.outcome = SaslOutcome::Succeeded;
                    self.sasl.client = None;
                    self.status("SASL authentication succeeded");
                    self.end_cap();
                }
            }
            // 908 RPL_SASLMECHS only lists mechanisms; the failure numeric follows.
            "908" => self.push_server_reply(code, line),
            // 902 nick locked, 904 failed, 905 too long, 906 aborted, 907 already authed.
            _ => {
                if self.sasl.outcome == SaslOutcome::InProgress {
                    self.registration.sasl_refused = code == "904";
                    self.sasl_failed(&text);
                } else {
                    self.push_server_reply(code, line);
                }
            }
        }
    }

    fn end_cap(&mut self) {
        if !self.registration.cap_end_sent && self.registration.step != RegStep::Registered {
            self.registration.cap_end_sent = true;
            self.registration.step = RegStep::AwaitWelcome;
            if self.caps.negotiated {
                self.send_urgent(OutLine::new("CAP").param("END"));
            }
        }
    }

    fn on_welcome(&mut self, line: &Line<'_>) {
        self.note_attach_time(line);
        if let Some(nick) = line.param(0) {
            self.note_confirmed_nick(nick);
            if nick != self.connection.nick {
                self.connection.nick = nick.to_owned();
                self.events.push_back(Event::OwnNick(nick.to_owned()));
            }
        }
        self.registration.step = RegStep::Registered;
        self.registration.cap_end_sent = true;
        self.outbox.refill();
        if !self.config.bridged {
            self.lag.start(self.now.mono);
        }
        self.set_state(ConnState::Connected);
        self.events.push_back(Event::Registered);
        self.push_server_reply("001", line);
        if self.config.bridged {
            // The service joins; its sync and rows carry our JOINs.
            return;
        }
        // The configured channels first, in the config's order (their
        // buffers open in the order the server answers, and a host numbers
        // them so), then those joined since.
        let mut wanted: Vec<super::ChannelSpec> = Vec::new();
        let mut taken = std::collections::BTreeSet::new();
        let configured = self.config.channels.iter().map(|c| self.fold(&c.name));
        for key in configured.chain(self.wanted_channels.keys().cloned()) {
            if let Some(spec) = self.wanted_channels.get(&key) {
                if taken.insert(key) {
                    wanted.push(spec.clone());
                }
            }
        }
        for spec in wanted {
            self.send_join(&spec.name, spec.key.as_deref());
        }
    }

    fn on_isupport(&mut self, line: &Line<'_>) {
        let params = line.params();
        if params.len() < 3 {
            return;
        }
        let before = self.isupport.casemapping;
        self.isupport.apply_tokens(&params[1..params.len() - 1]);
        if self.isupport.casemapping != before {
            let map = self.isupport.casemapping;
            self.buffers.refold(|n| map.fold(n));
            self.channels = std::mem::take(&mut self.channels)
                .into_values()
                .map(|c| (map.fold(&c.name), c))
                .collect();
            self.wanted_channels = std::mem::take(&mut self.wanted_channels)
                .into_values()
                .map(|c| (map.fold(&c.name), c))
                .collect();
        }
    }

    /// 432/433/436/437 while registering: try the next nick, paced by the
    /// flood throttle, until the bounded tries run out; then wait for `/nick`.
    /// Our nick changes only when the server confirms one (001 or NICK).
    fn on_nick_refused(&mut self, code: &str, line: &Line<'_>) {
        if self.registration.step == RegStep::Registered {
            // Taken again before our NICK arrived: wait for the next time
            // its holder leaves.
            self.registration.regaining_nick = false;
            self.push_server_reply(code, line);
            return;
        }
        let refused = line.param(1).unwrap_or("").to_owned();
        let why = match code {
            "432" => {
                let limit = self.registration.learned_nicklen;
                self.registration.learned_nicklen =
                    super::nick_choice::limit_after_erroneous(&refused, limit);
                let server_says = line.params().last().copied().unwrap_or("");
                format!("Nick {refused} is invalid on this server ({server_says})")
            }
            _ => format!("Nick {refused} is not available"),
        };
        if self.registration.nick_exhausted {
            // A nick typed with `/nick` after the fallbacks ran out.
            self.status(&format!("{why}; choose another with /nick <name>"));
            return;
        }
        self.registration.nick_attempts += 1;
        match self.next_registration_nick() {
            Some(next) => {
                self.status(&format!("{why}; trying {next}"));
                self.registration.tried_nicks.push(next.clone());
                self.send(OutLine::new("NICK").param(next));
            }
            None => {
                self.registration.nick_exhausted = true;
                let tried = self.registration.tried_nicks.join(", ");
                self.status(&format!(
                    "{why}. No nick was accepted (tried {tried}); still connected: choose one with /nick <name>"
                ));
            }
        }
    }

    /// The nick we are on IRC to be: the one registration tries first.
    fn wanted_nick(&self) -> &str {
        self.preferred_nick.as_deref().unwrap_or(&self.config.nick)
    }

    /// `nick` left IRC or took another nick. When it is the nick we want
    /// and we are on IRC under a fallback (it was taken when we registered:
    /// by another client, or by our own connection a moment ago from
    /// elsewhere), we ask for it back: one NICK, and no other until the
    /// server answers, so a server repeating the QUIT gets one line each
    /// time at most.
    pub(super) fn take_back_nick_freed_by(&mut self, nick: &str) {
        if self.registration.step != RegStep::Registered || self.registration.regaining_nick {
            return;
        }
        let wanted = self.wanted_nick().to_owned();
        if !self.isupport.casemapping.eq(nick, &wanted)
            || self.isupport.casemapping.eq(&self.connection.nick, &wanted)
            || self.requested_nick.is_some()
        {
            return;
        }
        self.registration.regaining_nick = true;
        self.status(&format!("{wanted} is free again: taking it back"));
        self.send(OutLine::new("NICK").param(&wanted));
    }

    /// The server gave us `nick` (001, or NICK from us): a nick asked for
    /// with `/nick` becomes the one tried first on the next connection.
    pub(super) fn note_confirmed_nick(&mut self, nick: &str) {
        self.registration.regaining_nick = false;
        let asked = self
            .requested_nick
            .as_deref()
            .is_some_and(|r| self.isupport.casemapping.eq(r, nick));
        if asked {
            self.requested_nick = None;
            self.preferred_nick = Some(nick.to_owned());
        }
    }

    /// True while the link is up but 001 has not come yet.
    pub(super) fn registering(&self) -> bool {
        !matches!(self.registration.step, RegStep::Idle | RegStep::Registered)
    }

    /// The next nick registration should try, if any is left.
    fn next_registration_nick(&self) -> Option<String> {
        let limit = match (self.isupport.nicklen, self.registration.learned_nicklen) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        super::nick_choice::next_nick(
            &self.config.nick,
            self.preferred_nick.as_deref(),
            &self.registration.tried_nicks,
            limit,
        )
    }

    /// Numerics and anything else not handled by name.
    pub(super) fn on_numeric_or_other(&mut self, line: &Line<'_>, cmd: &str) {
        match cmd {
            "001" => self.on_welcome(line),
            "005" => {
                self.on_isupport(line);
                self.push_server_reply(cmd, line);
            }
            "432" | "433" | "436" | "437" => self.on_nick_refused(cmd, line),
            "464" => self.on_password_mismatch(line),
            "900" | "901" | "902" | "903" | "904" | "905" | "906" | "907" | "908" => {
                self.sasl_numeric(cmd, line)
            }
            "324" => self.on_channel_mode_is(cmd, line),
            "329" => self.on_creation_time(cmd, line),
            "331" | "332" | "333" | "353" | "366" | "352" | "354" | "315" => {
                self.on_channel_numeric(line, cmd)
            }
            _ => self.push_server_reply(cmd, line),
        }
    }

    /// Keeps a server reply in the server buffer: the params after our nick.
    pub(super) fn push_server_reply(&mut self, cmd: &str, line: &Line<'_>) {
        let params = line.params();
        let skip = usize::from(cmd.len() == 3 && cmd.bytes().all(|b| b.is_ascii_digit()));
        let text = params.get(skip..).unwrap_or_default().join(" ");
        let from = line.source_nick().unwrap_or("");
        let from = if line.source().is_some_and(|s| s.contains('!')) {
            from
        } else {
            ""
        };
        let row = self.row_for(
            line,
            from,
            crate::row::Payload::ServerReply {
                command: cmd.into(),
                text: text.into(),
            },
        );
        let id = self.buffers.server_id().clone();
        self.push_row(&id, row);
    }

    pub(super) fn send_join(&mut self, name: &str, key: Option<&str>) {
        let mut out = OutLine::new("JOIN").param(name);
        if let Some(k) = key {
            out = out.param(k);
        }
        self.send(out);
    }

    /// Opens (or finds) the buffer for a channel.
    pub(super) fn channel_buffer(&mut self, name: &str) -> crate::ids::BufferId {
        let folded = self.fold(name);
        let (id, created) = self.buffers.ensure(BufferKind::Channel, &folded, name);
        if created {
            self.events.push_back(Event::BufferOpened(id.clone()));
        }
        id
    }

    /// Opens (or finds) the query buffer for a nick.
    pub(super) fn query_buffer(&mut self, nick: &str) -> crate::ids::BufferId {
        let folded = self.fold(nick);
        let (id, created) = self.buffers.ensure(BufferKind::Query, &folded, nick);
        if created {
            self.events.push_back(Event::BufferOpened(id.clone()));
        }
        id
    }
}

/// The status line for a failed SASL exchange. Servers commonly give 904
/// the text "SASL authentication failed" itself; prefixing it again read
/// "SASL authentication failed: SASL authentication failed", so a reason
/// that repeats the prefix keeps only what it adds.
fn sasl_failure_line(why: &str) -> String {
    const PREFIX: &str = "SASL authentication failed";
    let why = why.trim();
    let rest = match why.get(..PREFIX.len()) {
        Some(head) if head.eq_ignore_ascii_case(PREFIX) => why[PREFIX.len()..]
            .trim_start_matches(|c: char| c == ':' || c == '-' || c == '.' || c.is_whitespace()),
        _ => why,
    };
    if rest.is_empty() {
        PREFIX.to_owned()
    } else {
        format!("{PREFIX}: {rest}")
    }
}
