//! The Rete IRC engine.

pub mod clock;
pub mod line;
