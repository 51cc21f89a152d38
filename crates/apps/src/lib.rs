//! The applications that ship with elvis, written against the socket API.
//!
//! Each application is a plain sequential `async fn` taking a [`Host`] and a
//! shared configuration. The builder (`elvis-build`, its `apps::registry`)
//! maps NDL names and options to them.
//!
//! | NDL name | what it does | ends when |
//! |---|---|---|
//! | `send_message` | sends `message` to `to`:`port`, `message_count` times | all sent |
//! | `capture` | receives on `port`, optionally checks the content | `message_count` received (or the shared `counter` reaches it) |
//! | `forward` | relays datagrams from `local_port` to `to`:`remote_port` | never (daemon) |
//! | `ping_pong` | bounces a counter between two machines | the counter reaches 0 |
//! | `ping` | ICMP echo with RTT statistics | `count` probes done |
//! | `traceroute` | lists the routers on the path, hop by hop, with RTTs | the destination answers |
//! | `bulk_send` | connects over TCP and writes `bytes` (virtual payload by default) | all written |
//! | `bulk_receive` | accepts one TCP connection and reads `bytes` | all received |
//! | `tcp_echo_server` | echoes every TCP connection | never (daemon) |
//! | `tcp_echo_client` | sends `message` `message_count` times over TCP and checks the echoes | all echoed |
//! | `mgen` | UDP messages in MGEN's periodic, Poisson or burst pattern, each with a sequence number and send time | `count` sent or `duration` over |
//! | `mgen_sink` | receives `mgen` flows: received, lost, one-way latency (mean, p50, p99), RFC 3550 jitter | never (daemon) |
//! | `udp_flood` | UDP datagrams at `rate`, optionally from spoofed sources | `count` sent or `duration` over |
//! | `syn_flood` | TCP SYNs at `rate` that never complete, optionally from spoofed sources | `count` sent or `duration` over |
//! | `dns_server` | answers DNS queries from its zone (crate `elvis-dns`) | never (daemon) |
//! | `dns_resolver` | resolves DNS queries iteratively, with a cache (crate `elvis-dns`) | never (daemon) |
//! | `web_server` | serves HTTP/1.1: sized objects and a site from a workload model (crate `elvis-web`) | never (daemon) |
//! | `web_user` | browses a web server: pages, their images, think times (crate `elvis-web`) | `pages` loaded |
//! | `http_load` | fetches one URL at a rate or with N in flight (crate `elvis-web`) | `fetches` done |
//! | `video_server` | a `web_server` that also serves a DASH-like video: a manifest and segments at a ladder of bitrates (crate `elvis-web`) | never (daemon) |
//! | `video_client` | streams that video with an adaptive bitrate rule (BOLA or throughput) and a playback buffer (crate `elvis-web`) | the video (or `duration`) watched |
//! | `http_flood` | an HTTP GET flood: GETs at `rate` or over `parallel` connections (crate `elvis-web`) | `count` sent or `duration` over |
//! | `dcqcn_send` | a RoCEv2-style UDP flow paced by DCQCN's reaction point (rate cut on CNPs, timer and byte-counter increases) | `bytes` sent |
//! | `dcqcn_receive` | receives DCQCN flows and answers CE-marked packets with CNPs (at most one per flow per 50 µs) | never (daemon) |
//! | `flowgen` | TCP (or DCQCN) flows with Poisson arrivals at a target load, sizes from a flow-size CDF (web search, data mining, a CSV), random, permutation or incast destinations, or a trace; a sink for other hosts' flows | its arrivals are over (`flows`, `duration`); its sink runs on |
//! | `flowgen_sink` | only the sink of `flowgen` | never (daemon) |
//!
//! `dhcp_server` is an NDL application too, but a service of the
//! machine's stack (`elvis_stack::dhcp::server`), not a task here.
//!
//! Every one also takes `start` and `stop` (the builder's `apps::timing`):
//! when it begins (a time, or one drawn per machine) and when it is
//! stopped.
#![forbid(unsafe_code)]

pub mod bulk;
pub mod capture;
pub mod dcqcn;
pub mod flood;
pub mod flowgen;
pub mod forward;
pub mod mgen;
pub mod ping;
pub mod ping_pong;
pub mod send_message;
pub mod tcp_echo;
pub mod traceroute;

use elvis_api::Host;
