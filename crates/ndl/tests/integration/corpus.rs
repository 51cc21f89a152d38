//! Runs the NDL fuzz target's body over its seed corpus (`fuzz/corpus/ndl`),
//! so that CI exercises what cargo-fuzz would start from.

use std::path::Path;

#[test]
fn every_file_of_the_fuzz_corpus_parses_or_fails_with_a_location_inside_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/ndl");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus folder exists") {
        let path = entry.expect("readable entry").path();
        let text = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        seen += 1;
        if let Err(e) = elvis_ndl::parse(&text, "corpus.ndl") {
            assert!(
                e.loc.offset as usize <= text.len(),
                "{}: {e}",
                path.display()
            );
            assert!(e.loc.line >= 1, "{}: {e}", path.display());
            assert!(!e.render_fancy(&text).is_empty());
        }
    }
    assert!(seen >= 4, "expected the examples in {}", dir.display());
}
