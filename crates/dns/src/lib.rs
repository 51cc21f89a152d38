//! DNS for elvis (RFC 1034, RFC 1035, RFC 2308, RFC 6891's EDNS size):
//! real DNS messages over UDP and TCP port 53 between simulated machines.
//!
//! - [`message`]: encoding and decoding through hickory-proto (name
//!   compression included), EDNS(0), truncation with the TC bit.
//! - [`master`]: RFC 1035 master files, with file:line errors.
//! - [`zone`]: a zone and the authoritative lookup in it.
//! - [`server`]: `dns_server`, the authoritative server application.
//! - [`cache`]: the TTL cache with negative caching (RFC 2308).
//! - [`resolver`]: `dns_resolver`, the recursive caching resolver.
//! - [`stub`]: every host's stub resolver, [`resolve`]`(&host, name)`.
//! - [`transport`]: one exchange (UDP, then TCP when truncated) and a
//!   server loop's wait for the next datagram or connection.
//!
//! ```no_run
//! # async fn app(host: elvis_api::Host) -> elvis_api::AppResult {
//! // The machine's resolver configuration (NDL `resolver='10.1.0.2'`,
//! // or a DHCP lease) says which server to ask.
//! let ip = elvis_dns::resolve(&host, "www.example.com").await?;
//! # let _ = ip; Ok(()) }
//! ```
//!
//! # Layer
//! Beside `elvis-apps`: it uses only the application API (`elvis-api`),
//! and the builder (`elvis-build`) maps the NDL names `dns_server` and
//! `dns_resolver` to its applications.
//!
//! # Gaps
//! - No DNSSEC, no zone transfers or dynamic updates, no IPv6 (AAAA).
#![forbid(unsafe_code)]

pub mod cache;
mod emit;
pub mod fuzz_bodies;
pub mod key;
pub mod master;
pub mod message;
pub mod resolver;
pub mod server;
pub mod stub;
pub mod transport;
pub mod zone;

pub use hickory_proto as proto;
pub use stub::{resolve, ResolveError};
pub use zone::Zone;
