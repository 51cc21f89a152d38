//! NIC offloads from NDL (`offload=`, `rx_usecs=`) to the run: the
//! example's bulk transfer with and without them, coalescing delays
//! against their closed form, counted and generated machines, routers
//! refused.

use crate::*;

/// 100 MB in 1448-byte segments (MSS with timestamps on MTU 1500).
const DATA_FRAMES: u64 = 100_000_000_u64.div_ceil(1448);

/// Returns the value of metric `name` published on `machine`.
fn metric(r: &elvis_sim::Report, machine: &str, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.machine == machine && m.name == name)
        .unwrap_or_else(|| panic!("no metric {name} on {machine}: {:?}", r.metrics))
        .value
}

/// Parses and runs `src`; returns the report and the frames GRO merged.
fn run(src: &str) -> (elvis_sim::Report, u64) {
    let scenario = elvis_ndl::parse(src, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    let mut built = elvis_build::build(&scenario, None).unwrap_or_else(|e| panic!("{e}"));
    let report = built.sim.run();
    assert!(report.success(), "{:?}", report.problems);
    let merged = report.packets.gro_merged;
    (report, merged)
}

/// The TCP statistics of the connection end on `machine`.
fn tcp<'a>(r: &'a elvis_sim::Report, machine: &str) -> &'a elvis_sim::TcpStats {
    &r.tcp_connections
        .iter()
        .find(|c| c.machine == machine)
        .unwrap_or_else(|| panic!("no connection on {machine}"))
        .stats
}

#[test]
fn the_offload_example_runs_at_the_link_rate_and_reports_gro_merges() {
    let dir = temp_dir();
    let report = dir.path().join("r.json");
    let out = elvis(args![
        "run",
        &example("offload-bulk.ndl"),
        "--report",
        &report
    ]);
    out.expect_code(0);
    let merged: u64 = (out.stdout.lines())
        .find_map(|l| l.trim().strip_prefix("GRO"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no GRO line in\n{}", out.stdout));
    assert!(merged > DATA_FRAMES / 2, "{merged}");
    let r = read_report(&report);
    assert_eq!(packets(&r, "gro_merged"), merged);
    assert_eq!(application(&r, "receiver", "bulk_receive")["finished"], 1);
    let steady = (r["metrics"].as_array().unwrap().iter())
        .find(|m| m["name"] == "steady_goodput_bps")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    // 1448 payload bytes per 1514-byte frame at 10 Gbit/s.
    let predicted = 10e9 * 1448.0 / 1514.0;
    assert!(
        (steady / predicted - 1.0).abs() < 0.01,
        "{steady} vs {predicted}"
    );
    // Without offloads: no merges, and no GRO line.
    let text = std::fs::read_to_string(example("offload-bulk.ndl")).unwrap();
    let plain = dir.path().join("plain.ndl");
    std::fs::write(&plain, text.replace(" offload='linux'", "")).unwrap();
    let out = elvis(args!["run", &plain, "--report", &report]);
    out.expect_code(0);
    assert!(!out.stdout.contains("GRO"), "{}", out.stdout);
    assert_eq!(packets(&read_report(&report), "gro_merged"), 0);
}

#[test]
fn the_same_transfer_with_and_without_offloads_delivers_every_byte_in_the_same_frames() {
    let with = std::fs::read_to_string(example("offload-bulk.ndl")).unwrap();
    let without = with.replace(" offload='linux'", "");
    assert_ne!(with, without);
    let mut frames_from_sender = Vec::new();
    for (src, offloads) in [(&with, true), (&without, false)] {
        let (r, merged) = run(src);
        let (sender, receiver) = (tcp(&r, "sender"), tcp(&r, "receiver"));
        assert_eq!(receiver.bytes_received, 100_000_000);
        assert_eq!(sender.bytes_acked, 100_000_000);
        assert_eq!(sender.retransmitted_segments, 0);
        // TCP counts segments as frames (TSO and GRO too, as Linux's
        // OutSegs and InSegs), so the link's frames are the receiver's
        // segments and the sender's: the data, SYN, handshake ACK, FIN and
        // last ACK.
        let frames = r.networks[0].stats.frames_sent - receiver.segments_sent;
        assert_eq!(frames, DATA_FRAMES + 4);
        assert_eq!(sender.segments_sent, frames);
        // All reached the receiver's connection but the SYN (the listener's).
        assert_eq!(receiver.segments_received + 1, frames);
        frames_from_sender.push(frames);
        let acks = receiver.segments_sent;
        if offloads {
            assert!(merged > frames / 2, "GRO merged only {merged} of {frames}");
            // TCP saw `frames - merged` segments and sent at most one ACK
            // for each.
            assert!(acks <= frames - merged, "{acks} ACKs");
        } else {
            assert_eq!(merged, 0);
            // A delayed ACK for every second full-sized segment (RFC 9293
            // §3.8.6.3), plus the handshake and the close.
            assert!(
                (DATA_FRAMES / 2..DATA_FRAMES / 2 + 8).contains(&acks),
                "{acks}"
            );
        }
    }
    assert_eq!(frames_from_sender[0], frames_from_sender[1]);
}

/// Two pinger/target pairs with coalescing delays and one pair without,
/// on a 1 Gbit/s switched LAN with 10 µs latency.
const PINGS: &str = "\
[Networks]
	[Network id='lan' bandwidth='1Gbps' latency='10us']
[Machines]
	[Machine name='h' count='2' rx_usecs='50us']
		[Networks]
			[Network id='lan']
		[Applications]
			[Application name='ping' to='t-{i}' count='3']
	[Machine name='t' count='2' offload='gro' rx_usecs='20us']
		[Networks]
			[Network id='lan']
	[Machine name='p']
		[Networks]
			[Network id='lan']
		[Applications]
			[Application name='ping' to='q' count='3']
	[Machine name='q']
		[Networks]
			[Network id='lan']
";

#[test]
fn coalescing_delays_every_instances_pings_by_both_ends_rx_usecs() {
    let (r, merged) = run(PINGS);
    assert_eq!(merged, 0);
    // A 98-byte echo frame at 1 Gbit/s takes 784 ns to send, twice
    // (sender's NIC, switch port), plus 10 µs of latency, each way.
    let base = 2.0 * (2.0 * 784.0 + 10_000.0);
    for name in ["rtt_min_ns", "rtt_max_ns"] {
        assert_eq!(metric(&r, "p", name), base);
        // The echo request waits 20 µs in the target's ring, the reply
        // 50 µs in the pinger's: every instance of both groups.
        for h in ["h-0", "h-1"] {
            assert_eq!(metric(&r, h, name), base + 70_000.0, "{h} {name}");
        }
    }
}

#[test]
fn offloads_named_on_generated_hosts_apply_to_each() {
    let src = |keys: &str| {
        format!(
            "[Topology type='star' n='2' bandwidth='1Gbps' latency='10us']
[Machines]
	[Machine name='host' {keys}]
	[Machine name='host-0']
		[Applications]
			[Application name='ping' to='host-1' count='2']
"
        )
    };
    let (plain, _) = run(&src(""));
    let (slow, _) = run(&src("offload='linux' rx_usecs='30us'"));
    let rtt = |r: &elvis_sim::Report| metric(r, "host-0", "rtt_min_ns");
    assert_eq!(rtt(&slow), rtt(&plain) + 60_000.0);
}

#[test]
fn offloads_on_a_generated_router_are_an_error_at_the_key() {
    let src = "[Topology type='star' n='2' hub='router']
[Machines]
	[Machine name='router' offload='linux']
";
    let scenario = elvis_ndl::parse(src, "t.ndl").unwrap();
    let e = elvis_build::build(&scenario, None).err().expect("an error");
    assert_eq!((e.loc.line, e.loc.col), (3, 25), "{e}");
    assert!(
        e.to_string().contains("offloads apply to hosts only"),
        "{e}"
    );
    // The command line says where, and writes nothing.
    let dir = temp_dir();
    let file = dir.path().join("r.ndl");
    std::fs::write(&file, src).unwrap();
    let out = elvis(args!["run", &file]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line()
            .contains("r.ndl:3:25: error: 'router' forwards"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_lossy_transfer_with_offloads_is_the_same_twice_and_still_delivers_everything() {
    let text = std::fs::read_to_string(example("offload-bulk.ndl")).unwrap();
    let lossy = text
        .replace("latency='10us'", "latency='10us' loss='0.1%'")
        .replace("bytes='100MB'", "bytes='20MB'");
    let (a, merged_a) = run(&lossy);
    let (b, merged_b) = run(&lossy);
    assert_eq!(a.deterministic_json(), b.deterministic_json());
    assert_eq!(merged_a, merged_b);
    assert!(merged_a > 0);
    assert!(a.networks[0].stats.lost > 0);
    assert!(tcp(&a, "sender").retransmitted_segments > 0);
    assert_eq!(tcp(&a, "receiver").bytes_received, 20_000_000);
}

#[test]
fn offload_none_is_the_same_run_as_no_offload_key() {
    let text = std::fs::read_to_string(example("offload-bulk.ndl"))
        .unwrap()
        .replace("bytes='100MB'", "bytes='5MB'");
    let (none, merged) = run(&text.replace("offload='linux'", "offload='none' rx_usecs='0'"));
    let (absent, _) = run(&text.replace(" offload='linux'", ""));
    assert_eq!(merged, 0);
    assert_eq!(none.deterministic_json(), absent.deterministic_json());
}

#[test]
fn a_group_of_a_thousand_offload_hosts_holds_nic_state_only_while_frames_wait() {
    // A pinger without offloads pings one of 1000 hosts with
    // `offload='linux'`: only that host ever takes a receive state, for
    // each request while it waits in the ring.
    let src = "\
[Networks]
	[Network id='lan' bandwidth='1Gbps' latency='10us']
[Machines]
	[Machine name='h' count='1000' offload='linux']
		[Networks]
			[Network id='lan']
	[Machine name='p']
		[Networks]
			[Network id='lan']
		[Applications]
			[Application name='ping' to='h-999' count='3']
";
    let scenario = elvis_ndl::parse(src, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    let mut built = elvis_build::build(&scenario, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.sim.nic_states(), (0, 0));
    let r = built.sim.run();
    assert!(r.success(), "{:?}", r.problems);
    // Each of the 3 requests waits 8 µs in h-999's ring (closed form as
    // in the test above: 784 ns twice plus 10 µs, each way).
    let base = 2.0 * (2.0 * 784.0 + 10_000.0);
    for name in ["rtt_min_ns", "rtt_max_ns"] {
        assert_eq!(metric(&r, "p", name), base + 8_000.0, "{name}");
    }
    // One state, given back after each request and reused for the next.
    assert_eq!(built.sim.nic_states(), (1, 0));
}
