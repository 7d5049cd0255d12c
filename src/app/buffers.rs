//! The numbered buffer list behind `/buffers`, `/buffer N|name`, `/window N`
//! and the switching keys. A buffer keeps its number while it is open, and
//! a new one (a query, a channel, a `/raw` buffer) goes at the end, as in
//! irssi and WeeChat: numbers never shift under the person's fingers. At
//! start the list is every network's buffers in config order (server, then
//! channels); in full screen reterm's own buffer comes first, as 1. A
//! buffer `/close`d leaves the list, and comes back at the end.

use super::{App, Current, Mode};
use anyhow::{anyhow, bail, Result};
use rete_engine::buffer::BufferKind;
use reterm::input::BufferRef;
use std::sync::Mutex;

/// A buffer as the list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// reterm's own buffer (full screen only).
    Own,
    /// A network's buffer.
    Engine(Current),
    /// A network's raw buffer (full screen, once `/raw` opened it): kept
    /// in reterm's memory, never an engine buffer.
    Raw(usize),
}

/// One entry of the list.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Which buffer.
    pub key: Key,
    /// `[network] name (kind)`.
    pub label: String,
    /// The network's name ("" for reterm's buffer).
    pub network: String,
    /// The buffer's name.
    pub name: String,
}

/// The name of a network's raw buffer in the list.
pub const RAW_NAME: &str = "raw";

/// The label of reterm's own buffer.
pub const OWN_LABEL: &str = "reterm";

/// The order buffers were first listed in, which their numbers follow.
#[derive(Debug, Default)]
pub struct Order {
    /// Every listed buffer, by number (entry i is number i + 1 once own
    /// and engine buffers are merged; see [`Order::arrange`]).
    keys: Mutex<Vec<Key>>,
}

impl Order {
    /// `entries` (in the engine's listing order) in number order: those
    /// listed before keep their order, new ones follow in the order given,
    /// and a buffer no longer listed (closed) is forgotten, so it comes back
    /// at the end.
    fn arrange(&self, entries: Vec<Entry>) -> Vec<Entry> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.retain(|k| entries.iter().any(|e| &e.key == k));
        for e in &entries {
            if !keys.contains(&e.key) {
                keys.push(e.key.clone());
            }
        }
        let mut entries = entries;
        entries.sort_by_key(|e| keys.iter().position(|k| k == &e.key));
        entries
    }
}

/// Every buffer, in number order (entry i is number i + 1).
pub async fn list(app: &App) -> Vec<Entry> {
    let mut out = Vec::new();
    if app.mode == Mode::Screen {
        out.push(Entry {
            key: Key::Own,
            label: OWN_LABEL.to_owned(),
            network: String::new(),
            name: OWN_LABEL.to_owned(),
        });
    }
    for (i, n) in app.networks.iter().enumerate() {
        let net = n.config.name.clone();
        let label_net = net.clone();
        let entries = n
            .session
            .reader()
            .read(move |v| {
                v.buffers()
                    .map(|b| {
                        let label = match b.kind() {
                            BufferKind::Server => format!("[{label_net}] {} (server)", b.name()),
                            k => format!("[{label_net}] {} ({})", b.name(), k.as_str()),
                        };
                        (b.id().clone(), label, b.name().to_owned())
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
        let entries = entries
            .into_iter()
            .filter(|(buffer, ..)| !app.closed.contains(&(i, buffer.clone())));
        out.extend(entries.map(|(buffer, label, name)| Entry {
            key: Key::Engine(Current { network: i, buffer }),
            label,
            network: net.clone(),
            name,
        }));
        if app.mode == Mode::Screen && app.raw_open.contains(&i) {
            out.push(Entry {
                key: Key::Raw(i),
                label: format!("[{net}] {RAW_NAME} (raw lines in and out)"),
                network: net.clone(),
                name: RAW_NAME.to_owned(),
            });
        }
    }
    app.order.arrange(out)
}

/// The entry `which` names. A name shared by buffers of several networks
/// must be given as `network/name`.
pub fn find(list: &[Entry], which: &BufferRef) -> Result<Entry> {
    match which {
        BufferRef::Number(n) => list
            .get(n.get() - 1)
            .cloned()
            .ok_or_else(|| anyhow!("no such buffer: see /buffers")),
        BufferRef::Name(name) => {
            let (network, name) = match name.split_once('/') {
                Some((net, rest)) if !rest.is_empty() => (Some(net), rest),
                _ => (None, name.as_str()),
            };
            let found: Vec<&Entry> = list
                .iter()
                .filter(|e| e.name.eq_ignore_ascii_case(name))
                .filter(|e| network.is_none_or(|n| e.network.eq_ignore_ascii_case(n)))
                .collect();
            match found.as_slice() {
                [] => bail!("no such buffer: see /buffers"),
                [one] => Ok((*one).clone()),
                many => {
                    let choices: Vec<String> = many
                        .iter()
                        .map(|e| format!("{}/{}", e.network, e.name))
                        .collect();
                    bail!(
                        "{name} is open on several networks: /buffer {}",
                        choices.join(" or /buffer ")
                    )
                }
            }
        }
    }
}

/// The number of the entry `key` names.
pub fn number_of(list: &[Entry], key: &Key) -> Option<usize> {
    list.iter().position(|e| &e.key == key).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::ids::BufferId;
    use std::num::NonZeroUsize;

    fn entry(net: usize, network: &str, name: &str) -> Entry {
        Entry {
            key: Key::Engine(Current {
                network: net,
                buffer: BufferId::from_client(&format!("{network}/{name}")),
            }),
            label: format!("[{network}] {name} (channel)"),
            network: network.into(),
            name: name.into(),
        }
    }

    #[test]
    fn by_number_by_name_and_ambiguous_names() {
        let list = [
            entry(0, "a", "#x"),
            entry(0, "a", "#only"),
            entry(1, "b", "#X"),
        ];
        let n = |i| BufferRef::Number(NonZeroUsize::new(i).unwrap());
        assert_eq!(find(&list, &n(2)).unwrap().name, "#only");
        assert!(find(&list, &n(4)).is_err());
        assert_eq!(
            find(&list, &BufferRef::Name("#ONLY".into()))
                .unwrap()
                .network,
            "a"
        );
        let err = find(&list, &BufferRef::Name("#x".into()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "#x is open on several networks: /buffer a/#x or /buffer b/#X"
        );
        assert_eq!(
            find(&list, &BufferRef::Name("b/#x".into()))
                .unwrap()
                .network,
            "b"
        );
        assert!(find(&list, &BufferRef::Name("c/#x".into())).is_err());
        assert_eq!(number_of(&list, &list[2].key), Some(3));
    }

    #[test]
    fn new_buffers_go_at_the_end_and_a_closed_one_comes_back_there() {
        let order = Order::default();
        let names = |l: &[Entry]| l.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
        let first = order.arrange(vec![entry(0, "a", "a"), entry(1, "b", "b")]);
        assert_eq!(names(&first), ["a", "b"]);
        // A query of network a, listed by the engine among a's buffers.
        let later = order.arrange(vec![
            entry(0, "a", "a"),
            entry(0, "a", "alice"),
            entry(1, "b", "b"),
        ]);
        assert_eq!(names(&later), ["a", "b", "alice"]);
        // Closed, then open again.
        order.arrange(vec![entry(0, "a", "a"), entry(1, "b", "b")]);
        let back = order.arrange(vec![
            entry(0, "a", "a"),
            entry(0, "a", "alice"),
            entry(0, "a", "#new"),
            entry(1, "b", "b"),
        ]);
        assert_eq!(names(&back), ["a", "b", "alice", "#new"]);
    }
}
