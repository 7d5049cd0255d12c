//! `/server add|remove`: a `[[networks]]` entry appended to or removed from
//! the file through `toml_edit`, so the rest of it (comments, layout, the
//! other networks) stays as it was.

use std::path::Path;

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use super::error::ConfigError;
use super::write::{replace_file, FILE_MODE};

/// A network `/server add` writes: what a person gives on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewServer {
    /// The network's name.
    pub name: String,
    /// Server host.
    pub host: String,
    /// Port.
    pub port: u16,
    /// TLS.
    pub tls: bool,
    /// Nick.
    pub nick: String,
    /// Connect at start-up (and now).
    pub autoconnect: bool,
}

fn read(path: &Path) -> Result<(String, DocumentMut), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, "read", e))?;
    let doc = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, &text, &e))?;
    Ok((text, doc))
}

fn write(path: &Path, doc: &DocumentMut) -> Result<(), ConfigError> {
    replace_file(path, doc.to_string().as_bytes(), FILE_MODE)
        .map_err(|e| ConfigError::io(path, "write", e))
}

/// Appends `server` as a `[[networks]]` entry; the file's text before, to
/// put back if what was added does not load.
pub fn add_server(path: &Path, server: &NewServer) -> Result<String, ConfigError> {
    let (before, mut doc) = read(path)?;
    let mut table = Table::new();
    table.insert("name", toml_edit::value(server.name.as_str()));
    table.insert("host", toml_edit::value(server.host.as_str()));
    table.insert("port", toml_edit::value(i64::from(server.port)));
    if server.tls {
        table.insert("tls", toml_edit::value(true));
    }
    table.insert("nick", toml_edit::value(server.nick.as_str()));
    table.insert("autoconnect", toml_edit::value(server.autoconnect));
    match doc.get_mut("networks") {
        Some(Item::ArrayOfTables(networks)) => networks.push(table),
        Some(_) => {
            return Err(ConfigError::invalid(
                path,
                "networks is not a list of [[networks]] tables".to_owned(),
            ))
        }
        None => {
            let mut networks = ArrayOfTables::new();
            networks.push(table);
            doc.insert("networks", Item::ArrayOfTables(networks));
        }
    }
    write(path, &doc)?;
    Ok(before)
}

/// Puts the file's earlier text back (after an addition that did not load).
pub fn restore(path: &Path, text: &str) -> Result<(), ConfigError> {
    replace_file(path, text.as_bytes(), FILE_MODE).map_err(|e| ConfigError::io(path, "write", e))
}

/// Removes the `[[networks]]` entry named `name` (any case); whether there
/// was one.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, ConfigError> {
    let (_, mut doc) = read(path)?;
    let Some(Item::ArrayOfTables(networks)) = doc.get_mut("networks") else {
        return Ok(false);
    };
    let at = networks.iter().position(|t| {
        t.get("name")
            .and_then(Item::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
    });
    let Some(at) = at else {
        return Ok(false);
    };
    networks.remove(at);
    if networks.is_empty() {
        doc.remove("networks");
    }
    write(path, &doc)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_appended_and_removed_keeping_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reterm.toml");
        let first =
            "# my networks\n[[networks]]\nname = \"a\"  # the first\nhost = \"h\"\nnick = \"n\"\n";
        std::fs::write(&path, first).unwrap();
        let server = NewServer {
            name: "libera".into(),
            host: "irc.libera.chat".into(),
            port: 6697,
            tls: true,
            nick: "rt".into(),
            autoconnect: false,
        };
        assert_eq!(add_server(&path, &server).unwrap(), first);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(first), "{text}");
        assert!(
            text.ends_with("[[networks]]\nname = \"libera\"\nhost = \"irc.libera.chat\"\nport = 6697\ntls = true\nnick = \"rt\"\nautoconnect = false\n"),
            "{text}"
        );
        assert!(remove_server(&path, "LIBERA").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
        assert!(!remove_server(&path, "libera").unwrap());
    }
}
