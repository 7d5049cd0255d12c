//! Raw lines on the way out, as raw_since and search_raw (and raw
//! subscriptions) return them: the line object, the command a line carries,
//! and the screen every line passes before it leaves.

use crate::debug::raw::ring::RawLine;
use crate::read::result::time;
use crate::read::withheld::Withholder;
use rete_actors::Direction;
use serde_json::{json, Value};

/// `in` or `out`, as the contract spells a direction.
pub(crate) fn direction(dir: Direction) -> &'static str {
    match dir {
        Direction::In => "in",
        Direction::Out => "out",
    }
}

/// A raw line object: `{"dir","line","seq","time","untrusted":true}`.
pub(crate) fn line_json(line: &RawLine) -> Value {
    json!({
        "dir": direction(line.dir),
        "line": &*line.text,
        "seq": line.pos.seq,
        "time": time(line.time),
        "untrusted": true,
    })
}

/// True when `line` must not leave: the session's secret scan, the raw-line
/// tripwire, or a cut inside a secret (see [`Withholder::raw_line`]), or a
/// server's AUTHENTICATE challenge. A challenge is masked at the source,
/// but withheld whatever it shows: by its shape it cannot be told from a
/// payload (contract, "What redaction does not do").
pub(crate) fn withheld(withhold: &Withholder, line: &RawLine) -> bool {
    withhold.raw_line(&line.text, line.kept_part())
        || (line.dir == Direction::In && rete_redact::is_server_challenge(&line.text))
}

/// The command of a raw line: its first word after an `@tags` word and a
/// `:source` word (spaces before each skipped). None when there is none.
pub(crate) fn command(line: &str) -> Option<&str> {
    let mut rest = line.trim_start_matches(' ');
    if rest.starts_with('@') {
        rest = rest.split_once(' ')?.1.trim_start_matches(' ');
    }
    if rest.starts_with(':') {
        rest = rest.split_once(' ')?.1.trim_start_matches(' ');
    }
    let word = rest.split(' ').next().unwrap_or("");
    (!word.is_empty()).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debug::raw::ring::Pos;
    use crate::read::result::encode;
    use rete_engine::clock::UnixMillis;

    #[test]
    fn the_command_is_read_past_tags_and_source() {
        assert_eq!(command("@time=x :srv 354 me 7"), Some("354"));
        assert_eq!(command(":nick!u@h PRIVMSG #c :hi"), Some("PRIVMSG"));
        assert_eq!(command("PING :x"), Some("PING"));
        assert_eq!(command("  @a=b   :s   who"), Some("who"));
        assert_eq!(command("@tags-only"), None);
        assert_eq!(command(":src"), None);
        assert_eq!(command(""), None);
    }

    #[test]
    fn a_server_challenge_is_withheld_and_its_empty_one_kept() {
        let line = |dir, text: &str| RawLine {
            pos: Pos { tap: 1, seq: 1 },
            time: UnixMillis(0),
            dir,
            text: text.into(),
            kept: None,
        };
        let w = Withholder::default();
        assert!(withheld(&w, &line(Direction::In, "AUTHENTICATE ********")));
        assert!(withheld(
            &w,
            &line(Direction::In, ":irc.example AUTHENTICATE ********")
        ));
        assert!(!withheld(&w, &line(Direction::In, "AUTHENTICATE +")));
        // Our own lines are masked at the source and screened by the tripwire.
        assert!(!withheld(
            &w,
            &line(Direction::Out, "AUTHENTICATE ********")
        ));
        assert!(!withheld(&w, &line(Direction::Out, "AUTHENTICATE PLAIN")));
    }

    #[test]
    fn the_line_object_is_the_contracts() {
        let line = RawLine {
            pos: Pos { tap: 9, seq: 12 },
            time: UnixMillis(1_790_769_600_000),
            dir: Direction::In,
            text: ":irc.example.net 354 me 7 #rete alice".into(),
            kept: None,
        };
        assert_eq!(
            encode(&line_json(&line)),
            r##"{"dir":"in","line":":irc.example.net 354 me 7 #rete alice","seq":12,"time":"2026-09-30T12:00:00Z","untrusted":true}"##
        );
    }
}
