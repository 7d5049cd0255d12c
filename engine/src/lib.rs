//! The Rete IRC engine.

pub mod buffer;
pub mod cap;
pub mod casemap;
pub mod clock;
pub mod event;
pub mod flood;
pub mod ids;
pub mod isupport;
pub mod line;
pub mod members;
pub mod row;
pub mod sasl;
pub mod session;
pub mod timefmt;
pub mod view;
pub mod who_queue;
