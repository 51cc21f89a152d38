//! Parses arbitrary bytes as an IEEE 802.1Qbb PFC frame; on success
//! re-emits and re-parses. The body is shared with `cargo test -p
//! elvis-wire`, which runs it over `fuzz/corpus/pfc/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_wire::fuzz_bodies::pfc(data));
