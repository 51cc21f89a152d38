//! DSACK (RFC 2883) between two elvis stacks on a reordering path: what
//! it is for. RACK-TLP (RFC 8985 §6.2) declares a segment lost once a
//! segment sent after it is delivered and `RACK.rtt + RACK.reo_wnd` has
//! passed since it was sent; `reo_wnd` starts at `min_rtt / 4` and grows
//! by `min_rtt / 4` for each round trip in which the receiver reports a
//! spurious retransmission with a DSACK (step 4). A frame held back by
//! more than `min_rtt / 4` is therefore retransmitted spuriously until
//! DSACKs have widened the window past its delay; without DSACKs that
//! never happens and every such frame costs a retransmission (and a
//! window reduction).
//!
//! The path: 1 Gbit/s, 5 ms each way (min RTT 10 ms, `min_rtt / 4` =
//! 2.5 ms), 1 % of frames held back by 3 ms. One widening (to 5 ms)
//! covers the hold-back, so with DSACK the spurious retransmissions
//! stop once the first DSACKs are back, and without them they go on for
//! the whole transfer, but only once RACK has recorded reordering:
//! until then three segments SACKed above a hole make the window 0
//! (RFC 8985 `RACK_reo_wnd`), and a held-back segment resent before its
//! original arrives (as PRR resends it, on the ACK that finds it lost)
//! records none. How soon that happens varies with the seed.

use crate::common::{nth_ip, reordering_transfer, sa, Transfer};
use elvis_sim::{Host, Simulation, TcpConfig};

const BYTES: u64 = 60_000_000;

/// Sends `BYTES` over the reordering path with `dsack` on or off at both
/// ends.
fn transfer(dsack: bool, seed: u64) -> Transfer {
    let tcp = TcpConfig {
        dsack,
        ..TcpConfig::default()
    };
    reordering_transfer(seed, tcp, BYTES)
}

#[test]
fn dsacks_widen_the_rack_reordering_window_and_end_spurious_retransmissions() {
    let (mut total_on, mut total_off) = (0, 0);
    for seed in [1, 2, 3] {
        let on = transfer(true, seed);
        let off = transfer(false, seed);
        let (on_rexmit, off_rexmit) = (on.tx.retransmitted_segments, off.tx.retransmitted_segments);
        eprintln!(
            "seed {seed}: {} frames held back; dsack on: {on_rexmit} retransmitted, {} DSACKs \
             sent, {} received, {} ms; off: {off_rexmit} retransmitted, {} ms",
            on.reordered,
            on.rx.dsacks_sent,
            on.tx.dsacks_received,
            on.elapsed_ns / 1_000_000,
            off.elapsed_ns / 1_000_000,
        );
        assert!(on.reordered > 300, "the path reorders ({})", on.reordered);
        // Nothing is lost, so every retransmission is spurious, and each
        // one that reaches the receiver is a duplicate it reports.
        assert!(on.rx.dsacks_sent > 0 && on.tx.dsacks_received > 0);
        assert!(on.tx.dsacks_received <= on.rx.dsacks_sent);
        assert!(on.rx.dsacks_sent <= on_rexmit);
        assert_eq!(off.rx.dsacks_sent + off.tx.dsacks_received, 0);
        // Without DSACK most held-back data frames are resent (about 2 in
        // 3 frames are data); with it fewer, by 1.8x, 5.6x and 28x over
        // seeds 1-3 (4.1x in all), depending on when RACK first sees
        // reordering.
        assert!(
            off_rexmit * 4 >= off.reordered,
            "{off_rexmit} of {}",
            off.reordered
        );
        assert!(
            off_rexmit * 2 >= 3 * on_rexmit.max(1),
            "dsack off: {off_rexmit} spurious retransmissions, on: {on_rexmit}"
        );
        assert!(on.elapsed_ns <= off.elapsed_ns);
        total_on += on_rexmit;
        total_off += off_rexmit;
    }
    assert!(
        total_off >= 4 * total_on,
        "dsack off: {total_off} spurious retransmissions in all, on: {total_on}"
    );
}

/// tshark (an independent decoder, with its own RFC 2883 §4 rule for
/// telling a DSACK block from a SACK block) finds exactly the DSACKs the
/// receiver counted, each naming the sequence range of a data segment in
/// the capture, on a path that duplicates 2 % of the frames.
#[test]
fn tshark_decodes_our_dsack_blocks_as_the_duplicated_segments() {
    use crate::common::{link, TempDir};
    use crate::tshark::{have_tshark, tshark};
    if !have_tshark() {
        return;
    }
    const DATA: usize = 300_000;
    let dir = TempDir::new("dsack");
    let mut sim = Simulation::new(7);
    let mut cfg = link("dup", Some(10_000_000), 2_000_000);
    cfg.duplicate = 0.02;
    let net = sim.add_network(cfg);
    let a = sim
        .add_group("client", None, elvis_sim::Protocols::UDP_TCP)
        .unwrap();
    let b = sim
        .add_group("server", None, elvis_sim::Protocols::UDP_TCP)
        .unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.spawn(b, "server", |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        assert_eq!(s.read_exact(DATA).await?.len(), DATA);
        Ok(())
    });
    sim.spawn(a, "client", |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(vec![0x5a; DATA]).await?;
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).unwrap();
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let sent = r
        .tcp_connections
        .iter()
        .find(|c| c.machine == "server")
        .expect("the receiver's connection")
        .stats
        .dsacks_sent;
    assert!(sent >= 3, "{sent} DSACKs");
    let server = nth_ip(1).to_string();
    let absolute = |filter: &str, fields: &[&str]| {
        let filter = format!("tcp && ip.src == {server} && {filter}");
        tshark(&files[0], Some(&filter), fields)
    };
    // tshark shows relative sequence numbers; the data segments too.
    let dsacks = absolute(
        "tcp.options.sack.dsack",
        &["tcp.options.sack.dsack_le", "tcp.options.sack.dsack_re"],
    );
    assert_eq!(dsacks.len() as u64, sent, "tshark's DSACK count");
    eprintln!("{sent} DSACKs: {dsacks:?}");
    let client = nth_ip(0).to_string();
    let data = tshark(
        &files[0],
        Some(&format!("tcp.len > 0 && ip.src == {client}")),
        &["tcp.seq", "tcp.nxtseq"],
    );
    for d in &dsacks {
        assert!(data.contains(d), "DSACK {d:?} names no segment sent");
    }
    let bad = "_ws.malformed || _ws.expert.severity == error";
    assert!(tshark(&files[0], Some(bad), &["frame.number"]).is_empty());
}
