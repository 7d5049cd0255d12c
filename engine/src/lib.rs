//! The Rete IRC engine.

pub mod clock;
pub mod flood;
pub mod line;
pub mod who_queue;
