//! The shipped example scenarios (`examples/ndl/`), embedded so that
//! `elvis example NAME` works wherever the binary is.

use std::fmt::Write;

/// Every file of `examples/ndl/`, by file name: the scenarios and the
/// files they read (a GML topology).
pub const FILES: &[(&str, &str)] = &[
    (
        "aodv-chain.ndl",
        include_str!("../../../examples/ndl/aodv-chain.ndl"),
    ),
    (
        "backbone-10.gml",
        include_str!("../../../examples/ndl/backbone-10.gml"),
    ),
    (
        "bbr-vs-cubic.ndl",
        include_str!("../../../examples/ndl/bbr-vs-cubic.ndl"),
    ),
    (
        "cubic-vs-compound.ndl",
        include_str!("../../../examples/ndl/cubic-vs-compound.ndl"),
    ),
    ("dcqcn.ndl", include_str!("../../../examples/ndl/dcqcn.ndl")),
    (
        "dctcp-dumbbell.ndl",
        include_str!("../../../examples/ndl/dctcp-dumbbell.ndl"),
    ),
    ("ddos.ndl", include_str!("../../../examples/ndl/ddos.ndl")),
    (
        "default.ndl",
        include_str!("../../../examples/ndl/default.ndl"),
    ),
    (
        "dhcp-dns.ndl",
        include_str!("../../../examples/ndl/dhcp-dns.ndl"),
    ),
    ("dhcp.ndl", include_str!("../../../examples/ndl/dhcp.ndl")),
    ("dns.ndl", include_str!("../../../examples/ndl/dns.ndl")),
    (
        "dumbbell.ndl",
        include_str!("../../../examples/ndl/dumbbell.ndl"),
    ),
    (
        "elvis-basic-1000000.ndl",
        include_str!("../../../examples/ndl/elvis-basic-1000000.ndl"),
    ),
    (
        "example.com.zone",
        include_str!("../../../examples/ndl/example.com.zone"),
    ),
    (
        "fattree-4.ndl",
        include_str!("../../../examples/ndl/fattree-4.ndl"),
    ),
    ("fig2.ndl", include_str!("../../../examples/ndl/fig2.ndl")),
    (
        "flowgen.ndl",
        include_str!("../../../examples/ndl/flowgen.ndl"),
    ),
    (
        "http-flood.ndl",
        include_str!("../../../examples/ndl/http-flood.ndl"),
    ),
    ("lan.ndl", include_str!("../../../examples/ndl/lan.ndl")),
    ("manet.ndl", include_str!("../../../examples/ndl/manet.ndl")),
    (
        "offload-bulk.ndl",
        include_str!("../../../examples/ndl/offload-bulk.ndl"),
    ),
    (
        "pfc-deadlock.ndl",
        include_str!("../../../examples/ndl/pfc-deadlock.ndl"),
    ),
    (
        "pfc-incast.ndl",
        include_str!("../../../examples/ndl/pfc-incast.ndl"),
    ),
    (
        "red-ecn-dumbbell.ndl",
        include_str!("../../../examples/ndl/red-ecn-dumbbell.ndl"),
    ),
    (
        "router-chain-tcp.ndl",
        include_str!("../../../examples/ndl/router-chain-tcp.ndl"),
    ),
    (
        "router-chain.ndl",
        include_str!("../../../examples/ndl/router-chain.ndl"),
    ),
    (
        "topology-zoo.ndl",
        include_str!("../../../examples/ndl/topology-zoo.ndl"),
    ),
    ("video.ndl", include_str!("../../../examples/ndl/video.ndl")),
    (
        "web-study.ndl",
        include_str!("../../../examples/ndl/web-study.ndl"),
    ),
    ("web.ndl", include_str!("../../../examples/ndl/web.ndl")),
    (
        "wireless-chain.ndl",
        include_str!("../../../examples/ndl/wireless-chain.ndl"),
    ),
];

/// Returns the scenario named `name` (with or without `.ndl`).
pub fn find(name: &str) -> Option<(&'static str, &'static str)> {
    let file = if name.ends_with(".ndl") {
        name.to_string()
    } else {
        format!("{name}.ndl")
    };
    FILES.iter().copied().find(|(f, _)| *f == file)
}

/// Returns the files a scenario reads (`file='…'` values naming another
/// shipped file).
pub fn companions(text: &str) -> Vec<(&'static str, &'static str)> {
    FILES
        .iter()
        .copied()
        .filter(|(f, _)| !f.ends_with(".ndl") && text.contains(&format!("'{f}'")))
        .collect()
}

/// What `--list` says of the files that carry no comment: the Elvis
/// paper's own files, kept as published.
const UNCOMMENTED: &[(&str, &str)] = &[
    (
        "elvis-basic-1000000.ndl",
        "The public Elvis' benchmark file: one network, a million senders (as published).",
    ),
    (
        "fig2.ndl",
        "The Elvis paper's Figure 2: a sender, a capture (as published).",
    ),
];

/// The scenario names, each with the first sentence of its leading
/// comment.
pub fn list() -> String {
    let mut s = String::new();
    for (file, text) in FILES.iter().filter(|(f, _)| f.ends_with(".ndl")) {
        let about = match UNCOMMENTED.iter().find(|(f, _)| f == file) {
            Some((_, about)) => about.to_string(),
            None => summary(text),
        };
        let _ = writeln!(s, "{:<22} {about}", file.trim_end_matches(".ndl"));
    }
    s
}

/// Widest summary `--list` shows, in characters.
const SUMMARY_WIDTH: usize = 90;

/// Shortest summary a colon may end, in characters.
const MIN_BEFORE_COLON: usize = 24;

/// The first sentence of the comment block a scenario opens with (up to
/// a colon, a full stop before a capital letter, or the width), or `-`.
fn summary(text: &str) -> String {
    let comment: Vec<&str> = text
        .lines()
        .map_while(|l| l.strip_prefix('#'))
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let joined = comment.join(" ");
    let chars: Vec<char> = joined.chars().collect();
    // (A colon only after a few words: "A dumbbell: four hosts …" says
    // more with what follows.)
    let end = (0..chars.len()).find(|&i| {
        let next = chars.get(i + 2).copied().unwrap_or(' ');
        chars.get(i + 1) == Some(&' ')
            && ((chars[i] == ':' && i >= MIN_BEFORE_COLON)
                || (chars[i] == '.' && next.is_uppercase()))
    });
    let mut s: String = match end {
        Some(i) if chars[i] == '.' => chars[..=i].iter().collect(),
        Some(i) => chars[..i].iter().collect(),
        None => joined.clone(),
    };
    if s.chars().count() > SUMMARY_WIDTH {
        s = s.chars().take(SUMMARY_WIDTH - 1).collect::<String>() + "…";
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of `examples/ndl/` is embedded, and nothing else: a new
    /// example cannot be forgotten here.
    #[test]
    fn every_shipped_example_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ndl");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = FILES.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(embedded, on_disk);
        for (f, text) in FILES {
            assert_eq!(*text, std::fs::read_to_string(dir.join(f)).unwrap(), "{f}");
        }
    }

    #[test]
    fn names_resolve_with_or_without_the_extension_and_list_a_summary() {
        assert_eq!(find("dumbbell").unwrap().0, "dumbbell.ndl");
        assert_eq!(find("dumbbell.ndl").unwrap().0, "dumbbell.ndl");
        assert!(find("backbone-10").is_none(), "a GML file is no scenario");
        assert_eq!(
            summary("# A dumbbell: four hosts on the left. More.\n[Simulation]"),
            "A dumbbell: four hosts on the left."
        );
        assert_eq!(
            summary("# FatTree(4) (Al-Fares et al.) from one line: 16 hosts."),
            "FatTree(4) (Al-Fares et al.) from one line"
        );
        assert_eq!(
            summary("# The chain (paper, Figs. 3 and 4). Then\n# more.\n"),
            "The chain (paper, Figs. 3 and 4)."
        );
        assert_eq!(summary("[Simulation]\n"), "-");
        assert!(summary(&format!("# {}", "x".repeat(200))).ends_with('…'));
        let l = list();
        let scenarios = FILES.iter().filter(|(f, _)| f.ends_with(".ndl")).count();
        assert!(scenarios >= 12);
        assert_eq!(l.lines().count(), scenarios, "{l}");
        assert!(l.contains("topology-zoo"));
        assert!(!l.contains("backbone-10"));
        let (_, zoo) = find("topology-zoo").unwrap();
        assert_eq!(companions(zoo).len(), 1);
        let (_, dns) = find("dns").unwrap();
        let names: Vec<&str> = companions(dns).iter().map(|(f, _)| *f).collect();
        assert_eq!(names, ["example.com.zone"]);
    }
}
