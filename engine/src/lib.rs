//! The Rete IRC engine.

pub mod casemap;
pub mod clock;
pub mod isupport;
pub mod sasl;
