//! The buffers of one session: the server buffer, then channels, then queries.

use crate::buffer::{Buffer, BufferKind};
use crate::ids::{BufferId, BufferKindTag, SessionId};
use serde::Serialize;
use std::collections::HashMap;

/// A session's buffers, in creation order within each kind.
#[derive(Debug, Serialize)]
pub struct Buffers {
    #[serde(skip)]
    session: SessionId,
    capacity: usize,
    /// Every buffer; index 0 is the server buffer.
    list: Vec<Buffer>,
    #[serde(skip)]
    by_id: HashMap<BufferId, usize>,
    /// (kind, case-folded name) to index.
    #[serde(skip)]
    by_name: HashMap<(BufferKind, String), usize>,
}

impl Buffers {
    /// A store holding only the server buffer, named after the session.
    pub fn new(session: &SessionId, name: &str, capacity: usize) -> Buffers {
        let id = BufferId::derive(session, BufferKindTag::Server, "");
        let server = Buffer::new(id.clone(), name.to_owned(), BufferKind::Server, capacity);
        Buffers {
            session: session.clone(),
            capacity,
            list: vec![server],
            by_id: HashMap::from([(id, 0)]),
            by_name: HashMap::new(),
        }
    }

    /// The server buffer's id.
    pub fn server_id(&self) -> &BufferId {
        self.list[0].id()
    }

    /// The buffer with this id.
    pub fn get(&self, id: &BufferId) -> Option<&Buffer> {
        self.by_id.get(id).map(|&i| &self.list[i])
    }

    pub(super) fn get_mut(&mut self, id: &BufferId) -> Option<&mut Buffer> {
        self.by_id.get(id).map(|&i| &mut self.list[i])
    }

    /// The id of the `kind` buffer named `folded` (already case-folded).
    pub fn find(&self, kind: BufferKind, folded: &str) -> Option<&BufferId> {
        self.by_name
            .get(&(kind, folded.to_owned()))
            .map(|&i| self.list[i].id())
    }

    /// The buffer's id, creating the buffer when new. Returns whether it was created.
    pub(super) fn ensure(
        &mut self,
        kind: BufferKind,
        folded: &str,
        name: &str,
    ) -> (BufferId, bool) {
        if let Some(&i) = self.by_name.get(&(kind, folded.to_owned())) {
            return (self.list[i].id().clone(), false);
        }
        let tag = match kind {
            BufferKind::Server => BufferKindTag::Server,
            BufferKind::Channel => BufferKindTag::Channel,
            BufferKind::Query => BufferKindTag::Query,
        };
        let id = BufferId::derive(&self.session, tag, folded);
        let idx = self.list.len();
        self.list.push(Buffer::new(
            id.clone(),
            name.to_owned(),
            kind,
            self.capacity,
        ));
        self.by_id.insert(id.clone(), idx);
        self.by_name.insert((kind, folded.to_owned()), idx);
        (id, true)
    }

    /// Moves a query buffer to a new name (its partner changed nick). The id
    /// stays, so readers keep their place. Does nothing when a query under the
    /// new name exists already.
    pub(super) fn rename_query(&mut self, old_folded: &str, new_folded: &str, new_name: &str) {
        let new_key = (BufferKind::Query, new_folded.to_owned());
        if old_folded != new_folded && self.by_name.contains_key(&new_key) {
            return;
        }
        if let Some(i) = self
            .by_name
            .remove(&(BufferKind::Query, old_folded.to_owned()))
        {
            self.list[i].rename(new_name);
            self.by_name.insert(new_key, i);
        }
    }

    /// How many query buffers exist.
    pub fn query_count(&self) -> usize {
        self.list
            .iter()
            .filter(|b| b.kind() == BufferKind::Query)
            .count()
    }

    /// Ends the replay under way in every buffer (a history batch closed, or
    /// the link did), so the next replay matches against everything held.
    pub(super) fn end_replays(&mut self) {
        for buffer in &mut self.list {
            buffer.end_replay();
        }
    }

    /// Rebuilds the name index after the server's casemapping changed.
    pub(super) fn refold(&mut self, fold: impl Fn(&str) -> String) {
        self.by_name = self
            .list
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, b)| ((b.kind(), fold(b.name())), i))
            .collect();
    }

    /// Buffers in listing order: the server buffer, then channels, then queries.
    pub fn listing(&self) -> impl Iterator<Item = &Buffer> {
        let of = move |k: BufferKind| self.list.iter().filter(move |b| b.kind() == k);
        of(BufferKind::Server)
            .chain(of(BufferKind::Channel))
            .chain(of(BufferKind::Query))
    }

    /// How many buffers there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Always false: the server buffer is always there.
    pub fn is_empty(&self) -> bool {
        false
    }
}
