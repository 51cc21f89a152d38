//! The lexer: NDL text to a stream of blocks, each with its depth.
//!
//! A line holds one `[Keyword key='value' …]` block, a comment (`#` or
//! `//` after the indentation) or nothing. A block may run over several
//! lines until its `]`; the indentation of those continuation lines is
//! ignored. The depth of a block is its indentation: one per tab, one per
//! four spaces. Carriage returns are ignored outside quoted values.
//!
//! Invariants: every [`Span`] starts and ends on a `char` boundary of the
//! source; the lexer never panics, whatever the input.

use crate::error::{ErrorKind, NdlError};
use crate::parser::{Block, Param, Span, Spanned, Text};
use crate::SourceMap;
use std::borrow::Cow;

/// Splits `src` into blocks and hands each to `each` in source order,
/// without nesting them. Nothing is kept between blocks: a large file
/// never has all its blocks in one list.
///
/// # Errors
/// Unterminated quotes or blocks, stray text, bad indentation and keys
/// given twice in one block; or the first error `each` returns.
pub fn lex<'a>(
    src: &'a str,
    map: &SourceMap<'_>,
    each: impl FnMut(Block<'a>) -> Result<(), NdlError>,
) -> Result<(), NdlError> {
    Lexer {
        src,
        b: src.as_bytes(),
        pos: 0,
        map,
        params: Vec::new(),
    }
    .run(each)
}

struct Lexer<'a, 'm> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    map: &'m SourceMap<'m>,
    /// The options of the block being read (reused from block to block).
    params: Vec<Param<'a>>,
}

/// The bytes of keywords and keys: ASCII letters and digits, `_`, `-`, `.`.
const IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
        c += 1;
    }
    t
};

fn is_ident(c: u8) -> bool {
    IDENT[usize::from(c)]
}

impl<'a> Lexer<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn err(&self, kind: ErrorKind, span: Span, msg: impl Into<String>) -> NdlError {
        NdlError::new(kind, self.map.loc(span), msg)
    }

    /// Returns the character at `pos` for messages (`end of file` at EOF).
    fn found(&self) -> String {
        match self.src.get(self.pos..).and_then(|s| s.chars().next()) {
            Some('\n') => "end of line".into(),
            Some(c) => format!("`{c}`"),
            None => "end of file".into(),
        }
    }

    /// Returns a span covering the character at `pos` (empty at EOF).
    fn here(&self) -> Span {
        let len = self
            .src
            .get(self.pos..)
            .and_then(|s| s.chars().next())
            .map_or(0, char::len_utf8);
        Span {
            start: self.pos,
            end: self.pos + len,
        }
    }

    fn run(
        mut self,
        mut each: impl FnMut(Block<'a>) -> Result<(), NdlError>,
    ) -> Result<(), NdlError> {
        if self.src.starts_with('\u{feff}') {
            self.pos = '\u{feff}'.len_utf8(); // A byte-order mark.
        }
        while self.pos < self.b.len() {
            let (depth, indent) = self.indentation()?;
            match self.peek() {
                None => break,
                Some(b'\n') => self.pos += 1,
                Some(b'#') => self.skip_line(),
                Some(b'/') if self.b.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                Some(b'[') => {
                    if depth.1 != 0 {
                        let msg = format!(
                            "indentation has {} stray space(s) (not a multiple of four)",
                            depth.1
                        );
                        return Err(self
                            .err(ErrorKind::Indentation, indent, msg)
                            .hint("indent with tabs, or with exactly four spaces per level"));
                    }
                    let b = self.block(depth.0)?;
                    self.end_of_line()?;
                    each(b)?;
                }
                Some(_) => {
                    let msg = format!("expected `[` to start a block, found {}", self.found());
                    return Err(self
                        .err(ErrorKind::Syntax, self.here(), msg)
                        .hint("each line holds one [Keyword key='value'] block, a comment (# or //), or nothing"));
                }
            }
        }
        Ok(())
    }

    /// Reads the indentation at the start of a line: `((depth, stray
    /// spaces), span)`.
    fn indentation(&mut self) -> Result<((usize, usize), Span), NdlError> {
        let start = self.pos;
        let (mut depth, mut spaces) = (0usize, 0usize);
        while let Some(c) = self.peek() {
            match c {
                b'\t' if spaces != 0 => {
                    let span = Span {
                        start,
                        end: self.pos + 1,
                    };
                    return Err(self
                        .err(
                            ErrorKind::Indentation,
                            span,
                            "a tab follows spaces that are not a multiple of four",
                        )
                        .hint("indent with tabs, or with exactly four spaces per level"));
                }
                b'\t' => depth += 1,
                b' ' => {
                    spaces += 1;
                    if spaces == 4 {
                        depth += 1;
                        spaces = 0;
                    }
                }
                b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
        Ok((
            (depth, spaces),
            Span {
                start,
                end: self.pos,
            },
        ))
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == b'\n' {
                break;
            }
        }
    }

    fn skip_blanks(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            if c == b' ' || c == b'\t' || c == b'\r' || (newlines && c == b'\n') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// After a block's `]`: only blanks and a comment may follow.
    fn end_of_line(&mut self) -> Result<(), NdlError> {
        self.skip_blanks(false);
        match self.peek() {
            None => Ok(()),
            Some(b'\n') | Some(b'#') => {
                self.skip_line();
                Ok(())
            }
            Some(b'/') if self.b.get(self.pos + 1) == Some(&b'/') => {
                self.skip_line();
                Ok(())
            }
            Some(_) => {
                let msg = format!("unexpected {} after the end of the block", self.found());
                Err(self
                    .err(ErrorKind::Syntax, self.here(), msg)
                    .hint("put each block on its own line"))
            }
        }
    }

    fn ident(&mut self) -> Spanned<Text<'a>> {
        let start = self.pos;
        let rest = &self.b[start..];
        self.pos += rest
            .iter()
            .position(|&c| !is_ident(c))
            .unwrap_or(rest.len());
        let span = Span {
            start,
            end: self.pos,
        };
        Spanned {
            node: Cow::Borrowed(&self.src[start..self.pos]),
            span,
        }
    }

    /// Reads one block starting at its `[`.
    fn block(&mut self, depth: usize) -> Result<Block<'a>, NdlError> {
        let open = self.pos;
        self.pos += 1;
        self.skip_blanks(false);
        let keyword = self.ident();
        if keyword.node.is_empty() {
            let msg = format!("expected a keyword after `[`, found {}", self.found());
            return Err(self
                .err(ErrorKind::Syntax, self.here(), msg)
                .hint("blocks look like [Keyword key='value']"));
        }
        // Gathered in a buffer the lexer reuses, then copied into a list
        // of exactly their number: growing a fresh list per block would
        // leave room for four options in every block of a large file.
        let mut params = std::mem::take(&mut self.params);
        params.clear();
        loop {
            self.skip_blanks(true);
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                None | Some(b'[') => return Err(self.unclosed(open, &keyword)),
                Some(c) if is_ident(c) => {
                    let p = self.param()?;
                    self.check_duplicate(&params, &p)?;
                    params.push(p);
                }
                Some(_) => {
                    let msg = format!("unexpected {} inside `[{}`", self.found(), keyword.node);
                    return Err(self
                        .err(ErrorKind::Syntax, self.here(), msg)
                        .hint("options look like key='value' and the block ends with `]`"));
                }
            }
        }
        // Not `mem::take`: that would hand the block the buffer, room to
        // spare and all, and leave the lexer none to reuse. `append` moves
        // the options in one copy.
        let mut exact = Vec::with_capacity(params.len());
        exact.append(&mut params);
        self.params = params;
        Ok(Block {
            keyword,
            params: exact,
            children: Vec::new(),
            depth,
            span: Span {
                start: open,
                end: self.pos,
            },
        })
    }

    fn unclosed(&self, open: usize, keyword: &Spanned<Text<'a>>) -> NdlError {
        let span = Span {
            start: open,
            end: keyword.span.end,
        };
        let msg = format!("block `[{}` is never closed", keyword.node);
        self.err(ErrorKind::Syntax, span, msg)
            .hint("add `]` at the end of the block")
    }

    fn check_duplicate(&self, params: &[Param<'a>], p: &Param<'a>) -> Result<(), NdlError> {
        let Some(first) = params
            .iter()
            .find(|q| q.key.node.eq_ignore_ascii_case(&p.key.node))
        else {
            return Ok(());
        };
        let at = self.map.loc(first.key.span);
        let msg = format!("key `{}` is given twice in one block", p.key.node);
        Err(self
            .err(ErrorKind::Duplicate, p.key.span, msg)
            .hint(format!(
                "the first is at line {}, column {}",
                at.line, at.col
            )))
    }

    /// Reads `key = 'value'`.
    fn param(&mut self) -> Result<Param<'a>, NdlError> {
        let key = self.ident();
        self.skip_blanks(false);
        if self.peek() != Some(b'=') {
            let msg = format!("expected `=` after `{}`, found {}", key.node, self.found());
            return Err(self
                .err(ErrorKind::Syntax, self.here(), msg)
                .hint(format!("write {}='value'", key.node)));
        }
        self.pos += 1;
        self.skip_blanks(false);
        let value = match self.peek() {
            Some(q @ (b'\'' | b'"')) => self.quoted(q)?,
            _ => {
                let msg = format!(
                    "expected a quoted value after `{}=`, found {}",
                    key.node,
                    self.found()
                );
                let hint = format!("values are quoted: {}='value'", key.node);
                return Err(self.err(ErrorKind::Syntax, self.here(), msg).hint(hint));
            }
        };
        Ok(Param { key, value })
    }

    /// Reads a value quoted with `q`; `\q`, `\'`, `\"` and `\\` are escapes,
    /// any other backslash is kept as written. The span is the text inside
    /// the quotes.
    fn quoted(&mut self, q: u8) -> Result<Spanned<Text<'a>>, NdlError> {
        let open = self.pos;
        self.pos += 1;
        let start = self.pos;
        // Owned only once an escape is met.
        let mut value: Option<String> = None;
        let mut seg = start;
        loop {
            // Ordinary bytes in one sweep (a generated file is mostly
            // values).
            let rest = &self.b[self.pos..];
            self.pos += rest
                .iter()
                .position(|&c| c == q || c == b'\\' || c == b'\n')
                .unwrap_or(rest.len());
            match self.peek() {
                None | Some(b'\n') => {
                    let end = if self.peek().is_some() && self.b[self.pos - 1] == b'\r' {
                        self.pos - 1
                    } else {
                        self.pos
                    };
                    let span = Span {
                        start: open,
                        end: end.max(open + 1),
                    };
                    return Err(self
                        .err(ErrorKind::Syntax, span, "quoted value is never closed")
                        .hint(format!("end the value with {} on the same line", q as char)));
                }
                Some(c) if c == q => break,
                Some(b'\\') => match self.b.get(self.pos + 1) {
                    Some(&e @ (b'\'' | b'"' | b'\\')) => {
                        let v = value.get_or_insert_with(String::new);
                        v.push_str(&self.src[seg..self.pos]);
                        v.push(e as char);
                        self.pos += 2;
                        seg = self.pos;
                    }
                    _ => self.pos += 1,
                },
                Some(_) => self.pos += 1,
            }
        }
        let rest = &self.src[seg..self.pos];
        let node = match value {
            None => Cow::Borrowed(rest),
            Some(mut v) => {
                v.push_str(rest);
                Cow::Owned(v)
            }
        };
        let span = Span {
            start,
            end: self.pos,
        };
        self.pos += 1;
        Ok(Spanned { node, span })
    }
}
