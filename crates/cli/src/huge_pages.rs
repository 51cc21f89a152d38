//! Transparent huge pages, chosen by the size of the scenario.
//!
//! mimalloc asks the kernel for transparent huge pages (THP) for its
//! arenas, so a 2 MiB page is zeroed and mapped whole at its first touch.
//! A large scenario takes 512 times fewer page faults for it; a small one
//! leaves most of each huge page untouched, and its peak RSS is mostly
//! that waste: the 1,000-host star of `bench/vs-ns3` peaks at 29 MiB with
//! THP and at 10.5 MiB without, the 10,000-host one at 80 MiB and 49 MiB,
//! at the same speed (docs/performance.md).
//!
//! mimalloc reads `MIMALLOC_ALLOW_THP` once, before `main`, and its option
//! API is a C function, which this crate does not call. So `elvis run` and
//! `elvis check` of a file smaller than [`THP_MIN_FILE`] (or of the
//! embedded scenario) execute themselves again with `MIMALLOC_ALLOW_THP=0`,
//! which costs about 2 ms. A `MIMALLOC_ALLOW_THP` already set is left
//! alone, so a user can choose either way, and the second process never
//! executes a third.
//!
//! # Gaps
//! The file's size stands in for the scenario's: a short file that
//! generates many machines (`count=`, `[Topology]`) runs without huge
//! pages too. That costs little: a 100,000-host `[Topology type='star']`
//! of five lines peaks at 212 MiB instead of 234 MiB, in 0.45–0.65 s
//! against 0.31–0.71 s with `MIMALLOC_ALLOW_THP=1` (three runs each on a
//! shared machine).

use std::path::Path;

/// The smallest NDL file run with huge pages: 16 MiB, a star of about
/// 45,000 hosts (`harness.py gen star 100000` writes 37 MB).
pub const THP_MIN_FILE: u64 = 16 << 20;

/// The mimalloc option read from the environment at start.
const VAR: &str = "MIMALLOC_ALLOW_THP";

/// Executes this program again, with the same arguments, without huge
/// pages when the scenario `file` (`None`: the embedded one) is a regular
/// file smaller than [`THP_MIN_FILE`] and `MIMALLOC_ALLOW_THP` is unset.
/// Returns when it does not (also when executing fails: the run then goes
/// on with huge pages).
#[cfg(target_os = "linux")]
pub fn without_for_small(file: Option<&Path>) {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(VAR).is_some() {
        return;
    }
    let small = match file {
        None => true,
        // Not a FIFO or device: its size is not known before it is read.
        Some(p) => std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() < THP_MIN_FILE),
    };
    if !small {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        cmd.arg0(arg0);
    }
    // `exec` returns only when it failed.
    let _ = cmd.args(args).env(VAR, "0").exec();
}

/// Elsewhere mimalloc's huge pages are left as they are.
#[cfg(not(target_os = "linux"))]
pub fn without_for_small(_: Option<&Path>) {}
