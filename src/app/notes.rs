//! Lines reterm adds to a network's buffer in full screen (the topic and a
//! names summary on join, `/names` answers): kept here, beside the engine's
//! rows, never in the engine's buffer nor a transcript. Each follows the
//! engine row that was last when it was added.

use rete_engine::ids::BufferId;
use rete_engine::row::{Payload, Row};
use std::collections::HashMap;

/// Notes kept per buffer; the oldest go first.
const KEEP: usize = 200;

/// Notes by (network index, buffer).
#[derive(Default)]
pub struct Notes {
    by_buffer: HashMap<(usize, BufferId), Vec<Row>>,
}

impl Notes {
    /// Adds `text` after the row `after` of `buffer`.
    pub fn add(&mut self, net: usize, buffer: &BufferId, after: u64, text: &str) {
        let list = self.by_buffer.entry((net, buffer.clone())).or_default();
        list.push(Row {
            // The seq field holds the engine row the note follows.
            seq: after,
            time: rete_actors::wall_clock::now(),
            msgid: None,
            from: "".into(),
            history: false,
            payload: Payload::ClientStatus { text: text.into() },
        });
        if list.len() > KEEP {
            list.remove(0);
        }
    }

    /// The notes of a buffer, oldest first.
    pub fn of(&self, net: usize, buffer: &BufferId) -> Vec<Row> {
        self.by_buffer
            .get(&(net, buffer.clone()))
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets a buffer's notes (`/clear`).
    pub fn clear(&mut self, net: usize, buffer: &BufferId) {
        self.by_buffer.remove(&(net, buffer.clone()));
    }
}
