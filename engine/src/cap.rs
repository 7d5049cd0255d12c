//! IRCv3 capability negotiation state (CAP LS 302 / REQ / ACK / NAK / NEW / DEL / END).
//!
//! The engine requests only capabilities the server offered: InspIRCd NAKs a
//! whole REQ when one capability in it is unknown.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The capabilities the engine knows how to use, in request order.
/// `draft/chathistory` and `chathistory` are alternatives; either is fine.
pub const WANTED: &[&str] = &[
    "message-tags",
    "server-time",
    "batch",
    "echo-message",
    "sasl",
    "multi-prefix",
    "away-notify",
    "account-notify",
    "extended-join",
    "userhost-in-names",
    "chghost",
    "cap-notify",
    "labeled-response",
    "setname",
    "account-tag",
    "invite-notify",
    "draft/chathistory",
    "chathistory",
];

/// Where CAP negotiation stands.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Capabilities {
    /// What the server offers, with each capability's value ("" when none).
    pub available: BTreeMap<String, String>,
    /// What is enabled now.
    pub enabled: BTreeSet<String>,
    /// Requested and not yet answered.
    pub pending: BTreeSet<String>,
    /// True while a multi-line `CAP LS` reply is being collected.
    pub ls_in_progress: bool,
    /// True once the server answered `CAP LS` at all (an IRCv3 server).
    pub negotiated: bool,
}

impl Capabilities {
    /// Records one `CAP LS` or `CAP NEW` list: `cap[=value]` words.
    pub fn offer(&mut self, list: &str) {
        for word in list.split(' ').filter(|w| !w.is_empty()) {
            let (name, value) = word.split_once('=').unwrap_or((word, ""));
            self.available.insert(name.to_owned(), value.to_owned());
        }
    }

    /// Records a `CAP DEL` list: those capabilities are gone.
    pub fn withdraw(&mut self, list: &str) {
        for name in list.split(' ').filter(|w| !w.is_empty()) {
            self.available.remove(name);
            self.enabled.remove(name);
        }
    }

    /// The wanted capabilities on offer and not enabled or pending, in
    /// request order. `sasl` is left out unless `want_sasl`.
    pub fn to_request(&self, want_sasl: bool) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = WANTED
            .iter()
            .copied()
            .filter(|c| self.available.contains_key(*c))
            .filter(|c| !self.enabled.contains(*c) && !self.pending.contains(*c))
            .filter(|c| want_sasl || *c != "sasl")
            .collect();
        // Only one of the two chathistory names is needed.
        if out.contains(&"draft/chathistory") || self.enabled.contains("draft/chathistory") {
            out.retain(|c| *c != "chathistory");
        }
        out
    }

    /// Marks `caps` as requested.
    pub fn requested(&mut self, caps: &[&str]) {
        self.pending.extend(caps.iter().map(|c| (*c).to_owned()));
    }

    /// Records `CAP ACK`: each listed capability is on (or off with a `-` prefix).
    pub fn ack(&mut self, list: &str) {
        for word in list.split(' ').filter(|w| !w.is_empty()) {
            if let Some(name) = word.strip_prefix('-') {
                self.pending.remove(name);
                self.enabled.remove(name);
            } else {
                self.pending.remove(word);
                self.enabled.insert(word.to_owned());
            }
        }
    }

    /// Records `CAP NAK`: nothing in the list changed.
    pub fn nak(&mut self, list: &str) {
        for word in list.split(' ').filter(|w| !w.is_empty()) {
            self.pending.remove(word.trim_start_matches('-'));
        }
    }

    /// True when `cap` is enabled.
    pub fn has(&self, cap: &str) -> bool {
        self.enabled.contains(cap)
    }

    /// True when either chathistory capability is enabled.
    pub fn has_chathistory(&self) -> bool {
        self.has("draft/chathistory") || self.has("chathistory")
    }

    /// The value the server gave `cap` ("" when none), if offered.
    pub fn value(&self, cap: &str) -> Option<&str> {
        self.available.get(cap).map(String::as_str)
    }

    /// Forgets everything (the connection closed).
    pub fn reset(&mut self) {
        *self = Capabilities::default();
    }
}

/// Splits capability names into `CAP REQ` lists whose lines stay well under
/// 512 bytes.
pub fn req_lines(caps: &[&str]) -> Vec<String> {
    const MAX: usize = 400;
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for cap in caps {
        if !cur.is_empty() && cur.len() + 1 + cap.len() > MAX {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(cap);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_only_offered_caps() {
        let mut c = Capabilities::default();
        c.offer("multi-prefix sasl=PLAIN,EXTERNAL server-time unknown-cap draft/chathistory chathistory");
        assert_eq!(c.value("sasl"), Some("PLAIN,EXTERNAL"));
        assert_eq!(
            c.to_request(false),
            vec!["server-time", "multi-prefix", "draft/chathistory"]
        );
        assert_eq!(
            c.to_request(true),
            vec!["server-time", "sasl", "multi-prefix", "draft/chathistory"]
        );
    }

    #[test]
    fn ack_nak_del() {
        let mut c = Capabilities::default();
        c.offer("a b server-time batch");
        c.requested(&["server-time", "batch"]);
        c.ack("server-time");
        c.nak("batch");
        assert!(c.has("server-time"));
        assert!(!c.has("batch"));
        assert!(c.pending.is_empty());
        c.withdraw("server-time");
        assert!(!c.has("server-time"));
        // batch was refused once but is still on offer; server-time is gone.
        assert_eq!(c.to_request(true), vec!["batch"]);
        c.ack("-batch");
        assert!(!c.has("batch"));
    }

    #[test]
    fn req_lines_split() {
        let caps: Vec<&str> = std::iter::repeat_n("x-very-long-capability-name", 40).collect();
        let lines = req_lines(&caps);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.len() <= 400));
        assert_eq!(lines.join(" ").split(' ').count(), 40);
    }
}
