//! A network's current IRC state as lines for the `sync` frame, in the order
//! an IRC server sends them, so the client's engine rebuilds its view from
//! them as it would from a server:
//!
//! - the welcome naming our nick;
//! - ISUPPORT (005): every token the server sent, as the engine keeps them
//!   (`Isupport::raw`, values escaped again), so the client learns PREFIX,
//!   CHANTYPES, CASEMAPPING, CHANMODES, NETWORK and the rest before any
//!   channel line needs them;
//! - for each joined channel: our JOIN, the topic (332) with who set it and
//!   when (333), NAMES (353) with every member's prefixes in rank order
//!   (`@+alice`, the multi-prefix form) and `nick!user@host` where the
//!   engine knows it (the userhost-in-names form), then 366; then the
//!   channel's own modes (324, `+klnt key 10`) and, when the server said
//!   it, its creation time (329): what a server answers the `MODE #channel`
//!   a client sends after joining.
//!
//! The 324 says the key (`+k`) as the server said it to us, a member: the
//! user's own clients get it as they would from the server (the service's
//! rows hold the server's 324 and MODE lines with it too). It is never
//! logged: the engine keeps it as a `rete_redact::Secret`, which prints
//! as `Secret(********)`, and the service logs no line.

use rete_engine::buffer::BufferKind;
use rete_engine::channel_modes::ChannelModes;
use rete_engine::event::ConnState;
use rete_engine::isupport::Isupport;
use rete_engine::view::SessionView;
use std::fmt::Write as _;

/// The source the sync lines carry (they are the service's, not the server's).
const SOURCE: &str = "rete-cloud";

/// ISUPPORT tokens per 005 line (servers send about a dozen).
const TOKENS_PER_LINE: usize = 12;

/// NAMES entries per 353 line: far below the IRC line limit even with
/// `nick!user@host` entries.
const NAMES_PER_LINE: usize = 20;

/// An ISUPPORT value escaped as the server would send it: `\xHH` for a
/// space, a backslash, `=` and control characters.
fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == ' ' || c == '\\' || c == '=' || c.is_ascii_control() {
            let _ = write!(out, "\\x{:02X}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// The 005 lines for what the engine holds of the server's ISUPPORT.
fn isupport_lines(nick: &str, isupport: &Isupport) -> Vec<String> {
    let tokens: Vec<String> = isupport
        .raw
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={}", escape_value(v))
            }
        })
        .collect();
    tokens
        .chunks(TOKENS_PER_LINE)
        .map(|chunk| {
            format!(
                ":{SOURCE} 005 {nick} {} :are supported by this server",
                chunk.join(" ")
            )
        })
        .collect()
}

/// RPL_CHANNELMODEIS for `modes`. The key comes last (see
/// `ChannelModes::to_reply`), written as a trailing parameter when it would
/// not parse as a middle one (empty, or starting with `:`).
fn mode_line(nick: &str, channel: &str, modes: &ChannelModes) -> String {
    let (letters, params) = modes.to_reply(true);
    let mut line = format!(":{SOURCE} 324 {nick} {channel} {letters}");
    let last = params.len().saturating_sub(1);
    for (i, p) in params.iter().enumerate() {
        if i == last && (p.is_empty() || p.starts_with(':')) {
            let _ = write!(line, " :{p}");
        } else {
            let _ = write!(line, " {p}");
        }
    }
    line
}

/// The lines describing `view` now (none while not connected).
pub fn sync_lines(view: SessionView<'_>) -> Vec<String> {
    if view.state() != ConnState::Connected {
        return Vec::new();
    }
    let nick = view.nick();
    let isupport = view.isupport();
    let mut lines = vec![format!(
        ":{SOURCE} 001 {nick} :Welcome, {nick} (held by rete-cloud)"
    )];
    lines.extend(isupport_lines(nick, isupport));
    for b in view.buffers().filter(|b| b.kind() == BufferKind::Channel) {
        let Some(ch) = view.channel(b.id()).filter(|c| c.joined) else {
            continue;
        };
        lines.push(format!(":{nick} JOIN {}", ch.name));
        if let Some(t) = ch.topic.as_deref().filter(|t| !t.is_empty()) {
            lines.push(format!(":{SOURCE} 332 {nick} {} :{t}", ch.name));
            if let (Some(by), Some(at)) = (ch.topic_set_by.as_deref(), ch.topic_set_at) {
                lines.push(format!(
                    ":{SOURCE} 333 {nick} {} {by} {}",
                    ch.name,
                    at.0.max(0) / 1000
                ));
            }
        }
        let names: Vec<String> = view
            .members(b.id())
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let mut entry: String = m
                    .modes
                    .chars()
                    .filter_map(|mode| isupport.prefix_for_mode(mode))
                    .collect();
                entry.push_str(&m.nick);
                if let (Some(u), Some(h)) = (m.user.as_deref(), m.host.as_deref()) {
                    let _ = write!(entry, "!{u}@{h}");
                }
                entry
            })
            .collect();
        for chunk in names.chunks(NAMES_PER_LINE) {
            lines.push(format!(
                ":{SOURCE} 353 {nick} = {} :{}",
                ch.name,
                chunk.join(" ")
            ));
        }
        lines.push(format!(
            ":{SOURCE} 366 {nick} {} :End of /NAMES list.",
            ch.name
        ));
        lines.push(mode_line(nick, &ch.name, &ch.modes));
        if let Some(at) = ch.created_at {
            lines.push(format!(":{SOURCE} 329 {nick} {} {at}", ch.name));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isupport_tokens_are_escaped_and_chunked() {
        let mut i = Isupport::default();
        i.apply_tokens(&["NETWORK=Rete\\x20Net", "PREFIX=(ov)@+", "WHOX"]);
        assert_eq!(
            isupport_lines("me", &i),
            [":rete-cloud 005 me NETWORK=Rete\\x20Net PREFIX=(ov)@+ WHOX :are supported by this server"]
        );
        let mut back = Isupport::default();
        back.apply_tokens(&["NETWORK=Rete\\x20Net"]);
        assert_eq!(back.network.as_deref(), Some("Rete Net"));
    }

    #[test]
    fn the_mode_line_says_each_mode_and_its_parameter() {
        let i = Isupport::default();
        let mut modes = ChannelModes::default();
        for c in i.parse_mode_changes("+ntkl", &[":odd", "10"]) {
            modes.apply(&c, i.mode_kind(c.mode));
        }
        assert_eq!(
            mode_line("me", "#rete", &modes),
            ":rete-cloud 324 me #rete +lntk 10 ::odd"
        );
        let mut modes = ChannelModes::default();
        for c in i.parse_mode_changes("+lk", &["5", ":odd"]) {
            modes.apply(&c, i.mode_kind(c.mode));
        }
        assert_eq!(
            mode_line("me", "#rete", &modes),
            ":rete-cloud 324 me #rete +lk 5 ::odd"
        );
        assert!(!format!("{modes:?}").contains("odd"));
        assert_eq!(
            mode_line("me", "#rete", &ChannelModes::default()),
            ":rete-cloud 324 me #rete +"
        );
    }
}
