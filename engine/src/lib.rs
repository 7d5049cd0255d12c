//! The Rete IRC engine.

pub mod casemap;
pub mod clock;
pub mod flood;
pub mod isupport;
pub mod line;
pub mod sasl;
pub mod who_queue;
