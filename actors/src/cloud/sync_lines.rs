//! A network's current IRC state as lines for the `sync` frame: the
//! welcome naming our nick, then for each joined channel its JOIN, topic and
//! names, in the order an IRC server sends them at join, so the client's
//! engine rebuilds its view from them as it would from a server.

use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::view::SessionView;

/// The source the sync lines carry (they are the service's, not the server's).
const SOURCE: &str = "rete-cloud";

/// The lines describing `view` now (none while not connected).
pub fn sync_lines(view: SessionView<'_>) -> Vec<String> {
    if view.state() != ConnState::Connected {
        return Vec::new();
    }
    let nick = view.nick();
    let mut lines = vec![format!(
        ":{SOURCE} 001 {nick} :Welcome, {nick} (held by rete-cloud)"
    )];
    for b in view.buffers().filter(|b| b.kind() == BufferKind::Channel) {
        let Some(ch) = view.channel(b.id()).filter(|c| c.joined) else {
            continue;
        };
        lines.push(format!(":{nick} JOIN {}", ch.name));
        if let Some(t) = ch.topic.as_deref().filter(|t| !t.is_empty()) {
            lines.push(format!(":{SOURCE} 332 {nick} {} :{t}", ch.name));
        }
        let names: Vec<&str> = ch.members.values().map(|m| m.nick.as_str()).collect();
        // Several 353s keep each line far below the IRC line limit.
        for chunk in names.chunks(40) {
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
    }
    lines
}
