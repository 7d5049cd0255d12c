//! A server's error about something the person typed (482 not a channel
//! operator, 401 no such nick, 404 cannot send, 442 not on that channel,
//! 433 nick in use, and every other 4xx and 5xx reply) is shown in the
//! buffer they typed it in, beside the engine's row, which stays in the
//! server buffer's history. irssi and WeeChat show them where the person
//! looks; the server buffer is rarely it.

use super::buffers::Key;
use super::dispatch::focused_key;
use super::events::{buffer_note, NoteAt};
use super::{say, App};
use std::time::{Duration, Instant};

/// How long after a typed line a server's error is taken to answer it:
/// the round trip and the flood throttle's pacing, with room to spare. An
/// error later than that stays in the server buffer only.
const ANSWER_WINDOW: Duration = Duration::from_secs(10);

/// Where and when the person typed their last line.
#[derive(Clone, Debug)]
pub struct Typed {
    /// The buffer shown then.
    key: Key,
    /// The network their commands went to.
    network: usize,
    at: Instant,
}

impl Typed {
    /// The buffer the person types in now (none without a network).
    pub fn now(app: &App) -> Option<Typed> {
        let network = app.current.as_ref()?.network;
        Some(Typed {
            key: focused_key(app)?,
            network,
            at: Instant::now(),
        })
    }
}

/// Whether a server reply is an error: a 4xx or 5xx numeric.
pub fn is_error_reply(command: &str) -> bool {
    command.len() == 3
        && command.bytes().all(|b| b.is_ascii_digit())
        && matches!(command.as_bytes()[0], b'4' | b'5')
}

/// Shows `text`, a server's error row on network `net` (already masked and
/// escaped), where the person last typed a line for that network, if that
/// was lately and not in the server buffer itself.
pub async fn show_where_typed(app: &mut App, net: usize, text: &str) {
    let Some(typed) = app.typed.clone() else {
        return;
    };
    if typed.network != net || typed.at.elapsed() > ANSWER_WINDOW {
        return;
    }
    let current = match typed.key {
        Key::Engine(current) => current,
        // Typed in reterm's own buffer (or a raw one): said there.
        Key::Own | Key::Raw(_) => {
            say(&format!("-!- [{}] {text}", app.networks[net].config.name));
            return;
        }
    };
    let id = current.buffer.clone();
    let found = app.networks[net]
        .session
        .reader()
        .read(move |v| {
            let b = v.buffer(&id)?;
            (b.kind() != rete_engine::buffer::BufferKind::Server)
                .then(|| (b.name().to_owned(), b.last_seq()))
        })
        .await
        .ok()
        .flatten();
    let Some((name, after)) = found else {
        return;
    };
    let at = NoteAt {
        net,
        buffer: &current.buffer,
        name: &name,
        after,
    };
    buffer_note(app, &at, text);
}

#[cfg(test)]
mod tests {
    use super::is_error_reply;

    #[test]
    fn errors_are_the_4xx_and_5xx_numerics() {
        for code in ["401", "404", "433", "442", "482", "502"] {
            assert!(is_error_reply(code), "{code}");
        }
        for code in ["001", "332", "372", "NOTICE", "4", "4011", "40a"] {
            assert!(!is_error_reply(code), "{code}");
        }
    }
}
