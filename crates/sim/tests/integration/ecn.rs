//! ECN (RFC 3168) end to end: a CE-marking middlebox between two of our
//! hosts, the reaction of both TCPs, and `tshark` reading the capture.
//!
//! ```text
//!  a (10.0.0.1) ── left ── marker ── right ── b (10.0.1.1)
//!   sender, ECN on        (foreign)       receiver, ECN accept (default)
//! ```
//!
//! The marker is a foreign machine (not our stack, not the `qdisc`
//! module): it forwards every IPv4 frame to the other side and sets the
//! ECN field of every `MARK_EVERY`-th ECN-capable datagram to CE (`0b11`),
//! fixing the header checksum, as an AQM router would (RFC 3168 §5). What
//! the receiver reacts to is thus exactly a marked IPv4 header on the wire.

use crate::common::*;
use elvis_sim::{EcnMode, ForeignCtx, ForeignStack, Host, Protocols, Report, Simulation, TcpStats};
use std::cell::Cell;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

const MARK_EVERY: u64 = 25;
const BYTES: usize = 600_000;
const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

/// Forwards IPv4 frames between its two interfaces and marks ECT ones.
struct Marker {
    /// The MAC address of the host behind each interface.
    host_mac: Rc<Cell<[[u8; 6]; 2]>>,
    ect_seen: u64,
    marked: Rc<Cell<u64>>,
}

impl ForeignStack for Marker {
    fn receive(&mut self, cx: &mut ForeignCtx<'_>, iface: usize, frame: &[u8]) {
        if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
            return;
        }
        let out = 1 - iface;
        let mut f = frame.to_vec();
        f[0..6].copy_from_slice(&self.host_mac.get()[out]);
        f[6..12].copy_from_slice(&cx.mac(out).unwrap());
        if f[15] & 0b11 != 0 {
            self.ect_seen += 1;
            if self.ect_seen.is_multiple_of(MARK_EVERY) {
                f[15] |= 0b11;
                ipv4_checksum(&mut f[14..34]);
                self.marked.set(self.marked.get() + 1);
            }
        }
        // A full NIC queue drops the frame, as a drop-tail router would.
        let _ = cx.transmit_on(out, &f);
    }
}

/// Recomputes the checksum of a 20-byte IPv4 header (RFC 791 §3.1).
fn ipv4_checksum(h: &mut [u8]) {
    h[10] = 0;
    h[11] = 0;
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// One bulk transfer a → b through the marker; returns the report, the
/// frames marked, the pcap of the right-hand network, and the sender's
/// and receiver's statistics.
fn run(sender_ecn: EcnMode, dir: &TempDir) -> (Report, u64, PathBuf, TcpStats, TcpStats) {
    let mut sim = Simulation::new(11);
    let left = sim.add_network(link("left", Some(20_000_000), 5_000_000));
    let right = sim.add_network(link("right", Some(10_000_000), 5_000_000));
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    let marked = Rc::new(Cell::new(0));
    let host_mac = Rc::new(Cell::new([[0; 6]; 2]));
    let marker = Marker {
        host_mac: host_mac.clone(),
        ect_seen: 0,
        marked: marked.clone(),
    };
    let m = sim.add_foreign_machine("marker", Box::new(marker)).unwrap();
    sim.attach(a, left, A).unwrap();
    sim.attach(m, left, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
    sim.attach(m, right, Ipv4Addr::new(10, 0, 1, 2)).unwrap();
    sim.attach(b, right, B).unwrap();
    sim.add_route(
        a,
        Ipv4Addr::new(10, 0, 1, 0),
        24,
        Ipv4Addr::new(10, 0, 0, 2),
    )
    .unwrap();
    sim.add_route(
        b,
        Ipv4Addr::new(10, 0, 0, 0),
        24,
        Ipv4Addr::new(10, 0, 1, 2),
    )
    .unwrap();
    host_mac.set([
        sim.mac_address(a, 0).unwrap(),
        sim.mac_address(b, 0).unwrap(),
    ]);
    let got = log::<(TcpStats, TcpStats)>();
    let g = got.clone();
    sim.spawn(b, "receiver", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let all = s.read_exact(BYTES).await?;
        assert_eq!(all.len(), BYTES);
        assert!(s.recv(1).await?.is_empty());
        g.borrow_mut().push((TcpStats::default(), s.stats()?));
        Ok(())
    });
    let g = got.clone();
    sim.spawn(a, "sender", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_ecn(sender_ecn);
        let s = sock.connect(sa(B, 80)).await?;
        s.write_all(vec![7u8; BYTES]).await?;
        s.shutdown(elvis_sim::Shutdown::Write)?;
        assert!(s.recv(1).await?.is_empty());
        g.borrow_mut().push((s.stats()?, TcpStats::default()));
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).unwrap();
    let report = sim.run();
    assert_success(&report);
    let got = got.borrow();
    let sender = got.iter().find(|g| g.0.bytes_sent > 0).unwrap().0.clone();
    let receiver = got
        .iter()
        .find(|g| g.1.bytes_received > 0)
        .unwrap()
        .1
        .clone();
    (report, marked.get(), files[1].clone(), sender, receiver)
}

/// Runs tshark on `file` (checksums checked) and counts frames matching
/// `filter`.
fn count(file: &Path, filter: &str) -> usize {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
        ])
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// RFC 3168 end to end: negotiation (the receiver accepts, as Linux's
/// default `tcp_ecn=2` does), ECT(0) on data, the receiver's count of CE
/// marks equal to the marks set on the wire, ECE back, window reductions
/// without a single retransmission, CWR once per reduction.
#[test]
fn ce_marks_slow_the_sender_without_loss_or_retransmission() {
    let dir = TempDir::new("ecn");
    let (report, marked, pcap, tx, rx) = run(EcnMode::On, &dir);
    assert!(marked >= 5, "{marked} marks: the scenario must mark");
    assert_eq!(rx.ce_received, marked, "every CE mark on the wire is seen");
    assert_eq!(tx.retransmitted_segments, 0);
    assert_eq!(tx.timeouts + tx.fast_recoveries, 0);
    assert!(tx.ece_received >= marked, "each mark echoed until CWR");
    assert!(tx.ecn_reductions >= 1 && tx.ecn_reductions <= marked);
    assert_eq!(dropped(&report, "nic_queue_full"), 0);
    if !have_tshark() {
        eprintln!("NOTICE: tshark is not on PATH; skipping the tshark check");
        return;
    }
    let frames = report.networks[1].stats.frames_sent as usize;
    assert_eq!(count(&pcap, "frame"), frames);
    assert_eq!(
        count(&pcap, "_ws.malformed || _ws.expert.severity == error"),
        0
    );
    assert_eq!(
        count(&pcap, "ip.checksum.status == 0 || tcp.checksum.status == 0"),
        0
    );
    // ECN-setup SYN (ECE+CWR) and SYN-ACK (ECE only), RFC 3168 §6.1.1.
    let syn = "tcp.flags.syn == 1 && tcp.flags.ack == 0";
    assert_eq!(
        count(
            &pcap,
            &format!("{syn} && tcp.flags.ece == 1 && tcp.flags.cwr == 1")
        ),
        1
    );
    let syn_ack = "tcp.flags.syn == 1 && tcp.flags.ack == 1";
    assert_eq!(
        count(
            &pcap,
            &format!("{syn_ack} && tcp.flags.ece == 1 && tcp.flags.cwr == 0")
        ),
        1
    );
    // The marks as tshark reads them (ip.dsfield.ecn: 2 = ECT(0), 3 = CE).
    assert_eq!(count(&pcap, "ip.dsfield.ecn == 3"), marked as usize);
    let data = count(&pcap, "ip.src == 10.0.0.1 && tcp.len > 0");
    let ect = count(&pcap, "ip.dsfield.ecn == 2 && tcp.len > 0");
    assert_eq!(
        ect + marked as usize,
        data,
        "all data ECT (no retransmissions)"
    );
    assert_eq!(
        count(&pcap, "tcp.len == 0 && ip.dsfield.ecn != 0"),
        0,
        "pure ACKs not ECT"
    );
    // ECE from the receiver; one CWR per reduction on the sender's data.
    assert_eq!(
        count(
            &pcap,
            "ip.src == 10.0.1.1 && tcp.flags.ece == 1 && tcp.flags.syn == 0"
        ) as u64,
        tx.ece_received
    );
    assert_eq!(
        count(&pcap, "tcp.flags.cwr == 1 && tcp.flags.syn == 0") as u64,
        tx.ecn_reductions
    );
}

/// The same path with the sender at Linux's default (accept, never ask):
/// no ECN, so nothing is ECT, the marker marks nothing, no reaction.
#[test]
fn without_ecn_requested_nothing_is_ect_and_nothing_is_marked() {
    let dir = TempDir::new("ecn-off");
    let (_, marked, _, tx, rx) = run(EcnMode::Accept, &dir);
    assert_eq!(marked, 0);
    assert_eq!(rx.ce_received, 0);
    assert_eq!((tx.ece_received, tx.ecn_reductions), (0, 0));
}
