//! The parser: the lexer's flat block list to a tree, by indentation.
//!
//! A block at depth `d` is a child of the nearest preceding block at depth
//! `d - 1`; a top-level block has depth 0. A block indented more than one
//! level deeper than the block before it is an error (there is no parent
//! for it to nest in).

use crate::error::{ErrorKind, NdlError};
use crate::SourceMap;
use std::borrow::Cow;

/// The deepest nesting accepted (keeps recursion over the tree shallow).
pub const MAX_DEPTH: usize = 64;

/// A byte range `start..end` in the source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A value with the span of the text it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

/// Text of the source: borrowed from it, owned only for a value with
/// escapes (a large generated file parses without an allocation per key
/// and value).
pub type Text<'a> = Cow<'a, str>;

/// One `key='value'`: the key as written, the value unescaped; the value's
/// span is the text inside the quotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    pub key: Spanned<Text<'a>>,
    pub value: Spanned<Text<'a>>,
}

/// A generic `[Keyword key='value' …]` block and the blocks nested in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block<'a> {
    /// The keyword as written (matching is case-insensitive).
    pub keyword: Spanned<Text<'a>>,
    /// Options in written order; no key appears twice (case-insensitive).
    pub params: Vec<Param<'a>>,
    pub children: Vec<Block<'a>>,
    /// Indentation level (tabs, or groups of four spaces).
    pub depth: usize,
    /// From the `[` to just past the `]`.
    pub span: Span,
}

impl<'a> Block<'a> {
    /// Returns true when the keyword is `kw` (case-insensitive).
    pub fn is(&self, kw: &str) -> bool {
        self.keyword.node.eq_ignore_ascii_case(kw)
    }

    /// Returns the option named `key` (case-insensitive).
    pub fn param(&self, key: &str) -> Option<&Param<'a>> {
        self.params
            .iter()
            .find(|p| p.key.node.eq_ignore_ascii_case(key))
    }

    /// Returns the span of `[Keyword`, where block-level errors point.
    pub fn head(&self) -> Span {
        Span {
            start: self.span.start,
            end: self.keyword.span.end,
        }
    }
}

/// Parses `src` into its top-level blocks.
///
/// # Errors
/// Everything [`crate::lexer::lex`] reports, and blocks indented too deep.
pub fn parse_blocks<'a>(src: &'a str, map: &SourceMap<'_>) -> Result<Vec<Block<'a>>, NdlError> {
    let mut tree = Tree(Vec::new());
    parse_into(src, map, &mut tree)?;
    Ok(tree.0)
}

/// Receives the tree as it is parsed, one finished block at a time, so a
/// consumer can take the blocks of a large section as they come instead of
/// holding the whole tree.
pub(crate) trait Sink<'a> {
    /// Offers `child`, complete with its own nested blocks, a block nested
    /// directly in the top-level block `root` (which has its options but
    /// not yet all its children). Returns it to keep it in `root`'s
    /// children, or `None` when the sink took it.
    fn child(&mut self, root: &Block<'a>, child: Block<'a>) -> Option<Block<'a>>;

    /// A complete top-level block, in source order.
    fn root(&mut self, root: Block<'a>);
}

/// The sink that keeps the whole tree.
struct Tree<'a>(Vec<Block<'a>>);

impl<'a> Sink<'a> for Tree<'a> {
    fn child(&mut self, _: &Block<'a>, child: Block<'a>) -> Option<Block<'a>> {
        Some(child)
    }

    fn root(&mut self, root: Block<'a>) {
        self.0.push(root);
    }
}

/// Parses `src`, handing each finished block to `sink`.
///
/// # Errors
/// As [`parse_blocks`]; blocks already handed over stay with the sink.
pub(crate) fn parse_into<'a>(
    src: &'a str,
    map: &SourceMap<'_>,
    sink: &mut impl Sink<'a>,
) -> Result<(), NdlError> {
    // The open path from a root down to the last block seen, each with
    // where its children start in `done`; `done` holds the finished
    // children of every open block, so each block's list is made once,
    // at its exact size, when the block closes.
    let mut open: Vec<(Block<'a>, usize)> = Vec::new();
    let mut done: Vec<Block<'a>> = Vec::new();
    crate::lexer::lex(src, map, |b| {
        if b.depth > MAX_DEPTH {
            let msg = format!("blocks are nested more than {MAX_DEPTH} levels deep");
            return Err(NdlError::new(
                ErrorKind::Indentation,
                map.loc(b.head()),
                msg,
            ));
        }
        if b.depth > open.len() {
            return Err(too_deep(&b, open.last().map(|(p, _)| p), map));
        }
        while open.len() > b.depth {
            close(&mut open, &mut done, sink);
        }
        open.push((b, done.len()));
        Ok(())
    })?;
    while !open.is_empty() {
        close(&mut open, &mut done, sink);
    }
    Ok(())
}

fn close<'a>(
    open: &mut Vec<(Block<'a>, usize)>,
    done: &mut Vec<Block<'a>>,
    sink: &mut impl Sink<'a>,
) {
    let Some((mut b, first)) = open.pop() else {
        return;
    };
    b.children = done.split_off(first);
    match open.as_slice() {
        [] => sink.root(b),
        [(root, _)] => {
            if let Some(kept) = sink.child(root, b) {
                done.push(kept);
            }
        }
        _ => done.push(b),
    }
}

fn too_deep(b: &Block<'_>, parent: Option<&Block<'_>>, map: &SourceMap<'_>) -> NdlError {
    let hint =
        "a nested block is indented exactly one level (a tab or four spaces) more than its parent";
    let msg = match parent {
        None => format!(
            "`[{}]` is indented, but there is no block above it to nest in",
            b.keyword.node
        ),
        Some(p) => format!(
            "`[{}]` is indented {} levels, but `[{}]` above it (line {}) is at level {}",
            b.keyword.node,
            b.depth,
            p.keyword.node,
            map.loc(p.span).line,
            p.depth
        ),
    };
    NdlError::new(ErrorKind::Indentation, map.loc(b.head()), msg).hint(hint)
}
