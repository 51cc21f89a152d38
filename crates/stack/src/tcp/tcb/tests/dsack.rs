//! DSACK generation (RFC 2883): the receiver's answers to duplicate
//! segments, checked against the examples of RFC 2883 §4 (each test
//! replays one table and expects exactly the ACK numbers and SACK blocks
//! it prints) and against Linux's own DSACK test
//! (`tools/testing/selftests/net/packetdrill/tcp_dsack_mult.pkt`).
//!
//! The RFC's tables number bytes from an arbitrary origin; [`Rfc`] maps
//! them onto the peer's sequence space (its first data byte, IRS + 1, is
//! the table's first byte) and our ACKs back. "3000-3499" in a table's
//! segment columns is the bytes 3000 to 3499; "SACK=3000-3500" is the
//! block [3000, 3500).

use super::*;

/// A receiver (us, SACK negotiated, no timestamps: 4 blocks per ACK) fed
/// the segments of an RFC 2883 table whose first byte is `origin`.
struct Rfc {
    t: Tcb,
    origin: u32,
}

impl Rfc {
    fn new(origin: u32) -> Rfc {
        Rfc::with(origin, &with_sack())
    }

    fn with(origin: u32, cfg: &TcpConfig) -> Rfc {
        Rfc {
            t: established_with(cfg, syn_ack_all()),
            origin,
        }
    }

    fn seq(&self, x: u32) -> SeqNumber {
        IRS + 1 + (x - self.origin) as usize
    }

    fn table(&self, s: SeqNumber) -> u32 {
        (s - (IRS + 1)) as u32 + self.origin
    }

    /// Delivers the table's segment `first-last` (bytes, inclusive) and
    /// returns the one ACK it draws: (ACK number, SACK blocks), in the
    /// table's numbers.
    fn receive(&mut self, first: u32, last: u32) -> (u32, Vec<(u32, u32)>) {
        let len = (last - first + 1) as usize;
        let seq = self.seq(first);
        let (_, out) = input(&mut self.t, ms(200), ack(seq, ISS + 1), bytes(len));
        assert_eq!(out.len(), 1, "segment {first}-{last}: one immediate ACK");
        let r = &out[0].repr;
        assert!(out[0].payload.is_empty());
        let blocks = r
            .sack_ranges
            .iter()
            .map_while(|b| *b)
            .map(|(s, e)| (self.table(SeqNumber(s)), self.table(SeqNumber(e))))
            .collect();
        (self.table(r.ack_number.expect("an ACK")), blocks)
    }

    fn dsacks_sent(&self) -> u64 {
        self.t.stats.losses().dsacks_sent
    }
}

/// RFC 2883 §4.1.1, Example 1: "Reporting a duplicate segment" (the ACKs
/// of two segments are lost, the sender retransmits the first).
#[test]
fn rfc2883_example_1_reports_a_duplicate_segment_below_the_cumulative_ack() {
    let mut r = Rfc::new(3000);
    assert_eq!(r.receive(3000, 3499), (3500, vec![]));
    assert_eq!(r.receive(3500, 3999), (4000, vec![]));
    assert_eq!(r.receive(3000, 3499), (4000, vec![(3000, 3500)]));
    assert_eq!(r.dsacks_sent(), 1);
}

/// RFC 2883 §4.1.2, Example 2: "Reporting an out-of-order segment and a
/// duplicate segment": the D-SACK block first, then the SACK block.
#[test]
fn rfc2883_example_2_reports_a_duplicate_segment_then_the_out_of_order_block() {
    let mut r = Rfc::new(3000);
    assert_eq!(r.receive(3000, 3499), (3500, vec![]));
    assert_eq!(r.receive(3500, 3999), (4000, vec![]));
    // 4000-4499 dropped.
    assert_eq!(r.receive(4500, 4999), (4000, vec![(4500, 5000)]));
    assert_eq!(
        r.receive(3000, 3499),
        (4000, vec![(3000, 3500), (4500, 5000)])
    );
}

/// RFC 2883 §4.1.3, Example 3: "Reporting a duplicate of an out-of-order
/// segment" (the network duplicated it): the D-SACK block, then the
/// larger block holding it (§4: "the second SACK block ... should specify
/// that (possibly larger) block of data").
#[test]
fn rfc2883_example_3_reports_a_duplicate_out_of_order_segment_then_its_block() {
    let mut r = Rfc::new(3500);
    assert_eq!(r.receive(3500, 3999), (4000, vec![]));
    // 4000-4499 dropped.
    assert_eq!(r.receive(4500, 4999), (4000, vec![(4500, 5000)]));
    assert_eq!(r.receive(5000, 5499), (4000, vec![(4500, 5500)]));
    assert_eq!(
        r.receive(5000, 5499),
        (4000, vec![(5000, 5500), (4500, 5500)])
    );
}

/// RFC 2883 §4.2.1, Example 4: "Reporting a single duplicate subsegment":
/// a 1000-byte retransmission half of which had arrived (late).
#[test]
fn rfc2883_example_4_reports_only_the_duplicate_part_of_a_segment() {
    let mut r = Rfc::new(500);
    assert_eq!(r.receive(500, 999), (1000, vec![]));
    // 1000-1499 delayed, 1500-1999 dropped.
    assert_eq!(r.receive(2000, 2499), (1000, vec![(2000, 2500)]));
    assert_eq!(r.receive(1000, 1499), (1500, vec![(2000, 2500)]));
    assert_eq!(r.receive(1000, 1999), (2500, vec![(1000, 1500)]));
}

/// RFC 2883 §4.2.2, Example 5: "Two non-contiguous duplicate subsegments
/// covered by the cumulative acknowledgement": only the first is reported.
#[test]
fn rfc2883_example_5_reports_the_first_of_two_duplicate_subsegments_below_the_ack() {
    let mut r = Rfc::new(500);
    assert_eq!(r.receive(500, 999), (1000, vec![]));
    // 1000-1499 delayed, 1500-1999 dropped, 2000-2499 delayed,
    // 2500-2999 dropped.
    assert_eq!(r.receive(3000, 3499), (1000, vec![(3000, 3500)]));
    assert_eq!(r.receive(1000, 1499), (1500, vec![(3000, 3500)]));
    assert_eq!(
        r.receive(2000, 2499),
        (1500, vec![(2000, 2500), (3000, 3500)])
    );
    assert_eq!(
        r.receive(1000, 2499),
        (2500, vec![(1000, 1500), (3000, 3500)])
    );
    assert_eq!(r.dsacks_sent(), 1);
}

/// RFC 2883 §4.2.3, Example 6: "Two non-contiguous duplicate subsegments
/// not covered by the cumulative acknowledgement": the first duplicate,
/// then the block holding it, then the other block.
#[test]
fn rfc2883_example_6_reports_the_first_of_two_duplicate_subsegments_above_the_ack() {
    let mut r = Rfc::new(500);
    assert_eq!(r.receive(500, 999), (1000, vec![]));
    // 1000-1499 dropped, 1500-1999 delayed, 2000-2499 dropped,
    // 2500-2999 delayed, 3000-3499 dropped.
    assert_eq!(r.receive(3500, 3999), (1000, vec![(3500, 4000)]));
    // The retransmission of 1000-1499 is dropped again.
    assert_eq!(
        r.receive(1500, 1999),
        (1000, vec![(1500, 2000), (3500, 4000)])
    );
    assert_eq!(
        r.receive(2500, 2999),
        (1000, vec![(2500, 3000), (1500, 2000), (3500, 4000)])
    );
    assert_eq!(
        r.receive(1500, 2999),
        (1000, vec![(1500, 2000), (1500, 3000), (3500, 4000)])
    );
}

/// Linux's `tcp_dsack_mult.pkt` (MSS 1000, no timestamps): SACK blocks
/// newest first; an in-order segment that covers out-of-order data
/// reports the covered part (extended over adjacent pieces, not over a
/// disjoint one: 1001:3001, where Linux before its 2025 `tcp_ofo_queue`
/// fix reported 1001:6001); an old segment is reported below the ACK.
#[test]
fn duplicates_are_reported_like_linux_tcp_dsack_mult() {
    let mut r = Rfc::new(1);
    let last = |first: u32, end: u32| (first, end - 1);
    let mut rx = |(f, l): (u32, u32)| r.receive(f, l);
    assert_eq!(rx(last(1001, 2001)), (1, vec![(1001, 2001)]));
    assert_eq!(rx(last(2001, 3001)), (1, vec![(1001, 3001)]));
    assert_eq!(rx(last(4001, 5001)), (1, vec![(4001, 5001), (1001, 3001)]));
    assert_eq!(
        rx(last(7001, 8001)),
        (1, vec![(7001, 8001), (4001, 5001), (1001, 3001)])
    );
    assert_eq!(rx(last(1, 6001)), (6001, vec![(1001, 3001), (7001, 8001)]));
    assert_eq!(rx(last(6001, 8001)), (8001, vec![(7001, 8001)]));
    assert_eq!(rx(last(1, 1001)), (8001, vec![(1, 1001)]));
    assert_eq!(r.dsacks_sent(), 3);
}

/// RFC 2883 §4: "Each duplicate contiguous sequence of data received is
/// reported in at most one D-SACK block. (I.e., the receiver sends two
/// identical D-SACK blocks in subsequent packets only if the receiver
/// receives two duplicate segments.)"
#[test]
fn a_dsack_block_is_sent_once_per_duplicate_received() {
    let mut r = Rfc::new(0);
    assert_eq!(r.receive(0, 499), (500, vec![]));
    assert_eq!(r.receive(0, 499), (500, vec![(0, 500)]));
    assert_eq!(r.receive(500, 999), (1000, vec![]), "not repeated");
    assert_eq!(r.receive(0, 499), (1000, vec![(0, 500)]), "a new duplicate");
    assert_eq!(r.dsacks_sent(), 2);
    assert!(r.t.cold.is_none(), "nothing left pending");
}

/// A full-sized duplicate, which alone would not be ACKed at once, is
/// answered by an immediate ACK carrying the DSACK.
#[test]
fn a_duplicate_segment_is_acked_at_once_with_its_dsack() {
    let mut r = Rfc::new(0);
    let mss = MSS as u32;
    // Two full segments draw one ACK (every second segment).
    let (s0, s1) = (r.seq(0), r.seq(mss));
    let (_, out) = input(&mut r.t, ms(200), ack(s0, ISS + 1), bytes(MSS));
    assert!(out.is_empty(), "delayed");
    let (_, out) = input(&mut r.t, ms(200), ack(s1, ISS + 1), bytes(MSS));
    assert_eq!(out.len(), 1);
    assert_eq!(r.receive(mss, 2 * mss - 1), (2 * mss, vec![(mss, 2 * mss)]));
}

/// With `dsack` off (Linux `tcp_dsack=0`), or without SACK, duplicates
/// are ACKed with plain SACK blocks (or none).
#[test]
fn no_dsack_is_sent_when_switched_off_or_without_sack() {
    let off = TcpConfig {
        dsack: false,
        ..with_sack()
    };
    let mut r = Rfc::with(3000, &off);
    r.receive(3000, 3499);
    r.receive(4000, 4499);
    assert_eq!(r.receive(3000, 3499), (3500, vec![(4000, 4500)]));
    assert_eq!(r.receive(4000, 4499), (3500, vec![(4000, 4500)]));
    assert_eq!(r.dsacks_sent(), 0);

    let mut t = established_with(&plain(), syn_ack_all());
    assert!(!t.sack_enabled);
    let data = ack(IRS + 1, ISS + 1);
    input(&mut t, ms(200), data, bytes(100));
    let (_, out) = input(&mut t, ms(200), data, bytes(100));
    assert_one_ack(&out, ISS + 1, IRS + 101);
    assert!(out[0].repr.sack_ranges[0].is_none());
}

/// Beside timestamps a SACK option holds three blocks: the DSACK and the
/// two most recent SACK blocks.
#[test]
fn a_dsack_leaves_two_sack_blocks_beside_timestamps() {
    let cfg = TcpConfig {
        timestamps: true,
        ..with_sack()
    };
    let mut t = established_with(&cfg, syn_ack_all());
    let at = |k: usize| IRS + 1 + k * 100;
    let seg = |k: usize| Repr {
        timestamp: Some((800, 1)),
        ..ack(at(k), ISS + 1)
    };
    for k in [2, 4, 6] {
        input(&mut t, ms(200), seg(k), bytes(50));
    }
    let (_, out) = input(&mut t, ms(200), seg(4), bytes(50));
    let blocks: Vec<_> = out[0].repr.sack_ranges.iter().map_while(|b| *b).collect();
    let b = |k: usize| (at(k).0, (at(k) + 50).0);
    assert_eq!(blocks, [b(4), b(4), b(6)]);
}

/// The sender counts ACKs that lead with a DSACK (RFC 2883 §4: below the
/// cumulative ACK, or inside the second block), and under RFC 6675 loss
/// detection does not take one for a duplicate ACK: it reports a
/// duplicate, not new out-of-order data.
#[test]
fn the_sender_counts_dsacks_and_does_not_take_them_for_duplicate_acks() {
    let cfg = TcpConfig {
        loss_detection: crate::tcp::LossDetection::Rfc6675,
        ..with_sack()
    };
    let mut t = established_with(&cfg, syn_ack_all());
    t.write(bytes(10 * MSS));
    output(&mut t, ms(100));
    let una = ISS + 1 + MSS;
    let mut d = ack(IRS + 1, una);
    input(&mut t, ms(200), d, Message::new());
    d.sack_ranges[0] = Some(((ISS + 1).0, una.0));
    for _ in 0..4 {
        let (_, out) = input(&mut t, ms(201), d, Message::new());
        assert!(
            out.iter().all(|s| s.payload.is_empty()),
            "no retransmission"
        );
    }
    assert_eq!(t.cold().dupacks, 0);
    assert_eq!(t.stats.losses().dsacks_received, 4);
    assert_eq!(t.stats.losses().fast_recoveries, 0);
}

/// A retransmitted FIN is a duplicate too: in CLOSE-WAIT it is reported
/// (Linux's `tcp_data_queue` sets a DSACK for it), in TIME-WAIT not (Linux
/// answers from its time-wait socket, which has no SACK state).
#[test]
fn a_repeated_fin_is_dsacked_in_close_wait_but_not_in_time_wait() {
    let fin = seg(Control::Fin, IRS + 1, Some(ISS + 1));
    let mut t = established_with(&with_sack(), syn_ack_all());
    input(&mut t, ms(200), fin, Message::new());
    assert_eq!(t.state, State::CloseWait);
    let (_, out) = input(&mut t, ms(300), fin, Message::new());
    assert_one_ack(&out, ISS + 1, IRS + 2);
    let fin_block = ((IRS + 1).0, (IRS + 2).0);
    assert_eq!(out[0].repr.sack_ranges, [Some(fin_block), None, None, None]);

    let mut t = established_with(&with_sack(), syn_ack_all());
    t.shutdown_write();
    output(&mut t, ms(100));
    let fin_ack = seg(Control::Fin, IRS + 1, Some(ISS + 2));
    input(&mut t, ms(200), fin_ack, Message::new());
    assert_eq!(t.state, State::TimeWait);
    let (_, out) = input(&mut t, ms(300), fin_ack, Message::new());
    assert_one_ack(&out, ISS + 2, IRS + 2);
    assert!(out[0].repr.sack_ranges[0].is_none());
}

/// The original of a spuriously retransmitted segment, delivered late,
/// carries an older timestamp than the retransmission that overtook it:
/// PAWS drops it (RFC 7323 §5.3 R1), and the ACK still reports it as a
/// duplicate (Linux's `tcp_validate_incoming` answers with
/// `tcp_send_dupack`), so the sender learns the retransmission was
/// spurious.
#[test]
fn a_late_original_dropped_by_paws_is_still_reported_as_a_duplicate() {
    let cfg = TcpConfig {
        timestamps: true,
        ..with_sack()
    };
    let mut t = established_with(&cfg, syn_ack_all());
    let data = |seq: SeqNumber, tsval: u32| Repr {
        timestamp: Some((tsval, 1)),
        ..ack(seq, ISS + 1)
    };
    input(&mut t, ms(200), data(IRS + 1, 800), bytes(100));
    input(&mut t, ms(201), data(IRS + 101, 900), bytes(100));
    let (_, out) = input(&mut t, ms(202), data(IRS + 1, 800), bytes(100));
    assert_eq!(t.stats.losses().paws_rejected, 1);
    assert_one_ack(&out, ISS + 1, IRS + 201);
    let block = ((IRS + 1).0, (IRS + 101).0);
    assert_eq!(out[0].repr.sack_ranges, [Some(block), None, None, None]);
}
