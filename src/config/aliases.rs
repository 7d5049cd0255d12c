//! Persisting `/alias`: the `[aliases]` table (`name = "expansion"`),
//! changed through `toml_edit` so comments elsewhere survive.

use std::path::Path;

use toml_edit::{DocumentMut, Item, Table};

use super::error::ConfigError;
use super::write::{replace_file, FILE_MODE};

/// Why `name` cannot name an alias, if it cannot: one word of letters,
/// digits, `-` and `_`.
pub fn alias_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an alias needs a name".to_owned());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(format!(
            "alias {}: a name is letters, digits, - and _",
            name.escape_debug()
        ));
    }
    None
}

/// Why `expansion` cannot be what an alias stands for, if it cannot.
pub fn alias_expansion_problem(expansion: &str) -> Option<String> {
    if expansion.trim().is_empty() {
        return Some("an alias stands for a command: /alias NAME COMMAND".to_owned());
    }
    if expansion.chars().any(char::is_control) {
        return Some("an alias holds no control characters".to_owned());
    }
    None
}

/// Sets (`Some`) or removes (`None`) the alias `name` in the file.
pub fn set_alias(path: &Path, name: &str, expansion: Option<&str>) -> Result<(), ConfigError> {
    if let Some(problem) =
        alias_name_problem(name).or_else(|| expansion.and_then(alias_expansion_problem))
    {
        return Err(ConfigError::invalid(path, problem));
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, "read", e))?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, &text, &e))?;
    match expansion {
        Some(expansion) => {
            if !doc.contains_table("aliases") {
                doc.insert("aliases", Item::Table(Table::new()));
            }
            if let Some(table) = doc.get_mut("aliases").and_then(Item::as_table_mut) {
                table.insert(name, toml_edit::value(expansion));
            }
        }
        None => {
            let empty = match doc.get_mut("aliases").and_then(Item::as_table_mut) {
                Some(table) => {
                    table.remove(name);
                    table.is_empty()
                }
                None => false,
            };
            if empty {
                doc.remove("aliases");
            }
        }
    }
    replace_file(path, doc.to_string().as_bytes(), FILE_MODE)
        .map_err(|e| ConfigError::io(path, "write", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_added_and_removed_keeping_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reterm.toml");
        std::fs::write(&path, "# mine\nlogging = false\n").unwrap();
        set_alias(&path, "hi", Some("msg #rete hello")).unwrap();
        set_alias(&path, "ns", Some("msg NickServ")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nlogging = false\n"), "{text}");
        assert!(
            text.contains("[aliases]\nhi = \"msg #rete hello\"\nns = \"msg NickServ\"\n"),
            "{text}"
        );
        set_alias(&path, "hi", None).unwrap();
        set_alias(&path, "ns", None).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# mine\nlogging = false\n"
        );
        assert!(set_alias(&path, "a b", Some("x")).is_err());
        assert!(set_alias(&path, "x", Some(" ")).is_err());
    }
}
