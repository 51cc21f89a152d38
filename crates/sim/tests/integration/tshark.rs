//! A golden scenario decoded by `tshark`: our frames must be well formed,
//! carry good checksums, reassemble, and show the protocols we claim.

use crate::common::*;
use elvis_sim::{Host, Protocols, Report, Simulation};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);
const BIG: usize = 4000;

/// UDP (ARP-resolved), ICMP echo, a fragmented datagram, broadcast and
/// multicast on one switched LAN.
fn golden(dir: &TempDir) -> (Report, PathBuf) {
    let mut sim = Simulation::new(99);
    let lan = sim.add_network(switch("golden", Some(100_000_000), 10_000));
    let arp = Protocols {
        arp: true,
        udp: true,
        tcp: false,
    };
    let pair = sim.add_group("arp", Some(2), arp).unwrap();
    let big = sim.add_machine("big");
    let sink = sim.add_machine("sink");
    let member = sim.add_machine("member");
    for (i, m) in [pair, pair + 1, big, sink, member].into_iter().enumerate() {
        sim.attach(m, lan, nth_ip(i as u32)).unwrap();
    }
    sim.spawn_daemon(pair + 1, "echo", |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let (msg, from) = sock.recv_from().await?;
            sock.send_to(msg, from).await?;
        }
    });
    sim.spawn(pair, "client", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        sock.send_to(b"hello over arp".to_vec(), sa(nth_ip(1), 7))
            .await?;
        let back = sock.recv().await?;
        assert_eq!(back.to_vec(), b"hello over arp");
        let icmp = host.icmp_socket(0x4242)?;
        icmp.send_echo(nth_ip(1), 1, b"ping payload 0123456789".to_vec())?;
        let reply = icmp.recv_echo().await?;
        assert_eq!(reply.seq, 1);
        assert_eq!(reply.data.to_vec(), b"ping payload 0123456789");
        Ok(())
    });
    for m in [sink, member] {
        sim.spawn_daemon(m, "listen", move |host: Host| async move {
            if m == member {
                host.join_multicast(GROUP)?;
            }
            let sock = host.udp_bind(9)?;
            loop {
                sock.recv().await?;
            }
        });
    }
    sim.spawn(big, "blaster", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        host.sleep(Duration::from_millis(1)).await;
        let body: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
        sock.send_to(body, sa(nth_ip(3), 9)).await?;
        sock.send_to(b"to everyone".to_vec(), sa(Ipv4Addr::BROADCAST, 9))
            .await?;
        sock.send_to(b"to the group".to_vec(), sa(GROUP, 9)).await?;
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).unwrap();
    let report = sim.run();
    assert_success(&report);
    (report, files[0].clone())
}

/// Runs tshark on `file` with checksum validation on; returns one line per
/// frame with `fields` separated by tabs (repeated values by commas).
pub(crate) fn tshark(file: &Path, filter: Option<&str>, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file);
    for pref in ["ip.check_checksum:TRUE", "udp.check_checksum:TRUE"] {
        cmd.args(["-o", pref]);
    }
    if let Some(f) = filter {
        cmd.args(["-Y", f]);
    }
    cmd.args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn count(file: &Path, filter: &str) -> usize {
    tshark(file, Some(filter), &["frame.number"]).len()
}

pub(crate) fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("NOTICE: tshark is not on PATH; skipping the tshark check");
    }
    ok
}

#[test]
fn tshark_decodes_our_golden_capture_without_errors() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("tshark");
    let (report, file) = golden(&dir);
    let net = &report.networks[0].stats;

    // Every frame, with the right lengths.
    let frames = tshark(&file, None, &["frame.len"]);
    assert_eq!(frames.len() as u64, net.frames_sent);
    let bytes: u64 = frames.iter().map(|f| f[0].parse::<u64>().unwrap()).sum();
    assert_eq!(bytes, net.bytes_sent);

    // Nothing malformed, no expert error, no bad checksum; good ones seen.
    assert_eq!(count(&file, "_ws.malformed"), 0);
    assert_eq!(count(&file, "_ws.expert.severity == error"), 0);
    for proto in ["ip", "udp", "icmp"] {
        // Wireshark's checksum status: 0 bad, 1 good, 2 unverified.
        let bad = format!("{proto}.checksum.status == 0");
        assert_eq!(count(&file, &bad), 0, "{bad}");
        let good = format!("{proto}.checksum.status == 1");
        assert!(count(&file, &good) > 0, "no {good}: checks were off");
    }

    // ARP request and reply (arp-0 resolves arp-1, then only unicast).
    assert!(count(&file, "arp.opcode == 1") >= 1);
    assert!(count(&file, "arp.opcode == 2") >= 1);
    assert_eq!(
        count(&file, "arp") as u64,
        report.packets.arp_sent,
        "ARP frames"
    );

    // ICMP echo request and reply carrying our identifier.
    assert_eq!(count(&file, "icmp.type == 8 && icmp.ident == 0x4242"), 1);
    assert_eq!(count(&file, "icmp.type == 0 && icmp.ident == 0x4242"), 1);

    // The 4000-byte datagram: three fragments at the offsets RFC 791
    // gives, reassembled by tshark into one UDP datagram of 4008 bytes.
    let frags = tshark(
        &file,
        Some("ip.flags.mf == 1 || ip.frag_offset > 0"),
        &["ip.frag_offset"],
    );
    let offsets: Vec<usize> = frags.iter().map(|f| f[0].parse().unwrap()).collect();
    // tshark shows the offset field as sent: in units of 8 bytes.
    let per = fragment_data(1500) / 8;
    assert_eq!(offsets, vec![0, per, 2 * per]);
    let whole = tshark(
        &file,
        Some("ip.reassembled.length"),
        &["ip.reassembled.length", "udp.length", "udp.dstport"],
    );
    assert_eq!(
        whole,
        vec![vec![
            (BIG + UDP_HEADER).to_string(),
            (BIG + UDP_HEADER).to_string(),
            "9".to_string()
        ]]
    );

    // Broadcast and multicast datagrams, with their link addresses.
    assert_eq!(
        count(
            &file,
            "ip.dst == 255.255.255.255 && eth.dst == ff:ff:ff:ff:ff:ff && udp"
        ),
        1
    );
    assert_eq!(
        count(
            &file,
            "ip.dst == 239.1.2.3 && eth.dst == 01:00:5e:01:02:03 && udp"
        ),
        1
    );
}

/// Runs tshark with TCP checksum validation on and returns the number of
/// frames matching `filter`.
pub(crate) fn tcp_count(file: &Path, filter: &str) -> usize {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
            "-Y",
            filter,
        ])
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn tshark_decodes_a_lossy_tcp_transfer_with_good_checksums() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("tcp");
    let mut sim = Simulation::new(5);
    let mut cfg = link("tcp", Some(10_000_000), 2_000_000);
    cfg.loss = 0.02;
    let net = sim.add_network(cfg);
    let a = sim.add_group("client", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("server", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    const BYTES: usize = 300_000;
    sim.spawn(b, "server", |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let all = s.read_exact(BYTES).await?;
        assert_eq!(all.len(), BYTES);
        assert!(s.recv(1).await?.is_empty());
        Ok(())
    });
    sim.spawn(a, "client", |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        let data: Vec<u8> = (0..BYTES).map(|i| (i % 253) as u8).collect();
        s.write_all(data).await?;
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).unwrap();
    let r = sim.run();
    assert_success(&r);
    let file = &files[0];
    let frames = r.networks[0].stats.frames_sent as usize;
    assert_eq!(tcp_count(file, "frame"), frames);
    assert_eq!(
        tcp_count(file, "_ws.malformed || _ws.expert.severity == error"),
        0
    );
    assert_eq!(
        tcp_count(file, "tcp.checksum.status == 0 || ip.checksum.status == 0"),
        0
    );
    assert_eq!(tcp_count(file, "tcp.checksum.status == 1"), frames);
    assert_eq!(
        tcp_count(file, "tcp.flags.syn == 1 && tcp.flags.ack == 0"),
        1
    );
    assert_eq!(
        tcp_count(file, "tcp.flags.syn == 1 && tcp.flags.ack == 1"),
        1
    );
    assert!(tcp_count(file, "tcp.flags.fin == 1") >= 2);
    assert!(
        tcp_count(file, "tcp.options.sack_le") >= 1,
        "SACK blocks expected with 2% loss"
    );
    // tshark calls a retransmission sent within one RTT of the original
    // "out of order" (its heuristic); either way the sequence repeats.
    let resent = "tcp.analysis.retransmission || tcp.analysis.fast_retransmission || tcp.analysis.out_of_order";
    assert!(tcp_count(file, resent) >= 1);
    assert!(tcp_count(file, "tcp.options.timestamp.tsval") == frames);
}

/// A router between a 1500-byte and a 576-byte network: a probe whose TTL
/// runs out, a DF datagram too big for the narrow side, one without DF
/// (fragmented by the router), and one to a network nobody routes.
fn routed(dir: &TempDir) -> (Report, Vec<PathBuf>) {
    use elvis_sim::EchoOptions;
    let mut sim = Simulation::new(3);
    let wide = sim.add_network(link("wide", Some(100_000_000), 10_000));
    let mut cfg = link("narrow", Some(100_000_000), 10_000);
    cfg.mtu = 576;
    let narrow = sim.add_network(cfg);
    let (a, r, b) = (
        sim.add_machine("a"),
        sim.add_machine("r"),
        sim.add_machine("b"),
    );
    let ip = |x: u8, y: u8| Ipv4Addr::new(10, 0, x, y);
    sim.attach(a, wide, ip(0, 1)).unwrap();
    sim.attach(r, wide, ip(0, 2)).unwrap();
    sim.attach(r, narrow, ip(1, 1)).unwrap();
    sim.attach(b, narrow, ip(1, 2)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    sim.set_default_gateway(a, ip(0, 2)).unwrap();
    sim.set_default_gateway(b, ip(1, 1)).unwrap();
    sim.spawn(a, "probes", move |host: Host| async move {
        let sock = host.icmp_socket(0x5151)?;
        let df = EchoOptions {
            dont_fragment: true,
            ..EchoOptions::default()
        };
        let big = vec![7u8; 1000];
        sock.send_echo_with(ip(1, 2), 1, EchoOptions::ttl(1), b"ttl".to_vec())?;
        sock.send_echo_with(ip(1, 2), 2, df, big.clone())?;
        sock.send_echo_with(ip(1, 2), 3, EchoOptions::default(), big)?;
        sock.send_echo(Ipv4Addr::new(192, 0, 2, 9), 4, b"lost".to_vec())?;
        for _ in 0..4 {
            sock.recv_echo().await?;
        }
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).unwrap();
    let report = sim.run();
    assert_success(&report);
    (report, files)
}

#[test]
fn tshark_decodes_the_icmp_errors_of_a_router_without_errors() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("tshark-routed");
    let (report, files) = routed(&dir);
    let (wide, narrow) = (&files[0], &files[1]);
    for f in [wide, narrow] {
        assert_eq!(count(f, "_ws.malformed"), 0);
        assert_eq!(count(f, "_ws.expert.severity == error"), 0);
        // Wireshark's checksum status: 0 bad, 1 good, 2 unverified. The
        // echo request quoted in an error is cut after 8 bytes, so its
        // checksum is rightly unverified; none may be bad.
        for proto in ["ip", "icmp"] {
            assert_eq!(count(f, &format!("{proto}.checksum.status == 0")), 0);
        }
    }
    assert!(count(wide, "icmp.checksum.status == 1") > 0);
    // Time Exceeded from the router, quoting our TTL-1 echo request.
    let te = tshark(
        wide,
        Some("icmp.type == 11"),
        &["ip.src", "icmp.code", "icmp.ident", "icmp.seq"],
    );
    // Fields repeat for the quoted header: outer first.
    let first = |v: &str| v.split(',').next().unwrap_or_default().to_string();
    assert_eq!(te.len(), 1);
    assert_eq!(te[0][0], "10.0.0.2,10.0.0.1", "from the router, about a's");
    assert_eq!(first(&te[0][1]), "0");
    // The quoted request's identifier and sequence (tshark lists the
    // fields of the outer message and of the quoted one).
    assert!(te[0][2].contains("20817"), "{:?}", te[0]);
    assert!(te[0][3].contains('1'), "{:?}", te[0]);
    // Fragmentation Needed with the next-hop MTU (RFC 1191).
    let fnd = tshark(
        wide,
        Some("icmp.type == 3 && icmp.code == 4"),
        &["ip.src", "icmp.mtu"],
    );
    assert_eq!(fnd.len(), 1);
    assert_eq!(first(&fnd[0][0]), "10.0.0.2");
    assert_eq!(fnd[0][1], "576");
    // Net Unreachable (outer code 0) quoting the datagram to 192.0.2.9.
    let unr = tshark(
        wide,
        Some("icmp.type == 3 && ip.dst == 192.0.2.9"),
        &["ip.src", "icmp.code"],
    );
    assert_eq!(unr.len(), 1);
    assert_eq!(first(&unr[0][0]), "10.0.0.2");
    assert_eq!(first(&unr[0][1]), "0");
    // The 1008-byte echo, fragmented by the router at 552-byte offsets,
    // reassembled by tshark; its TTL is one less than when it left a.
    let frags = tshark(
        narrow,
        Some("ip.src == 10.0.0.1 && (ip.flags.mf == 1 || ip.frag_offset > 0)"),
        &["ip.frag_offset", "ip.ttl"],
    );
    assert_eq!(
        frags,
        vec![
            vec!["0".to_string(), "63".to_string()],
            vec![(552 / 8).to_string(), "63".to_string()]
        ]
    );
    assert_eq!(
        count(
            narrow,
            "ip.reassembled.length == 1008 && icmp.type == 8 && icmp.seq == 3"
        ),
        1
    );
    assert_eq!(report.routers[0].interfaces[1].counters.fragmented, 1);
}
