//! Parses arbitrary UTF-8 text as NDL; an error must point inside the text
//! and render with a caret. `cargo test -p elvis-ndl` runs the same checks
//! as proptests (arbitrary strings and mutations of Fig. 2), and runs this
//! body over `fuzz/corpus/ndl/` (the examples and the CLI's bad-input
//! fixtures).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = elvis_ndl::parse(text, "fuzz.ndl") {
        assert!(e.loc.offset as usize <= text.len());
        let _ = e.render_fancy(text);
    }
});
