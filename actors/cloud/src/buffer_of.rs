//! Which buffer a received IRC line belongs to, for `fetch`: a channel, a
//! query (the other party's nick) or `*` (the server buffer). Folded to
//! ASCII lower case, as `fetch` names are.

use rete_engine::line::Line;

fn is_channel(target: &str) -> bool {
    target.starts_with(['#', '&', '+', '!'])
}

/// The buffer of `line`, received by a client whose nick is `own_nick`.
pub fn buffer_of(line: &str, own_nick: &str) -> String {
    let Ok(l) = Line::parse(line) else {
        return "*".into();
    };
    let target = match l.command() {
        "PRIVMSG" | "NOTICE" | "TAGMSG" => l.param(0).map(|t| {
            if is_channel(t) {
                t.to_owned()
            } else if l
                .source_nick()
                .is_some_and(|n| n.eq_ignore_ascii_case(own_nick))
            {
                // Our own message (echo-message): the query is the target's.
                t.to_owned()
            } else {
                l.source_nick().unwrap_or("*").to_owned()
            }
        }),
        "JOIN" | "PART" | "KICK" | "TOPIC" | "MODE" => {
            l.param(0).filter(|t| is_channel(t)).map(str::to_owned)
        }
        _ => None,
    };
    match target {
        Some(t) if !t.contains('.') || is_channel(&t) => t.to_ascii_lowercase(),
        _ => "*".into(),
    }
}

/// The line's msgid tag.
pub fn msgid_of(line: &str) -> Option<String> {
    Line::parse(line).ok()?.tag("msgid").map(|m| m.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers() {
        assert_eq!(buffer_of(":bob!b@h PRIVMSG #Rete :hi", "me"), "#rete");
        assert_eq!(buffer_of(":Bob!b@h PRIVMSG me :hi", "me"), "bob");
        assert_eq!(buffer_of(":me!m@h PRIVMSG Bob :hi", "me"), "bob");
        assert_eq!(buffer_of(":irc.example NOTICE me :hi", "me"), "*");
        assert_eq!(buffer_of(":irc.example 001 me :Welcome", "me"), "*");
        assert_eq!(buffer_of(":bob!b@h JOIN #x", "me"), "#x");
        assert_eq!(
            msgid_of("@msgid=a1 :b!b@h PRIVMSG #r :x").as_deref(),
            Some("a1")
        );
    }
}
