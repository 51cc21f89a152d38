//! The one error type of the crate: a message tied to a place in the source.
//!
//! [`NdlError`]'s `Display` is a single line in the classic compiler form,
//! `file:line:col: error: message (hint: …)`, fit for logs and tests.
//! [`NdlError::render_fancy`] draws the offending line with a caret under it
//! (through miette), for a terminal.

use elvis_scenario::Loc;
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource};
use std::fmt;

/// What went wrong, coarsely; the message says exactly what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Malformed text: unterminated quote or bracket, stray characters.
    Syntax,
    /// A block indented deeper than its parent allows, or by a number of
    /// spaces that is not a multiple of four.
    Indentation,
    /// A block keyword that is not known where it appears.
    UnknownKeyword,
    /// A `key=` that the block does not accept.
    UnknownKey,
    /// A required key (`id`, `name`, …) is missing.
    MissingKey,
    /// Something declared twice: a key, a network id, a machine name, an
    /// address, a `[Simulation]` block.
    Duplicate,
    /// A reference to something never declared (a machine's network id).
    UnknownReference,
    /// A value that does not parse: a number, unit, address or placeholder.
    BadValue,
    /// The pieces parse but do not fit together (a link with three ends).
    Topology,
    /// The file could not be read.
    Io,
    /// The file is not UTF-8 text (located at the first bad byte).
    Encoding,
}

impl ErrorKind {
    /// Returns a stable short code, used as the miette diagnostic code.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "ndl::syntax",
            ErrorKind::Indentation => "ndl::indentation",
            ErrorKind::UnknownKeyword => "ndl::unknown_keyword",
            ErrorKind::UnknownKey => "ndl::unknown_key",
            ErrorKind::MissingKey => "ndl::missing_key",
            ErrorKind::Duplicate => "ndl::duplicate",
            ErrorKind::UnknownReference => "ndl::unknown_reference",
            ErrorKind::BadValue => "ndl::bad_value",
            ErrorKind::Topology => "ndl::topology",
            ErrorKind::Io => "ndl::io",
            ErrorKind::Encoding => "ndl::encoding",
        }
    }
}

/// An error in an NDL file, with the place it points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NdlError {
    /// The file name given to [`crate::parse`].
    pub file: String,
    /// Where the offending text is (`line` 0 when there is no place, e.g.
    /// an unreadable file).
    pub loc: Loc,
    pub kind: ErrorKind,
    /// What is wrong, without the place.
    pub message: String,
    /// How to fix it, if there is an obvious way.
    pub hint: Option<String>,
}

impl NdlError {
    pub(crate) fn new(kind: ErrorKind, loc: Loc, message: impl Into<String>) -> Self {
        NdlError {
            file: String::new(),
            loc,
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// Renders the error with the source line and a caret under the
    /// offending text, without colours (for a terminal or a snapshot).
    ///
    /// `source` must be the text the error came from.
    pub fn render_fancy(&self, source: &str) -> String {
        let fancy = Fancy {
            err: self,
            src: NamedSource::new(&self.file, source.to_string()),
        };
        let mut out = String::new();
        let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
        if handler.render_report(&mut out, &fancy).is_err() {
            return self.to_string();
        }
        out
    }
}

impl fmt::Display for NdlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.is_known() {
            write!(f, "{}:{}:{}: ", self.file, self.loc.line, self.loc.col)?;
        } else {
            write!(f, "{}: ", self.file)?;
        }
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for NdlError {}

impl Diagnostic for NdlError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.hint
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        label(self)
    }
}

fn label(err: &NdlError) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
    if !err.loc.is_known() {
        return None;
    }
    let span = LabeledSpan::new(
        Some("here".into()),
        err.loc.offset as usize,
        err.loc.len as usize,
    );
    Some(Box::new(std::iter::once(span)))
}

/// The error together with its source text, for miette's graphical handler.
struct Fancy<'a> {
    err: &'a NdlError,
    src: NamedSource<String>,
}

impl fmt::Debug for Fancy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.err, f)
    }
}

impl fmt::Display for Fancy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.err.message)
    }
}

impl std::error::Error for Fancy<'_> {}

impl Diagnostic for Fancy<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.err.code()
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.err.help()
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        label(self.err)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }
}
