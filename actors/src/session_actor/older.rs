//! What a ReteCloud session knows of each buffer's past in the service's
//! stream: the oldest row it holds (the point a request for older rows
//! fetches before), whether the service said nothing older exists, and
//! whether a fetch is in flight.
//!
//! Buffers are named as `fetch` names them: a channel, a query's nick, or
//! `*` for the server buffer, folded to ASCII lower case. Only messages and
//! notices count, since only they are fed from a backlog (see
//! `feed_backlog` in `link.rs`): a fetch before the oldest message held
//! returns the rows before it and nothing this session stores twice.

use rete_engine::line::Line;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct OlderState {
    /// The smallest sequence number of a message of this buffer seen in
    /// this run (live, replayed or fetched).
    oldest: Option<u64>,
    /// The service answered a fetch with `more: false`.
    no_older: bool,
    /// A fetch of this buffer is waiting for its answer.
    asking: bool,
}

/// Per buffer of the session's stream (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Older {
    buffers: HashMap<String, OlderState>,
}

fn key(buffer: &str) -> String {
    buffer.to_ascii_lowercase()
}

impl Older {
    fn get(&self, buffer: &str) -> OlderState {
        self.buffers.get(&key(buffer)).copied().unwrap_or_default()
    }

    fn entry(&mut self, buffer: &str) -> &mut OlderState {
        self.buffers.entry(key(buffer)).or_default()
    }

    /// A message of `buffer` with sequence number `seq` was seen.
    pub(crate) fn seen(&mut self, buffer: &str, seq: u64) {
        let e = self.entry(buffer);
        e.oldest = Some(e.oldest.map_or(seq, |o| o.min(seq)));
    }

    /// Where the next fetch of `buffer` ends: before its oldest row
    /// (None: nothing seen, the newest rows).
    pub(crate) fn before(&self, buffer: &str) -> Option<u64> {
        self.get(buffer).oldest
    }

    /// True while a fetch of `buffer` is in flight.
    pub(crate) fn is_asking(&self, buffer: &str) -> bool {
        self.get(buffer).asking
    }

    /// True once the service said it holds nothing older of `buffer`.
    pub(crate) fn no_older(&self, buffer: &str) -> bool {
        self.get(buffer).no_older
    }

    /// A fetch of `buffer` was sent.
    pub(crate) fn ask(&mut self, buffer: &str) {
        self.entry(buffer).asking = true;
    }

    /// The service answered a fetch of `buffer`: its rows begin at `first`
    /// (None: no row), and `more` says whether older rows exist.
    pub(crate) fn answered(&mut self, buffer: &str, first: Option<u64>, more: bool) {
        if let Some(seq) = first {
            self.seen(buffer, seq);
        }
        let e = self.entry(buffer);
        e.asking = false;
        e.no_older |= !more;
    }

    /// A fetch of `buffer` was refused or will not be answered.
    pub(crate) fn failed(&mut self, buffer: &str) {
        self.entry(buffer).asking = false;
    }

    /// The connection closed: no fetch in flight will be answered.
    pub(crate) fn settle(&mut self) {
        for e in self.buffers.values_mut() {
            e.asking = false;
        }
    }

    /// The stream was renumbered: the sequence numbers held mean nothing.
    pub(crate) fn forget(&mut self) {
        self.buffers.clear();
    }
}

/// The `fetch` buffer of a received PRIVMSG or NOTICE (None for any other
/// line), as the service files it: the channel; for a private message the
/// other party (the target when the sender is us); `*` for a server's.
pub(crate) fn message_buffer(line: &str, own_nick: &str) -> Option<String> {
    let l = Line::parse(line).ok()?;
    if !matches!(l.command(), "PRIVMSG" | "NOTICE") {
        return None;
    }
    let target = l.param(0)?;
    let buffer = if target.starts_with(['#', '&', '+', '!']) {
        target
    } else {
        match l.source_nick() {
            Some(n) if n.eq_ignore_ascii_case(own_nick) => target,
            Some(n) => n,
            None => "*",
        }
    };
    // A server's name (a dot, no channel prefix) is the server buffer.
    Some(
        if buffer.contains('.') && !buffer.starts_with(['#', '&', '+', '!']) {
            "*".to_owned()
        } else {
            key(buffer)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_filed_where_the_service_files_them() {
        let m = |l| message_buffer(l, "alice");
        assert_eq!(m(":bob!b@h PRIVMSG #Rete :hi").as_deref(), Some("#rete"));
        assert_eq!(
            m("@msgid=1 :bob!b@h PRIVMSG alice :hi").as_deref(),
            Some("bob")
        );
        assert_eq!(m(":alice!a@h PRIVMSG Bob :hi").as_deref(), Some("bob"));
        assert_eq!(
            m(":irc.example.net NOTICE alice :hello").as_deref(),
            Some("*")
        );
        assert_eq!(m(":bob!b@h JOIN #rete"), None);
        assert_eq!(m("garbage"), None);
    }

    #[test]
    fn the_oldest_row_seen_is_where_the_next_fetch_ends() {
        let mut o = Older::default();
        assert_eq!(o.before("#rete"), None);
        o.seen("#rete", 900);
        o.ask("#Rete");
        assert!(o.is_asking("#rete"));
        o.answered("#rete", Some(850), true);
        assert_eq!(
            (o.before("#rete"), o.is_asking("#rete")),
            (Some(850), false)
        );
        assert!(!o.no_older("#rete"));
        // A later live row does not move it; an answer without more ends it.
        o.seen("#rete", 1000);
        o.ask("#rete");
        o.answered("#rete", Some(10), false);
        assert_eq!(o.before("#rete"), Some(10));
        assert!(o.no_older("#rete"));
        o.ask("bob");
        o.settle();
        assert!(!o.is_asking("bob"));
        o.forget();
        assert_eq!((o.before("#rete"), o.no_older("#rete")), (None, false));
    }
}
