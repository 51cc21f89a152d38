//! Packet captures: one pcap file per network, nanosecond timestamps.
//!
//! Frames are recorded when they start onto the wire at the sender's NIC
//! (on ideal networks: when sent). A NIC run as a departure-time FIFO
//! (the network code (`crate::transmit`)) knows that instant when the frame is queued, possibly
//! ahead of the present: such a record waits in a per-network buffer,
//! ordered by time, until the clock reaches it, so each file is in time
//! order; records due after the end of the run are dropped, as the
//! frames never started. Virtual payload bytes are written as
//! zeros. Files are written with `pcap-file` in the nanosecond-resolution
//! pcap format, link type Ethernet (802.11 for a wireless network), so
//! Wireshark and `tshark` read them.

use crate::NetId;
use elvis_kernel::Time;
use elvis_message::Message;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
pub use pcap_file::DataLink;
use pcap_file::{Endianness, TsResolution};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Bytes of a frame a record keeps (the files' snapshot length).
const SNAPLEN: usize = 262_144;

/// A record waiting for the clock (see the module documentation).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    time: u64,
    seq: u64,
    len: u32,
    data: Vec<u8>,
}

/// The capture files of a run (empty when capturing is off).
#[derive(Default)]
pub struct PcapSet {
    writers: Vec<Option<PcapWriter<BufWriter<File>>>>,
    /// Per network, the records due later than the present (see the
    /// module documentation).
    pending: Vec<BinaryHeap<Reverse<Pending>>>,
    /// Order of the pending records of one instant: recording order.
    seq: u64,
    scratch: Vec<u8>,
    /// The first write error, reported at the end of the run.
    pub error: Option<String>,
    pub files: Vec<PathBuf>,
}

/// Returns the capture file name of a network: `net-NAME.pcap`, where
/// every byte of the name other than an ASCII letter, digit, `-`, `_` or
/// `.` is written `%XX` (upper-case hex; `%` itself too). Distinct names
/// give distinct files, and [`network_name`] gives the name back.
pub fn file_name(net_name: &str) -> String {
    let mut out = String::with_capacity(net_name.len() + 9);
    out.push_str("net-");
    for b in net_name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push_str(".pcap");
    out
}

/// Returns the network name that [`file_name`] turned into `file`, or
/// `None` for a name it cannot have written.
pub fn network_name(file: &str) -> Option<String> {
    let body = file.strip_prefix("net-")?.strip_suffix(".pcap")?;
    let mut bytes = Vec::with_capacity(body.len());
    let mut rest = body.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

impl PcapSet {
    /// Opens one file per network in `dir` (created if missing), link
    /// type Ethernet.
    pub fn open(dir: &Path, names: &[String]) -> std::io::Result<PcapSet> {
        let links = vec![DataLink::ETHERNET; names.len()];
        PcapSet::open_with_links(dir, names, &links)
    }

    /// Opens one file per network in `dir` (created if missing), network
    /// `i` with link type `links[i]` (Ethernet where not given; 802.11
    /// for a wireless network, `crate::wireless`).
    pub fn open_with_links(
        dir: &Path,
        names: &[String],
        links: &[DataLink],
    ) -> std::io::Result<PcapSet> {
        std::fs::create_dir_all(dir)?;
        let mut set = PcapSet::default();
        for (i, name) in names.iter().enumerate() {
            let path = dir.join(file_name(name));
            let file = BufWriter::new(File::create(&path)?);
            let header = PcapHeader {
                version_major: 2,
                version_minor: 4,
                ts_correction: 0,
                ts_accuracy: 0,
                snaplen: 262_144,
                datalink: links.get(i).copied().unwrap_or(DataLink::ETHERNET),
                ts_resolution: TsResolution::NanoSecond,
                endianness: Endianness::Little,
            };
            let writer = PcapWriter::with_header(file, header).map_err(std::io::Error::other)?;
            set.writers.push(Some(writer));
            set.files.push(path);
        }
        Ok(set)
    }

    /// Returns true when network `net` is being captured.
    pub fn captures(&self, net: NetId) -> bool {
        matches!(self.writers.get(net as usize), Some(Some(_)))
    }

    /// Records `frame` on network `net` at `time`, the present.
    pub fn record(&mut self, net: NetId, time: Time, frame: &Message) {
        if !self.captures(net) {
            return;
        }
        self.flush_due(net, time.as_nanos());
        self.scratch.clear();
        frame.copy_to_vec(&mut self.scratch);
        let data = std::mem::take(&mut self.scratch);
        self.write(net, time.as_nanos(), frame.len() as u32, &data);
        self.scratch = data;
    }

    /// Records `frame` on network `net` at `at`, which may lie ahead of
    /// `now`: it is written once the clock reaches it.
    pub fn record_at(&mut self, net: NetId, at: Time, now: Time, frame: &Message) {
        if !self.captures(net) {
            return;
        }
        let mut data = Vec::with_capacity(frame.len().min(SNAPLEN));
        frame.copy_to_vec(&mut data);
        data.truncate(SNAPLEN);
        if self.pending.len() <= net as usize {
            self.pending.resize_with(net as usize + 1, BinaryHeap::new);
        }
        self.seq += 1;
        self.pending[net as usize].push(Reverse(Pending {
            time: at.as_nanos(),
            seq: self.seq,
            len: frame.len() as u32,
            data,
        }));
        self.flush_due(net, now.as_nanos());
    }

    /// Writes the pending records of `net` due by `now_ns`.
    fn flush_due(&mut self, net: NetId, now_ns: u64) {
        let Some(heap) = self.pending.get_mut(net as usize) else {
            return;
        };
        let mut due = Vec::new();
        while heap.peek().is_some_and(|p| p.0.time <= now_ns) {
            due.extend(heap.pop().map(|p| p.0));
        }
        for p in due {
            self.write(net, p.time, p.len, &p.data);
        }
    }

    fn write(&mut self, net: NetId, time_ns: u64, len: u32, data: &[u8]) {
        let Some(Some(w)) = self.writers.get_mut(net as usize) else {
            return;
        };
        let snap = data.len().min(SNAPLEN);
        let packet = PcapPacket::new(std::time::Duration::from_nanos(time_ns), len, &data[..snap]);
        if let Err(e) = w.write_packet(&packet) {
            self.error.get_or_insert(e.to_string());
        }
    }

    /// Writes the records due by `end` (the end of the run; later ones
    /// never started), then flushes and closes every file (capturing
    /// stops).
    pub fn close(&mut self, end: Time) {
        use std::io::Write;
        for net in 0..self.pending.len() {
            self.flush_due(net as NetId, end.as_nanos());
        }
        self.pending.clear();
        for w in self.writers.iter_mut() {
            if let Some(w) = w.take() {
                if let Err(e) = w.into_writer().flush() {
                    self.error.get_or_insert(e.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_differ_only_in_punctuation_get_different_files() {
        assert_eq!(file_name("1"), "net-1.pcap");
        assert_eq!(file_name("a_b"), "net-a_b.pcap");
        assert_eq!(file_name("a/b"), "net-a%2Fb.pcap");
        assert_ne!(file_name("a/b"), file_name("a_b"));
        assert_ne!(file_name("a%2Fb"), file_name("a/b"));
    }

    #[test]
    fn file_names_give_the_network_name_back() {
        for name in ["1", "a/b", "a_b", "a%2Fb", "..", "x y\tz", "réseau", ""] {
            assert_eq!(
                network_name(&file_name(name)).as_deref(),
                Some(name),
                "{name}"
            );
        }
        assert_eq!(network_name("net-%G1.pcap"), None);
        assert_eq!(network_name("other.pcap"), None);
    }
}
