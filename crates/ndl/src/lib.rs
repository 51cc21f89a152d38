//! The Network Description Language (NDL) of Elvis: text to [`Scenario`].
//!
//! ```
//! let src = "[Networks]\n\t[Network id='1' latency='2ms']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";
//! let sc = elvis_ndl::parse(src, "tiny.ndl").unwrap();
//! assert_eq!(sc.networks[0].latency_ns, 2_000_000);
//! assert_eq!(sc.machines[0].networks[0].name, "1");
//!
//! let err = elvis_ndl::parse("[Netwroks]\n", "bad.ndl").unwrap_err();
//! assert_eq!(err.to_string(), "bad.ndl:1:1: error: unknown section `[Netwroks]` (hint: did you mean `[Networks]`?)");
//! ```
//!
//! The pipeline is `lexer` (text → a stream of blocks with byte spans) →
//! `parser` (blocks → tree by indentation) → `lower` (tree → [`Scenario`],
//! with all checks). It streams: each `[Network]` and `[Machine]` block
//! is lowered as soon as it is complete and then dropped, so memory holds
//! the source, the scenario and one machine's blocks, never the whole
//! tree. The language itself is described in `docs/ndl.md`:
//! the Elvis dialect of Fig. 2 of the Elvis paper parses unchanged, plus
//! network parameters, a `[Simulation]` block and `{i}` / `{name}`
//! placeholders.
//!
//! Errors are [`NdlError`]s: one line `file:line:col: error: message (hint:
//! …)` from `Display`, or a caret under the text from
//! [`NdlError::render_fancy`]. Nothing here panics on any input.
//!
//! # Gaps
//! - `[Template]` blocks expand into the machines that name them (see
//!   `lower/template.rs`); ARP's Elvis options become a default route,
//!   with a located warning (`Scenario::warnings`) that on-link
//!   destinations are still reached directly.
//! - Syntax errors stop at the first; lowering errors are all collected
//!   ([`parse_all`]).
//! - Application and protocol options are kept as text; their meaning is
//!   checked by the builder.
#![forbid(unsafe_code)]

mod error;
mod lexer;
mod lower;
mod parser;
mod text;

pub use elvis_scenario::units::{
    parse_bandwidth, parse_duration_ns, parse_port, parse_probability, parse_size_bytes, parse_u64,
};
pub use error::{ErrorKind, NdlError};
pub use parser::{Block, Param, Span, Spanned, Text, MAX_DEPTH};
pub use text::{decode, shorten_message};

use elvis_scenario::{Loc, Scenario};
use std::path::Path;

/// Parses and lowers an NDL file held in `source`; `file_name` is used in
/// error messages only.
///
/// # Errors
/// The first problem in the file, by position.
pub fn parse(source: &str, file_name: &str) -> Result<Scenario, NdlError> {
    parse_all(source, file_name).map_err(|mut errors| errors.swap_remove(0))
}

/// Like [`parse`], but reports every lowering error, in source order (a
/// syntax error still stops parsing at once).
///
/// # Errors
/// A non-empty list of problems.
pub fn parse_all(source: &str, file_name: &str) -> Result<Scenario, Vec<NdlError>> {
    let name = |mut e: NdlError| {
        e.file = file_name.to_string();
        text::shorten_error(e)
    };
    let map = SourceMap::new(source);
    let mut sc = lower::parse_and_lower(source, &map)
        .map_err(|es| es.into_iter().map(name).collect::<Vec<_>>())?;
    sc.base_dir = Path::new(file_name)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.display().to_string());
    Ok(sc)
}

/// Parses an NDL file into its tree of generic blocks, without lowering
/// (for tools that read their own keywords).
///
/// # Errors
/// Syntax and indentation errors.
pub fn parse_blocks<'a>(source: &'a str, file_name: &str) -> Result<Vec<Block<'a>>, NdlError> {
    parser::parse_blocks(source, &SourceMap::new(source)).map_err(|mut e| {
        e.file = file_name.to_string();
        text::shorten_error(e)
    })
}

/// Reads and parses the NDL file at `path`.
///
/// # Errors
/// [`ErrorKind::Io`] when the file cannot be read, [`ErrorKind::Encoding`]
/// when it is not UTF-8, else as [`parse`].
pub fn parse_file(path: impl AsRef<Path>) -> Result<Scenario, NdlError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| NdlError {
        file: file.clone(),
        loc: Loc::default(),
        kind: ErrorKind::Io,
        message: format!("cannot read the file: {e}"),
        hint: None,
    })?;
    parse(decode(&bytes, &file)?, &file)
}

/// Turns byte spans into [`Loc`]s (1-based line, column in characters).
pub(crate) struct SourceMap<'a> {
    src: &'a str,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    /// The line (0-based) of the last lookup: lowering asks in source
    /// order, so the next answer is usually on it or just after it.
    last: std::cell::Cell<usize>,
    /// True when the source is all ASCII: a column is then a byte count,
    /// and no characters need counting.
    ascii: bool,
}

impl<'a> SourceMap<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        // Counted first (a fast pass), so the list is allocated once.
        let bytes = src.as_bytes();
        let lines = memchr::memchr_iter(b'\n', bytes).count();
        let mut line_starts = Vec::with_capacity(lines + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
        SourceMap {
            src,
            line_starts,
            last: std::cell::Cell::new(0),
            ascii: src.is_ascii(),
        }
    }

    pub(crate) fn loc(&self, span: Span) -> Loc {
        let start = span.start.min(self.src.len());
        let line = self.line_of(start);
        let line_start = self.line_starts[line - 1];
        let col = if self.ascii {
            start - line_start
        } else {
            self.src
                .get(line_start..start)
                .map_or(start - line_start, |s| s.chars().count())
        };
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Loc {
            offset: n(start),
            len: n(span.end.saturating_sub(span.start)),
            line: n(line),
            col: n(col + 1),
        }
    }
}

impl SourceMap<'_> {
    /// Returns the 1-based line holding byte `start`.
    fn line_of(&self, start: usize) -> usize {
        let starts = &self.line_starts;
        let hint = self.last.get();
        // On the hinted line or one of the next two: no search.
        for l in hint..(hint + 3).min(starts.len()) {
            let next = starts.get(l + 1).copied().unwrap_or(usize::MAX);
            if starts[l] <= start && start < next {
                self.last.set(l);
                return l + 1;
            }
        }
        let line = starts.partition_point(|&s| s <= start).max(1);
        self.last.set(line - 1);
        line
    }
}

/// Returns the candidate closest to `word` (case-insensitive edit
/// distance), if it is close enough to be a likely typo.
pub fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let w = word.to_ascii_lowercase();
    let limit = (w.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&w, &c.to_ascii_lowercase()), *c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, with a swap of two neighbours counting as one.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggest_finds_typos_and_ignores_strangers() {
        assert_eq!(
            suggest("Netwroks", &["Networks", "Machines"]),
            Some("Networks")
        );
        assert_eq!(suggest("latncy", &["latency", "loss"]), Some("latency"));
        assert_eq!(suggest("banana", &["Networks", "Machines"]), None);
    }

    #[test]
    fn source_map_counts_columns_in_characters() {
        let m = SourceMap::new("ab\nµx[");
        assert_eq!(
            m.loc(Span { start: 6, end: 7 }),
            Loc {
                offset: 6,
                len: 1,
                line: 2,
                col: 3
            }
        );
        assert_eq!(m.loc(Span { start: 0, end: 0 }).line, 1);
    }

    #[test]
    fn an_ascii_source_gives_the_columns_counted_in_characters() {
        let src = "[A b='c']\n\t[D]\n\n  x\r\n";
        let m = SourceMap::new(src);
        assert!(m.ascii);
        for o in 0..=src.len() {
            let line_start = src[..o].rfind('\n').map_or(0, |i| i + 1);
            let col = src[line_start..o].chars().count() + 1;
            assert_eq!(
                m.loc(Span { start: o, end: o }).col as usize,
                col,
                "offset {o}"
            );
        }
    }

    #[test]
    fn the_line_cursor_answers_like_a_search_in_any_order() {
        let src = "a\n\nbc\nµ\n\n\ndef\n";
        let m = SourceMap::new(src);
        let search = |o: usize| m.line_starts.partition_point(|&s| s <= o).max(1);
        let n = src.len();
        // Forward, backward, and jumping about (stride 5 modulo n + 1).
        let orders: [Vec<usize>; 3] = [
            (0..=n).collect(),
            (0..=n).rev().collect(),
            (0..=n).map(|k| k * 5 % (n + 1)).collect(),
        ];
        for order in orders {
            for o in order {
                assert_eq!(m.line_of(o), search(o), "offset {o}");
            }
        }
    }
}
