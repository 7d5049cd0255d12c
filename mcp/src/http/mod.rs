//! The pure HTTP pieces of the listener: reading a strict request head,
//! judging it at the access gate and the route, building the answer bytes,
//! and rate-limiting the refusal log. No sockets here, so every rule of the
//! contract is tested byte for byte without a network.

pub mod gate;
pub mod head;
pub mod refusal_log;
pub mod response;

pub use gate::{route, Gate, Refusal};
pub use head::{HeadReader, RequestHead};
pub use refusal_log::RefusalLog;
pub use response::{empty, with_body, CONTINUE};
