//! Runs elvis-dns's `dns_message` fuzz body on arbitrary bytes. The body is
//! shared with `cargo test -p elvis-dns`, which runs it over
//! `fuzz/corpus/dns_message/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_dns::fuzz_bodies::dns_message(data));
