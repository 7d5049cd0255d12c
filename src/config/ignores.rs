//! Persisting the `/ignore` list: the top-level `ignores = [...]` array,
//! rewritten whole through `toml_edit` so comments elsewhere survive.

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Value};

use super::error::ConfigError;
use super::write::{replace_file, FILE_MODE};

/// Why `mask` cannot be an ignore mask, if it cannot.
pub fn mask_problem(mask: &str) -> Option<String> {
    if mask.is_empty() {
        return Some("a mask cannot be empty".to_owned());
    }
    if mask.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!(
            "{} holds a space or control character",
            mask.escape_debug()
        ));
    }
    None
}

/// Writes `masks` as the file's `ignores` (removing the key when empty).
pub fn set_ignores(path: &Path, masks: &[String]) -> Result<(), ConfigError> {
    if let Some(problem) = masks.iter().find_map(|m| mask_problem(m)) {
        return Err(ConfigError::invalid(path, format!("ignores: {problem}")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, "read", e))?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, &text, &e))?;
    if masks.is_empty() {
        doc.remove("ignores");
    } else {
        let mut array = Array::new();
        for m in masks {
            array.push(m.as_str());
        }
        match doc.get_mut("ignores") {
            Some(Item::Value(old)) => {
                let decor = old.decor().clone();
                *old = Value::Array(array);
                *old.decor_mut() = decor;
            }
            _ => {
                doc.insert("ignores", Item::Value(Value::Array(array)));
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
    fn written_and_removed_keeping_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "# mine\nlogging = true # yes\n\n[control]\nenabled = false\n",
        )
        .unwrap();
        set_ignores(&path, &["spam!*@*".into(), "*!*@bad.host".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nlogging = true # yes\n"), "{text}");
        let doc: DocumentMut = text.parse().unwrap();
        let got: Vec<&str> = doc["ignores"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(got, ["spam!*@*", "*!*@bad.host"]);
        // The key lands before the tables, so it stays top-level.
        assert!(
            text.find("ignores").unwrap() < text.find("[control]").unwrap(),
            "{text}"
        );
        set_ignores(&path, &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# mine\nlogging = true # yes\n\n[control]\nenabled = false\n"
        );
        assert!(set_ignores(&path, &["a b".into()]).is_err());
    }
}
