//! Errors of loading and writing the config file.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Why the config could not be loaded or written.
///
/// Every variant names the file, and positioned errors carry `line:column`, so
/// the user can jump straight to the mistake. Messages never contain secret
/// values (passwords, keys): the TOML crate's own rendering, which quotes the
/// offending source line, is deliberately not used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `$HOME` is needed for the default path and for `~/` in paths.
    #[error("HOME is not set; pass --config PATH")]
    NoHome,
    /// Reading, creating or replacing the file failed.
    #[error("{}: cannot {action}: {error}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What we were doing, e.g. "read", "create directory".
        action: &'static str,
        /// The OS error.
        error: io::Error,
    },
    /// A syntax or type error at a known position.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        /// The config file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong, without the offending text.
        message: String,
    },
    /// A semantic problem (duplicate names, missing password, ...).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// Wraps an I/O failure.
    pub(crate) fn io(path: &Path, action: &'static str, error: io::Error) -> Self {
        ConfigError::Io {
            path: path.to_path_buf(),
            action,
            error,
        }
    }

    /// A semantic error without position.
    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// An error at `span` of `text`, or without position when the span is unknown.
    pub(crate) fn at(path: &Path, text: &str, span: Option<Range<usize>>, message: &str) -> Self {
        match span {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                ConfigError::Syntax {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message: message.to_string(),
                }
            }
            None => ConfigError::invalid(path, message),
        }
    }

    /// From a `toml` (serde) error: syntax or type mismatch.
    pub(crate) fn from_toml(path: &Path, text: &str, error: &toml::de::Error) -> Self {
        Self::at(path, text, error.span(), error.message())
    }

    /// From a `toml_edit` parse error.
    pub(crate) fn from_toml_edit(path: &Path, text: &str, error: &toml_edit::TomlError) -> Self {
        Self::at(path, text, error.span(), error.message())
    }
}

/// 1-based line and character column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn line_column_counts_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // 'é' is two bytes but one column.
        assert_eq!(line_column(text, 9), (2, 3));
        assert_eq!(line_column(text, 999), (3, 1));
    }
}
