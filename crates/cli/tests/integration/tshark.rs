//! Golden test against Wireshark's dissectors: the pcaps of the default
//! scenario must hold well-formed frames with correct checksums.
//!
//! Skipped, with a notice, when `tshark` is not installed (CI installs it).

use crate::*;
use std::process::Command;

/// Runs tshark with `args`; returns its stdout, panicking on failure.
#[track_caller]
fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tshark_installed() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The `-o PREF:TRUE` options that turn on checksum validation, for the
/// preferences this tshark has (ICMP checksums are always validated by
/// some versions and have no preference there).
fn checksum_options() -> Vec<String> {
    let prefs = tshark(&["-G", "defaultprefs"]);
    let known: Vec<&str> = prefs
        .lines()
        .filter_map(|l| l.trim_start_matches('#').split(':').next())
        .map(str::trim)
        .collect();
    for required in ["ip.check_checksum", "udp.check_checksum"] {
        assert!(known.contains(&required), "tshark has no {required}");
    }
    [
        "ip.check_checksum",
        "udp.check_checksum",
        "icmp.check_checksum",
    ]
    .into_iter()
    .filter(|p| known.contains(p))
    .flat_map(|p| ["-o".to_string(), format!("{p}:TRUE")])
    .collect()
}

/// Reads `pcap` with checksum validation on, applying display filter
/// `filter`, and returns the matching frames' numbers.
fn frames_matching(pcap: &str, options: &[String], filter: &str) -> Vec<String> {
    let mut args: Vec<&str> = vec!["-n", "-r", pcap];
    args.extend(options.iter().map(String::as_str));
    args.extend(["-Y", filter, "-T", "fields", "-e", "frame.number"]);
    tshark(&args)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The dissected `fields` of every frame of `pcap`: per frame, per field,
/// its values (a field may occur more than once, or not at all).
fn dissect(pcap: &str, options: &[String], fields: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut args: Vec<&str> = vec!["-n", "-r", pcap];
    args.extend(options.iter().map(String::as_str));
    args.extend(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in fields {
        args.extend(["-e", f]);
    }
    tshark(&args)
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|v| {
                    v.split(',')
                        .filter(|x| !x.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .collect()
        })
        .collect()
}

#[test]
fn tshark_finds_well_formed_frames_with_good_checksums_in_the_default_scenario() {
    if !tshark_installed() {
        eprintln!("notice: tshark is not installed; skipping the tshark golden test");
        return;
    }
    let dir = temp_dir();
    let report_path = dir.path().join("report.json");
    let pcap_dir = dir.path().join("pcap");
    elvis(args![
        "run",
        "--quiet",
        "--report",
        &report_path,
        "--pcap",
        &pcap_dir
    ])
    .expect_code(0);
    let report = read_report(&report_path);
    let options = checksum_options();

    let networks = report["networks"].as_array().unwrap();
    let mut expected_files: Vec<String> = networks
        .iter()
        .map(|n| format!("net-{}.pcap", n["name"].as_str().unwrap()))
        .collect();
    expected_files.sort();
    assert_eq!(file_names(&pcap_dir), expected_files);

    // One tshark pass per capture (its start-up is most of its time).
    // Checksum status: 0 Bad, 1 Good, 2 Unverified.
    let fields = [
        "frame.number",
        "_ws.malformed",
        "ip.checksum.status",
        "udp.checksum.status",
        "icmp.checksum.status",
        "arp.opcode",
        "icmp.type",
        "udp.dstport",
        "ip.dst",
    ];
    let mut lan = None;
    for net in networks {
        let name = net["name"].as_str().unwrap();
        let path = pcap_dir.join(format!("net-{name}.pcap"));
        let frames = dissect(path.to_str().unwrap(), &options, &fields);
        // One frame per frame the report says was sent.
        assert_eq!(
            frames.len() as u64,
            net["frames_sent"].as_u64().unwrap(),
            "{name}: frame count"
        );
        for f in &frames {
            // Everything dissects: not one malformed packet …
            assert!(f[1].is_empty(), "{name}: malformed frame {f:?}");
            // … and not one bad checksum.
            assert!(
                f[2..5].iter().flatten().all(|s| s != "0"),
                "{name}: bad checksum in frame {f:?}"
            );
        }
        // Checksums were really validated (status 1, "Good", not 2,
        // "Unverified"): every IPv4 header is good.
        let ip: Vec<_> = frames.iter().filter(|f| !f[2].is_empty()).collect();
        assert!(!ip.is_empty(), "{name}: no IPv4 frames");
        for f in ip {
            assert!(f[2].iter().all(|s| s == "1"), "{name}: frame {f:?}");
        }
        if name == "lan" {
            lan = Some(frames);
        }
    }

    // The LAN carries the pinger's ARP exchange, its ICMP echoes and the
    // senders' UDP greetings to port 0xbeef.
    let frames = lan.expect("the default scenario has a network named lan");
    let count = |field: usize, value: &str| {
        frames
            .iter()
            .filter(|f| f.get(field).is_some_and(|v| v.iter().any(|x| x == value)))
            .count()
    };
    assert!(count(5, "1") > 0, "no ARP request on the LAN");
    assert!(count(5, "2") > 0, "no ARP reply on the LAN");
    assert!(count(6, "8") > 0, "no ICMP echo request on the LAN");
    assert!(count(6, "0") > 0, "no ICMP echo reply on the LAN");
    assert!(count(7, "48879") > 0, "no UDP to port 48879 on the LAN");
    assert!(count(3, "1") > 0, "no UDP checksum was validated");
    // Every greeting is there: 200 senders × 5 messages to the capturer.
    let greetings = frames
        .iter()
        .filter(|f| f[7] == ["48879"] && f[8] == ["10.0.0.250"])
        .count();
    assert_eq!(greetings, 1000);
}

#[test]
fn tshark_reads_the_frames_tso_cut_as_one_clean_tcp_stream_with_good_checksums() {
    if !tshark_installed() {
        eprintln!("notice: tshark is not installed; skipping the tshark offload test");
        return;
    }
    // The offload example, with 2 MB instead of 100 MB.
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("offload-bulk.ndl")).unwrap();
    let file = dir.path().join("offload-2mb.ndl");
    std::fs::write(&file, text.replace("bytes='100MB'", "bytes='2MB'")).unwrap();
    let report_path = dir.path().join("report.json");
    let pcap_dir = dir.path().join("pcap");
    elvis(args![
        "run",
        &file,
        "--quiet",
        "--report",
        &report_path,
        "--pcap",
        &pcap_dir
    ])
    .expect_code(0);
    let report = read_report(&report_path);
    let pcap = pcap_dir.join("net-wire.pcap");
    let pcap = pcap.to_str().unwrap();
    let mut options = checksum_options();
    options.extend(["-o".into(), "tcp.check_checksum:TRUE".into()]);
    // Not one malformed frame, bad checksum, or anything TCP analysis
    // flags (lost segment, retransmission, out of order, duplicate ACK).
    let suspicious = frames_matching(
        pcap,
        &options,
        "_ws.malformed || ip.checksum.status == 0 || tcp.checksum.status == 0 || tcp.analysis.flags",
    );
    assert!(suspicious.is_empty(), "suspicious frames {suspicious:?}");
    let fields = [
        "ip.src",
        "ip.len",
        "ip.id",
        "tcp.len",
        "tcp.checksum.status",
    ];
    let frames = dissect(pcap, &options, &fields);
    assert_eq!(frames.len() as u64, report["networks"][0]["frames_sent"]);
    let from_sender: Vec<_> = frames.iter().filter(|f| f[0] == ["10.0.0.1"]).collect();
    let value = |f: &Vec<Vec<String>>, i: usize| -> u64 {
        let v = &f[i][0];
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => v.parse().unwrap(),
        }
    };
    // Frames no larger than the MTU, carrying every byte once, each with
    // its own IPv4 identification and a validated TCP checksum.
    assert!(from_sender.iter().all(|f| value(f, 1) <= 1500));
    let payload: u64 = from_sender.iter().map(|f| value(f, 3)).sum();
    assert_eq!(payload, 2_000_000);
    let mut ids: Vec<u64> = from_sender.iter().map(|f| value(f, 2)).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), from_sender.len(), "IPv4 identifications repeat");
    assert!(
        frames.iter().all(|f| f[4] == ["1"]),
        "TCP checksums not validated"
    );
    // The sender's TCP counts the frames its TSO segments became (as
    // Linux's OutSegs): as many as tshark found.
    let sender = (report["tcp_connections"].as_array().unwrap().iter())
        .find(|c| c["machine"] == "sender")
        .unwrap();
    let segments = sender["segments_sent"].as_u64().unwrap();
    assert_eq!(segments, from_sender.len() as u64);
}
