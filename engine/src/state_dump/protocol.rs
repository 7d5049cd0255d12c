//! What the server speaks: capabilities, isupport, batches and chathistory.

use super::{plural, some_names};
use crate::session::Session;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// `capabilities`. Its count is the capabilities enabled.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Capabilities<'a> {
    negotiated: bool,
    ls_in_progress: bool,
    /// What the server offers, with each capability's value ("" when none).
    available: &'a BTreeMap<String, String>,
    enabled: &'a BTreeSet<String>,
    pending: &'a BTreeSet<String>,
}

pub(super) fn capabilities(s: &Session) -> Capabilities<'_> {
    let c = &s.caps;
    Capabilities {
        negotiated: c.negotiated,
        ls_in_progress: c.ls_in_progress,
        available: &c.available,
        enabled: &c.enabled,
        pending: &c.pending,
    }
}

pub(super) fn capabilities_headline(s: &Session) -> (u64, String) {
    let c = &s.caps;
    let enabled = c.enabled.len();
    let line = if c.negotiated {
        format!(
            "{enabled} enabled of {} offered, {} pending",
            c.available.len(),
            c.pending.len()
        )
    } else {
        "not negotiated on this connection".to_owned()
    };
    (enabled as u64, line)
}

/// `isupport`. Its count is the 005 tokens received.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Isupport<'a> {
    network: Option<&'a str>,
    casemapping: &'static str,
    /// PREFIX as the server spells it: `(ov)@+`.
    prefix: String,
    chantypes: &'a str,
    chanmodes: ChanModes<'a>,
    whox: bool,
    linelen: usize,
    nicklen: Option<usize>,
    chathistory: Option<u32>,
    msgreftypes: &'a [String],
    statusmsg: &'a str,
    utf8only: bool,
    /// Every token as received, value "" when none.
    tokens: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChanModes<'a> {
    list: &'a str,
    always_arg: &'a str,
    set_arg: &'a str,
    no_arg: &'a str,
}

pub(super) fn isupport(s: &Session) -> Isupport<'_> {
    let i = &s.isupport;
    let modes: String = i.prefix.iter().map(|(m, _)| *m).collect();
    let symbols: String = i.prefix.iter().map(|(_, p)| *p).collect();
    Isupport {
        network: i.network.as_deref(),
        casemapping: i.casemapping.as_str(),
        prefix: format!("({modes}){symbols}"),
        chantypes: &i.chantypes,
        chanmodes: ChanModes {
            list: &i.chanmodes.list,
            always_arg: &i.chanmodes.always_arg,
            set_arg: &i.chanmodes.set_arg,
            no_arg: &i.chanmodes.no_arg,
        },
        whox: i.whox,
        linelen: i.linelen,
        nicklen: i.nicklen,
        chathistory: i.chathistory,
        msgreftypes: &i.msgreftypes,
        statusmsg: &i.statusmsg,
        utf8only: i.utf8only,
        tokens: &i.raw,
    }
}

pub(super) fn isupport_headline(s: &Session) -> (u64, String) {
    let i = &s.isupport;
    let tokens = i.raw.len();
    let mut line = format!(
        "{}, CASEMAPPING {}",
        plural(tokens, "token", "tokens"),
        i.casemapping.as_str()
    );
    if let Some(network) = &i.network {
        line = format!("NETWORK {network}, {line}");
    }
    if i.whox {
        line.push_str(", WHOX");
    }
    (tokens as u64, line)
}

/// `batches`. Its count is the batches open on this connection.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Batch<'a> {
    reference: &'a str,
    kind: &'a str,
    params: &'a [String],
    parent: Option<&'a str>,
}

pub(super) fn batches(s: &Session) -> Vec<Batch<'_>> {
    s.batches
        .open()
        .map(|(reference, b)| Batch {
            reference,
            kind: &b.kind,
            params: &b.params,
            parent: b.parent.as_deref(),
        })
        .collect()
}

pub(super) fn batches_headline(s: &Session) -> (u64, String) {
    let open = s.batches.open();
    let n = open.len();
    let line = if n == 0 {
        "none open".to_owned()
    } else {
        format!(
            "{n} open: {}",
            some_names(open.map(|(_, b)| b.kind.as_str()), 4)
        )
    };
    (n as u64, line)
}

/// `chathistory`. Its count is how many messages a join asks for with
/// CHATHISTORY LATEST (0 when the server offers no chat history).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Chathistory<'a> {
    /// The capability enabled for it, when one is.
    capability: Option<&'static str>,
    /// ISUPPORT CHATHISTORY: the most one request may return (0: no limit).
    server_limit: Option<u32>,
    configured_limit: u32,
    latest_on_join: u32,
    msgreftypes: &'a [String],
}

pub(super) fn chathistory(s: &Session) -> Chathistory<'_> {
    Chathistory {
        capability: capability(s),
        server_limit: s.isupport.chathistory,
        configured_limit: s.config.chathistory_limit,
        latest_on_join: s.latest_history_limit().unwrap_or(0),
        msgreftypes: &s.isupport.msgreftypes,
    }
}

pub(super) fn chathistory_headline(s: &Session) -> (u64, String) {
    let line = match (capability(s), s.latest_history_limit()) {
        (_, Some(n)) => format!("a join asks for the latest {n}"),
        (Some(cap), None) => format!("{cap} enabled; the server advertises no CHATHISTORY"),
        (None, None) => "not offered by the server".to_owned(),
    };
    (u64::from(s.latest_history_limit().unwrap_or(0)), line)
}

fn capability(s: &Session) -> Option<&'static str> {
    ["draft/chathistory", "chathistory"]
        .into_iter()
        .find(|c| s.caps.has(c))
}
