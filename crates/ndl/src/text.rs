//! The text around the language: decoding a file's bytes (with the place
//! of the first byte that is not UTF-8) and keeping messages short when
//! they quote a huge value.

use crate::error::{ErrorKind, NdlError};
use elvis_scenario::Loc;
use std::borrow::Cow;

/// Returns `bytes` as text, or an error at the line and column of the
/// first byte that is not UTF-8.
///
/// # Errors
/// [`ErrorKind::Encoding`], located at the bad byte.
pub fn decode<'a>(bytes: &'a [u8], file_name: &str) -> Result<&'a str, NdlError> {
    let e = match std::str::from_utf8(bytes) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let at = e.valid_up_to();
    // The prefix is valid UTF-8, so lines and columns count characters.
    let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let loc = Loc {
        offset: n(at),
        len: n(e.error_len().unwrap_or(bytes.len() - at).max(1)),
        line: n(before.matches('\n').count() + 1),
        col: n(before[line_start..].chars().count() + 1),
    };
    let mut err = NdlError::new(
        ErrorKind::Encoding,
        loc,
        format!("byte 0x{:02x} at offset {at} is not UTF-8 text", bytes[at]),
    )
    .hint("NDL files are UTF-8; save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)");
    err.file = file_name.to_string();
    Err(err)
}

/// Longest quoted value kept whole in a message, in characters.
pub const MAX_QUOTED: usize = 64;
/// Longest message kept whole, in characters.
pub const MAX_MESSAGE: usize = 1024;

/// Returns `s` cut to its first `keep` characters plus `…` and its whole
/// length, or `s` itself when it has at most `max` characters.
fn cut(s: &str, max: usize, keep: usize) -> Cow<'_, str> {
    if s.chars().nth(max).is_none() {
        return Cow::Borrowed(s);
    }
    match s.char_indices().nth(keep) {
        None => Cow::Borrowed(s),
        Some((at, _)) => Cow::Owned(format!("{}… ({} bytes)", &s[..at], s.len())),
    }
}

/// Shortens a message that quotes long values: every text between a pair
/// of `` ` `` or `'` longer than `MAX_QUOTED` characters keeps its start,
/// then `…` and its full length; a message still longer than
/// `MAX_MESSAGE` is cut the same way.
pub fn shorten_message(message: &str) -> Cow<'_, str> {
    if message.len() <= MAX_QUOTED {
        return Cow::Borrowed(message);
    }
    let mut out = String::new();
    let mut rest = message;
    let mut changed = false;
    while let Some(open) = rest.find(['`', '\'']) {
        let quote = &rest[open..open + 1];
        let inner = &rest[open + 1..];
        let Some(close) = inner.find(quote) else {
            break;
        };
        out.push_str(&rest[..=open]);
        let value = &inner[..close];
        // Prose between two apostrophes (`machine's … don't`) is not a
        // value: go on from the character after this quote.
        if value.chars().any(char::is_whitespace) {
            rest = inner;
            continue;
        }
        let short = cut(value, MAX_QUOTED, MAX_QUOTED - 16);
        changed |= matches!(short, Cow::Owned(_));
        out.push_str(&short);
        out.push_str(quote);
        rest = &inner[close + 1..];
    }
    out.push_str(rest);
    if out.chars().count() > MAX_MESSAGE {
        return Cow::Owned(cut(&out, MAX_MESSAGE, MAX_MESSAGE - 32).into_owned());
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(message)
    }
}

/// Shortens the message and hint of `e` (`shorten_message`).
pub(crate) fn shorten_error(mut e: NdlError) -> NdlError {
    let message = shorten_message(&e.message).into_owned();
    e.message = message;
    let hint = e.hint.as_deref().map(|h| shorten_message(h).into_owned());
    e.hint = hint;
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bad_byte_is_located_by_line_and_character_column() {
        let e = decode(b"[Networks]\n\t[Network id='\xb5' x='\xff']\n", "f.ndl").unwrap_err();
        assert_eq!((e.loc.line, e.loc.col, e.loc.offset), (2, 15, 25));
        assert_eq!(e.kind, ErrorKind::Encoding);
        assert!(
            e.to_string().starts_with("f.ndl:2:15: error: byte 0xb5"),
            "{e}"
        );
        assert!(e.hint.unwrap().contains("UTF-8"));
        // Columns count characters: `µ` is one.
        let mut bytes = "µé".as_bytes().to_vec();
        bytes.push(0xc3);
        let e = decode(&bytes, "g").unwrap_err();
        assert_eq!((e.loc.line, e.loc.col), (1, 3));
        assert_eq!(decode(b"ok", "f").unwrap(), "ok");
    }

    #[test]
    fn long_quoted_values_are_shortened_and_short_ones_kept() {
        let long = "x".repeat(100_000);
        let msg = format!("unknown network '{long}' in `{long}`");
        let short = shorten_message(&msg);
        assert!(short.len() < 200, "{short}");
        assert!(short.starts_with("unknown network 'xxxx"), "{short}");
        assert!(short.contains("… (100000 bytes)'"), "{short}");
        let ok = "unknown network 'lan' (hint: declare it in [Networks] first, then use it)";
        assert_eq!(shorten_message(ok), ok);
        let just = format!("unknown network '{}'", "y".repeat(MAX_QUOTED));
        assert_eq!(shorten_message(&just), just, "at most MAX_QUOTED is kept");
        let prose = format!("the machine's address isn't in '{long}'");
        let short = shorten_message(&prose);
        assert!(
            short.starts_with("the machine's address isn't in 'xxx"),
            "{short}"
        );
        assert!(short.len() < 200, "{short}");
    }

    #[test]
    fn a_long_message_without_quotes_is_cut() {
        let msg = "y ".repeat(5000);
        assert!(shorten_message(&msg).chars().count() <= MAX_MESSAGE);
    }
}
