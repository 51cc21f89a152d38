//! The workspace's crates depend on one another only downwards, as the
//! layers of the architecture allow.
//!
//! `cargo metadata` lists every workspace package and its dependencies;
//! each `elvis-*` normal or build dependency (dev-dependencies are free) is
//! checked against [`LAYERS`]. A workspace crate missing from the table is
//! a failure too, so a new crate has to be placed before it builds green.
//! A table entry for a crate that does not exist (yet) is not an error.
//!
//! The same test binary keeps the source files small: no non-test part of
//! a file under `crates/*/src` may exceed [`MAX_SOURCE_LINES`], and a
//! non-test function over [`MAX_FN_LINES`] lines says why in its doc
//! comment, with a line containing `Long because`.
#![forbid(unsafe_code)]

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The elvis crates a crate may depend on.
enum May {
    /// Exactly these (an empty list: no elvis crate at all).
    Only(&'static [&'static str]),
    /// Any elvis crate: the top of the stack.
    Any,
}

/// Every elvis crate and what it may depend on, from the bottom up.
const LAYERS: &[(&str, May)] = &[
    // Foundation: virtual time, the event queue, seeded random streams.
    ("elvis-kernel", May::Only(&[])),
    // Foundation: zero-copy views and value types of the wire formats.
    ("elvis-wire", May::Only(&[])),
    // Foundation: the packet buffer with header room and a payload rope.
    ("elvis-message", May::Only(&[])),
    // Foundation: TCP congestion control as pure functions of ACKs and time.
    ("elvis-tcpcc", May::Only(&[])),
    // Foundation: a scenario as plain data, and the parsers of its units.
    ("elvis-scenario", May::Only(&[])),
    // Front end: NDL text to a scenario.
    ("elvis-ndl", May::Only(&["elvis-scenario"])),
    // Network layer: networks, queues, disciplines, impairments, frame
    // timing; frames, ports and time, no protocols.
    (
        "elvis-net",
        May::Only(&["elvis-kernel", "elvis-wire", "elvis-message"]),
    ),
    // Protocol stack: Ethernet, ARP, IPv4, ICMP, UDP, TCP, offloads, on
    // the hosts; endpoints and task ids, no sockets or tasks.
    (
        "elvis-stack",
        May::Only(&[
            "elvis-kernel",
            "elvis-wire",
            "elvis-message",
            "elvis-tcpcc",
            "elvis-net",
        ]),
    ),
    // Application API: a Host's sockets, tasks, the running world.
    (
        "elvis-api",
        May::Only(&[
            "elvis-kernel",
            "elvis-wire",
            "elvis-message",
            "elvis-tcpcc",
            "elvis-net",
            "elvis-stack",
        ]),
    ),
    // Facade: builds and runs simulations; routes, topologies, reports
    // and traces.
    (
        "elvis-sim",
        May::Only(&[
            "elvis-kernel",
            "elvis-wire",
            "elvis-message",
            "elvis-tcpcc",
            "elvis-net",
            "elvis-stack",
            "elvis-api",
        ]),
    ),
    // Applications, written against the application API only.
    ("elvis-apps", May::Only(&["elvis-api"])),
    // DNS: messages, zones, the server, resolver and stub applications,
    // written against the application API only.
    ("elvis-dns", May::Only(&["elvis-api"])),
    // Web traffic: HTTP/1.1, workload models, the server, user and load
    // applications; the application API and the DNS stub resolver.
    ("elvis-web", May::Only(&["elvis-api", "elvis-dns"])),
    // Real Linux hosts: TAP devices as machines of a simulation.
    ("elvis-tap", May::Only(&["elvis-sim"])),
    // Builder: a scenario to a runnable simulation; the NDL names of the
    // applications.
    (
        "elvis-build",
        May::Only(&[
            "elvis-scenario",
            "elvis-sim",
            "elvis-apps",
            "elvis-dns",
            "elvis-web",
            "elvis-tap",
            "elvis-kernel",
            "elvis-net",
        ]),
    ),
    // Top: the command line.
    ("elvis-cli", May::Any),
    // Top: whole-process benchmarks.
    ("elvis-bench", May::Any),
];

/// Returns the breaches of [`LAYERS`] in `metadata` (the JSON of
/// `cargo metadata --format-version 1`), one message each, sorted: an
/// edge that is not allowed, or an elvis crate that is not in the table.
fn violations(metadata: &Value) -> Vec<String> {
    let mut found = BTreeSet::new();
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for package in packages {
        let Some(name) = package["name"].as_str().filter(|n| n.starts_with("elvis-")) else {
            continue;
        };
        let Some((_, may)) = LAYERS.iter().find(|(layer, _)| *layer == name) else {
            found.insert(format!(
                "{name} is not in LAYERS: place it in crates/cli/tests/layering.rs"
            ));
            continue;
        };
        let May::Only(allowed) = may else { continue };
        let deps = package["dependencies"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        for dep in deps {
            let kind = dep["kind"].as_str();
            let Some(to) = dep["name"].as_str().filter(|n| n.starts_with("elvis-")) else {
                continue;
            };
            if kind == Some("dev") || allowed.contains(&to) {
                continue;
            }
            let may = if allowed.is_empty() {
                format!("{name} may depend on no elvis crate")
            } else {
                format!("{name} may depend only on: {}", allowed.join(", "))
            };
            found.insert(format!("{name} depends on {to}, but {may}"));
        }
    }
    found.into_iter().collect()
}

/// Returns the workspace's `cargo metadata`, run once for all the tests.
fn metadata() -> &'static Value {
    static METADATA: OnceLock<Value> = OnceLock::new();
    METADATA.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
    })
}

/// Returns the metadata's package called `name`, for planting changes.
fn package<'a>(metadata: &'a mut Value, name: &str) -> &'a mut Value {
    metadata["packages"]
        .as_array_mut()
        .expect("metadata has packages")
        .iter_mut()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("the workspace has {name}"))
}

#[test]
fn the_workspace_follows_the_layers() {
    let found = violations(metadata());
    assert!(
        found.is_empty(),
        "layering violations:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_planted_upward_dependency_is_caught() {
    let mut metadata = metadata().clone();
    let kernel = package(&mut metadata, "elvis-kernel");
    kernel["dependencies"]
        .as_array_mut()
        .expect("a package has a dependencies array")
        .push(json!({
            "name": "elvis-apps",
            "source": null,
            "req": "*",
            "kind": null,
            "rename": null,
            "optional": false,
            "uses_default_features": true,
            "features": [],
            "target": null,
            "registry": null,
            "path": "crates/apps",
        }));
    assert_eq!(
        violations(&metadata),
        ["elvis-kernel depends on elvis-apps, but elvis-kernel may depend on no elvis crate"]
    );
}

#[test]
fn a_planted_dev_dependency_is_allowed() {
    let mut metadata = metadata().clone();
    let kernel = package(&mut metadata, "elvis-kernel");
    kernel["dependencies"]
        .as_array_mut()
        .expect("a package has a dependencies array")
        .push(json!({ "name": "elvis-apps", "kind": "dev", "rename": null }));
    assert_eq!(violations(&metadata), Vec::<String>::new());
}

#[test]
fn an_unplaced_crate_is_caught() {
    let mut metadata = metadata().clone();
    let mut new = package(&mut metadata, "elvis-kernel").clone();
    new["name"] = json!("elvis-new");
    new["id"] = json!("path+file:///elvis/crates/new#elvis-new@0.1.0");
    metadata["packages"]
        .as_array_mut()
        .expect("metadata has packages")
        .push(new);
    assert_eq!(
        violations(&metadata),
        ["elvis-new is not in LAYERS: place it in crates/cli/tests/layering.rs"]
    );
}

/// Most lines the non-test part of a source file may have.
const MAX_SOURCE_LINES: usize = 1200;

/// Pushes every `.rs` file under `dir` (recursively) onto `out`, except
/// test code (files named `tests.rs`, files under a `tests` folder) and
/// the bodies of fuzz targets (`fuzz.rs`, `fuzz_bodies.rs`).
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry reads").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "tests" {
                source_files(&path, out);
            }
        } else if name.ends_with(".rs")
            && !matches!(name, "tests.rs" | "fuzz.rs" | "fuzz_bodies.rs")
        {
            out.push(path);
        }
    }
}

/// Returns the lines of `text` before its test code: the first line that
/// starts with `#[cfg(test)]` at column 0, or the end.
fn non_test_lines(text: &str) -> usize {
    let lines = text.lines().collect::<Vec<_>>();
    (lines.iter())
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len())
}

/// Returns the non-test source files of every crate under `root`'s
/// `crates/` (see [`source_files`]), sorted.
fn workspace_source_files(root: &Path) -> Vec<PathBuf> {
    let crates = std::fs::read_dir(root.join("crates")).expect("the workspace has crates/");
    let mut files = Vec::new();
    for krate in crates {
        let src = krate.expect("a directory entry reads").path().join("src");
        if src.is_dir() {
            source_files(&src, &mut files);
        }
    }
    files.sort();
    files
}

#[test]
fn no_source_file_is_over_1200_lines() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let files = workspace_source_files(root);
    assert!(
        !files.is_empty(),
        "no source files under {}",
        root.display()
    );
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
            let n = non_test_lines(&text);
            let shown = f.strip_prefix(root).unwrap_or(f);
            (n > MAX_SOURCE_LINES).then(|| format!("{}: {n} lines", shown.display()))
        })
        .collect();
    assert!(
        over.is_empty(),
        "source files over {MAX_SOURCE_LINES} lines (not counting tests); split them:\n{}",
        over.join("\n")
    );
}

/// Most lines a non-test function may have before its doc comment has to
/// say why, with a line containing `Long because`.
const MAX_FN_LINES: usize = 80;

/// Returns the rest of `line` after its indentation, visibility and
/// qualifiers if it declares a function (`fn name...`), else `None`.
fn fn_item(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("fn ") {
            return Some(r);
        }
        let word = rest.split(' ').next().unwrap_or("");
        let qualifier = word.starts_with("pub")
            || word.starts_with("extern")
            || word.starts_with('"')
            || matches!(word, "const" | "async" | "unsafe" | "default");
        if !qualifier || word.is_empty() {
            return None;
        }
        rest = rest[word.len()..].trim_start();
    }
}

/// Returns the functions of `lines` (a file's non-test lines) over
/// [`MAX_FN_LINES`] lines whose doc comment has no `Long because` line,
/// as (name, lines). A function runs from its `fn` line to the first `}`
/// line at the same indentation; a declaration without a body (ending in
/// `;`) and a one-line function are skipped.
fn long_fns_without_reason(lines: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(rest) = fn_item(line) else { continue };
        let name = rest.split(['(', '<', ' ']).next().unwrap_or("").to_string();
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut end = None;
        for (i, l) in lines.iter().enumerate().skip(start) {
            let at_indent = l
                .strip_prefix(indent)
                .is_some_and(|r| !r.starts_with([' ', '\t']));
            if !at_indent {
                continue;
            }
            let t = l.trim_end();
            if t.ends_with(';') || (i == start && t.ends_with('}')) {
                break;
            }
            if t.trim_start() == "}" {
                end = Some(i);
                break;
            }
        }
        let Some(end) = end else { continue };
        let n = end - start + 1;
        if n <= MAX_FN_LINES {
            continue;
        }
        let above = lines[..start].iter().rev().map(|l| l.trim_start());
        let mut doc = above
            .filter(|l| !l.starts_with("#["))
            .take_while(|l| l.starts_with("///"));
        if !doc.any(|l| l.contains("Long because")) {
            found.push((name, n));
        }
    }
    found
}

#[test]
fn long_functions_give_a_reason() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut over = Vec::new();
    for f in &workspace_source_files(root) {
        let text = std::fs::read_to_string(f)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
        let lines = text.lines().collect::<Vec<_>>();
        let lines = &lines[..non_test_lines(&text)];
        let shown = f.strip_prefix(root).unwrap_or(f);
        for (name, n) in long_fns_without_reason(lines) {
            over.push(format!("{}: {name}: {n} lines", shown.display()));
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines whose doc comment does not say why \
         (a line containing `Long because`); split them or say why:\n{}",
        over.join("\n")
    );
}

#[test]
fn a_long_function_without_a_reason_is_caught() {
    let body = "        x += 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "impl A {{\n    /// Does it.\n    #[inline]\n    pub(crate) fn f(\n        x: u8,\n    ) {{\n{body}    }}\n\n    fn g(&self);\n    fn h() {{ x }}\n}}\n"
    );
    let lines = text.lines().collect::<Vec<_>>();
    assert_eq!(
        long_fns_without_reason(&lines),
        [("f".to_string(), MAX_FN_LINES + 4)]
    );
    let reasoned = text.replace(
        "/// Does it.",
        "/// Does it.\n    ///\n    /// Long because it is.",
    );
    let lines = reasoned.lines().collect::<Vec<_>>();
    assert_eq!(long_fns_without_reason(&lines), []);
}
