//! Parses arbitrary bytes as icmpv4; on success re-emits and re-parses.
//! The body is shared with `cargo test -p elvis-wire`, which runs it over
//! `fuzz/corpus/icmpv4/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_wire::fuzz_bodies::icmpv4(data));
