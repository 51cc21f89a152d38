//! Decodes arbitrary bytes into operations on one TCP connection (segments
//! from the peer with any flags, numbers, options and payload; timer
//! firings; application writes, reads, shutdown and abort) and checks its
//! invariants after each. The body is shared with `cargo test -p
//! elvis-sim`, which runs it over `fuzz/corpus/tcp_input/` and as a
//! property test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_sim::fuzz_bodies::tcp_input(data));
