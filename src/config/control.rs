//! Persisting one `[control]` setting (`/set control.*`).

use std::fmt;
use std::path::Path;

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use super::error::ConfigError;
use super::write::{replace_file, FILE_MODE};

/// The persisted `[control]` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlKey {
    /// `enabled`
    Enabled,
    /// `debug`
    Debug,
    /// `approve`: each line an agent sends waits for the person's answer.
    Approve,
    /// `port`
    Port,
}

impl ControlKey {
    /// The key's name in the TOML table.
    pub fn as_str(self) -> &'static str {
        match self {
            ControlKey::Enabled => "enabled",
            ControlKey::Debug => "debug",
            ControlKey::Approve => "approve",
            ControlKey::Port => "port",
        }
    }
}

impl fmt::Display for ControlKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "control.{}", self.as_str())
    }
}

/// A key together with a value of the right type, so a mistyped setting
/// (`port = true`) cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlSetting {
    /// `control.enabled`
    Enabled(bool),
    /// `control.debug`
    Debug(bool),
    /// `control.approve`
    Approve(bool),
    /// `control.port` (1..=65535)
    Port(u16),
}

impl ControlSetting {
    /// Which key this setting writes.
    pub fn key(self) -> ControlKey {
        match self {
            ControlSetting::Enabled(_) => ControlKey::Enabled,
            ControlSetting::Debug(_) => ControlKey::Debug,
            ControlSetting::Approve(_) => ControlKey::Approve,
            ControlSetting::Port(_) => ControlKey::Port,
        }
    }

    fn value(self) -> Value {
        match self {
            ControlSetting::Enabled(on)
            | ControlSetting::Debug(on)
            | ControlSetting::Approve(on) => Value::from(on),
            ControlSetting::Port(port) => Value::from(i64::from(port)),
        }
    }
}

/// Writes `setting` into `[control]` of the file at `path`, creating the table
/// when absent and keeping every other byte (comments included) as it was.
/// The file must exist (it is created by `load_or_create` at start-up).
pub fn set_control(path: &Path, setting: ControlSetting) -> Result<(), ConfigError> {
    if setting == ControlSetting::Port(0) {
        return Err(ConfigError::invalid(
            path,
            "control.port must be between 1 and 65535",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, "read", e))?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, &text, &e))?;
    set_in_document(&mut doc, setting).map_err(|m| ConfigError::invalid(path, m))?;
    replace_file(path, doc.to_string().as_bytes(), FILE_MODE)
        .map_err(|e| ConfigError::io(path, "write", e))
}

/// The edit itself, on any of the three ways TOML can spell the table:
/// `[control]`, `control = { ... }` or dotted `control.x = ...` keys.
fn set_in_document(doc: &mut DocumentMut, setting: ControlSetting) -> Result<(), String> {
    let key = setting.key().as_str();
    let new_value = setting.value();
    if !doc.contains_key("control") {
        let mut table = Table::new();
        // Before the `[[networks]]`, where the template puts it.
        table.set_position(Some(0));
        doc.insert("control", Item::Table(table));
    }
    let not_a_table = || "control is not a table".to_string();
    let not_a_value = || format!("control.{key} is not a plain value");
    match doc.get_mut("control").ok_or_else(not_a_table)? {
        Item::Table(table) => match table.get_mut(key) {
            Some(Item::Value(old)) => replace_keeping_decor(old, new_value),
            Some(_) => return Err(not_a_value()),
            None => {
                table.insert(key, Item::Value(new_value));
            }
        },
        Item::Value(Value::InlineTable(table)) => match table.get_mut(key) {
            Some(old) => replace_keeping_decor(old, new_value),
            None => append_inline(table, key, new_value),
        },
        _ => return Err(not_a_table()),
    }
    Ok(())
}

/// Appends to `{ a = 1 }` giving `{ a = 1, key = v }`: the space before `}`
/// moves from the old last value to the new one.
fn append_inline(table: &mut InlineTable, key: &str, mut new_value: Value) {
    let last = table.iter().last().map(|(k, _)| k.to_string());
    if let Some(last_value) = last.as_deref().and_then(|k| table.get_mut(k)) {
        if let Some(suffix) = last_value.decor().suffix().cloned() {
            last_value.decor_mut().set_suffix("");
            new_value.decor_mut().set_suffix(suffix);
        }
    }
    table.insert(key, new_value);
}

/// Keeps spacing and a trailing `# comment` on the replaced line.
fn replace_keeping_decor(old: &mut Value, mut new_value: Value) {
    *new_value.decor_mut() = old.decor().clone();
    *old = new_value;
}
