//! A machine's NIC offloads: `offload='linux'` (or a comma list of `tso`,
//! `gro`; or `none`) and `rx_usecs='8us'`.
//!
//! The words are those of `ethtool -K` (`tso`, `gro`) and `ethtool -C`
//! (`rx-usecs`); `linux` is what a Linux host with a common 10 Gbit/s NIC
//! runs (TSO, GRO, 8 µs coalescing: the simulator's `Offloads::LINUX`).
//! An explicit `rx_usecs` overrides the coalescing delay `linux` implies.
//! GRO without coalescing is accepted but merges nothing: every frame is
//! handled as it arrives, so no second frame is there to merge with.
//! Routers forward frame by frame and ignore offloads, so `offload` and
//! `rx_usecs` on a `forward='yes'` machine are errors at the key.

use super::Lower;
use crate::error::ErrorKind;
use crate::parser::{Block, Param, Span};
use crate::suggest;
use elvis_scenario::units::parse_duration_ns;
use elvis_scenario::{MachineGroup, OffloadSpec};

/// The words `offload=` takes.
const WORDS: &[&str] = &["tso", "gro", "linux", "none"];

/// Why one word of an `offload=` list is refused: the message, a hint,
/// and the word's byte range within the value.
type WordError = (String, String, std::ops::Range<usize>);

impl Lower<'_> {
    /// Reads `offload=` and `rx_usecs=` of machine block `b` into `g`.
    pub(super) fn offloads(&mut self, b: &Block, g: &mut MachineGroup) {
        let offload = b.param("offload");
        let rx = b.param("rx_usecs");
        let Some(first) = [offload, rx]
            .into_iter()
            .flatten()
            .min_by_key(|p| p.key.span.start)
        else {
            return;
        };
        if g.forward {
            for p in [offload, rx].into_iter().flatten() {
                let msg = format!("{} applies to hosts only", p.key.node.to_ascii_lowercase());
                let hint = "a router (forward='yes') forwards frame by frame and ignores NIC offloads; remove the key";
                self.error(ErrorKind::BadValue, p.key.span, msg, Some(hint.into()));
            }
            return;
        }
        let mut spec = OffloadSpec {
            loc: self.loc(first.key.span),
            ..OffloadSpec::default()
        };
        if let Some(p) = offload {
            match parse_offload(&p.value.node) {
                Ok(words) => {
                    spec = OffloadSpec {
                        loc: spec.loc,
                        ..words
                    }
                }
                Err((msg, hint, at)) => self.word_error(p, msg, hint, at),
            }
        }
        if let Some(p) = rx {
            if let Some(us) = self.value(p, parse_rx_usecs, "rx_usecs='8us'") {
                spec.rx_usecs = us;
            }
        }
        g.offloads = Some(spec);
    }

    /// Reports a bad word of `p`'s value, underlining the word when the
    /// value was written without escapes (so byte offsets match).
    fn word_error(&mut self, p: &Param, msg: String, hint: String, at: std::ops::Range<usize>) {
        let v = &p.value;
        let span = if v.span.end - v.span.start == v.node.len() && !at.is_empty() {
            Span {
                start: v.span.start + at.start,
                end: v.span.start + at.end,
            }
        } else {
            v.span
        };
        let msg = format!("bad offload '{}': {msg}", v.node);
        self.error(ErrorKind::BadValue, span, msg, Some(hint));
    }
}

/// Parses an `offload=` list: `tso`, `gro` (comma separated, each at most
/// once), or `linux` or `none` alone. Returns the offloads with `rx_usecs`
/// 8 for `linux`, else 0.
///
/// # Errors
/// An empty list or word, an unknown word (with the closest known one),
/// a word twice, `linux` or `none` next to other words.
fn parse_offload(s: &str) -> Result<OffloadSpec, WordError> {
    let mut spec = OffloadSpec::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut at = 0;
    let all = 0..s.len();
    for raw in s.split(',') {
        let range = word_range(raw, at);
        at += raw.len() + 1;
        let word = raw.trim().to_ascii_lowercase();
        let w = match WORDS.iter().find(|k| **k == word) {
            Some(w) => *w,
            None if word.is_empty() => {
                let hint = "write e.g. offload='linux' or offload='tso,gro'".to_string();
                return Err(("an offload is missing".into(), hint, all));
            }
            None => {
                let hint = match suggest(&word, WORDS) {
                    Some(k) => format!("did you mean `{k}`?"),
                    None => "use tso, gro, linux (tso,gro and rx_usecs='8us') or none".into(),
                };
                return Err((format!("unknown offload `{}`", raw.trim()), hint, range));
            }
        };
        if seen.contains(&w) {
            let hint = "list each offload once".to_string();
            return Err((format!("`{w}` is listed twice"), hint, range));
        }
        seen.push(w);
        match w {
            "tso" => spec.tso = true,
            "gro" => spec.gro = true,
            "linux" => spec = OffloadSpec::LINUX,
            _ => {}
        }
    }
    if seen.len() > 1 {
        if let Some(alone) = seen.iter().find(|w| matches!(**w, "linux" | "none")) {
            let hint = format!("write offload='{alone}' alone, or list tso and gro");
            return Err((format!("`{alone}` cannot be combined"), hint, all));
        }
    }
    Ok(spec)
}

/// Returns the byte range of the trimmed `raw`, a piece of the value
/// starting at byte `at`.
fn word_range(raw: &str, at: usize) -> std::ops::Range<usize> {
    let start = at + (raw.len() - raw.trim_start().len());
    start..start + raw.trim().len()
}

/// Parses the coalescing delay: a duration in whole microseconds.
fn parse_rx_usecs(s: &str) -> Result<u32, String> {
    let ns = parse_duration_ns(s)?;
    if ns % 1000 != 0 {
        return Err("the delay is in whole microseconds, like ethtool's rx-usecs".into());
    }
    u32::try_from(ns / 1000).map_err(|_| format!("at most {} us", u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_means_tso_gro_and_eight_microseconds() {
        let s = parse_offload("linux").unwrap();
        assert!(s.tso && s.gro);
        assert_eq!(s.rx_usecs, 8);
        assert_eq!(parse_offload(" LINUX ").unwrap(), s);
    }

    #[test]
    fn a_list_sets_each_offload_without_coalescing() {
        let s = parse_offload("tso, gro").unwrap();
        assert!(s.tso && s.gro);
        assert_eq!(s.rx_usecs, 0);
        let s = parse_offload("gro").unwrap();
        assert!(!s.tso && s.gro);
        assert_eq!(parse_offload("none").unwrap(), OffloadSpec::default());
    }

    #[test]
    fn a_bad_word_is_located_within_the_value() {
        let (msg, hint, at) = parse_offload("tso, lro").unwrap_err();
        assert_eq!(msg, "unknown offload `lro`");
        assert_eq!(hint, "did you mean `gro`?");
        assert_eq!(at, 5..8);
        let (msg, _, at) = parse_offload("gro,tso,gro").unwrap_err();
        assert_eq!((msg.as_str(), at), ("`gro` is listed twice", 8..11));
        assert!(parse_offload("linux,tso")
            .unwrap_err()
            .0
            .contains("combined"));
        assert!(parse_offload("tso,").unwrap_err().0.contains("missing"));
        assert!(parse_offload("").is_err());
    }

    #[test]
    fn rx_usecs_takes_whole_microseconds() {
        assert_eq!(parse_rx_usecs("8us"), Ok(8));
        assert_eq!(parse_rx_usecs("0"), Ok(0));
        assert_eq!(parse_rx_usecs("1ms"), Ok(1000));
        assert!(parse_rx_usecs("1500ns")
            .unwrap_err()
            .contains("whole microseconds"));
        assert!(parse_rx_usecs("8").unwrap_err().contains("unit"));
        assert!(parse_rx_usecs("-8us").is_err());
        assert!(parse_rx_usecs("5000s").unwrap_err().contains("at most"));
    }
}
