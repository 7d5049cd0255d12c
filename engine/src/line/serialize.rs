//! The validating serializer for lines the engine sends.

use std::fmt;

use super::parse::MAX_PARAMS;
use super::tags::escape_tag_value;

/// An owned line to send, built by the engine.
///
/// Fields are public so the engine can build lines however suits it; all
/// validation happens in [`OutLine::write_to`], where a bad line is refused
/// instead of being sent in a form the server would read differently.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OutLine {
    /// Tags in sending order; `None` or an empty value is sent as a bare key.
    pub tags: Vec<(String, Option<String>)>,
    /// Clients normally send no source; kept for completeness and tests.
    pub source: Option<String>,
    /// The command word or numeric.
    pub command: String,
    /// Parameters, the last of which may contain spaces.
    pub params: Vec<String>,
}

/// The part of a line a [`SerializeError`] refers to.
///
/// Errors name positions, never contents, so they are safe to log even when
/// the line carries a password.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The value of the tag at this index.
    TagValue(usize),
    /// The source.
    Source,
    /// The parameter at this index.
    Param(usize),
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::TagValue(i) => write!(f, "value of tag {i}"),
            Part::Source => f.write_str("source"),
            Part::Param(i) => write!(f, "parameter {i}"),
        }
    }
}

/// Why an [`OutLine`] cannot be put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SerializeError {
    /// CR or LF would end the line early (a command injection); NUL is not
    /// allowed on the wire at all. Tag values may hold CR and LF because they
    /// are escaped, but not NUL.
    #[error("{0} contains CR, LF or NUL")]
    ForbiddenChar(Part),
    /// An empty middle parameter would vanish when the line is read back.
    #[error("middle parameter {index} is empty")]
    EmptyMiddleParam {
        /// Position of the parameter.
        index: usize,
    },
    /// A space in a middle parameter would split it in two.
    #[error("middle parameter {index} contains a space")]
    SpaceInMiddleParam {
        /// Position of the parameter.
        index: usize,
    },
    /// A middle parameter starting with ':' would swallow the rest of the line.
    #[error("middle parameter {index} starts with ':'")]
    ColonInMiddleParam {
        /// Position of the parameter.
        index: usize,
    },
    /// Commands are letters or a numeric; anything else is not a command.
    #[error("command is empty or not made of ASCII letters and digits")]
    BadCommand,
    /// The source is empty or contains a space.
    #[error("source is empty or contains a space")]
    BadSource,
    /// Tag keys are an optional `+`, an optional `vendor/`, then letters,
    /// digits and `-`; anything else would break the tag section.
    #[error("tag key {index} is not a valid key")]
    BadTagKey {
        /// Position of the tag.
        index: usize,
    },
    /// More parameters than [`MAX_PARAMS`]: the receiver would fold the
    /// excess into the last one.
    #[error("{count} parameters exceed the limit of {MAX_PARAMS}")]
    TooManyParams {
        /// How many parameters the line had.
        count: usize,
    },
}

impl OutLine {
    /// A line with this command and nothing else.
    pub fn new(command: impl Into<String>) -> Self {
        OutLine {
            command: command.into(),
            ..OutLine::default()
        }
    }

    /// Appends a parameter.
    #[must_use]
    pub fn param(mut self, p: impl Into<String>) -> Self {
        self.params.push(p.into());
        self
    }

    /// Appends a tag; `None` sends the bare key.
    #[must_use]
    pub fn tag(mut self, k: impl Into<String>, v: Option<String>) -> Self {
        self.tags.push((k.into(), v));
        self
    }

    /// Appends the wire form, without the CRLF, to `buf`.
    ///
    /// Tag values are escaped; the last parameter gets a `:` only when it
    /// needs one (empty, contains a space, or starts with `:`). On error
    /// nothing is appended: `buf` is left as it was.
    pub fn write_to(&self, buf: &mut String) -> Result<(), SerializeError> {
        let start = buf.len();
        let written = self.write_parts(buf);
        if written.is_err() {
            buf.truncate(start);
        }
        written
    }

    /// The wire form, without the CRLF, as a new string.
    pub fn to_wire(&self) -> Result<String, SerializeError> {
        let mut buf = String::with_capacity(self.estimated_len());
        self.write_to(&mut buf)?;
        Ok(buf)
    }

    /// A capacity guess so `to_wire` rarely reallocates.
    fn estimated_len(&self) -> usize {
        let tags: usize = self
            .tags
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len() + 4) + 2)
            .sum();
        let params: usize = self.params.iter().map(|p| p.len() + 2).sum();
        tags + self.source.as_ref().map_or(0, |s| s.len() + 2) + self.command.len() + params
    }

    /// Writes part by part, validating as it goes; the caller rolls back on error.
    fn write_parts(&self, buf: &mut String) -> Result<(), SerializeError> {
        self.write_tags(buf)?;
        if let Some(source) = &self.source {
            check_source(source)?;
            buf.push(':');
            buf.push_str(source);
            buf.push(' ');
        }
        if !is_valid_command(&self.command) {
            return Err(SerializeError::BadCommand);
        }
        buf.push_str(&self.command);
        self.write_params(buf)
    }

    /// Writes `@k=v;k2 ` (with escaping) when there are tags.
    fn write_tags(&self, buf: &mut String) -> Result<(), SerializeError> {
        if self.tags.is_empty() {
            return Ok(());
        }
        buf.push('@');
        for (index, (key, value)) in self.tags.iter().enumerate() {
            if !is_valid_tag_key(key) {
                return Err(SerializeError::BadTagKey { index });
            }
            if index > 0 {
                buf.push(';');
            }
            buf.push_str(key);
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                if memchr::memchr(0, value.as_bytes()).is_some() {
                    return Err(SerializeError::ForbiddenChar(Part::TagValue(index)));
                }
                buf.push('=');
                escape_tag_value(value, buf);
            }
        }
        buf.push(' ');
        Ok(())
    }

    /// Writes ` p1 p2 :last`, validating each parameter for its position.
    fn write_params(&self, buf: &mut String) -> Result<(), SerializeError> {
        let count = self.params.len();
        if count > MAX_PARAMS {
            return Err(SerializeError::TooManyParams { count });
        }
        for (index, p) in self.params.iter().enumerate() {
            if has_line_break_or_nul(p) {
                return Err(SerializeError::ForbiddenChar(Part::Param(index)));
            }
            let has_space = memchr::memchr(b' ', p.as_bytes()).is_some();
            let needs_colon = p.is_empty() || has_space || p.starts_with(':');
            buf.push(' ');
            if index + 1 == count {
                if needs_colon {
                    buf.push(':');
                }
            } else if p.is_empty() {
                return Err(SerializeError::EmptyMiddleParam { index });
            } else if has_space {
                return Err(SerializeError::SpaceInMiddleParam { index });
            } else if p.starts_with(':') {
                return Err(SerializeError::ColonInMiddleParam { index });
            }
            buf.push_str(p);
        }
        Ok(())
    }
}

/// A source must be one non-empty word without line breaks.
fn check_source(source: &str) -> Result<(), SerializeError> {
    if has_line_break_or_nul(source) {
        return Err(SerializeError::ForbiddenChar(Part::Source));
    }
    if source.is_empty() || memchr::memchr(b' ', source.as_bytes()).is_some() {
        return Err(SerializeError::BadSource);
    }
    Ok(())
}

/// Letters (`PRIVMSG`) or digits (`001`); nothing else is a command.
fn is_valid_command(command: &str) -> bool {
    !command.is_empty() && command.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `['+'] [vendor '/'] name`, where vendor is a host name and name is letters, digits and `-`.
fn is_valid_tag_key(key: &str) -> bool {
    let key = key.strip_prefix('+').unwrap_or(key);
    let (vendor, name) = match key.rsplit_once('/') {
        Some((vendor, name)) => (Some(vendor), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let vendor_ok = vendor.is_none_or(|v| {
        !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    });
    name_ok && vendor_ok
}

/// Whether `s` holds a byte that may never appear on the wire unescaped.
fn has_line_break_or_nul(s: &str) -> bool {
    memchr::memchr3(b'\r', b'\n', 0, s.as_bytes()).is_some()
}

/// Commands whose parameters are credentials.
const SECRET_COMMANDS: [&str; 3] = ["PASS", "OPER", "AUTHENTICATE"];

/// Whether Debug output must hide this line's parameters.
///
/// Best effort: credential commands, plus messages to a `*Serv` service
/// (`PRIVMSG NickServ :IDENTIFY ...`), whose text may hold a password.
fn params_are_secret(line: &OutLine) -> bool {
    if SECRET_COMMANDS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(&line.command))
    {
        return true;
    }
    let is_message = ["PRIVMSG", "NOTICE"]
        .iter()
        .any(|c| c.eq_ignore_ascii_case(&line.command));
    is_message
        && line
            .params
            .first()
            .is_some_and(|target| target.to_ascii_lowercase().ends_with("serv"))
}

impl fmt::Debug for OutLine {
    /// Like a derived Debug, but parameters of credential-carrying lines are
    /// replaced by their count so passwords never reach logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("OutLine");
        s.field("tags", &self.tags)
            .field("source", &self.source)
            .field("command", &self.command);
        if params_are_secret(self) {
            s.field("params", &format_args!("<{} redacted>", self.params.len()));
        } else {
            s.field("params", &self.params);
        }
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(line: &OutLine) -> String {
        match line.to_wire() {
            Ok(s) => s,
            Err(e) => panic!("{line:?} failed to serialize: {e}"),
        }
    }

    #[test]
    fn last_param_gets_colon_only_when_needed() {
        let base = || OutLine::new("PRIVMSG").param("#c");
        assert_eq!(wire(&base().param("hi")), "PRIVMSG #c hi");
        assert_eq!(wire(&base().param("hi there")), "PRIVMSG #c :hi there");
        assert_eq!(wire(&base().param("")), "PRIVMSG #c :");
        assert_eq!(wire(&base().param(":)")), "PRIVMSG #c ::)");
        assert_eq!(wire(&OutLine::new("QUIT")), "QUIT");
    }

    #[test]
    fn tags_and_source_are_written_in_order() {
        let line = OutLine::new("TAGMSG")
            .tag("+draft/reply", Some("id;1".into()))
            .tag("label", None)
            .tag("empty", Some(String::new()))
            .param("#c");
        let line = OutLine {
            source: Some("me!u@h".into()),
            ..line
        };
        assert_eq!(
            wire(&line),
            r"@+draft/reply=id\:1;label;empty :me!u@h TAGMSG #c"
        );
    }

    #[test]
    fn line_breaks_are_refused_everywhere_but_escaped_in_tag_values() {
        let injected = OutLine::new("PRIVMSG").param("#c").param("hi\r\nQUIT");
        assert_eq!(
            injected.to_wire(),
            Err(SerializeError::ForbiddenChar(Part::Param(1)))
        );
        let nul = OutLine::new("PRIVMSG").param("a\0").param("x");
        assert_eq!(
            nul.to_wire(),
            Err(SerializeError::ForbiddenChar(Part::Param(0)))
        );
        let source = OutLine {
            source: Some("a\nb".into()),
            ..OutLine::new("X")
        };
        assert_eq!(
            source.to_wire(),
            Err(SerializeError::ForbiddenChar(Part::Source))
        );
        let tag_nul = OutLine::new("X").tag("a", Some("\0".into()));
        assert_eq!(
            tag_nul.to_wire(),
            Err(SerializeError::ForbiddenChar(Part::TagValue(0)))
        );
        let tag_crlf = OutLine::new("X").tag("a", Some("\r\n".into()));
        assert_eq!(wire(&tag_crlf), r"@a=\r\n X");
    }

    #[test]
    fn bad_middle_params_are_refused() {
        let with = |p: &str| OutLine::new("X").param(p).param("last").to_wire();
        assert_eq!(with(""), Err(SerializeError::EmptyMiddleParam { index: 0 }));
        assert_eq!(
            with("a b"),
            Err(SerializeError::SpaceInMiddleParam { index: 0 })
        );
        assert_eq!(
            with(":a"),
            Err(SerializeError::ColonInMiddleParam { index: 0 })
        );
    }

    #[test]
    fn bad_command_source_and_keys_are_refused() {
        for command in ["", "PRIV MSG", "PRIVMSG\r", ":X", "Ü"] {
            assert_eq!(
                OutLine::new(command).to_wire(),
                Err(SerializeError::BadCommand),
                "{command:?}"
            );
        }
        for source in ["", "a b"] {
            let line = OutLine {
                source: Some(source.into()),
                ..OutLine::new("X")
            };
            assert_eq!(line.to_wire(), Err(SerializeError::BadSource), "{source:?}");
        }
        for key in ["", "+", "a b", "a=b", "a;b", "/x", "v/", "a\n"] {
            let line = OutLine::new("X").tag("ok", None).tag(key, None);
            assert_eq!(
                line.to_wire(),
                Err(SerializeError::BadTagKey { index: 1 }),
                "{key:?}"
            );
        }
        for key in ["a", "+a", "example.com/a-b", "+draft/reply", "Z9"] {
            assert!(
                OutLine::new("X").tag(key, None).to_wire().is_ok(),
                "{key:?}"
            );
        }
    }

    #[test]
    fn too_many_params_are_refused() {
        let mut line = OutLine::new("X");
        line.params = vec!["p".to_owned(); MAX_PARAMS];
        assert!(line.to_wire().is_ok());
        line.params.push("p".to_owned());
        assert_eq!(
            line.to_wire(),
            Err(SerializeError::TooManyParams { count: 16 })
        );
    }

    #[test]
    fn failed_write_leaves_buffer_untouched() {
        let mut buf = String::from("before");
        let bad = OutLine::new("X").tag("a", None).param("a b").param("c");
        assert!(bad.write_to(&mut buf).is_err());
        assert_eq!(buf, "before");
        assert!(OutLine::new("X").param("y").write_to(&mut buf).is_ok());
        assert_eq!(buf, "beforeX y");
    }

    #[test]
    fn debug_hides_credentials() {
        let pass = OutLine::new("PASS").param("hunter2");
        let identify = OutLine::new("PRIVMSG")
            .param("NickServ")
            .param("IDENTIFY hunter2");
        let auth = OutLine::new("authenticate").param("aHVudGVyMg==");
        for line in [pass, identify, auth] {
            let shown = format!("{line:?}");
            assert!(
                !shown.contains("hunter2") && !shown.contains("aHVudGVy"),
                "{shown}"
            );
            assert!(shown.contains("redacted"), "{shown}");
        }
        let normal = format!("{:?}", OutLine::new("PRIVMSG").param("#c").param("hi"));
        assert!(normal.contains("\"hi\""), "{normal}");
    }

    #[test]
    fn errors_do_not_echo_contents() {
        let err = OutLine::new("PASS").param("se cret").param("x").to_wire();
        let shown = err.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert_eq!(shown, "middle parameter 0 contains a space");
    }
}
