//! Writing generated network ids back into the user's file.
//!
//! Done with `toml_edit` so comments, ordering and spacing survive; the only
//! change is one `id = "..."` line at the top of each network that lacked one.

use std::path::Path;

use toml_edit::{DocumentMut, InlineTable, Item, Key, Table, Value};

use super::error::ConfigError;

/// Returns `text` with `ids` (network index, id) inserted. Each network's
/// name is checked against `names` so an unexpected file layout fails loudly
/// rather than putting an id on the wrong network.
pub(super) fn insert_ids(
    path: &Path,
    text: &str,
    ids: &[(usize, String)],
    names: &[&str],
) -> Result<String, ConfigError> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::from_toml_edit(path, text, &e))?;
    let mismatch = || {
        ConfigError::invalid(
            path,
            "cannot write network ids back: file layout not understood",
        )
    };
    let networks = doc.get_mut("networks").ok_or_else(mismatch)?;
    for (index, id) in ids {
        let expected = names.get(*index).copied().ok_or_else(mismatch)?;
        let done = match networks {
            Item::ArrayOfTables(array) => array
                .get_mut(*index)
                .filter(|t| t.get("name").and_then(Item::as_str) == Some(expected))
                .map(|t| insert_into_table(t, id))
                .is_some(),
            Item::Value(Value::Array(array)) => array
                .get_mut(*index)
                .and_then(Value::as_inline_table_mut)
                .filter(|t| t.get("name").and_then(Value::as_str) == Some(expected))
                .map(|t| insert_into_inline(t, id))
                .is_some(),
            _ => false,
        };
        if !done {
            return Err(mismatch());
        }
    }
    Ok(doc.to_string())
}

/// Puts `id` first in the table. Comments sitting between the `[[networks]]`
/// header and the first key move above the id, so they stay under the header.
fn insert_into_table(table: &mut Table, id: &str) {
    let mut key = Key::new("id");
    let first = table.iter().next().map(|(k, _)| k.to_string());
    if let Some(mut first_key) = first.as_deref().and_then(|k| table.key_mut(k)) {
        if let Some(prefix) = first_key.leaf_decor().prefix().cloned() {
            key.leaf_decor_mut().set_prefix(prefix);
            first_key.leaf_decor_mut().set_prefix("");
        }
    }
    table.insert_formatted(&key, toml_edit::value(id));
    table.sort_values_by(|a, _, b, _| (a.get() != "id").cmp(&(b.get() != "id")));
}

/// Same for `networks = [{ ... }]`: the id goes first in the inline table.
fn insert_into_inline(table: &mut InlineTable, id: &str) {
    table.insert("id", Value::from(id));
    table.sort_values_by(|a, _, b, _| (a.get() != "id").cmp(&(b.get() != "id")));
}
