//! The title line: a channel's topic with who set it and when (RPL_TOPIC and
//! RPL_TOPICWHOTIME on join, or the last TOPIC line), else the buffer's name.

use super::look::Look;
use rete_engine::clock::UnixMillis;
use rete_redact::display_escape;

/// What a channel's title line says about its topic.
#[derive(Clone, Debug, Default)]
pub struct Topic<'a> {
    /// The topic text, when one is set.
    pub text: Option<&'a str>,
    /// Who set it, when known.
    pub set_by: Option<&'a str>,
    /// When it was set, when known.
    pub set_at: Option<UnixMillis>,
}

/// `#chan: topic (set by alice, Tue 6 Oct 2026 12:00)`; the bare name when no
/// topic is set. Text from IRC is escaped as in rows.
pub fn channel_title(name: &str, topic: &Topic<'_>, look: &Look) -> String {
    let Some(text) = topic.text.filter(|t| !t.is_empty()) else {
        return name.to_owned();
    };
    let mut title = format!("{name}: {}", super::glyphs::screen_escape(text));
    let when = topic
        .set_at
        .map(|t| format!("{} {}", look.day(t).format("%a %-d %b %Y"), look.clock(t)));
    match (topic.set_by.filter(|s| !s.is_empty()), when) {
        (Some(by), Some(when)) => {
            title.push_str(&format!(" (set by {}, {when})", display_escape(by)))
        }
        (Some(by), None) => title.push_str(&format!(" (set by {})", display_escape(by))),
        (None, Some(when)) => title.push_str(&format!(" (set {when})")),
        (None, None) => {}
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_names_setter_and_date() {
        let look = Look::in_fixed_zone(0);
        let topic = Topic {
            text: Some("welcome"),
            set_by: Some("alice"),
            // 2026-09-30T12:00:00Z
            set_at: Some(UnixMillis(1_790_769_600_000)),
        };
        assert_eq!(
            channel_title("#rete", &topic, &look),
            "#rete: welcome (set by alice, Wed 30 Sep 2026 12:00)"
        );
    }

    #[test]
    fn what_is_unknown_is_left_out() {
        let look = Look::in_fixed_zone(0);
        let only_setter = Topic {
            text: Some("t"),
            set_by: Some("bob"),
            set_at: None,
        };
        assert_eq!(
            channel_title("#c", &only_setter, &look),
            "#c: t (set by bob)"
        );
        let none = Topic {
            text: Some(""),
            ..Topic::default()
        };
        assert_eq!(channel_title("#c", &none, &look), "#c");
        let escaped = Topic {
            text: Some("a\u{202e}b"),
            set_by: None,
            set_at: Some(UnixMillis(0)),
        };
        let title = channel_title("#c", &escaped, &look);
        assert!(!title.contains('\u{202e}'), "{title}");
        assert!(title.ends_with("(set Thu 1 Jan 1970 00:00)"), "{title}");
    }
}
