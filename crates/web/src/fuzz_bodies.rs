//! The body of the cargo-fuzz target `http` (`fuzz/`), shared with
//! `cargo test -p elvis-web`, which runs it over its seed corpus
//! (`fuzz/corpus/http/`) and over random and mutated inputs.
//!
//! `http` reads arbitrary bytes as a request head, a response head, a
//! chunked body, HTML and a video manifest; none may panic. A head that
//! parses is emitted again and must parse to the same head; a chunked
//! body that decodes is encoded again and must decode to the same data;
//! a manifest that reads is written again and must read to the same
//! video.

use crate::http::{self, Framing, Request, Response};

/// Fuzzes the HTTP parsing paths.
pub fn http(data: &[u8]) {
    if let Ok(Some((r, n))) = http::parse_request(data) {
        assert!(n <= data.len());
        if r.method.bytes().all(|b| b.is_ascii_alphabetic()) && !r.path.is_empty() {
            let again = Request {
                framing: Framing::Length(0),
                ..r.clone()
            };
            let bytes = again.emit();
            let (back, m) = http::parse_request(&bytes)
                .expect("what we emit parses")
                .expect("what we emit is complete");
            assert_eq!(m, bytes.len());
            assert_eq!(
                (back.method, back.path, back.close),
                (r.method, r.path, r.close)
            );
        }
    }
    if let Ok(Some((r, n))) = http::parse_response(data, "GET") {
        assert!(n <= data.len());
        if (100..=999).contains(&r.status) {
            let framing = match r.framing {
                Framing::UntilClose => Framing::Length(0),
                f => f,
            };
            let again = Response {
                framing,
                ..r.clone()
            };
            let bytes = again.emit("text/html");
            let (back, _) = http::parse_response(&bytes, "GET")
                .expect("what we emit parses")
                .expect("what we emit is complete");
            assert_eq!(back.status, r.status);
        }
    }
    if let Ok(Some((body, n))) = http::decode_chunked(data) {
        assert!(n <= data.len() && body.len() <= n);
        let coded = http::chunked(&body, 7);
        let (back, m) = http::decode_chunked(&coded)
            .expect("what we encode decodes")
            .expect("what we encode is complete");
        assert_eq!((back, m), (body, coded.len()));
    }
    let _ = http::links(data);
    if let Ok(v) = crate::video::Video::parse_manifest(data) {
        let text = v.manifest();
        assert_eq!(
            crate::video::Video::parse_manifest(text.as_bytes()).as_ref(),
            Ok(&v)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn corpus() -> Vec<Vec<u8>> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/http");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 3, "corpus {} too small", dir.display());
        files.iter().map(|f| std::fs::read(f).unwrap()).collect()
    }

    #[test]
    fn every_http_input_of_the_corpus_each_prefix_and_each_flip_passes_its_fuzz_body() {
        for bytes in corpus() {
            for n in 0..=bytes.len() {
                http(&bytes[..n]);
            }
            for i in 0..bytes.len() {
                for flip in [0x01, 0x20, 0x80] {
                    let mut b = bytes.clone();
                    b[i] ^= flip;
                    http(&b);
                }
            }
        }
    }

    #[test]
    fn random_and_spliced_inputs_pass_the_fuzz_body() {
        let seeds = corpus();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"GETHP/1.0\r\n: chunkedContent-Length0123456789abcdef<a href=\"img src>";
        for _ in 0..20_000 {
            let len = (next() % 200) as usize;
            let mut b: Vec<u8> = match next() % 3 {
                0 => (0..len).map(|_| next() as u8).collect(),
                1 => (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect(),
                _ => {
                    let s = &seeds[(next() % seeds.len() as u64) as usize];
                    let mut b = s.clone();
                    for _ in 0..(next() % 4) {
                        if b.is_empty() {
                            break;
                        }
                        let i = (next() % b.len() as u64) as usize;
                        match next() % 3 {
                            0 => b[i] = next() as u8,
                            1 => {
                                b.remove(i);
                            }
                            _ => b.insert(i, alphabet[(next() % alphabet.len() as u64) as usize]),
                        }
                    }
                    b
                }
            };
            b.truncate(4096);
            http(&b);
        }
    }
}
