//! DCTCP's ECN in the TCB (RFC 8257): it asks for ECN whatever the
//! host's mode, its receiver echoes each data segment's CE state exactly
//! (§3.2), and its sender reports every ACK's ECE to the algorithm.

use super::*;
use crate::tcp::ecn::NOT_ECT;

fn dctcp(mode: EcnMode) -> TcpConfig {
    TcpConfig {
        congestion: Algorithm::Dctcp,
        ..with_ecn(mode)
    }
}

/// Linux's `TCP_CONG_NEEDS_ECN`: a DCTCP connection's SYN asks for ECN
/// even on a host that would not (`tcp_ecn=0` or 2).
#[test]
fn a_dctcp_syn_asks_for_ecn_whatever_the_host_mode() {
    for mode in [EcnMode::Off, EcnMode::Accept, EcnMode::On] {
        let (_, out) = syn_sent(&dctcp(mode));
        assert!(out[0].repr.ece && out[0].repr.cwr, "{mode:?}");
        let t = established_with(&dctcp(mode), syn_ack_ecn(true, false));
        assert!(t.ecn.is_on(), "{mode:?}");
    }
}

/// Linux's DCTCP sends every segment ECT(0) (`INET_ECN_xmit` on a
/// `TCP_CONG_NEEDS_ECN` socket): its SYN, the SYN-ACK answering an
/// ECN-setup SYN, pure ACKs and retransmissions, where RFC 3168 allows
/// only new data; a DCTCP connection whose peer refused ECN sends none,
/// and other algorithms keep RFC 3168's rule.
#[test]
fn a_dctcp_connection_sends_every_segment_ect_once_ecn_is_agreed() {
    let (_, syn) = syn_sent(&dctcp(EcnMode::Accept));
    assert!(syn[0].ect, "DCTCP's SYN");
    let ecn_syn = Repr {
        ece: true,
        cwr: true,
        ..client_syn()
    };
    let (_, syn_ack) = syn_received(&dctcp(EcnMode::Accept), ecn_syn);
    assert!(syn_ack[0].ect, "SYN-ACK to an ECN-setup SYN");
    let (_, syn_ack) = syn_received(&dctcp(EcnMode::Accept), client_syn());
    assert!(!syn_ack[0].ect, "SYN-ACK to a SYN without ECN");
    let (_, syn) = syn_sent(&with_ecn(EcnMode::On));
    assert!(!syn[0].ect, "CUBIC's SYN (RFC 3168 §6.1.1)");

    let mut t = established_with(&dctcp(EcnMode::On), syn_ack_ecn(true, false));
    // A pure ACK (here for a short segment, which is ACKed at once).
    let out = input_ip(&mut t, ms(200), data(IRS + 1, 10), bytes(10), ECT0);
    assert!(out.len() == 1 && out[0].payload.is_empty() && out[0].ect);
    // A retransmission after a timeout.
    t.write(bytes(MSS));
    assert!(output(&mut t, ms(210))[0].ect);
    let at = t.deadline().unwrap();
    let (_, out) = timer(&mut t, at);
    assert!(
        out[0].repr.seq_number == ISS + 1 && out[0].ect,
        "retransmission"
    );

    let mut refused = established_with(&dctcp(EcnMode::On), syn_ack_ecn(false, false));
    let out = input_ip(&mut refused, ms(200), data(IRS + 1, 10), bytes(10), NOT_ECT);
    assert!(!out[0].ect, "ECN refused: no ECT");
    refused.write(bytes(MSS));
    assert!(!output(&mut refused, ms(210))[0].ect);
}

/// RFC 8257 §3.2 with delayed ACKs: when a segment's CE state differs
/// from DCTCP.CE, the data whose ACK was being delayed is ACKed first
/// with the old ECE, then the new segment at once with the new one; ACKs
/// within a run of equal states are delayed as usual; CWR changes nothing.
#[test]
fn the_dctcp_receiver_acks_each_ce_change_at_once_with_the_old_state_first() {
    let mut t = established_with(&dctcp(EcnMode::On), syn_ack_ecn(true, false));
    let mut seq = IRS + 1;
    let mut recv = |t: &mut Tcb, at: u64, ip: u8, cwr: bool| {
        let r = Repr {
            cwr,
            ..data(seq, MSS)
        };
        seq += MSS;
        input_ip(t, ms(at), r, bytes(MSS), ip)
    };
    let acks = |out: &[Segment]| -> Vec<(u32, bool)> {
        out.iter()
            .map(|s| {
                (
                    (s.repr.ack_number.unwrap() - (IRS + 1)) as u32 / MSS as u32,
                    s.repr.ece,
                )
            })
            .collect()
    };
    assert!(recv(&mut t, 200, ECT0, false).is_empty(), "delayed ACK");
    // 0 → 1: segment 1 ACKed without ECE, then segment 2 with it.
    assert_eq!(acks(&recv(&mut t, 201, CE, false)), [(1, false), (2, true)]);
    // CE, CE: one delayed ACK for both, with ECE.
    assert!(recv(&mut t, 202, CE, false).is_empty());
    assert_eq!(acks(&recv(&mut t, 203, CE, false)), [(4, true)]);
    // A CWR does not end the echo (unlike RFC 3168).
    assert!(recv(&mut t, 204, CE, true).is_empty());
    // 1 → 0: segment 5 (CE) ACKed with ECE, then segment 6 without.
    assert_eq!(
        acks(&recv(&mut t, 205, ECT0, false)),
        [(5, true), (6, false)]
    );
    // 0 → 1 with nothing delayed: one immediate ACK.
    assert_eq!(acks(&recv(&mut t, 206, CE, false)), [(7, true)]);
    assert_eq!(t.stats().ce_received, 5);
}

/// RFC 8257 §3.3: the sender folds the ECE'd fraction of the bytes of a
/// window into α, and an ECE cuts the window by α/2 once per window: with
/// α still at its initial 1 the first cut halves the window.
#[test]
fn a_dctcp_sender_cuts_by_half_alpha_on_ece() {
    let mut t = established_with(&dctcp(EcnMode::On), syn_ack_ecn(true, false));
    t.write(bytes(10 * MSS));
    assert_eq!(output(&mut t, ms(150)).len(), 10);
    let w = t.cc.window();
    let ece = |a| Repr {
        ece: true,
        ..ack(IRS + 1, a)
    };
    input(&mut t, ms(200), ece(ISS + 1 + MSS), Message::new());
    assert_eq!(t.stats().ecn_reductions, 1);
    // The ACK's slow-start growth (one segment) comes first.
    assert_eq!(
        t.cc.window(),
        (w + MSS as u64) / 2,
        "α = 1 at first: halved"
    );
    // More ECEs in the same window: no further cut.
    input(&mut t, ms(201), ece(ISS + 1 + 2 * MSS), Message::new());
    assert_eq!(t.stats().ecn_reductions, 1);
}
