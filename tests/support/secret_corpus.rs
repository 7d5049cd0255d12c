//! The secret corpus and its scanner, for tests that plant secrets in a live session and then
//! look for them in everything Rete shows, stores or answers.
//!
//! A leak is a secret found in a text in any of the forms a reader could get it back from:
//! the exact value, any change of ASCII case (a case-folded password is one guess away), the
//! text as drawn (mIRC formatting codes stripped, so a secret with a bold code inside counts),
//! and for a SASL password the base64 an `AUTHENTICATE PLAIN` payload carries. JSON is scanned
//! both as encoded and string by string (an encoded `\u0002` hides a formatting code from a
//! plain search). A finding names the secret and the form, never the value, so a failing test
//! prints nothing secret.

use std::fmt;

use base64::Engine as _;
use serde_json::Value;

/// One secret of the corpus: a name to report and the value to look for.
#[derive(Clone)]
pub struct Secret {
    /// What a finding calls it ("SASL password").
    pub name: &'static str,
    value: String,
    /// Encoded forms found only exactly (base64 is case-sensitive).
    exact_forms: Vec<String>,
}

impl Secret {
    /// A secret found in any case and with formatting stripped.
    pub fn new(name: &'static str, value: &str) -> Self {
        Self {
            name,
            value: value.to_owned(),
            exact_forms: Vec::new(),
        }
    }

    /// A SASL password: also found as the base64 `AUTHENTICATE` payload of PLAIN for
    /// `account`, and as its own base64.
    pub fn sasl(name: &'static str, account: &str, password: &str) -> Self {
        let b64 = base64::engine::general_purpose::STANDARD;
        let plain = format!("{account}\0{account}\0{password}");
        let bare = format!("\0{account}\0{password}");
        Self {
            name,
            value: password.to_owned(),
            exact_forms: vec![b64.encode(plain), b64.encode(bare), b64.encode(password)],
        }
    }

    /// The value itself, for planting (never print it).
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.name)
    }
}

/// How a secret was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Byte for byte.
    Exact,
    /// In another ASCII case.
    CaseVariant,
    /// Only once mIRC formatting codes are stripped (as drawn).
    FormattingStripped,
    /// As base64 (an AUTHENTICATE payload).
    Encoded,
}

/// One finding: which secret, in which form, where.
#[derive(Clone, Debug)]
pub struct Leak {
    /// The secret's name.
    pub secret: &'static str,
    /// How it was found.
    pub form: Form,
    /// Where (a tool call, a file, a screen), as the caller named it.
    pub place: String,
}

/// The findings of one text: each secret at most once, in its most direct form.
pub fn scan_text(secrets: &[Secret], place: &str, text: &str) -> Vec<Leak> {
    let folded = text.to_ascii_lowercase();
    let drawn = rete_redact::display_escape(text).to_ascii_lowercase();
    let mut found = Vec::new();
    for s in secrets {
        let value = s.value.to_ascii_lowercase();
        let form = if text.contains(&s.value) {
            Some(Form::Exact)
        } else if folded.contains(&value) {
            Some(Form::CaseVariant)
        } else if drawn.contains(&value) {
            Some(Form::FormattingStripped)
        } else if s.exact_forms.iter().any(|e| text.contains(e.as_str())) {
            Some(Form::Encoded)
        } else {
            None
        };
        if let Some(form) = form {
            found.push(Leak {
                secret: s.name,
                form,
                place: place.to_owned(),
            });
        }
    }
    found
}

/// The findings of a JSON value: its encoding and each string in it (keys included).
pub fn scan_json(secrets: &[Secret], place: &str, value: &Value) -> Vec<Leak> {
    let mut found = scan_text(secrets, place, &value.to_string());
    let mut strings = Vec::new();
    collect_strings(value, &mut strings);
    for s in strings {
        for leak in scan_text(secrets, place, s) {
            if !found.iter().any(|f| f.secret == leak.secret) {
                found.push(leak);
            }
        }
    }
    found
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(o) => o.iter().for_each(|(k, v)| {
            out.push(k);
            collect_strings(v, out);
        }),
        _ => {}
    }
}

/// What a scan looked at, so a test can show it did not pass vacuously.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Texts scanned (answers, files, screens).
    pub texts: usize,
    /// Their bytes in all.
    pub bytes: usize,
    /// Every finding.
    pub leaks: Vec<Leak>,
}

impl Scanned {
    /// Scans `text`, counting it.
    pub fn text(&mut self, secrets: &[Secret], place: &str, text: &str) {
        self.texts += 1;
        self.bytes += text.len();
        self.leaks.extend(scan_text(secrets, place, text));
    }

    /// Scans a JSON answer's text: as JSON when it parses, else as text.
    pub fn answer(&mut self, secrets: &[Secret], place: &str, text: &str) {
        self.texts += 1;
        self.bytes += text.len();
        match serde_json::from_str::<Value>(text) {
            Ok(v) => self.leaks.extend(scan_json(secrets, place, &v)),
            Err(_) => self.leaks.extend(scan_text(secrets, place, text)),
        }
    }

    /// The findings as lines for a failure message (names and forms only).
    pub fn report(&self) -> String {
        self.leaks
            .iter()
            .map(|l| format!("{} ({:?}) in {}", l.secret, l.form, l.place))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `value` with a mIRC formatting code inside (after its third byte), as a bot would say
/// it to slip past an exact search: bold, colour (before a letter, so no digit of the value
/// is read as the colour's), italics and reset.
pub fn with_formatting(value: &str) -> Vec<String> {
    let cut = value
        .char_indices()
        .skip(3)
        .find(|(_, c)| c.is_ascii_alphabetic())
        .map_or(value.len() / 2, |(i, _)| i);
    let (a, b) = value.split_at(cut);
    vec![
        format!("{a}\u{2}{b}"),
        format!("{a}\u{3}04{b}\u{3}"),
        format!("\u{1D}{a}\u{1D}\u{1D}{b}"),
        format!("{a}\u{F}{b}"),
    ]
}
