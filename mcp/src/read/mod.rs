//! The read plumbing the tools and the live-update registry share, so
//! neither imports the other's internals: the argument layer ([`args`]), the
//! result and the 60,000-byte budget ([`result`]), a result escaped for the
//! answer's text item ([`encoded`]), opaque cursors
//! ([`cursor`]), message objects ([`message`]), paging a buffer under the
//! budget ([`paging`]), what a read must not return ([`withheld`]), what a request's grant may see ([`reach`]), the
//! match modes of search and subscribe ([`matcher`]), raw and log lines on the
//! way out ([`raw`], [`log`]), and the shared error texts ([`errors`]). Nothing here depends on `tools/` or `updates/`.

pub mod args;
pub mod cursor;
pub(crate) mod encoded;
pub(crate) mod errors;
pub(crate) mod log;
pub mod matcher;
pub(crate) mod message;
pub mod paging;
pub(crate) mod raw;
pub mod reach;
pub mod result;
pub mod withheld;
