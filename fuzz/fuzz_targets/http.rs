//! Runs elvis-web's `http` fuzz body (request and response heads, chunked
//! bodies, HTML links) on arbitrary bytes. The body is shared with
//! `cargo test -p elvis-web`, which runs it over `fuzz/corpus/http/` and
//! over random and mutated inputs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| elvis_web::fuzz_bodies::http(data));
