//! DNS inside simulations: a root, a TLD and authoritative servers, a
//! caching resolver and stub clients on one switched LAN, checked against
//! closed-form expectations (how many upstream queries a cold or warm
//! cache needs, when entries expire) and against tshark's decoding of the
//! capture.
#![forbid(unsafe_code)]

mod hierarchy;
mod resolution;
mod tshark;

pub use hierarchy::*;
