//! Web traffic for elvis: HTTP/1.1 (RFC 9110, RFC 9112) between simulated
//! machines over elvis TCP, with real header bytes and bodies of virtual
//! payload where nobody reads them.
//!
//! - [`http`]: heads (parsed with httparse, emitted as bytes),
//!   `Content-Length` and chunked bodies, persistent connections, and the
//!   [`http::Reader`] that reads them from a socket.
//! - [`model`]: workload models: SURGE (the default) and the Elvis
//!   histogram format.
//! - [`site`]: the pages and objects a server serves.
//! - [`server`]: `web_server`, with `max_workers` and the server delay.
//! - [`user`]: `web_user`, a browsing user (pages, images over parallel
//!   persistent connections, think times).
//! - [`load`]: `http_load`, a rate- or concurrency-driven fetcher.
//! - [`video`]: `video_server`'s video (a DASH-like ladder of segments and
//!   a manifest) and `video_client`, an adaptive player (throughput rule
//!   or BOLA) with a playback buffer in virtual time.
//! - [`flood`]: `http_flood`, an HTTP GET flood.
//! - [`stats`]: the metrics they publish (counts, p50/p90/p99).
//!
//! ```no_run
//! # use std::rc::Rc;
//! # async fn app(host: elvis_api::Host) -> elvis_api::AppResult {
//! let origin = elvis_web::client::Origin::new("10.0.0.1".parse().unwrap(), 80, "www");
//! let mut conn = None;
//! let page = elvis_web::client::get(&host, &origin, &mut conn, "/", 65536, false).await?;
//! let (links, images) = elvis_web::http::links(&page.body);
//! # let _ = (links, images); Ok(()) }
//! ```
//!
//! # Layer
//! Beside `elvis-apps`: it uses only the application API (`elvis-api`)
//! and `elvis-dns`'s stub resolver; the builder (`elvis-build`) maps the
//! NDL names `web_server`, `web_user`, `http_load`, `video_server`,
//! `video_client` and `http_flood` to its applications.
//!
//! # Gaps
//! - No pipelining, no HTTPS, no HTTP/2, no caching or cookies.
//! - A server serves each connection in a task of its own
//!   (`Host::spawn`); `http_load`'s fetches in flight are jobs of its one
//!   task, all polled on each of its wake-ups ([`exec::Jobs`]).
#![forbid(unsafe_code)]

pub mod client;
pub mod exec;
pub mod flood;
pub mod fuzz_bodies;
pub mod http;
pub mod load;
pub mod model;
pub mod server;
pub mod site;
pub mod stats;
pub mod user;
pub mod video;
