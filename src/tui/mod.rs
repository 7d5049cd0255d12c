//! The full-screen interface's pure pieces: what a frame shows and how keys
//! map to actions. No terminal I/O here (that is `src/app/screen.rs`), so it
//! is tested on ratatui's `TestBackend` and benchmarked.
//!
//! # Layout
//! - `look.rs`: display settings (time format, mIRC formatting, highlight words).
//! - `rows.rs`: one engine row as a styled line.
//! - `title.rs`: the title line (a topic with its setter and date).
//! - `glyphs.rs`: text as terminal cells, by grapheme cluster; emoji sequences
//!   drawn, not escaped.
//! - `wrap.rs`: splitting a styled line at the terminal width, by display width.
//! - `lines.rs`: the visible part of a buffer, with scrollback, the unread
//!   marker and day-changed lines.
//! - `model.rs` and `draw.rs`: everything a frame shows, and drawing it.
//! - `keys.rs`: a key press as an [`keys::Action`].
//! - `paste.rs`: the guard that asks before a multi-line paste is sent.
//! - `pace.rs`: drawing on changes only, at most one frame per 33 ms.

pub mod draw;
pub mod glyphs;
pub mod keys;
pub mod lines;
pub mod look;
pub mod model;
pub mod pace;
pub mod paste;
pub mod rows;
pub mod title;
pub mod wrap;
