//! Persisting one `[display]` setting (`/set time_format …`), keeping every
//! other byte of the file, comments included.

use std::path::Path;

use chrono::format::{Item as Strftime, StrftimeItems};
use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::error::ConfigError;
use super::write::{replace_file, FILE_MODE};

/// A `[display]` key with a value of its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisplaySetting {
    /// `time_format`
    TimeFormat(String),
    /// `mirc_colours`
    MircColours(bool),
    /// `nicklist`
    Nicklist(bool),
    /// `highlights`
    Highlights(Vec<String>),
}

impl DisplaySetting {
    fn key(&self) -> &'static str {
        match self {
            DisplaySetting::TimeFormat(_) => "time_format",
            DisplaySetting::MircColours(_) => "mirc_colours",
            DisplaySetting::Nicklist(_) => "nicklist",
            DisplaySetting::Highlights(_) => "highlights",
        }
    }

    fn value(&self) -> Value {
        match self {
            DisplaySetting::TimeFormat(f) => Value::from(f.as_str()),
            DisplaySetting::MircColours(on) | DisplaySetting::Nicklist(on) => Value::from(*on),
            DisplaySetting::Highlights(words) => {
                let mut a = Array::new();
                for w in words {
                    a.push(w.as_str());
                }
                Value::Array(a)
            }
        }
    }
}

/// Why `format` is not a time format chrono can draw, if it is not.
pub fn time_format_problem(format: &str) -> Option<String> {
    let bad = format.is_empty() || StrftimeItems::new(format).any(|i| matches!(i, Strftime::Error));
    bad.then(|| {
        format!(
            "time_format: not a valid strftime format: {}",
            format.escape_debug()
        )
    })
}

/// Writes `setting` into `[display]` of the file at `path` (creating the
/// table when absent).
pub fn set_display(path: &Path, setting: &DisplaySetting) -> Result<(), ConfigError> {
    if let DisplaySetting::TimeFormat(f) = setting {
        if let Some(problem) = time_format_problem(f) {
            return Err(ConfigError::invalid(path, problem));
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, "read", e))?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, &text, &e))?;
    if !doc.contains_key("display") {
        // Appended at the end: the file's own order and comments stay put.
        doc.insert("display", Item::Table(Table::new()));
    }
    let key = setting.key();
    match doc.get_mut("display") {
        Some(Item::Table(table)) => match table.get_mut(key) {
            Some(Item::Value(old)) => {
                let decor = old.decor().clone();
                *old = setting.value();
                *old.decor_mut() = decor;
            }
            Some(_) => {
                return Err(ConfigError::invalid(
                    path,
                    format!("display.{key} is not a plain value"),
                ))
            }
            None => {
                table.insert(key, Item::Value(setting.value()));
            }
        },
        _ => return Err(ConfigError::invalid(path, "display is not a table")),
    }
    replace_file(path, doc.to_string().as_bytes(), FILE_MODE)
        .map_err(|e| ConfigError::io(path, "write", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_land_in_the_display_table_keeping_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let original = "# mine\n[control]\nenabled = false\n\n[[networks]]\nname = \"a\"\nhost = \"h\"\nnick = \"n\"\n";
        std::fs::write(&path, original).unwrap();
        set_display(&path, &DisplaySetting::Nicklist(false)).unwrap();
        set_display(&path, &DisplaySetting::TimeFormat("%H:%M:%S".into())).unwrap();
        set_display(&path, &DisplaySetting::Highlights(vec!["deploy".into()])).unwrap();
        set_display(&path, &DisplaySetting::Nicklist(true)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        let doc: DocumentMut = text.parse().unwrap();
        assert_eq!(doc["display"]["nicklist"].as_bool(), Some(true));
        assert_eq!(doc["display"]["time_format"].as_str(), Some("%H:%M:%S"));
        assert_eq!(
            doc["display"]["highlights"].as_array().map(|a| a.len()),
            Some(1)
        );
        assert!(text.starts_with(original), "{text}");
        assert!(set_display(&path, &DisplaySetting::TimeFormat("%Q".into())).is_err());
    }
}
