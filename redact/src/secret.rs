//! [`Secret`], the one wrapper for a secret value held in memory: a password,
//! a channel key, a token's text. Its `Debug` never shows the value, so a
//! struct holding one can derive `Debug` and still be logged safely.

use crate::MASK;
use std::fmt;

/// A secret string. `Debug` prints `Secret(********)`; the value is reached
/// only through [`Secret::expose`], named so that every place that says the
/// secret again is easy to find.
///
/// With the `serde` feature it (de)serializes as the bare string, for the
/// wire formats and files that carry it.
#[derive(Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that must say it (the wire, a
    /// store, the person's own screen after they asked).
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({MASK})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_mask_never_the_value() {
        let held = Secret::new("hunter2");
        assert_eq!(format!("{held:?}"), "Secret(********)");
        assert_eq!(
            format!("{:#?}", Some(held.clone()))
                .matches("hunter2")
                .count(),
            0
        );
        assert_eq!(held.expose(), "hunter2");
    }
}
