//! Undo of spurious window reductions (`tcb/undo.rs`): each test builds
//! one recovery episode by hand and checks Linux's rule (6.6,
//! `net/ipv4/tcp_input.c`) for when its reduction is undone and what the
//! undo restores (`tcp_undo_cwnd_reduction`: `cwnd = max(cwnd,
//! prior_cwnd)`, `ssthresh = max(ssthresh, prior_ssthresh)` with
//! `prior_ssthresh = max(ssthresh, 3/4 cwnd)`).

use super::*;

/// SACK on, RACK, `alg` taking over at cwnd 20 and ssthresh 16 segments
/// (congestion avoidance), then `n` segments sent at 1 s (SRTT = min RTT
/// = 100 ms, timestamps off).
fn avoiding(alg: Algorithm, n: usize) -> Tcb {
    avoiding_with(alg, n, EcnMode::Off)
}

/// [`avoiding`], with ECN as `ecn` asks (the peer agrees).
fn avoiding_with(alg: Algorithm, n: usize, ecn: EcnMode) -> Tcb {
    let cfg = TcpConfig {
        loss_detection: crate::tcp::LossDetection::Rack,
        congestion: alg,
        ecn,
        ..with_sack()
    };
    let mut t = established_with(
        &cfg,
        Repr {
            sack_permitted: true,
            ..syn_ack_ecn(true, false)
        },
    );
    t.cc = elvis_tcpcc::take_over(alg, MSS as u64, 20 * MSS as u64, 16 * MSS as u64);
    t.write(bytes(n * MSS));
    assert_eq!(output(&mut t, ms(1000)).len(), n);
    t
}

/// Segments `lost` are missing and the next three are SACKed at 1.1 s:
/// RACK (DupThresh segments SACKed, no reordering seen: `reo_wnd` = 0)
/// marks them lost and fast recovery resends them.
fn lose(t: &mut Tcb, lost: std::ops::Range<usize>) -> Vec<Segment> {
    let (_, out) = input(
        t,
        ms(1100),
        sack_ack(lost.start, &[(lost.end, lost.end + 3)]),
        Message::new(),
    );
    assert_eq!(t.stats().fast_recoveries, 1);
    out
}

/// `tcp_try_undo_dsack`: the one segment fast recovery resent arrives
/// late as an original (the path reordered it), and the receiver reports
/// the retransmission as a duplicate (RFC 2883). Every retransmission of
/// the episode is DSACKed, so the reduction is undone: NewReno's halving
/// (FlightSize 20 → ssthresh = cwnd = 10) goes back to cwnd 20 and
/// ssthresh max(16, 3/4 · 20) = 16.
#[test]
fn an_episode_whose_only_retransmission_is_dsacked_restores_cwnd_and_ssthresh() {
    let mut t = avoiding(Algorithm::NewReno, 20);
    let out = lose(&mut t, 0..1);
    let resent: Vec<_> = out
        .iter()
        .filter(|s| s.repr.seq_number == ISS + 1)
        .collect();
    assert_eq!(resent.len(), 1);
    assert_eq!(
        (t.cc.window(), t.cc.ssthresh()),
        (10 * MSS as u64, 10 * MSS as u64)
    );
    // The original arrives: a partial ACK (the recovery point is 20).
    input(&mut t, ms(1101), sack_ack(10, &[]), Message::new());
    assert_eq!(t.stats().undos, 0, "no evidence yet");
    assert_eq!(t.cc.window(), 10 * MSS as u64);
    // Then the retransmission, reported as a DSACK below the ACK.
    input(&mut t, ms(1102), sack_ack(10, &[(0, 1)]), Message::new());
    let st = t.stats();
    assert_eq!((st.dsacks_received, st.undos), (1, 1));
    assert_eq!((st.cwnd, st.ssthresh), (20 * MSS as u64, 16 * MSS as u64));
    assert!(t.cold().recovery.is_none(), "the undo ends fast recovery");
    // Once: a second DSACK of the same data changes nothing.
    input(&mut t, ms(1103), sack_ack(10, &[(0, 1)]), Message::new());
    assert_eq!(t.stats().undos, 1);
}

/// `undo_retrans` counts every retransmission of the episode: with two
/// segments resent and only one DSACKed the reduction stands (the other
/// may have repaired a real loss); the second DSACK undoes it. CUBIC: the
/// reduction to 0.7 · 20 = 14 goes back to 20 and ssthresh to 16.
#[test]
fn a_partially_dsacked_episode_is_undone_only_when_every_retransmission_is() {
    let mut t = avoiding(Algorithm::Cubic, 10);
    let out = lose(&mut t, 0..2);
    let resent = out.iter().filter(|s| s.repr.seq_number < ISS + 1 + 2 * MSS);
    assert_eq!(resent.count(), 2, "both holes resent (pipe 5 < cwnd 14)");
    assert_eq!(t.cc.window(), 14 * MSS as u64);
    // Both originals arrive late (ACK 5), then one duplicate.
    input(&mut t, ms(1101), sack_ack(5, &[]), Message::new());
    input(&mut t, ms(1102), sack_ack(5, &[(0, 1)]), Message::new());
    assert_eq!(t.stats().undos, 0, "one of two retransmissions DSACKed");
    assert_eq!(t.cc.window(), 14 * MSS as u64);
    input(&mut t, ms(1103), sack_ack(5, &[(1, 2)]), Message::new());
    let st = t.stats();
    assert_eq!((st.dsacks_received, st.undos), (2, 1));
    assert_eq!((st.cwnd, st.ssthresh), (20 * MSS as u64, 16 * MSS as u64));
}

/// RFC 2883 §4 names a duplicate above the cumulative ACK by a first
/// block inside the second; it counts like one below it. A DSACK of data
/// sent before the episode (below `undo_marker`) does not count.
#[test]
fn only_dsacks_of_data_above_the_undo_marker_count() {
    let mut t = avoiding(Algorithm::NewReno, 20);
    lose(&mut t, 4..5);
    // A duplicate of segment 2, acknowledged before the episode began.
    input(
        &mut t,
        ms(1101),
        sack_ack(4, &[(2, 3), (5, 8)]),
        Message::new(),
    );
    assert_eq!(t.stats().undos, 0);
    // The retransmitted segment 4, reported above the ACK (inside 4..8).
    let (_, _) = input(
        &mut t,
        ms(1102),
        sack_ack(4, &[(4, 5), (4, 8)]),
        Message::new(),
    );
    assert_eq!(t.stats().undos, 1);
    assert_eq!(t.cc.window(), 20 * MSS as u64);
}

/// A DSACK above the cumulative ACK names data the receiver holds; a
/// duplicate of an original that was never retransmitted (the network
/// duplicated it) says nothing about the episode (Linux counts only
/// `TCPCB_RETRANS` data in `tcp_sacktag_one`).
#[test]
fn a_dsack_of_data_never_retransmitted_does_not_count() {
    let mut t = avoiding(Algorithm::NewReno, 20);
    lose(&mut t, 4..5);
    // A network duplicate of segment 6 (SACKed in 5..8, never resent).
    input(
        &mut t,
        ms(1101),
        sack_ack(4, &[(6, 7), (5, 8)]),
        Message::new(),
    );
    assert_eq!((t.stats().dsacks_received, t.stats().undos), (1, 0));
    // The retransmitted segment 4, reported once the hole is filled.
    input(&mut t, ms(1102), sack_ack(8, &[(4, 5)]), Message::new());
    assert_eq!(t.stats().undos, 1);
    assert_eq!(t.cc.window(), 20 * MSS as u64);
}

/// SACK, timestamps and RFC 6675 loss detection (no tail loss probe, so
/// the RTO is the first timer); the initial window of 10 segments.
fn timestamped() -> Tcb {
    let cfg = TcpConfig {
        timestamps: true,
        loss_detection: crate::tcp::LossDetection::Rfc6675,
        ..with_sack()
    };
    established_with(&cfg, syn_ack_all())
}

/// The SMSS with timestamps: 1460 less the 12-byte option.
const TS_MSS: usize = MSS - 12;

/// An ACK of everything below segment `to` (of [`TS_MSS`]) echoing `ecr`,
/// SACKing segments `blocks`.
fn ts_ack(to: usize, ecr: u32, blocks: &[(usize, usize)]) -> Repr {
    let mut r = Repr {
        timestamp: Some((800, ecr)),
        ..ack(IRS + 1, ISS + 1 + to * TS_MSS)
    };
    for (i, (s, e)) in blocks.iter().enumerate() {
        r.sack_ranges[i] = Some(((ISS + 1 + s * TS_MSS).0, (ISS + 1 + e * TS_MSS).0));
    }
    r
}

/// Eifel detection (RFC 3522 §2, Linux's `tcp_packet_delayed` in
/// `tcp_try_undo_loss`): the RTO fired, but the ACK that follows echoes
/// the TSval of the original transmission, older than the
/// retransmission's, so the original arrived and the timeout was
/// spurious. The window (1 segment after the RTO) is back at 10 and
/// slow start's ssthresh at "arbitrarily high"; the go-back-N resend
/// stops (segments 2 and 3 are not sent again).
#[test]
fn an_rto_whose_retransmission_is_answered_by_an_ack_echoing_an_older_tsval_is_undone() {
    let mut t = timestamped();
    assert_eq!(t.smss(), TS_MSS);
    t.write(bytes(4 * TS_MSS));
    let sent = output(&mut t, ms(1000));
    assert_eq!(sent.len(), 4);
    let original_ts = sent[0].repr.timestamp.expect("timestamps on").0;
    let (cwnd, rto_at) = (t.cc.window(), t.deadline().expect("the RTO"));
    let (_, out) = timer(&mut t, rto_at);
    assert_eq!(out.len(), 1);
    assert!(out[0].repr.timestamp.expect("TSval").0 > original_ts);
    assert_eq!((t.stats().timeouts, t.cc.window()), (1, MSS as u64));
    // The original's ACK, late: segments 0 and 1 arrived.
    let (_, out) = input(
        &mut t,
        rto_at + Duration::from_millis(1),
        ts_ack(2, original_ts, &[]),
        Message::new(),
    );
    let st = t.stats();
    assert_eq!(st.undos, 1);
    assert_eq!((st.cwnd, st.ssthresh), (cwnd, u64::MAX));
    assert!(
        out.iter().all(|s| s.payload.is_empty()),
        "no resend of 2 and 3"
    );
    assert_eq!(st.retransmitted_segments, 1);
}

/// The counter-case: the ACK echoes the retransmission's own TSval, so it
/// was the retransmission that arrived; the timeout stands.
#[test]
fn an_rto_answered_by_an_ack_echoing_the_retransmission_stands() {
    let mut t = timestamped();
    t.write(bytes(4 * TS_MSS));
    output(&mut t, ms(1000));
    let rto_at = t.deadline().expect("the RTO");
    let (_, out) = timer(&mut t, rto_at);
    let resent_ts = out[0].repr.timestamp.expect("TSval").0;
    input(
        &mut t,
        rto_at + Duration::from_millis(100),
        ts_ack(1, resent_ts, &[]),
        Message::new(),
    );
    let st = t.stats();
    assert_eq!(st.undos, 0);
    assert!(st.cwnd <= 3 * MSS as u64, "slow start from one segment");
}

/// A timestamped NewReno connection at 20 segments (ssthresh 16) that
/// sent 10 segments at 1 s and entered fast recovery on three SACKs of
/// segments 1..4 (RFC 6675: DupThresh segments SACKed), each echoing the
/// originals' TSval; returns it with that TSval.
fn in_fast_recovery_with_timestamps() -> (Tcb, u32) {
    let mut t = timestamped();
    let m = TS_MSS as u64;
    t.cc = elvis_tcpcc::take_over(Algorithm::NewReno, m, 20 * m, 16 * m);
    t.write(bytes(10 * TS_MSS));
    let sent = output(&mut t, ms(1000));
    assert_eq!(sent.len(), 10);
    let original_ts = sent[0].repr.timestamp.expect("TSval").0;
    for k in 2..=4 {
        input(
            &mut t,
            ms(1100 + k as u64),
            ts_ack(0, original_ts, &[(1, k)]),
            Message::new(),
        );
    }
    assert_eq!(t.stats().fast_recoveries, 1);
    (t, original_ts)
}

/// Fast recovery with timestamps: a partial ACK echoing a TSval older
/// than the first retransmission while no retransmission is in flight
/// (`tcp_try_undo_partial`) — here the full ACK of the recovery point
/// (`tcp_try_undo_recovery`) — undoes the reduction.
#[test]
fn a_full_ack_echoing_the_original_transmission_undoes_fast_recovery() {
    let (mut t, original_ts) = in_fast_recovery_with_timestamps();
    let m = TS_MSS as u64;
    assert!(t.cc.window() < 20 * m);
    // Segment 0's original arrives: everything is acknowledged, echoing
    // the original's TSval (older than the retransmission's).
    input(
        &mut t,
        ms(1110),
        ts_ack(10, original_ts, &[]),
        Message::new(),
    );
    let st = t.stats();
    assert_eq!(st.undos, 1);
    assert_eq!((st.cwnd, st.ssthresh), (20 * m, 16 * m));
}

/// RFC 3168 §6.1.2 wants the window reduced on ECE; Linux zeroes
/// `prior_ssthresh` on an ACK with ECE (`FLAG_ECE`), so the undo ends the
/// episode but restores nothing.
#[test]
fn an_ece_during_the_episode_forbids_restoring_the_window() {
    let mut t = avoiding_with(Algorithm::NewReno, 20, EcnMode::On);
    assert!(t.ecn.is_on());
    lose(&mut t, 0..1);
    let w = t.cc.window();
    let mut r = sack_ack(10, &[]);
    r.ece = true;
    input(&mut t, ms(1101), r, Message::new());
    input(&mut t, ms(1102), sack_ack(10, &[(0, 1)]), Message::new());
    assert_eq!(t.stats().undos, 1, "the episode is found spurious");
    assert_eq!(t.cc.window(), w, "but the window stays reduced");
}

/// Linux's `tcp_enter_loss` starts a new episode only outside fast
/// recovery: a timeout during fast recovery continues its episode, so an
/// undo then restores the window from before the fast recovery (20
/// segments, ssthresh 16), not the one fast recovery left.
#[test]
fn a_timeout_during_fast_recovery_keeps_the_episode_and_its_prior_window() {
    let (mut t, original_ts) = in_fast_recovery_with_timestamps();
    let m = TS_MSS as u64;
    let rto_at = t.deadline().expect("the RTO");
    timer(&mut t, rto_at);
    assert_eq!((t.stats().timeouts, t.cc.window()), (1, m));
    // The original of segment 0 was only delayed.
    input(
        &mut t,
        rto_at + Duration::from_millis(1),
        ts_ack(10, original_ts, &[]),
        Message::new(),
    );
    let st = t.stats();
    assert_eq!(st.undos, 1);
    assert_eq!((st.cwnd, st.ssthresh), (20 * m, 16 * m));
}
