//! The memory check made before a scenario is built: its estimate
//! ([`elvis_build::estimate`]) against the memory available (Linux's
//! `MemAvailable`), or against `--max-memory`.

use elvis_sim::report::MemoryEstimate;

/// Returns the memory available to a new allocation, bytes (`None` where
/// the system does not say).
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Formats `bytes` in binary units: `12.3 MiB`.
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Describes the counts behind an estimate.
pub fn counts(e: &MemoryEstimate) -> String {
    format!(
        "{} machines, {} networks, {} interfaces, {} applications, {} routes",
        e.machines, e.networks, e.interfaces, e.applications, e.routes
    )
}

/// Returns an error message and hint when `e` is above `limit` (the
/// available memory, or `--max-memory` when `overridden`).
pub fn refuse(e: &MemoryEstimate, limit: u64, overridden: bool) -> Option<(String, String)> {
    if e.bytes <= limit {
        return None;
    }
    let message = format!(
        "this scenario needs about {} ({}), more than the {} {}",
        human(e.bytes),
        counts(e),
        human(limit),
        if overridden {
            "allowed by --max-memory"
        } else {
            "of memory available"
        }
    );
    let hint = if overridden {
        "raise --max-memory, or make the counts here smaller"
    } else {
        "make the counts here smaller, or pass --max-memory SIZE (e.g. 64GiB) to try anyway"
    };
    Some((message, hint.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 20), "3.0 MiB");
        assert_eq!(human(43 << 30), "43.0 GiB");
    }

    #[test]
    fn an_estimate_above_the_limit_is_refused_with_the_counts() {
        let e = MemoryEstimate {
            bytes: 40 << 30,
            machines: 100_000_000,
            ..MemoryEstimate::default()
        };
        let (m, h) = refuse(&e, 8 << 30, false).unwrap();
        assert!(
            m.contains("40.0 GiB") && m.contains("100000000 machines"),
            "{m}"
        );
        assert!(m.contains("8.0 GiB of memory available"), "{m}");
        assert!(h.contains("--max-memory"));
        assert!(refuse(&e, 64 << 30, true).is_none());
    }
}
