//! The pure HTTP pieces of the listener: reading a strict request head,
//! judging it at the access gate and the route, building the answer bytes,
//! and rate-limiting the refusal log. No sockets here, so every rule of the
//! contract is tested byte for byte without a network.

pub(crate) mod gate;
pub(crate) mod head;
pub(crate) mod refusal_log;
pub(crate) mod response;

pub(crate) use gate::{route, Gate, Refusal};
pub(crate) use head::{HeadReader, RequestHead};
pub(crate) use refusal_log::RefusalLog;
pub(crate) use response::{empty, with_body, CONTINUE};
