//! Integration tests of `elvis-sim`: whole simulations run through the
//! public API, checked against closed forms (the timing model of
//! `elvis_sim::net`), binomial bounds, protocol constants and an external
//! decoder (`tshark`). One test binary, per `STYLE.md`.
#![forbid(unsafe_code)]

mod aodv;
mod chain;
mod common;
mod custom_protocol;
mod delivery;
mod departure;
mod determinism;
mod dsack;
mod ecn;
mod fast_path;
mod faults;
mod foreign_stack;
mod fragmentation;
mod fuzz_corpus;
mod impairments;
mod interop;
mod offload;
mod qdisc;
mod queues;
mod rack;
mod random_multipath;
mod realtime;
mod robustness;
mod routing;
mod sockets;
mod spawn;
mod tcp;
mod tcp_abuse;
mod tcp_fast_path;
mod tcp_report;
mod tcp_sockets;
mod tcp_theory;
mod timing;
mod topology;
mod tshark;
mod undo;
