//! End-to-end tests of the `elvis` command line: the binary is run as a
//! user would run it, and its exit status, stdout, stderr, report JSON and
//! pcap files are checked against what the scenario means.
//!
//! Fixtures live in `crates/cli/tests/fixtures/` (`bad/` holds one file per
//! kind of bad input); the examples in `examples/ndl/` are used unmodified.
#![forbid(unsafe_code)]

/// Builds an argument array from strings and paths:
/// `elvis(args!["run", &path, "--seed", "7"])`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        [$(::std::ffi::OsStr::new(&$arg)),*]
    };
}

mod aodv;
mod bad_input;
mod dcqcn;
mod dctcp;
mod ddos;
mod determinism;
mod dhcp;
mod dns;
mod flowgen;
mod fuzz;
mod interrupt;
mod limits;
mod offload;
mod outputs;
mod pfc;
mod protocol_edges;
mod qdisc;
mod runs;
mod scale;
mod tcp_report;
mod topology;
mod tshark;
mod video;
mod web;
mod wireless;

use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Outcome {
    /// The exit status (`None` when killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Returns the first line of stderr (empty when there is none).
    pub fn first_stderr_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("")
    }

    /// Panics, showing everything the binary said, unless it exited with
    /// `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit status {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Returns a command running the `elvis` binary built for these tests.
pub fn elvis_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_elvis"))
}

/// Runs `elvis` with `args` and waits for it.
pub fn elvis<I, S>(args: I) -> Outcome
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_command(elvis_command().args(args))
}

/// Runs `elvis` with `args` in directory `dir`.
pub fn elvis_in<I, S>(dir: &Path, args: I) -> Outcome
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_command(elvis_command().current_dir(dir).args(args))
}

fn run_command(cmd: &mut Command) -> Outcome {
    let out = cmd.output().expect("the elvis binary runs");
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// How many frames of capture `pcap` match tshark display `filter`
/// (with UDP checksums validated).
pub fn tshark_count(pcap: &Path, filter: &str) -> u64 {
    let out = std::process::Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(pcap)
        .args([
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

/// The directory of the NDL fixtures.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Returns the path of fixture `name` (relative to the fixtures directory).
pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// Returns the path of `examples/ndl/NAME` in the workspace.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/ndl")
        .join(name)
}

#[path = "../support/temp_dir.rs"]
mod scratch;
pub use scratch::TempDir;

/// Returns a fresh temporary directory.
pub fn temp_dir() -> TempDir {
    TempDir::new().expect("a temporary directory")
}

/// Reads and parses a report written with `--report`.
#[track_caller]
pub fn read_report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("report {} was not written: {e}", path.display()));
    serde_json::from_str(&text).expect("the report is JSON")
}

/// Returns `report.packets.KEY` as an integer.
#[track_caller]
pub fn packets(report: &Value, key: &str) -> u64 {
    report["packets"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("packets.{key} missing in {report}"))
}

/// Returns the `applications[]` entry for (`group`, `application`).
#[track_caller]
pub fn application<'a>(report: &'a Value, group: &str, application: &str) -> &'a Value {
    report["applications"]
        .as_array()
        .expect("applications is a list")
        .iter()
        .find(|a| a["group"] == group && a["application"] == application)
        .unwrap_or_else(|| panic!("no application {application} on {group} in {report}"))
}

/// Returns the names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The IPv4 source and destination addresses and UDP destination port of
/// the frames of a pcap file written by `elvis` (little-endian,
/// nanosecond pcap, Ethernet); `None` fields for frames that are not
/// IPv4 or not UDP.
pub struct Frame {
    pub ip_src: Option<[u8; 4]>,
    pub ip_dst: Option<[u8; 4]>,
    pub udp_dst_port: Option<u16>,
}

/// Reads the frames of a pcap file (a minimal reader, so tests that need
/// no dissector do not need tshark).
#[track_caller]
pub fn read_pcap(path: &Path) -> Vec<Frame> {
    let bytes = std::fs::read(path).expect("the pcap exists");
    assert!(
        bytes.len() >= 24,
        "pcap header missing in {}",
        path.display()
    );
    assert_eq!(
        &bytes[..4],
        &[0x4d, 0x3c, 0xb2, 0xa1],
        "little-endian nanosecond pcap magic"
    );
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    // Ethernet, or 802.11 for a wireless network.
    let link = u32_at(&bytes, 20);
    assert!(
        link == 1 || link == 105,
        "link type {link}: neither Ethernet nor 802.11"
    );
    let mut frames = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        assert!(at + 16 <= bytes.len(), "truncated record header");
        let caplen = u32_at(&bytes, at + 8) as usize;
        let data = &bytes[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        let mut f = Frame {
            ip_src: None,
            ip_dst: None,
            udp_dst_port: None,
        };
        if data.len() >= 34 && data[12..14] == [0x08, 0x00] {
            let ip = &data[14..];
            f.ip_src = Some([ip[12], ip[13], ip[14], ip[15]]);
            f.ip_dst = Some([ip[16], ip[17], ip[18], ip[19]]);
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            if ip[9] == 17 && ip.len() >= ihl + 8 {
                f.udp_dst_port = Some(u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]));
            }
        }
        frames.push(f);
    }
    frames
}
