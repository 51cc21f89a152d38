//! Runs the `tcp_input` and `dhcp` fuzz targets' bodies over their seed
//! corpora (`fuzz/corpus/tcp_input/`, `fuzz/corpus/dhcp/`) through the
//! same public entry points the targets call, so that CI exercises what
//! cargo-fuzz would start from.

use std::path::PathBuf;

/// Runs `body` over every file of `fuzz/corpus/NAME/` and each prefix
/// of each (cheap, and it walks the short-input paths).
fn run_corpus(name: &str, body: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "corpus {} too small", dir.display());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for n in 0..=bytes.len() {
            body(&bytes[..n]);
        }
    }
}

#[test]
fn every_file_of_the_tcp_input_corpus_and_each_prefix_passes_its_fuzz_body() {
    run_corpus("tcp_input", elvis_sim::fuzz_bodies::tcp_input);
}

#[test]
fn every_file_of_the_dhcp_corpus_and_each_prefix_passes_its_fuzz_body() {
    run_corpus("dhcp", elvis_sim::fuzz_bodies::dhcp);
}
