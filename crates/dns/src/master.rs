//! RFC 1035 §5 master files ("zone files") and the record text that NDL
//! `[Record]` blocks use.
//!
//! The parser knows `$ORIGIN` and `$TTL` (RFC 2308 §4), `@`, owner names
//! inherited from the previous entry (a line starting with blanks),
//! relative names completed with the origin, parentheses that continue an
//! entry over several lines, `;` comments, quoted strings with `\`
//! escapes, TTL and class in either order, TTL units (`1h30m`), and the
//! types A, NS, CNAME, SOA, PTR, MX and TXT. Every error names the file
//! and the line of the offending entry.
//!
//! hickory-proto has a master-file parser too, but its errors carry no line
//! number; the tests parse the same files with it and compare the records
//! (an independent second implementation).
//!
//! # Gaps
//! - `$INCLUDE` is refused (a scenario names each zone file itself).
//! - Classes other than IN, and types other than the seven above.

use hickory_proto::rr::rdata::{CNAME, MX, NS, PTR, SOA, TXT};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use std::fmt;
use std::net::Ipv4Addr;

/// A master-file error: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneError {
    /// The file as the scenario named it.
    pub file: String,
    /// 1-based line of the entry.
    pub line: u32,
    pub message: String,
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for ZoneError {}

/// The record types a zone may hold.
pub const TYPES: &[RecordType] = &[
    RecordType::A,
    RecordType::NS,
    RecordType::CNAME,
    RecordType::SOA,
    RecordType::PTR,
    RecordType::MX,
    RecordType::TXT,
];

/// One word of an entry: its text, whether it was quoted, its line.
#[derive(Clone, Debug)]
struct Word {
    text: String,
    quoted: bool,
    line: u32,
}

/// One entry: whether its line began with blanks (no owner), and its words.
struct Entry {
    line: u32,
    inherit_owner: bool,
    words: Vec<Word>,
}

/// Parses master-file `text` for the zone `origin`; `file` names it in
/// errors.
///
/// # Errors
/// The first malformed entry, with its line.
pub fn parse(text: &str, origin: &Name, file: &str) -> Result<Vec<Record>, ZoneError> {
    let err = |line: u32, message: String| ZoneError {
        file: file.to_string(),
        line,
        message,
    };
    let mut origin = origin.clone();
    let mut default_ttl: Option<u32> = None;
    let mut last_ttl: Option<u32> = None;
    let mut owner: Option<Name> = None;
    let mut out = Vec::new();
    for entry in entries(text).map_err(|(l, m)| err(l, m))? {
        let line = entry.line;
        let w = &entry.words;
        match w[0].text.as_str() {
            "$ORIGIN" if !w[0].quoted => {
                let [_, name] = w.as_slice() else {
                    return Err(err(line, "$ORIGIN takes one name".into()));
                };
                origin = name_of(&name.text, &origin).map_err(|m| err(line, m))?;
                continue;
            }
            "$TTL" if !w[0].quoted => {
                let [_, ttl] = w.as_slice() else {
                    return Err(err(line, "$TTL takes one TTL".into()));
                };
                default_ttl = Some(ttl_of(&ttl.text).map_err(|m| err(line, m))?);
                continue;
            }
            d if d.starts_with('$') && !w[0].quoted => {
                return Err(err(line, format!("directive {d} is not supported")));
            }
            _ => {}
        }
        let mut rest = &w[..];
        if !entry.inherit_owner {
            owner = Some(name_of(&rest[0].text, &origin).map_err(|m| err(line, m))?);
            rest = &rest[1..];
        }
        let Some(name) = owner.clone() else {
            return Err(err(line, "the first entry has no owner name".into()));
        };
        let (ttl, rtype, rdata) = ttl_class_type(rest).map_err(|m| err(line, m))?;
        let ttl = match ttl.or(default_ttl).or(last_ttl) {
            Some(t) => t,
            None => return Err(err(line, "no TTL: give one or write $TTL first".into())),
        };
        last_ttl = Some(ttl);
        let data = rdata_of(rtype, rdata, &origin).map_err(|m| err(line, m))?;
        let mut rec = Record::from_rdata(name, ttl, data);
        rec.dns_class = DNSClass::IN;
        out.push(rec);
    }
    Ok(out)
}

/// Splits `[ttl] [class] type rdata…` (TTL and class in either order).
fn ttl_class_type(words: &[Word]) -> Result<(Option<u32>, RecordType, &[Word]), String> {
    let mut ttl = None;
    let mut class = false;
    for (i, w) in words.iter().enumerate() {
        let t = w.text.to_ascii_uppercase();
        if !w.quoted && ttl.is_none() && t.starts_with(|c: char| c.is_ascii_digit()) {
            ttl = Some(ttl_of(&w.text)?);
        } else if !w.quoted && !class && t == "IN" {
            class = true;
        } else if !w.quoted && !class && matches!(t.as_str(), "CH" | "HS" | "CS") {
            return Err(format!("class {t} is not supported (only IN)"));
        } else {
            return Ok((ttl, type_of(&w.text)?, &words[i + 1..]));
        }
    }
    Err("the entry has no record type".into())
}

/// Parses a record type among [`TYPES`].
///
/// # Errors
/// An unknown or unsupported type.
pub fn type_of(s: &str) -> Result<RecordType, String> {
    let t = s.to_ascii_uppercase();
    TYPES
        .iter()
        .copied()
        .find(|r| r.to_string() == t)
        .ok_or_else(|| {
            format!("record type '{s}' is not supported (A, NS, CNAME, SOA, PTR, MX or TXT)")
        })
}

/// Parses a TTL: seconds, or units `s m h d w` (`1h30m`), at most 2³¹−1
/// seconds (RFC 2181 §8).
///
/// # Errors
/// Not a TTL.
pub fn ttl_of(s: &str) -> Result<u32, String> {
    let bad = || format!("'{s}' is not a TTL (seconds, or units like 1h30m)");
    let mut total: u64 = 0;
    let mut n: Option<u64> = None;
    for c in s.chars() {
        if let Some(d) = c.to_digit(10) {
            n = Some(
                n.unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(u64::from(d)),
            );
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return Err(bad()),
        };
        total = total.saturating_add(n.take().ok_or_else(bad)?.saturating_mul(unit));
    }
    if let Some(n) = n {
        total = total.saturating_add(n);
    }
    if s.is_empty() || total > i32::MAX as u64 {
        return Err(bad());
    }
    Ok(total as u32)
}

/// Parses a domain name: `@` is the origin, a name ending in `.` is
/// absolute, any other is relative to `origin`. Stored lower-case is not
/// required; comparisons are case-insensitive.
///
/// # Errors
/// Not a valid name (empty label, label over 63 bytes, name over 255).
pub fn name_of(s: &str, origin: &Name) -> Result<Name, String> {
    if s == "@" {
        return Ok(origin.clone());
    }
    let n = Name::from_ascii(s).map_err(|e| format!("'{s}' is not a domain name: {e}"))?;
    if n.is_fqdn() {
        return Ok(n);
    }
    n.append_domain(origin)
        .map_err(|e| format!("'{s}' is not a domain name: {e}"))
}

/// Parses the RDATA words of a `rtype` record.
fn rdata_of(rtype: RecordType, w: &[Word], origin: &Name) -> Result<RData, String> {
    let want = |n: usize, what: &str| -> Result<(), String> {
        if w.len() == n {
            Ok(())
        } else {
            Err(format!("{rtype} takes {what}, not {} words", w.len()))
        }
    };
    let name = |i: usize| name_of(&w[i].text, origin);
    let num = |i: usize| -> Result<u32, String> {
        w[i].text
            .parse::<u32>()
            .map_err(|_| format!("'{}' is not a 32-bit number", w[i].text))
    };
    let ttl = |i: usize| ttl_of(&w[i].text);
    Ok(match rtype {
        RecordType::A => {
            want(1, "an IPv4 address")?;
            RData::A(
                w[0].text
                    .parse::<Ipv4Addr>()
                    .map_err(|_| format!("'{}' is not an IPv4 address", w[0].text))?
                    .into(),
            )
        }
        RecordType::NS => {
            want(1, "a name")?;
            RData::NS(NS(name(0)?))
        }
        RecordType::CNAME => {
            want(1, "a name")?;
            RData::CNAME(CNAME(name(0)?))
        }
        RecordType::PTR => {
            want(1, "a name")?;
            RData::PTR(PTR(name(0)?))
        }
        RecordType::MX => {
            want(2, "a preference and a name")?;
            let pref = u16::try_from(num(0)?).map_err(|_| "MX preference is 0 to 65535")?;
            RData::MX(MX::new(pref, name(1)?))
        }
        RecordType::SOA => {
            want(7, "mname rname serial refresh retry expire minimum")?;
            let as_i32 = |v: u32| v as i32;
            RData::SOA(SOA::new(
                name(0)?,
                name(1)?,
                num(2)?,
                as_i32(ttl(3)?),
                as_i32(ttl(4)?),
                as_i32(ttl(5)?),
                ttl(6)?,
            ))
        }
        RecordType::TXT => {
            if w.is_empty() {
                return Err("TXT takes at least one string".into());
            }
            if let Some(long) = w.iter().find(|s| s.text.len() > 255) {
                return Err(format!(
                    "a TXT string is at most 255 bytes; this one is {}",
                    long.text.len()
                ));
            }
            RData::TXT(TXT::new(w.iter().map(|s| s.text.clone()).collect()))
        }
        _ => return Err(format!("record type {rtype} is not supported")),
    })
}

/// Parses one record written as master-file text `owner ttl type rdata`
/// (the form NDL `[Record]` blocks are turned into), relative to `origin`.
///
/// # Errors
/// The message of the malformed part.
pub fn record_of(text: &str, origin: &Name) -> Result<Record, String> {
    parse(text, origin, "")
        .map_err(|e| e.message)
        .and_then(|mut v| match v.len() {
            1 => Ok(v.remove(0)),
            n => Err(format!("expected one record, found {n}")),
        })
}

/// Splits `text` into entries: words with their lines, joined across
/// parentheses, comments removed.
///
/// Long because it is the tokenizer's one state machine (quotes, escapes,
/// parentheses, comments, line starts) kept in one place.
fn entries(text: &str) -> Result<Vec<Entry>, (u32, String)> {
    let mut out: Vec<Entry> = Vec::new();
    let mut cur: Option<Entry> = None;
    let mut depth = 0u32;
    let mut line = 1u32;
    let mut chars = text.chars().peekable();
    let mut at_line_start = true;
    while let Some(c) = chars.next() {
        if at_line_start && depth == 0 {
            if let Some(e) = cur.take() {
                if !e.words.is_empty() {
                    out.push(e);
                }
            }
            cur = Some(Entry {
                line,
                inherit_owner: c == ' ' || c == '\t',
                words: Vec::new(),
            });
        }
        at_line_start = false;
        let entry = cur.as_mut().expect("an entry is open");
        match c {
            '\n' => {
                line += 1;
                at_line_start = true;
            }
            ' ' | '\t' | '\r' => {}
            ';' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or((line, "')' without '('".to_string()))?;
            }
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err((line, "unterminated quoted string".into())),
                        Some('"') => break,
                        Some('\\') => s.push(escaped(&mut chars).ok_or((line, bad_escape()))?),
                        Some('\n') => return Err((line, "newline inside a quoted string".into())),
                        Some(c) => s.push(c),
                    }
                }
                entry.words.push(Word {
                    text: s,
                    quoted: true,
                    line,
                });
            }
            _ => {
                let mut s = String::new();
                let mut c = c;
                loop {
                    if c == '\\' {
                        // Names keep their escapes for Name::from_ascii.
                        s.push('\\');
                        match chars.next() {
                            Some(n) if n != '\n' => s.push(n),
                            _ => return Err((line, bad_escape())),
                        }
                    } else {
                        s.push(c);
                    }
                    match chars.peek() {
                        Some(&n)
                            if !matches!(n, ' ' | '\t' | '\r' | '\n' | ';' | '(' | ')' | '"') =>
                        {
                            c = n;
                            chars.next();
                        }
                        _ => break,
                    }
                }
                entry.words.push(Word {
                    text: s,
                    quoted: false,
                    line,
                });
            }
        }
    }
    if depth > 0 {
        return Err((line, "'(' without ')' before the end of the file".into()));
    }
    if let Some(e) = cur.take() {
        if !e.words.is_empty() {
            out.push(e);
        }
    }
    // A word's line is kept for future messages; entries report theirs.
    debug_assert!(out.iter().all(|e| e.words.iter().all(|w| w.line >= e.line)));
    Ok(out)
}

fn bad_escape() -> String {
    "a '\\' must be followed by a character or three digits".into()
}

/// Reads the rest of a `\X` or `\DDD` escape inside a quoted string.
fn escaped(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    let c = chars.next()?;
    if !c.is_ascii_digit() {
        return (c != '\n').then_some(c);
    }
    let mut v = c.to_digit(10)?;
    for _ in 0..2 {
        v = v * 10 + chars.next()?.to_digit(10)?;
    }
    u8::try_from(v).ok().map(char::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Name {
        Name::from_ascii("example.com.").unwrap()
    }

    /// RFC 1035 §5.3's example zone, with its class in either place.
    pub(crate) const RFC1035_LIKE: &str = "\
$TTL 3600
@   IN  SOA     VENERA      Action\\.domains (
                                 20     ; SERIAL
                                 7200   ; REFRESH
                                 600    ; RETRY
                                 3600000; EXPIRE
                                 60)    ; MINIMUM

        NS      A.ISI.EDU.
        NS      VENERA
        NS      VAXA
        MX      10      VENERA
        MX      20      VAXA

A       A       26.3.0.103

VENERA  A       10.1.0.52
        A       128.9.0.32

VAXA    A       10.2.0.27
        A       128.9.0.33
www 300 IN CNAME venera
txt IN 1h TXT \"hello world\" plain \"a\\\"b\"
";

    #[test]
    fn the_rfc_1035_example_parses_with_inherited_owners() {
        let recs = parse(RFC1035_LIKE, &origin(), "x.zone").unwrap();
        assert_eq!(recs.len(), 13);
        let soa = &recs[0];
        let RData::SOA(s) = &soa.data else { panic!() };
        assert_eq!((s.serial, s.minimum), (20, 60));
        assert_eq!(s.rname.to_ascii(), "Action\\.domains.example.com.");
        assert_eq!(recs[2].name, origin());
        assert_eq!(recs[7].name.to_ascii(), "VENERA.example.com.");
        assert_eq!(recs[8].name.to_ascii(), "VENERA.example.com.");
        assert_eq!(recs[11].ttl, 300);
        let RData::TXT(t) = &recs[12].data else {
            panic!()
        };
        let strings: Vec<&[u8]> = t.txt_data.iter().map(|b| &b[..]).collect();
        assert_eq!(strings, [&b"hello world"[..], b"plain", b"a\"b"]);
        assert_eq!(recs[12].ttl, 3600);
    }

    #[test]
    fn hickory_parses_the_same_records() {
        let ours = parse(RFC1035_LIKE, &origin(), "x.zone").unwrap();
        let (_, theirs) =
            hickory_proto::serialize::txt::Parser::new(RFC1035_LIKE, None, Some(origin()))
                .parse()
                .unwrap();
        let mut theirs: Vec<Record> = theirs
            .values()
            .flat_map(|set| set.records_without_rrsigs().cloned())
            .collect();
        let mut ours = ours;
        let key = |r: &Record| {
            let data = r.data.to_string().to_ascii_lowercase();
            (r.name.to_lowercase(), r.record_type(), data)
        };
        ours.sort_by_key(key);
        theirs.sort_by_key(key);
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(key(a), key(b));
            assert_eq!(a.ttl, b.ttl, "{a}");
        }
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let text = "$TTL 60\n@ SOA ns h 1 2 3 4 5\nwww A 10.0.0.300\n";
        let e = parse(text, &origin(), "example.com.zone").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(
            e.to_string(),
            "example.com.zone:3: '10.0.0.300' is not an IPv4 address"
        );
        let e = parse("@ 60 SOA ns h (1 2 3\n4 5\n", &origin(), "z").unwrap_err();
        assert!(e.message.contains("'(' without ')'"), "{e}");
        let e = parse("a 60 AAAA ::1\n", &origin(), "z").unwrap_err();
        assert!(e.message.contains("not supported"), "{e}");
        let e = parse("a A 10.0.0.1\n", &origin(), "z").unwrap_err();
        assert!(e.message.contains("no TTL"), "{e}");
        let e = parse("$INCLUDE other\n", &origin(), "z").unwrap_err();
        assert!(e.message.contains("$INCLUDE"), "{e}");
        let e = parse("  a 60 A 10.0.0.1\n", &origin(), "z").unwrap_err();
        assert!(e.message.contains("no owner"), "{e}");
    }

    #[test]
    fn ttl_units_follow_rfc_2308() {
        assert_eq!(ttl_of("1h30m").unwrap(), 5400);
        assert_eq!(ttl_of("1w").unwrap(), 604_800);
        assert!(ttl_of("h").is_err());
        assert!(ttl_of("99999999999").is_err());
    }
}
