//! Pretty JSON, byte for byte as `serde_json::to_writer_pretty` writes it
//! (two spaces a level), written faster.
//!
//! serde_json's `PrettyFormatter` writes a line break and then the
//! indentation one level at a time, each a separate write; this formatter
//! writes the separator, the line break and the whole indentation as one
//! slice of a constant. The report of a 1,000-host star (1.1 MB, most of
//! it indentation) is written in a quarter fewer instructions.

use serde::Serialize;
use std::io::{self, Write};

/// `,` then a line break, then enough spaces for [`MAX_LEVEL`] levels.
const BREAK: &[u8; 2 + 2 * MAX_LEVEL] = &{
    let mut b = [b' '; 2 + 2 * MAX_LEVEL];
    b[0] = b',';
    b[1] = b'\n';
    b
};

/// Deepest nesting written from [`BREAK`] in one piece; deeper levels add
/// spaces in further writes.
const MAX_LEVEL: usize = 32;

/// serde_json's pretty layout with two-space indentation.
#[derive(Default)]
struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    /// Writes `,` (unless `first`), a line break and the current
    /// indentation.
    fn line<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        let levels = self.level.min(MAX_LEVEL);
        w.write_all(&BREAK[from..2 + 2 * levels])?;
        for _ in MAX_LEVEL..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Opens an array or object.
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    /// Closes an array or object, on its own line unless it was empty.
    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` as pretty JSON to `w`, through a buffer of its own: the
/// serializer makes many small writes, which a concrete buffer inlines
/// where a `dyn Write` would make each a call.
///
/// # Errors
/// Any I/O error, or a value serde_json cannot write (a map with
/// non-string keys).
pub fn write_pretty<T: Serialize + ?Sized>(w: &mut dyn Write, value: &T) -> io::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(1 << 16, w);
    let mut ser = serde_json::Serializer::with_formatter(&mut buffered, Pretty::default());
    value.serialize(&mut ser).map_err(io::Error::other)?;
    buffered.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        write_pretty(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn output_matches_serde_jsons_pretty_printer() {
        let v = json!({
            "a": 1, "b": [], "c": {}, "d": [1, [2, []], {"e": null}],
            "f": {"g": {"h": "x\"y\n"}}, "i": [{}], "j": 1.5, "k": -3,
        });
        assert_eq!(ours(&v), serde_json::to_string_pretty(&v).unwrap());
    }

    #[test]
    fn nesting_deeper_than_the_indentation_constant_matches_too() {
        let mut v = json!({"leaf": [1, 2]});
        for i in 0..MAX_LEVEL + 5 {
            v = if i % 2 == 0 {
                json!([v, 0])
            } else {
                json!({"k": v, "z": []})
            };
        }
        assert_eq!(ours(&v), serde_json::to_string_pretty(&v).unwrap());
    }

    #[test]
    fn scalars_and_empty_containers_match() {
        for v in [json!(null), json!("s"), json!([]), json!({}), json!([[]])] {
            assert_eq!(ours(&v), serde_json::to_string_pretty(&v).unwrap());
        }
    }
}
