//! Loading the file, creating it on first run and filling in missing ids.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::ids::insert_ids;
use super::model::Config;
use super::raw::RawConfig;
use super::template::template;
use super::validate::{validate, Context};
use super::write::{create_private_dir, replace_file, FILE_MODE};

/// A loaded config and what loading did to the file, so the caller can tell
/// the user ("created ~/.rete/reterm.toml").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedConfig {
    /// The checked configuration.
    pub config: Config,
    /// The file it came from.
    pub path: PathBuf,
    /// The file did not exist and was created from the template.
    pub created: bool,
    /// How many network ids were generated and written to the file.
    pub ids_written: usize,
    /// Values loading adjusted (a control.port below 1024, clamped), to be
    /// told once.
    pub notices: Vec<String>,
}

/// `~/.rete/reterm.toml`.
pub fn default_path() -> Result<PathBuf, ConfigError> {
    home()
        .map(|home| home.join(".rete").join("reterm.toml"))
        .ok_or(ConfigError::NoHome)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Loads the config at `path`. A missing file is created from [`template`]
/// (directory 0700, file 0600); networks without an `id` get a new upper-case
/// UUIDv4, written back so they are stable from then on.
pub fn load_or_create(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let (text, created) = match fs::read_to_string(path) {
        Ok(text) => (text, false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (create(path)?, true),
        Err(e) => return Err(ConfigError::io(path, "read", e)),
    };
    let raw: RawConfig =
        toml::from_str(&text).map_err(|e| ConfigError::from_toml(path, &text, &e))?;
    let home = home();
    let ctx = Context {
        path,
        home: home.as_deref(),
    };
    let validated = validate(raw, &ctx, new_id)?;
    let ids_written = validated.generated_ids.len();
    if ids_written > 0 {
        let names: Vec<&str> = validated
            .config
            .networks
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        let updated = insert_ids(path, &text, &validated.generated_ids, &names)?;
        replace_file(path, updated.as_bytes(), FILE_MODE)
            .map_err(|e| ConfigError::io(path, "write", e))?;
    }
    Ok(LoadedConfig {
        config: validated.config,
        path: path.to_path_buf(),
        created,
        ids_written,
        notices: validated.notices,
    })
}

/// Writes the template and returns its text. A missing `.rete` directory
/// (the default's, `~/.rete`) is created private, one level only; any other
/// directory must exist already, so a mistyped `--config` path never grows
/// a directory tree.
fn create(path: &Path) -> Result<String, ConfigError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let is_rete_dir = dir.file_name().is_some_and(|n| n == ".rete")
            && dir
                .parent()
                .is_none_or(|p| p.as_os_str().is_empty() || p.is_dir());
        if is_rete_dir && !dir.is_dir() {
            create_private_dir(dir).map_err(|e| ConfigError::io(dir, "create directory", e))?;
        } else if !dir.is_dir() {
            let missing = io::Error::new(io::ErrorKind::NotFound, "its directory does not exist");
            return Err(ConfigError::io(path, "create", missing));
        }
    }
    let text = template();
    replace_file(path, text.as_bytes(), FILE_MODE)
        .map_err(|e| ConfigError::io(path, "create", e))?;
    Ok(text.to_string())
}

fn new_id() -> String {
    uuid::Uuid::new_v4()
        .hyphenated()
        .to_string()
        .to_ascii_uppercase()
}
