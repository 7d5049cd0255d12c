//! What a grant covers: networks by name, channels by glob, and queries only
//! when granted.
//!
//! A scope answers one question, "may this grant see this buffer?", and a
//! second built on it, "does it cover the whole session?" (only then may it
//! see the server buffer or the session's engine state, which mix every
//! conversation). Names are compared as the session's server compares them:
//! the caller folds nothing, the scope folds with the session's case mapping.

use rete_engine::buffer::BufferKind;
use rete_engine::casemap::CaseMapping;
use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

/// A grant's reach. Empty `networks` or `buffers` means "every one".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// Network names (the config's), compared without regard to ASCII case.
    pub networks: Vec<String>,
    /// Channel globs (`*` any run, `?` one character), such as `#rust*`.
    pub buffers: Vec<String>,
    /// Whether private conversations (queries) are covered.
    pub queries: bool,
}

/// One buffer as a scope sees it.
#[derive(Clone, Copy, Debug)]
pub struct BufferRef<'a> {
    /// The network's name in the config.
    pub network: &'a str,
    /// Server, channel or query.
    pub kind: BufferKind,
    /// The channel or nick (as the buffer names it).
    pub name: &'a str,
    /// How the session's server folds case.
    pub casemap: CaseMapping,
}

impl Scope {
    /// True when the grant covers `network` at all.
    pub fn covers_network(&self, network: &str) -> bool {
        self.networks.is_empty()
            || self
                .networks
                .iter()
                .any(|n| n.eq_ignore_ascii_case(network))
    }

    /// True when the grant covers everything of `network`: every channel,
    /// queries too. Only such a grant sees the server buffer and the
    /// session's engine state.
    pub fn covers_whole_session(&self, network: &str) -> bool {
        self.covers_network(network) && self.buffers.is_empty() && self.queries
    }

    /// True when the grant may see `buffer`.
    pub fn covers(&self, buffer: BufferRef<'_>) -> bool {
        if !self.covers_network(buffer.network) {
            return false;
        }
        match buffer.kind {
            BufferKind::Server => self.covers_whole_session(buffer.network),
            BufferKind::Query => self.queries,
            BufferKind::Channel => {
                self.buffers.is_empty() || {
                    let name = buffer.casemap.fold(buffer.name);
                    self.buffers
                        .iter()
                        .any(|glob| WildMatch::new(&buffer.casemap.fold(glob)).matches(&name))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(network: &'static str, kind: BufferKind, name: &'static str) -> BufferRef<'static> {
        BufferRef {
            network,
            kind,
            name,
            casemap: CaseMapping::Rfc1459,
        }
    }

    fn scope(networks: &[&str], buffers: &[&str], queries: bool) -> Scope {
        Scope {
            networks: networks.iter().map(|s| s.to_string()).collect(),
            buffers: buffers.iter().map(|s| s.to_string()).collect(),
            queries,
        }
    }

    #[test]
    fn channels_match_by_glob_in_the_servers_case_mapping() {
        let s = scope(&["libera"], &["#rust*", "#a[b]"], false);
        assert!(s.covers(at("libera", BufferKind::Channel, "#rust")));
        assert!(s.covers(at("Libera", BufferKind::Channel, "#RUST-beginners")));
        // rfc1459: [ ] fold to { }.
        assert!(s.covers(at("libera", BufferKind::Channel, "#a{b}")));
        assert!(!s.covers(at("libera", BufferKind::Channel, "#python")));
        assert!(!s.covers(at("oftc", BufferKind::Channel, "#rust")));
    }

    #[test]
    fn queries_only_when_granted_and_the_server_buffer_only_with_everything() {
        let channels_only = scope(&[], &[], false);
        assert!(channels_only.covers(at("x", BufferKind::Channel, "#any")));
        assert!(!channels_only.covers(at("x", BufferKind::Query, "alice")));
        assert!(!channels_only.covers(at("x", BufferKind::Server, "x")));
        assert!(!channels_only.covers_whole_session("x"));

        let everything = scope(&["x"], &[], true);
        assert!(everything.covers(at("x", BufferKind::Query, "alice")));
        assert!(everything.covers(at("x", BufferKind::Server, "x")));
        assert!(everything.covers_whole_session("x"));
        assert!(!everything.covers_whole_session("y"));

        let some_channels = scope(&[], &["#rust"], true);
        assert!(some_channels.covers(at("x", BufferKind::Query, "alice")));
        assert!(!some_channels.covers(at("x", BufferKind::Server, "x")));
    }
}
