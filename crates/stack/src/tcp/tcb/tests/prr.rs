//! Proportional Rate Reduction in the TCB (`../prr.rs`, RFC 9937): each
//! test replays one of Linux's packetdrill selftests for PRR
//! (`tools/testing/selftests/net/packetdrill/tcp_fast_recovery_prr-*.pkt`)
//! with our segment size, and expects what Linux sends. CUBIC, SACK and
//! RACK as Linux's defaults; timestamps off (as in [`with_sack`]).

use super::*;

/// ESTABLISHED with SACK and CUBIC (ssthresh = 0.7 cwnd), `prr` on or
/// off, ten segments written and sent at 100 ms.
fn ten_out(prr: bool) -> Tcb {
    let cfg = TcpConfig {
        congestion: Algorithm::Cubic,
        loss_detection: crate::tcp::LossDetection::Rack,
        prr,
        ..with_sack()
    };
    let mut t = established_with(
        &cfg,
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    t.write(bytes(10 * MSS));
    assert_eq!(output(&mut t, ms(100)).len(), 10);
    t
}

/// The data segments in `out`, as segment indexes (0 = the first byte).
fn data_segs(out: &[Segment]) -> Vec<usize> {
    out.iter()
        .filter(|s| !s.payload.is_empty())
        .map(|s| (s.repr.seq_number - (ISS + 1)) as usize / MSS)
        .collect()
}

/// `tcp_fast_recovery_prr-ss-30pkt-lost1_4.pkt`: segments 0–3 are lost
/// and the rest SACKed one per ACK. The third SACK starts the recovery
/// with 3 segments in flight against ssthresh 7: PRR's slow-start bound
/// resends one segment per ACK (Linux: `> . 1:1001` after the third SACK,
/// then one per SACK), where RFC 6675 resends all four at once. After the
/// recovery the window is ssthresh: the next write sends 7 segments.
#[test]
fn four_losses_are_resent_one_per_ack_and_recovery_ends_at_ssthresh() {
    let mut t = ten_out(true);
    let mut sent = Vec::new();
    for k in 5..=10 {
        let (_, out) = input(&mut t, ms(110), sack_ack(0, &[(4, k)]), Message::new());
        sent.push(data_segs(&out));
    }
    assert_eq!(t.stats.losses().fast_recoveries, 1);
    let want: [&[usize]; 6] = [&[], &[], &[0], &[1], &[2], &[3]];
    assert_eq!(sent, want);
    // The receiver acknowledges everything, hole by hole.
    for una in 1..=3 {
        let (_, out) = input(&mut t, ms(120), sack_ack(una, &[(4, 10)]), Message::new());
        assert!(data_segs(&out).is_empty(), "nothing left to send");
    }
    input(&mut t, ms(120), sack_ack(10, &[]), Message::new());
    assert!(t.cold().recovery.is_none());
    assert_eq!(t.cc.window(), (7 * MSS) as u64);
    t.write(bytes(10 * MSS));
    assert_eq!(
        data_segs(&output(&mut t, ms(130))),
        (10..17).collect::<Vec<_>>()
    );
}

/// The same losses with PRR off: RFC 6675 sends while the pipe (3
/// segments) is below ssthresh (7), so the four retransmissions leave at
/// once on the third SACK. (What PRR changes, and the test above's
/// counterpart.)
#[test]
fn without_prr_the_four_losses_leave_in_one_burst() {
    let mut t = ten_out(false);
    let mut sent = Vec::new();
    for k in 5..=7 {
        let (_, out) = input(&mut t, ms(110), sack_ack(0, &[(4, k)]), Message::new());
        sent.extend(data_segs(&out));
    }
    assert_eq!(sent, [0, 1, 2, 3]);
}

/// `tcp_fast_recovery_prr-ss-10pkt-lost-1.pkt`: segment 0 lost. The third
/// SACK resends it, leaving in flight exactly ssthresh (7); from then on
/// each SACK of one segment lets one new segment go (Linux: `> .
/// 10001:11001` after `sack 1001:5001`, and so on), and the window is 7
/// when the recovery ends.
#[test]
fn one_loss_at_ssthresh_sends_one_new_segment_per_segment_delivered() {
    let mut t = ten_out(true);
    let mut first = Vec::new();
    for k in 2..=4 {
        let (_, out) = input(
            &mut t,
            ms(110 + k as u64),
            sack_ack(0, &[(1, k)]),
            Message::new(),
        );
        first.extend(data_segs(&out));
    }
    assert_eq!(first, [0], "the fast retransmit, nothing more");
    t.write(bytes(7 * MSS));
    assert!(data_segs(&output(&mut t, ms(115))).is_empty());
    for k in 5..=10 {
        let (_, out) = input(
            &mut t,
            ms(110 + k as u64),
            sack_ack(0, &[(1, k)]),
            Message::new(),
        );
        assert_eq!(data_segs(&out), [k + 5], "after SACK of segment {}", k - 1);
    }
    let (_, out) = input(&mut t, ms(130), sack_ack(10, &[]), Message::new());
    assert!(t.cold().recovery.is_none());
    assert_eq!(t.cc.window(), (7 * MSS) as u64);
    assert_eq!(data_segs(&out), [16]);
}
