//! Robustness: randomly damaged copies of Fig. 2 never make `elvis check`
//! panic; each is either accepted or rejected with a located error.

use crate::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

const FIG2: &str = include_str!("../../../../examples/ndl/fig2.ndl");
/// How many mutants; `ELVIS_CLI_FUZZ_MUTANTS=100000` tries more (only the
/// first 300 also go through the binary).
fn mutants() -> usize {
    std::env::var("ELVIS_CLI_FUZZ_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// SplitMix64: a small seeded generator, so every run tests the same
/// mutants.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Returns a number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Applies one random mutation to `src`.
fn mutate(src: &mut Vec<u8>, rng: &mut Rng) {
    if src.is_empty() {
        src.push(b'[');
        return;
    }
    match rng.below(7) {
        // Flip one bit of one byte.
        0 => {
            let at = rng.below(src.len());
            src[at] ^= 1 << rng.below(8);
        }
        // Replace one byte with an NDL-significant character.
        1 => {
            let at = rng.below(src.len());
            const SIGNIFICANT: &[u8] = b"[]'\"=\t\n \\{}#/0x";
            src[at] = SIGNIFICANT[rng.below(SIGNIFICANT.len())];
        }
        // Delete a few bytes.
        2 => {
            let at = rng.below(src.len());
            let end = (at + 1 + rng.below(8)).min(src.len());
            src.drain(at..end);
        }
        // Duplicate a line, right after itself or elsewhere.
        3 => {
            let text = String::from_utf8_lossy(src).into_owned();
            let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
            let from = rng.below(lines.len());
            let to = rng.below(lines.len() + 1);
            let line = lines[from];
            lines.insert(to, line);
            *src = lines.concat().into_bytes();
        }
        // Replace one character inside a quoted value (reaches the
        // builder: odd ports, names, addresses, counts).
        4 => {
            let text = String::from_utf8_lossy(src).into_owned();
            let values: Vec<usize> = text
                .match_indices("='")
                .map(|(i, _)| i + 2)
                .filter(|&i| i < text.len() && text.as_bytes()[i] != b'\'')
                .collect();
            if values.is_empty() {
                return;
            }
            let at = values[rng.below(values.len())];
            const VALUE: &[u8] = b"0123456789abcxyz.-_{}%!";
            let mut bytes = text.into_bytes();
            bytes[at] = VALUE[rng.below(VALUE.len())];
            *src = bytes;
        }
        // Swap a quote for the other kind, or for its neighbour.
        _ => {
            let quotes: Vec<usize> = (0..src.len())
                .filter(|&i| src[i] == b'\'' || src[i] == b'"')
                .collect();
            if quotes.is_empty() {
                return;
            }
            let at = quotes[rng.below(quotes.len())];
            if rng.below(2) == 0 {
                src[at] = if src[at] == b'\'' { b'"' } else { b'\'' };
            } else if at + 1 < src.len() {
                src.swap(at, at + 1);
            }
        }
    }
}

/// What `check` made of one mutant.
enum Verdict {
    Ok,
    /// Rejected by the parser.
    Unparsed,
    /// Parsed, but rejected by the builder.
    Unbuilt,
}

/// Parses and builds `source` like `elvis check`; panics (with the source)
/// when an error is not located inside the file.
fn check(source: &str) -> Verdict {
    let lines = source.lines().count().max(1) as u32;
    let scenario = match elvis_ndl::parse(source, "fuzz.ndl") {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e.file, "fuzz.ndl");
            assert!(
                e.loc.is_known() && e.loc.line <= lines + 1 && e.loc.col >= 1,
                "parse error without a place in the file: {e}\n--- source\n{source}"
            );
            assert!(e.loc.offset as usize <= source.len(), "{e:?}");
            let place = format!("fuzz.ndl:{}:{}: error: ", e.loc.line, e.loc.col);
            assert!(e.to_string().starts_with(&place), "{e}");
            assert!(!e.message.is_empty());
            return Verdict::Unparsed;
        }
    };
    match elvis_build::build(&scenario, None) {
        Ok(_) => Verdict::Ok,
        Err(e) => {
            assert!(
                e.loc.is_known() && e.loc.line <= lines && e.loc.col >= 1,
                "build error without a place in the file: {e} at {:?}\n--- source\n{source}",
                e.loc
            );
            assert!(!e.message.is_empty());
            Verdict::Unbuilt
        }
    }
}

#[test]
fn three_hundred_damaged_copies_of_fig2_never_panic_and_errors_are_located() {
    let mut rng = Rng(0x5eed_e1f1_5000);
    let mut accepted = 0;
    let mut unparsed = 0;
    let mut unbuilt = 0;
    let mut panics = Vec::new();
    let dir = temp_dir();
    let total = mutants();
    for n in 0..total {
        let mut bytes = FIG2.as_bytes().to_vec();
        for _ in 0..1 + rng.below(2) {
            mutate(&mut bytes, &mut rng);
        }
        let source = String::from_utf8_lossy(&bytes).into_owned();
        match catch_unwind(AssertUnwindSafe(|| check(&source))) {
            Ok(Verdict::Ok) => accepted += 1,
            Ok(Verdict::Unparsed) => unparsed += 1,
            Ok(Verdict::Unbuilt) => unbuilt += 1,
            Err(_) => panics.push(source.clone()),
        }
        // Every tenth mutant also goes through the binary itself.
        if n % 10 == 0 && n < 300 {
            let path = dir.path().join("fuzz.ndl");
            std::fs::write(&path, &bytes).unwrap();
            let out = elvis_in(dir.path(), args!["check", "fuzz.ndl"]);
            match out.code {
                Some(0) => assert!(out.stdout.starts_with("fuzz.ndl: ok ("), "{out:?}"),
                Some(2) => assert!(
                    out.first_stderr_line().starts_with("fuzz.ndl:")
                        || out.first_stderr_line().starts_with("error: cannot read"),
                    "{out:?}\n--- source\n{source}"
                ),
                _ => panic!("elvis check: {out:?}\n--- source\n{source}"),
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} of {total} mutants panicked or gave an unlocated error; the first:\n{}",
        panics.len(),
        panics[0]
    );
    let counts = format!(
        "{total} mutants of fig2.ndl: {accepted} accepted, {unparsed} rejected by the parser, \
         {unbuilt} by the builder"
    );
    eprintln!("{counts}");
    // The mutations are neither all harmless nor all fatal, and some reach
    // the builder.
    assert!(accepted > 0 && unparsed > 0 && unbuilt > 0, "{counts}");
}

/// The examples the run corpus mutates: every `examples/ndl/*.ndl` but the
/// million-machine one (its build alone takes seconds), sorted.
fn corpus_sources() -> Vec<(String, Vec<u8>)> {
    let dir = example("");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("examples/ndl lists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ndl"))
        .filter(|p| !p.to_string_lossy().contains("1000000"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("an example reads"))
        })
        .collect();
    files.sort();
    files
}

/// How many mutants of the examples go through `elvis run`;
/// `ELVIS_CLI_RUN_MUTANTS` changes it.
fn run_mutants() -> usize {
    std::env::var("ELVIS_CLI_RUN_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240)
}

/// Checks what one `elvis run` of a mutant left: its exit status, its
/// messages and its output files.
fn judge_run(out: &Outcome, dir: &std::path::Path, source: &str) {
    let context = || format!("{out:?}\n--- source\n{source}");
    let code = out
        .code
        .unwrap_or_else(|| panic!("killed by a signal: {}", context()));
    assert!((0..=5).contains(&code), "exit status {code}: {}", context());
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "a panic: {}",
        context()
    );
    if code == 2 {
        let first = out.first_stderr_line();
        assert!(
            first.starts_with("m.ndl:") || first.starts_with("error: cannot read"),
            "bad input without a place: {}",
            context()
        );
    }
    // No output half-written: no temporary file left, a report that is
    // whole JSON, captures whose every record is whole.
    for name in file_names(dir) {
        assert!(
            !name.contains("elvis-partial"),
            "{name} left: {}",
            context()
        );
    }
    let report = dir.join("r.json");
    if report.exists() {
        let text = std::fs::read_to_string(&report).unwrap();
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_ok(),
            "{}",
            context()
        );
    }
    let pcaps = dir.join("pcaps");
    if pcaps.is_dir() {
        for name in file_names(&pcaps) {
            let _ = read_pcap(&pcaps.join(&name));
        }
    }
}

#[test]
fn mutants_of_every_example_run_to_a_known_status_with_whole_outputs() {
    let sources = corpus_sources();
    assert!(sources.len() >= 8, "{} examples", sources.len());
    let gml = std::fs::read(example("backbone-10.gml")).expect("the graph example reads");
    let mut rng = Rng(0xe1f1_5c0d_e5ee_d022);
    let mut codes = [0usize; 6];
    let total = run_mutants();
    for n in 0..total {
        let (_, original) = &sources[n % sources.len()];
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut bytes, &mut rng);
        }
        let dir = temp_dir();
        std::fs::write(dir.path().join("backbone-10.gml"), &gml).unwrap();
        std::fs::write(dir.path().join("m.ndl"), &bytes).unwrap();
        let out = elvis_in(
            dir.path(),
            args![
                "run",
                "m.ndl",
                "-q",
                "--until",
                "2s",
                "--wall-limit",
                "1s",
                "--watchdog",
                "5",
                "--max-memory",
                "1GiB",
                "--report",
                "r.json",
                "--pcap",
                "pcaps"
            ],
        );
        judge_run(&out, dir.path(), &String::from_utf8_lossy(&bytes));
        codes[out.code.unwrap() as usize] += 1;
    }
    eprintln!("{total} mutants of the examples run; exit statuses 0..=5: {codes:?}");
    // The corpus reaches runs that succeed and files that are rejected.
    assert!(codes[0] > 0 && codes[2] > 0, "{codes:?}");
}
