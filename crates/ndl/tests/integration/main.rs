//! Integration tests of `elvis-ndl`: the Elvis dialect, the extensions,
//! every error with its place, and no panics on any input.

mod corpus;
mod dialect;
mod elvis_files;
mod errors;
mod props;
mod templates;

/// Fig. 2 of the Elvis paper, tab-indented, exactly as in the repository.
pub const FIG2: &str = include_str!("../../../../examples/ndl/fig2.ndl");

/// Parses `src`, panicking with the rendered error on failure.
pub fn ok(src: &str) -> elvis_scenario::Scenario {
    match elvis_ndl::parse(src, "test.ndl") {
        Ok(s) => s,
        Err(e) => panic!("{e}\n{}", e.render_fancy(src)),
    }
}

/// Parses `src`, which must fail, and returns the one-line error.
pub fn fails(src: &str) -> String {
    match elvis_ndl::parse(src, "t.ndl") {
        Ok(s) => panic!("parsed, but should not have: {s:?}"),
        Err(e) => e.to_string(),
    }
}
