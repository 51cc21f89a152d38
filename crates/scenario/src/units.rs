//! Parsers for the values with units: bandwidth, durations, probabilities,
//! ports and sizes. NDL reads its values with them, and so do the
//! applications' options and the command line, so that `--until 10s` or
//! `port='0xbeef'` means the same everywhere.
//!
//! Numbers are read exactly (no floating point for time or rates): a
//! decimal like `2.5Gbps` is accepted when it comes to a whole number of
//! the base unit, and rejected otherwise. Surrounding whitespace is
//! ignored; there may be spaces between the number and the unit.

/// Returns `s.trim()`, checking the usual case first: text that starts
/// and ends with a visible ASCII character has nothing to trim (a large
/// scenario trims several values per machine).
pub fn trim(s: &str) -> &str {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(a), Some(z)) if a.is_ascii_graphic() && z.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

/// Splits `"2.5 Gbps"` into `("2.5", "Gbps")`.
fn split_unit(s: &str) -> (&str, &str) {
    let s = trim(s);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

/// Returns `num × mult` for a decimal `num` ("12", "2.5", ".5"), exactly.
fn scaled(num: &str, mult: u64, base: &str) -> Result<u64, String> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return Err("expected a number".into());
    }
    if !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        return Err(format!("`{num}` is not a number"));
    }
    if frac.len() > 30 {
        return Err("too many decimal places (at most 30)".into());
    }
    let too_large = || {
        // Found only for the message: a substring search costs more than
        // reading the number.
        let unit = base.split(" (").next().unwrap_or(base);
        format!(
            "number is too large: at most {} {unit} (a 64-bit count)",
            u64::MAX
        )
    };
    let digits = |s: &str| -> Result<u128, String> {
        s.bytes().try_fold(0u128, |acc, d| {
            acc.checked_mul(10)
                .and_then(|a| a.checked_add(u128::from(d - b'0')))
                .ok_or_else(too_large)
        })
    };

    let pow = 10u128.pow(frac.len() as u32);
    let whole = digits(int)?
        .checked_mul(u128::from(mult))
        .ok_or_else(too_large)?;
    let part = digits(frac)?
        .checked_mul(u128::from(mult))
        .ok_or_else(too_large)?;
    if part % pow != 0 {
        return Err(format!("`{num}` is not a whole number of {base}"));
    }
    let total = whole.checked_add(part / pow).ok_or_else(too_large)?;
    u64::try_from(total).map_err(|_| too_large())
}

/// Parses a bandwidth in bits per second: `100Mbps`, `2.5Gbps`, `64kbps`,
/// `1000000` (bare number: bps), or `inf` / `infinite` / `unlimited`
/// (returned as `None`). Prefixes are SI powers of 1000: `k`/`K`, `M`,
/// `G`, `T`.
///
/// # Errors
/// Unknown units (including byte rates like `MBps`), zero, fractions of a
/// bit per second, and overflow of `u64`.
pub fn parse_bandwidth(s: &str) -> Result<Option<u64>, String> {
    let t = trim(s);
    if ["inf", "infinite", "unlimited"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return Ok(None);
    }
    let (num, unit) = split_unit(t);
    let mult = match unit {
        "" | "bps" => 1,
        "kbps" | "Kbps" => 1_000,
        "Mbps" | "mbps" => 1_000_000,
        "Gbps" | "gbps" => 1_000_000_000,
        "Tbps" | "tbps" => 1_000_000_000_000,
        u if u.ends_with("Bps") || u.ends_with("B/s") => {
            return Err(format!(
            "`{u}` is a byte rate; bandwidth is in bits per second (bps, kbps, Mbps, Gbps, Tbps)"
        ))
        }
        u => {
            return Err(format!(
                "unknown bandwidth unit `{u}` (use bps, kbps, Mbps, Gbps, Tbps or inf)"
            ))
        }
    };
    match scaled(num, mult, "bits per second")? {
        0 => Err("bandwidth must be more than 0 (use `inf` for no limit)".into()),
        v => Ok(Some(v)),
    }
}

/// Parses a duration into nanoseconds: `2ms`, `1.5s`, `250us` (or `µs`),
/// `40ns`. A bare `0` is allowed; any other number needs a unit.
///
/// # Errors
/// Unknown or missing units, fractions of a nanosecond, overflow.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let mult = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if !num.is_empty() && num.bytes().all(|c| c == b'0' || c == b'.') && num != "." => 1,
        "" => return Err("missing time unit (use ns, us, ms or s, e.g. `2ms`)".into()),
        u => return Err(format!("unknown time unit `{u}` (use ns, us, ms or s)")),
    };
    scaled(num, mult, "nanoseconds (the smallest step is 1ns)")
}

/// Parses a probability: `0.01` or `1%`, within 0 to 1 (0% to 100%).
///
/// # Errors
/// Not a plain decimal number, or out of range.
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim_end(), 100.0),
        None => (t, 1.0),
    };
    let plain = !num.is_empty()
        && num != "."
        && num.bytes().all(|c| c.is_ascii_digit() || c == b'.')
        && num.matches('.').count() <= 1;
    let v: f64 = if plain {
        num.parse().map_err(|_| format!("`{t}` is not a number"))?
    } else {
        return Err(format!(
            "`{t}` is not a probability (write e.g. `0.01` or `1%`)"
        ));
    };
    let p = v / scale;
    if p > 1.0 {
        return Err(format!("`{t}` is more than 1 (100%)"));
    }
    Ok(p)
}

/// Parses a port number: decimal (`8080`) or hexadecimal with `0x`
/// (`0xbeef`).
///
/// # Errors
/// Not a number, or above 65535.
pub fn parse_port(s: &str) -> Result<u16, String> {
    let v = parse_u64(s)?;
    u16::try_from(v).map_err(|_| {
        format!(
            "port `{}` is above 65535: ports are 0 to 65535 (16 bits in the UDP and TCP headers)",
            s.trim()
        )
    })
}

/// Parses an unsigned integer: decimal, or hexadecimal with `0x`.
///
/// # Errors
/// Empty, not a number, or above `u64::MAX`.
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let t = trim(s);
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("`{t}` is not a whole number"));
    }
    u64::from_str_radix(digits, radix).map_err(|_| {
        format!(
            "`{t}` is too large: whole numbers are 0 to {} (64 bits)",
            u64::MAX
        )
    })
}

/// Parses a size in bytes: `1500`, `1500B`, `64kB`/`64KB` (×1000),
/// `1MB`, `1GB`, `1TB`, `64KiB` (×1024), `1MiB`, `1GiB`, `1TiB`.
///
/// # Errors
/// Unknown units, fractions of a byte, overflow.
pub fn parse_size_bytes(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let mult: u64 = match unit {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        u => {
            return Err(format!(
                "unknown size unit `{u}` (use B, kB, MB, GB, KiB, MiB or GiB)"
            ))
        }
    };
    scaled(num, mult, "bytes")
}

/// Parses a dotted-quad IPv4 address exactly as `str::parse::<Ipv4Addr>`
/// does (same addresses accepted, same values, same error), faster for the
/// common form: four decimal numbers of 1 to 3 digits, none with a leading
/// zero, each at most 255. Anything else is handed to the standard parser.
/// A scenario of a million hosts parses several addresses per host.
///
/// # Errors
/// The standard parser's, for text that is not an IPv4 address.
pub fn parse_ipv4(s: &str) -> Result<std::net::Ipv4Addr, std::net::AddrParseError> {
    match dotted_quad(s.as_bytes()) {
        Some(ip) => Ok(ip),
        None => s.parse(),
    }
}

/// The canonical dotted quad (a subset of what the standard parser
/// accepts), or `None`.
fn dotted_quad(b: &[u8]) -> Option<std::net::Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut i = 0;
    for (k, octet) in octets.iter_mut().enumerate() {
        if k > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        let mut v = 0u32;
        while let Some(&c) = b.get(i) {
            if !c.is_ascii_digit() || i - start == 3 {
                break;
            }
            v = v * 10 + u32::from(c - b'0');
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') {
            return None;
        }
        *octet = u8::try_from(v).ok()?;
    }
    (i == b.len()).then(|| std::net::Ipv4Addr::from(octets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_accepts_si_units_and_decimals() {
        assert_eq!(parse_bandwidth("100Mbps"), Ok(Some(100_000_000)));
        assert_eq!(parse_bandwidth("2.5Gbps"), Ok(Some(2_500_000_000)));
        assert_eq!(parse_bandwidth("64 kbps"), Ok(Some(64_000)));
        assert_eq!(parse_bandwidth("64Kbps"), Ok(Some(64_000)));
        assert_eq!(parse_bandwidth("1Tbps"), Ok(Some(1_000_000_000_000)));
        assert_eq!(parse_bandwidth("9600"), Ok(Some(9600)));
        assert_eq!(parse_bandwidth("inf"), Ok(None));
        assert_eq!(parse_bandwidth("Infinite"), Ok(None));
    }

    #[test]
    fn bandwidth_rejects_bytes_zero_and_fractions() {
        assert!(parse_bandwidth("10MBps").unwrap_err().contains("byte rate"));
        assert!(parse_bandwidth("0Mbps")
            .unwrap_err()
            .contains("more than 0"));
        assert!(parse_bandwidth("1.5bps")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_bandwidth("fast").is_err());
        assert!(parse_bandwidth("").is_err());
        assert!(parse_bandwidth("99999999999Tbps")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn duration_reads_every_unit_exactly() {
        assert_eq!(parse_duration_ns("2ms"), Ok(2_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("250µs"), Ok(250_000));
        assert_eq!(parse_duration_ns("40ns"), Ok(40));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("0.000000001s"), Ok(1));
    }

    #[test]
    fn duration_rejects_sub_nanoseconds_and_unknown_units() {
        assert!(parse_duration_ns("1.5ns").unwrap_err().contains("1ns"));
        assert!(parse_duration_ns("5 parsecs")
            .unwrap_err()
            .contains("unknown time unit `parsecs`"));
        assert!(parse_duration_ns("5")
            .unwrap_err()
            .contains("missing time unit"));
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_duration_ns("1.2.3s").is_err());
    }

    #[test]
    fn probability_reads_fractions_and_percentages() {
        assert_eq!(parse_probability("0.01"), Ok(0.01));
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        assert_eq!(parse_probability("0"), Ok(0.0));
        assert!(parse_probability("1.5").is_err());
        assert!(parse_probability("-0.1").is_err());
        assert!(parse_probability("nan").is_err());
        assert!(parse_probability("1e-3").is_err());
    }

    #[test]
    fn port_reads_decimal_and_hex() {
        assert_eq!(parse_port("0xbeef"), Ok(0xbeef));
        assert_eq!(parse_port("0XBEEF"), Ok(0xbeef));
        assert_eq!(parse_port("80"), Ok(80));
        assert!(parse_port("65536").unwrap_err().contains("65535"));
        assert!(parse_port("0x").is_err());
        assert!(parse_port("+5").is_err());
    }

    #[test]
    fn size_reads_si_and_binary_units() {
        assert_eq!(parse_size_bytes("1500"), Ok(1500));
        assert_eq!(parse_size_bytes("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_size_bytes("1.5kB"), Ok(1500));
        assert!(parse_size_bytes("0.5B").is_err());
        assert!(parse_size_bytes("3 furlongs").is_err());
    }

    #[test]
    fn ipv4_agrees_with_the_standard_parser_on_every_text_tried() {
        let fixed = [
            "0.0.0.0",
            "255.255.255.255",
            "10.0.15.158",
            "192.168.0.2",
            "256.0.0.1",
            "01.2.3.4",
            "1.2.3.04",
            "1.2.3",
            "1.2.3.4.5",
            "1..2.3",
            "1.2.3.4 ",
            " 1.2.3.4",
            "1234.1.1.1",
            "1.2.3.4.",
            ".1.2.3.4",
            "",
            "0x1.2.3.4",
            "1.2.3.٣",
            "00.0.0.0",
            "1.2.3.255",
            "1.2.3.260",
            "999.999.999.999",
        ];
        for t in fixed {
            assert_eq!(parse_ipv4(t), t.parse(), "{t:?}");
        }
        // Random texts over digits and dots (and a stray letter), from a
        // fixed linear congruential sequence.
        let alphabet = b"0123456789..0125.x";
        let mut x: u64 = 1;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (x >> 59) as usize + 1;
            let text: String = (0..len)
                .map(|k| {
                    let r = x.rotate_left(7 * k as u32) >> 40;
                    char::from(alphabet[r as usize % alphabet.len()])
                })
                .collect();
            assert_eq!(parse_ipv4(&text), text.parse(), "{text:?}");
            // Four numbers up to 299, some with a leading zero.
            let quad: Vec<String> = (0..4)
                .map(|k| {
                    let r = (x >> (8 + 12 * k)) & 0xfff;
                    let n = r % 300;
                    if r.is_multiple_of(7) {
                        format!("0{n}")
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            let text = quad.join(".");
            assert_eq!(parse_ipv4(&text), text.parse(), "{text:?}");
        }
    }

    #[test]
    fn trim_agrees_with_str_trim() {
        for t in [
            "",
            " ",
            "a",
            " a",
            "a ",
            "\u{3000}a",
            "a\u{3000}",
            "\ta b\n",
            "é",
            "aé",
            "x y",
        ] {
            assert_eq!(trim(t), t.trim(), "{t:?}");
        }
    }
}
