//! Reads arbitrary bytes as a DHCP message: no panic, agreement with
//! `dhcproto`'s decoder, and a round trip through elvis' writer. The body
//! is shared with `cargo test -p elvis-sim`, which runs it over
//! `fuzz/corpus/dhcp/` and as a property test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_sim::fuzz_bodies::dhcp(data));
