//! Bracketed paste. One line goes into the input line at the cursor; more
//! than one is held and the person asked first, since a paste of a whole
//! file into a channel cannot be taken back.

/// Control characters a paste may not carry into the input line (tabs
/// become spaces; line breaks split lines).
fn clean(line: &str) -> String {
    line.chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect()
}

/// What a paste does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Paste {
    /// A single line: insert it.
    Insert(String),
    /// Several lines: ask before sending them.
    Ask(Vec<String>),
}

/// Classifies pasted text. Line breaks are `\r\n`, `\n` or `\r`; one
/// trailing break is not another line.
pub fn paste(text: &str) -> Paste {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let trimmed = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<String> = trimmed.split('\n').map(clean).collect();
    match lines.as_slice() {
        [one] => Paste::Insert(one.clone()),
        _ => Paste::Ask(lines),
    }
}

/// The question shown in place of the input line.
pub fn question(lines: &[String]) -> String {
    format!(
        "paste {} lines into this buffer? Enter sends them, Esc drops them",
        lines.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_is_inserted_more_are_held() {
        assert_eq!(paste("hello\tthere\n"), Paste::Insert("hello there".into()));
        assert_eq!(paste("a\u{1b}b"), Paste::Insert("ab".into()));
        assert_eq!(
            paste("one\r\ntwo\rthree"),
            Paste::Ask(vec!["one".into(), "two".into(), "three".into()])
        );
        assert_eq!(
            question(&["a".into(), "b".into()]),
            "paste 2 lines into this buffer? Enter sends them, Esc drops them"
        );
    }
}
