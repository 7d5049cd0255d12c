//! The Rete IRC engine.

pub mod clock;
