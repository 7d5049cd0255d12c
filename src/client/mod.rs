//! What reterm shows and how a person drives it, independent of the
//! frontend: the full-screen interface and line mode share these pieces.
//!
//! # Layout
//! - `activity.rs`: how much happened in a buffer the person is not looking at.
//! - `highlight.rs`: whether a row calls for the person (nick or a word).
//! - `ignore.rs`: `/ignore` masks, whose messages are not shown.
//! - `editor.rs`: the input line (cursor, kill buffer) and its history.
//! - `complete.rs`: tab completion of nicks, channels and commands.
//! - `mirc.rs`: mIRC formatting codes as styled segments.
//! - `colour.rs`: a nick's colour from a stable hash.
//! - `names.rs`: the names summary shown on join and `/names` in columns.
//! - `raw_ring.rs`: each session's recent raw lines, behind `/raw`.
//! - `switch.rs`: buffer numbers behind Alt+1…0 and Alt+Q…O.

pub mod activity;
pub mod colour;
pub mod complete;
pub mod editor;
pub mod highlight;
pub mod ignore;
pub mod mirc;
pub mod names;
pub mod raw_ring;
pub mod switch;
