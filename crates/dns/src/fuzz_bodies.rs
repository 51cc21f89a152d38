//! Bodies of the cargo-fuzz targets `dns_message` and `dns_master`
//! (`fuzz/`), shared with `cargo test -p elvis-dns`, which runs them over
//! their seed corpora (`fuzz/corpus/dns_message/`, `dns_master/`).
//!
//! `dns_message` decodes arbitrary bytes as a DNS message; one that
//! decodes is encoded again (by hickory, and by this crate's encoder where
//! it applies) and must decode to the same message, and the
//! authoritative server must answer it (as a query) without panicking.
//! `dns_master` parses arbitrary text as a master file; records that parse
//! are built into a zone, which must answer a lookup of each of its names.

use crate::master;
use crate::message;
use crate::server;
use crate::zone::Zone;
use hickory_proto::rr::{Name, RecordType};

/// Fuzzes the DNS message decoder (and the server's answer to it).
pub fn dns_message(data: &[u8]) {
    let Ok(m) = message::decode(data) else {
        return;
    };
    let _ = format!("{m:?}");
    if let Ok(bytes) = m.to_vec() {
        let again = message::decode(&bytes).expect("what we encode decodes");
        assert_eq!(again.queries, m.queries);
        assert_eq!(again.answers, m.answers);
        assert_eq!(again.metadata.id, m.metadata.id);
        // Our encoder, where it applies, says the same as hickory's.
        if let Some(ours) = crate::emit::emit(&m) {
            let ours = message::decode(&ours).expect("what we encode decodes");
            assert_eq!(ours, again);
        }
    }
    let cfg = server::Config::new(vec![crate::zone::sample()]);
    let r = server::respond(&cfg, &m);
    let (bytes, _) = message::encode_udp(&r, message::udp_limit(&m));
    assert!(bytes.len() <= 65_535);
}

/// Fuzzes the master-file parser and the zone built from it.
pub fn dns_master(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Name::from_ascii("example.com.").expect("a valid name");
    let Ok(records) = master::parse(text, &origin, "fuzz.zone") else {
        return;
    };
    let names: Vec<Name> = records.iter().map(|r| r.name.clone()).collect();
    let Ok(zone) = Zone::new(origin, records) else {
        return;
    };
    for n in names {
        let _ = zone.lookup(&n, RecordType::A);
        let _ = zone.lookup(&n, RecordType::ANY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn corpus(target: &str) -> Vec<Vec<u8>> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 3, "corpus {} too small", dir.display());
        files.iter().map(|f| std::fs::read(f).unwrap()).collect()
    }

    #[test]
    fn every_dns_message_of_the_corpus_and_each_prefix_passes_its_fuzz_body() {
        for bytes in corpus("dns_message") {
            for n in 0..=bytes.len() {
                dns_message(&bytes[..n]);
            }
            // And with each byte flipped, which reaches the pointers.
            for i in 0..bytes.len() {
                let mut b = bytes.clone();
                b[i] ^= 0xc0;
                dns_message(&b);
            }
        }
    }

    #[test]
    fn every_master_file_of_the_corpus_and_each_prefix_passes_its_fuzz_body() {
        for bytes in corpus("dns_master") {
            for n in 0..=bytes.len() {
                dns_master(&bytes[..n]);
            }
        }
    }
}
