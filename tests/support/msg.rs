//! Just enough IRC line splitting for test predicates. Deliberately independent of the engine's
//! parser: the harness checks the engine, so it must not share its bugs.

/// One received line split into its parts (tag values are left escaped).
#[derive(Debug, PartialEq, Eq)]
pub struct Msg<'a> {
    /// `key` or `key=value` entries of the `@tags` part.
    pub tags: Vec<&'a str>,
    /// The `:source` without its colon.
    pub source: Option<&'a str>,
    /// The command or numeric, as sent.
    pub command: &'a str,
    /// Middle parameters and the trailing one (without its colon).
    pub params: Vec<&'a str>,
}

impl<'a> Msg<'a> {
    /// Splits `line` (without CR LF).
    pub fn parse(line: &'a str) -> Self {
        let mut rest = line;
        let mut tags = Vec::new();
        if let Some(stripped) = rest.strip_prefix('@') {
            let (t, r) = stripped.split_once(' ').unwrap_or((stripped, ""));
            tags = t.split(';').filter(|t| !t.is_empty()).collect();
            rest = r.trim_start_matches(' ');
        }
        let mut source = None;
        if let Some(stripped) = rest.strip_prefix(':') {
            let (s, r) = stripped.split_once(' ').unwrap_or((stripped, ""));
            source = Some(s);
            rest = r.trim_start_matches(' ');
        }
        let (command, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut params = Vec::new();
        loop {
            rest = rest.trim_start_matches(' ');
            if rest.is_empty() {
                break;
            }
            if let Some(trailing) = rest.strip_prefix(':') {
                params.push(trailing);
                break;
            }
            let (p, r) = rest.split_once(' ').unwrap_or((rest, ""));
            params.push(p);
            rest = r;
        }
        Self {
            tags,
            source,
            command,
            params,
        }
    }

    /// The value of tag `key` (`Some("")` for a tag without value).
    pub fn tag(&self, key: &str) -> Option<&'a str> {
        self.tags.iter().find_map(|t| match t.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if *t == key => Some(""),
            _ => None,
        })
    }

    /// The nick part of the source (`nick!user@host`).
    pub fn source_nick(&self) -> Option<&'a str> {
        self.source.map(|s| s.split('!').next().unwrap_or(s))
    }

    /// Parameter `i`, or "" when absent (keeps predicates short).
    pub fn param(&self, i: usize) -> &'a str {
        self.params.get(i).copied().unwrap_or("")
    }
}
