//! Unit tests of the TCB: each drives a [`Tcb`] directly with hand-built
//! segments and checks one rule, quoting the RFC text it comes from.
//!
//! Conventions: we are `LOCAL` with ISS 1000 (active opens) and the peer is
//! `REMOTE` with IRS 50 000; [`plain`] turns SACK and timestamps off so the
//! arithmetic stays readable, and the peer's SYN-ACK arrives 100 ms after
//! our SYN (SRTT 100 ms, RTO 300 ms).

use super::fuzz::{bare as seg, LOCAL, REMOTE};
use super::*;
use elvis_tcpcc::Algorithm;
const ISS: SeqNumber = SeqNumber(1_000);
const IRS: SeqNumber = SeqNumber(50_000);
const MTU: usize = 1500;
const MSS: usize = 1460;

fn ms(n: u64) -> Time {
    Time::from_millis(n)
}

/// SACK and timestamps off, NewReno.
fn plain() -> TcpConfig {
    TcpConfig {
        sack: false,
        timestamps: false,
        congestion: Algorithm::NewReno,
        ..TcpConfig::default()
    }
}

/// SACK on, timestamps off, NewReno.
fn with_sack() -> TcpConfig {
    TcpConfig {
        sack: true,
        ..plain()
    }
}

fn cc(cfg: &TcpConfig) -> Controller {
    elvis_tcpcc::new(cfg.congestion, MSS as u64, cfg.initial_window_segments)
}

fn ack(seq: SeqNumber, ack: SeqNumber) -> Repr {
    seg(Control::None, seq, Some(ack))
}

/// `n` bytes whose values follow their position.
fn bytes(n: usize) -> Message {
    Message::from_vec((0..n).map(|i| (i % 251) as u8).collect())
}

fn input(t: &mut Tcb, now: Time, mut r: Repr, payload: Message) -> (Effects, Vec<Segment>) {
    r.payload_len = payload.len();
    let mut out = Vec::new();
    let fx = t.input(now, &r, payload, &mut out);
    (fx, out)
}

fn output(t: &mut Tcb, now: Time) -> Vec<Segment> {
    let mut out = Vec::new();
    t.output(now, &mut out);
    out
}

fn timer(t: &mut Tcb, now: Time) -> (Effects, Vec<Segment>) {
    let mut out = Vec::new();
    let fx = t.on_timer(now, &mut out);
    (fx, out)
}

/// Asserts that `out` is exactly one pure ACK <SEQ=seq><ACK=ack>.
fn assert_one_ack(out: &[Segment], seq: SeqNumber, ack: SeqNumber) {
    assert_eq!(out.len(), 1, "expected one ACK");
    let r = &out[0].repr;
    assert_eq!(r.control, Control::None);
    assert_eq!((r.seq_number, r.ack_number), (seq, Some(ack)));
    assert!(out[0].payload.is_empty());
}

/// Active open at time 0: returns the TCB and its SYN.
fn syn_sent(cfg: &TcpConfig) -> (Tcb, Vec<Segment>) {
    let mut t = Tcb::connect(cfg, LOCAL, REMOTE, ISS, cc(cfg), MTU);
    let out = output(&mut t, Time::ZERO);
    (t, out)
}

/// The peer's SYN-ACK to our SYN, with MSS 1460 and nothing else.
fn syn_ack() -> Repr {
    Repr {
        max_seg_size: Some(MSS as u16),
        ..seg(Control::Syn, IRS, Some(ISS + 1))
    }
}

/// A SYN-ACK with every option (window scale 7, SACK, timestamps).
fn syn_ack_all() -> Repr {
    Repr {
        window_scale: Some(7),
        sack_permitted: true,
        timestamp: Some((777, 1)),
        ..syn_ack()
    }
}

/// ESTABLISHED by an active open whose SYN-ACK came 100 ms after the SYN.
fn established_with(cfg: &TcpConfig, synack: Repr) -> Tcb {
    let (mut t, _) = syn_sent(cfg);
    let (fx, _) = input(&mut t, ms(100), synack, Message::new());
    assert!(fx.established);
    assert_eq!(t.state, State::Established);
    t
}

fn established() -> Tcb {
    established_with(&plain(), syn_ack())
}

/// The peer's SYN opening a connection to us (MSS 1460 only).
fn client_syn() -> Repr {
    Repr {
        max_seg_size: Some(MSS as u16),
        ..seg(Control::Syn, IRS, None)
    }
}

/// Passive open by `syn` at time 0: returns the TCB and its SYN-ACK.
fn syn_received(cfg: &TcpConfig, syn: Repr) -> (Tcb, Vec<Segment>) {
    let mut t = Tcb::accept(cfg, LOCAL, REMOTE, ISS, cc(cfg), MTU, &syn);
    let out = output(&mut t, Time::ZERO);
    (t, out)
}

/// ESTABLISHED, then `n` bytes written and sent at `now` (one segment
/// each up to the MSS, as the initial window allows).
fn sending(n: usize, now: Time) -> (Tcb, Vec<Segment>) {
    let mut t = established();
    t.write(bytes(n));
    let out = output(&mut t, now);
    (t, out)
}

// ----------------------------------------------------------------------
// Opening
// ----------------------------------------------------------------------

/// RFC 9293 §3.10.1 OPEN: "A SYN segment of the form <SEQ=ISS><CTL=SYN>
/// is sent ... Enter SYN-SENT state"; RFC 6298 §2.1: "Until a round-trip
/// time (RTT) measurement has been made ... the sender SHOULD set RTO <- 1
/// second". Like Linux, the SYN offers MSS, window scale, SACK and
/// timestamps (RFC 7323 §2.2, §3.2; RFC 2018 §2).
#[test]
fn active_open_sends_one_syn_offering_every_option() {
    let (t, out) = syn_sent(&TcpConfig::default());
    assert_eq!(t.state, State::SynSent);
    assert_eq!(out.len(), 1);
    let r = &out[0].repr;
    assert_eq!(
        (r.control, r.seq_number, r.ack_number),
        (Control::Syn, ISS, None)
    );
    assert_eq!(r.max_seg_size, Some(1460));
    // 4 MiB of receive buffer needs a shift of 7 (65 535 << 7 >= 4 MiB).
    assert_eq!(r.window_scale, Some(7));
    assert!(r.sack_permitted);
    let (tsval, tsecr) = r.timestamp.expect("timestamps offered");
    assert!(tsval != 0 && tsecr == 0);
    assert_eq!(t.deadline(), Some(Time::from_secs(1)));
}

/// RFC 9293 §3.10.7.3: "If SND.UNA > ISS (our SYN has been ACKed), change
/// the connection state to ESTABLISHED, form an ACK segment
/// <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK> and send it."
#[test]
fn syn_sent_enters_established_on_an_acceptable_syn_ack() {
    let (mut t, _) = syn_sent(&plain());
    let (fx, out) = input(&mut t, ms(100), syn_ack(), Message::new());
    assert!(fx.established && fx.writable);
    assert_eq!(t.state, State::Established);
    assert_one_ack(&out, ISS + 1, IRS + 1);
    assert_eq!(t.deadline(), None, "nothing outstanding, no timer");
}

/// RFC 9293 §3.10.7.3: "If SEG.ACK =< ISS or SEG.ACK > SND.NXT, send a
/// reset (unless the RST bit is set, if so drop the segment and return)
/// <SEQ=SEG.ACK><CTL=RST>".
#[test]
fn syn_sent_answers_an_ack_outside_its_syn_with_a_reset() {
    for bad in [ISS, ISS + 2, ISS - 1000] {
        let (mut t, _) = syn_sent(&plain());
        let (fx, out) = input(
            &mut t,
            ms(1),
            seg(Control::Syn, IRS, Some(bad)),
            Message::new(),
        );
        assert!(!fx.established);
        assert_eq!(t.state, State::SynSent);
        assert_eq!(out.len(), 1);
        let r = &out[0].repr;
        assert_eq!(
            (r.control, r.seq_number, r.ack_number),
            (Control::Rst, bad, None)
        );
        // ... and a RST with a bad ACK is dropped without an answer.
        let (_, out) = input(
            &mut t,
            ms(2),
            seg(Control::Rst, IRS, Some(bad)),
            Message::new(),
        );
        assert!(out.is_empty());
        assert_eq!(t.state, State::SynSent);
    }
}

/// RFC 9293 §3.10.7.3 "second, check the RST bit": "If the ACK was
/// acceptable, then signal to the user 'error: connection reset', drop the
/// segment, enter CLOSED state ... Otherwise (no ACK), drop the segment and
/// return." Like Linux, the error reads "connection refused".
#[test]
fn syn_sent_is_refused_by_a_reset_acking_its_syn_and_ignores_one_without_ack() {
    let (mut t, _) = syn_sent(&plain());
    let (fx, out) = input(&mut t, ms(1), seg(Control::Rst, IRS, None), Message::new());
    assert!(out.is_empty() && !fx.closed);
    assert_eq!(t.state, State::SynSent);
    let (fx, out) = input(
        &mut t,
        ms(2),
        seg(Control::Rst, IRS, Some(ISS + 1)),
        Message::new(),
    );
    assert!(out.is_empty());
    assert!(
        fx.closed && fx.established,
        "connect() wakes up with the error"
    );
    assert_eq!(t.state, State::Closed);
    assert_eq!(t.error.as_deref(), Some(&SocketError::ConnectionRefused));
}

/// RFC 9293 §3.10.7.3 "fifth, if neither of the SYN or RST bits is set,
/// then drop the segment and return."
#[test]
fn syn_sent_drops_a_segment_with_neither_syn_nor_rst() {
    let (mut t, _) = syn_sent(&plain());
    let (fx, out) = input(&mut t, ms(1), ack(IRS, ISS + 1), bytes(10));
    assert!(out.is_empty() && !fx.established && !fx.readable);
    assert_eq!(t.state, State::SynSent);
}

/// RFC 9293 §3.10.7.3: "Otherwise, enter SYN-RECEIVED, form a SYN,ACK
/// segment <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK> and send it"; Figure 8
/// (simultaneous connection synchronization), line 6: the peer's SYN,ACK
/// takes SYN-RECEIVED to ESTABLISHED (Linux accepts it the same way).
#[test]
fn simultaneous_open_goes_through_syn_received_to_established_on_a_syn_ack() {
    let (mut t, _) = syn_sent(&plain());
    let syn = client_syn();
    let (fx, out) = input(&mut t, ms(10), syn, Message::new());
    assert!(!fx.established);
    assert_eq!(t.state, State::SynReceived);
    assert_eq!(out.len(), 1);
    let r = &out[0].repr;
    assert_eq!(
        (r.control, r.seq_number, r.ack_number),
        (Control::Syn, ISS, Some(IRS + 1))
    );
    // The peer's SYN,ACK (line 6 of Figure 8).
    let (fx, _) = input(&mut t, ms(20), syn_ack(), Message::new());
    assert!(fx.established);
    assert_eq!(t.state, State::Established);
}

/// RFC 9293 §3.10.7.4, SYN-RECEIVED: "If SND.UNA < SEG.ACK =< SND.NXT,
/// then enter ESTABLISHED state" (the other half of a simultaneous open:
/// the peer's plain ACK).
#[test]
fn simultaneous_open_goes_through_syn_received_to_established_on_an_ack() {
    let (mut t, _) = syn_sent(&plain());
    input(&mut t, ms(10), client_syn(), Message::new());
    assert_eq!(t.state, State::SynReceived);
    let (fx, out) = input(&mut t, ms(20), ack(IRS + 1, ISS + 1), Message::new());
    assert!(fx.established);
    assert_eq!(t.state, State::Established);
    assert!(out.is_empty(), "a bare ACK needs no answer");
}

/// RFC 9293 §3.10.7.2 (LISTEN, "third, check for a SYN"): "Set RCV.NXT to
/// SEG.SEQ+1, IRS is set to SEG.SEQ ... a SYN segment should be sent of the
/// form <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK>. SND.NXT is set to ISS+1 and
/// SND.UNA to ISS. The connection state should be changed to SYN-RECEIVED."
#[test]
fn passive_open_answers_a_syn_with_a_syn_ack() {
    let (t, out) = syn_received(&plain(), client_syn());
    assert_eq!(t.state, State::SynReceived);
    assert_eq!(out.len(), 1);
    let r = &out[0].repr;
    assert_eq!(
        (r.control, r.seq_number, r.ack_number),
        (Control::Syn, ISS, Some(IRS + 1))
    );
    assert_eq!((t.snd_una, t.snd_nxt, t.rcv_nxt), (ISS, ISS + 1, IRS + 1));
    assert_eq!(t.deadline(), Some(Time::from_secs(1)));
}

/// RFC 9293 §3.10.7.4, SYN-RECEIVED: "If SND.UNA < SEG.ACK =< SND.NXT,
/// then enter ESTABLISHED state and continue processing"; the handshake
/// gives the first RTT sample (RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2).
#[test]
fn syn_received_enters_established_on_the_ack_of_its_syn() {
    let (mut t, _) = syn_received(&plain(), client_syn());
    let (fx, out) = input(&mut t, ms(100), ack(IRS + 1, ISS + 1), Message::new());
    assert!(fx.established);
    assert_eq!(t.state, State::Established);
    assert!(out.is_empty());
    assert_eq!(t.srtt(), Some(Duration::from_millis(100)));
    assert_eq!(t.rttvar(), Duration::from_millis(50));
    assert_eq!(t.rto(), Duration::from_millis(300));
}

/// RFC 9293 §3.10.7.4, SYN-RECEIVED: "If the segment acknowledgment is not
/// acceptable, form a reset segment <SEQ=SEG.ACK><CTL=RST> and send it."
#[test]
fn syn_received_answers_an_unacceptable_ack_with_a_reset() {
    let (mut t, _) = syn_received(&plain(), client_syn());
    let (fx, out) = input(&mut t, ms(1), ack(IRS + 1, ISS + 7), Message::new());
    assert!(!fx.established);
    assert_eq!(t.state, State::SynReceived);
    assert_eq!(out.len(), 1);
    let r = &out[0].repr;
    assert_eq!(
        (r.control, r.seq_number, r.ack_number),
        (Control::Rst, ISS + 7, None)
    );
}

/// RFC 9293 §3.10.7.4, SYN-RECEIVED, "second, check the RST bit": "If this
/// connection was initiated with a passive OPEN (i.e., came from the LISTEN
/// state), then return this connection to LISTEN state and return. The
/// user need not be informed." Our listener never stopped listening: the
/// embryonic TCB closes, and the glue (`tcp::drive`) frees its slot without
/// queueing it for `accept`, because it carries an error.
#[test]
fn syn_received_rst_returns_a_passive_open_to_listen() {
    let (mut t, _) = syn_received(&plain(), client_syn());
    let (fx, out) = input(
        &mut t,
        ms(1),
        seg(Control::Rst, IRS + 1, None),
        Message::new(),
    );
    assert!(out.is_empty());
    assert!(fx.closed);
    assert_eq!(t.state, State::Closed);
    assert!(t.error.is_some(), "so the listener does not queue it");
}

/// RFC 6298 §5.4–5.5 applied to the SYN,ACK: "Retransmit the earliest
/// segment that has not been acknowledged", "RTO <- RTO * 2".
#[test]
fn syn_received_retransmits_its_syn_ack_on_timeout() {
    let (mut t, _) = syn_received(&plain(), client_syn());
    let (_, out) = timer(&mut t, Time::from_secs(1));
    assert_eq!(out.len(), 1);
    let r = &out[0].repr;
    assert_eq!(
        (r.control, r.seq_number, r.ack_number),
        (Control::Syn, ISS, Some(IRS + 1))
    );
    assert_eq!(t.deadline(), Some(Time::from_secs(3)));
}

// ----------------------------------------------------------------------
// Option negotiation
// ----------------------------------------------------------------------

/// RFC 9293 §3.7.1: "If an MSS Option is not received at connection setup,
/// TCP implementations MUST assume a default send MSS of 536"; RFC 7323
/// §2.2: without a Window Scale option in the SYN,ACK "window scaling
/// [is] disabled in both directions"; RFC 7323 §3.2 and RFC 2018 §2: no
/// timestamps or SACK unless both SYNs carry them.
#[test]
fn a_syn_ack_without_options_means_mss_536_and_no_scaling_sack_or_timestamps() {
    let bare = seg(Control::Syn, IRS, Some(ISS + 1));
    let mut t = established_with(&TcpConfig::default(), bare);
    assert_eq!(t.smss(), 536);
    assert_eq!((t.snd_wscale, t.rcv_wscale), (0, 0));
    assert!(!t.sack_enabled && !t.ts_enabled);
    t.write(bytes(2000));
    let out = output(&mut t, ms(100));
    assert!(out.len() >= 3);
    for s in &out {
        assert!(s.payload.len() <= 536);
        assert!(s.repr.timestamp.is_none() && s.repr.sack_ranges[0].is_none());
        // An unscaled window: 4 MiB of buffer shows as 65 535.
        assert_eq!(s.repr.window_len, 65_535);
    }
}

/// RFC 7323 §2.3 (shift counts), §3.2 ("TSecr ... echoes a timestamp value
/// that was sent by the remote TCP in the TSval field"), RFC 2018 §2; with
/// timestamps a full segment carries MSS − 12 bytes, as on Linux.
#[test]
fn a_syn_ack_with_every_option_enables_them_all() {
    let mut t = established_with(&TcpConfig::default(), syn_ack_all());
    assert_eq!((t.snd_wscale, t.rcv_wscale), (7, 7));
    assert!(t.sack_enabled && t.ts_enabled);
    assert_eq!(t.smss(), MSS - 12);
    t.write(bytes(3000));
    let out = output(&mut t, ms(100));
    assert_eq!(out[0].payload.len(), MSS - 12);
    let (_, tsecr) = out[0].repr.timestamp.expect("timestamps on every segment");
    assert_eq!(tsecr, 777);
    assert_eq!(out[0].repr.window_len as usize, (4 << 20) >> 7);
}

/// RFC 7323 §2.2: "The window field in a segment where the SYN bit is set
/// (i.e., a <SYN> or <SYN,ACK>) MUST NOT be scaled."
#[test]
fn the_window_of_a_syn_ack_is_never_scaled() {
    let synack = Repr {
        window_len: 1_000,
        ..syn_ack_all()
    };
    let t = established_with(&TcpConfig::default(), synack);
    assert_eq!(t.snd_wnd, 1_000);
}

/// RFC 7323 §2.2 ("A TCP MAY send the Window Scale option in a <SYN,ACK>
/// segment only if it has received a Window Scale option in the <SYN>")
/// and the same rule for SACK-permitted (RFC 2018 §2) and timestamps (RFC
/// 7323 §3.2): a passive open offers only what the SYN carried.
#[test]
fn passive_open_offers_only_the_options_the_syn_carried() {
    let (_, out) = syn_received(&TcpConfig::default(), client_syn());
    let r = &out[0].repr;
    assert_eq!(r.max_seg_size, Some(1460));
    assert!(r.window_scale.is_none() && !r.sack_permitted && r.timestamp.is_none());

    let full = Repr {
        window_scale: Some(2),
        sack_permitted: true,
        timestamp: Some((4242, 0)),
        ..client_syn()
    };
    let (t, out) = syn_received(&TcpConfig::default(), full);
    let r = &out[0].repr;
    assert_eq!(r.window_scale, Some(7));
    assert!(r.sack_permitted);
    assert_eq!(r.timestamp.map(|(_, ecr)| ecr), Some(4242));
    assert_eq!(t.snd_wscale, 2);
}

/// RFC 9293 §3.7.1: the sender "MUST ... not send segments larger than
/// the MSS" the peer announced.
#[test]
fn the_peer_mss_caps_our_segment_size() {
    let synack = Repr {
        max_seg_size: Some(1000),
        ..syn_ack()
    };
    let mut t = established_with(&plain(), synack);
    t.write(bytes(3000));
    let out = output(&mut t, ms(100));
    let lens: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(lens, [1000, 1000, 1000]);
}

/// RFC 2018 §2: SACK-permitted "MUST NOT be sent" unless the TCP will use
/// SACK; a stack configured without SACK neither offers nor uses it.
#[test]
fn sack_stays_off_when_configured_off_even_if_the_peer_offers_it() {
    let (_, out) = syn_sent(&plain());
    assert!(!out[0].repr.sack_permitted);
    let t = established_with(&plain(), syn_ack_all());
    assert!(!t.sack_enabled && !t.ts_enabled);
}

// ----------------------------------------------------------------------
// Sequence numbers and acknowledgments
// ----------------------------------------------------------------------

/// RFC 9293 §3.10.7.4 "first, check sequence number": "If an incoming
/// segment is not acceptable, an acknowledgment should be sent in reply
/// (unless the RST bit is set ...): <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>.
/// After sending the acknowledgment, drop the unacceptable segment".
#[test]
fn an_unacceptable_segment_is_answered_with_an_ack_and_dropped() {
    let mut t = established();
    // Far beyond the 4 MiB window.
    let (fx, out) = input(
        &mut t,
        ms(200),
        ack(IRS + 1 + (8 << 20), ISS + 1),
        bytes(100),
    );
    assert!(!fx.readable);
    assert_one_ack(&out, ISS + 1, IRS + 1);
    // An old duplicate, wholly below RCV.NXT.
    let (fx, out) = input(&mut t, ms(201), ack(IRS + 1 - 100, ISS + 1), bytes(100));
    assert!(!fx.readable);
    assert_one_ack(&out, ISS + 1, IRS + 1);
    assert_eq!(t.rcv_nxt, IRS + 1);
}

/// RFC 9293 §3.10.7.4 "fifth, check the ACK field", ESTABLISHED: "If the
/// ACK acks something not yet sent (SEG.ACK > SND.NXT), then send an ACK,
/// drop the segment, and return." The segment's data is dropped with it.
#[test]
fn an_ack_of_unsent_data_is_answered_with_an_ack_and_the_segment_dropped() {
    let (mut t, _) = sending(100, ms(100));
    let (fx, out) = input(&mut t, ms(150), ack(IRS + 1, ISS + 1 + 500), bytes(10));
    assert!(!fx.readable, "the segment's text is not processed");
    assert_eq!(t.rcv_nxt, IRS + 1);
    assert_eq!(t.snd_una, ISS + 1);
    assert_one_ack(&out, ISS + 1 + 100, IRS + 1);
}

/// RFC 9293 §3.10.7.4: "If the ACK is a duplicate (SEG.ACK < SND.UNA), it
/// can be ignored."
#[test]
fn an_old_ack_is_ignored() {
    let (mut t, _) = sending(100, ms(100));
    input(&mut t, ms(200), ack(IRS + 1, ISS + 1 + 100), Message::new());
    assert_eq!(t.snd_una, ISS + 101);
    let (fx, out) = input(&mut t, ms(201), ack(IRS + 1, ISS + 1 + 50), Message::new());
    assert!(out.is_empty() && !fx.readable);
    assert_eq!(t.snd_una, ISS + 101);
}

/// RFC 9293 §3.4: "the space ranges from 0 to 2^32 − 1 ... all arithmetic
/// dealing with sequence numbers must be performed modulo 2^32".
#[test]
fn sequence_numbers_wrap_around_zero_in_both_directions() {
    let cfg = plain();
    let iss = SeqNumber(u32::MAX - 100);
    let irs = SeqNumber(u32::MAX - 50);
    let mut t = Tcb::connect(&cfg, LOCAL, REMOTE, iss, cc(&cfg), MTU);
    output(&mut t, Time::ZERO);
    let synack = Repr {
        max_seg_size: Some(MSS as u16),
        ..seg(Control::Syn, irs, Some(iss + 1))
    };
    input(&mut t, ms(100), synack, Message::new());
    assert_eq!(t.state, State::Established);
    t.write(bytes(3 * MSS));
    let out = output(&mut t, ms(100));
    assert_eq!(out.len(), 3);
    assert_eq!(out[2].repr.seq_number, iss + 1 + 2 * MSS);
    assert!(out[2].repr.seq_number.0 < 10_000, "wrapped past zero");
    input(
        &mut t,
        ms(200),
        ack(irs + 1, iss + 1 + 3 * MSS),
        Message::new(),
    );
    assert_eq!(t.snd_una, iss + 1 + 3 * MSS);
    assert_eq!(t.sndbuf.len(), 0);
    // Receive 3000 bytes across the wrap, the second half first.
    let data = bytes(3000);
    let una = iss + 1 + 3 * MSS;
    input(
        &mut t,
        ms(201),
        ack(irs + 1 + 1500, una),
        data.slice(1500..),
    );
    let (fx, _) = input(&mut t, ms(202), ack(irs + 1, una), data.slice(..1500));
    assert!(fx.readable);
    assert_eq!(t.rcv_nxt, irs + 3001);
    assert_eq!(t.read(10_000).to_vec(), data.to_vec());
}

// ----------------------------------------------------------------------
// Resets and SYNs in synchronized states (RFC 5961)
// ----------------------------------------------------------------------

/// RFC 5961 §3.2: "If the RST bit is set and the sequence number exactly
/// matches the next expected sequence value, the TCP MUST reset the
/// connection."
#[test]
fn established_exact_rst_resets_the_connection() {
    let mut t = established();
    let (fx, out) = input(
        &mut t,
        ms(200),
        seg(Control::Rst, IRS + 1, None),
        Message::new(),
    );
    assert!(out.is_empty());
    assert!(fx.readable && fx.writable && fx.closed);
    assert_eq!(t.state, State::Closed);
    assert_eq!(t.error.as_deref(), Some(&SocketError::ConnectionReset));
}

/// RFC 5961 §3.2: "If the RST bit is set and the sequence number does not
/// exactly match the next expected sequence value, yet is within the
/// current receive window, TCP MUST send an acknowledgment (challenge
/// ACK): <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>".
#[test]
fn established_in_window_rst_that_is_not_exact_gets_a_challenge_ack() {
    let mut t = established();
    let (fx, out) = input(
        &mut t,
        ms(200),
        seg(Control::Rst, IRS + 5, None),
        Message::new(),
    );
    assert!(!fx.closed);
    assert_eq!(t.state, State::Established);
    assert_one_ack(&out, ISS + 1, IRS + 1);
}

/// RFC 5961 §3.2: "If the RST bit is set and the sequence number is
/// outside the current receive window, silently drop the segment."
#[test]
fn established_rst_outside_the_window_is_silently_dropped() {
    let mut t = established();
    for seq in [IRS, IRS + 1 + (8 << 20)] {
        let (fx, out) = input(
            &mut t,
            ms(200),
            seg(Control::Rst, seq, None),
            Message::new(),
        );
        assert!(out.is_empty() && !fx.closed);
        assert_eq!(t.state, State::Established);
    }
}

/// Drives an established TCB into `target` with the peer's help.
fn in_state(target: State) -> Tcb {
    let mut t = established();
    let peer_fin = seg(Control::Fin, IRS + 1, Some(ISS + 1));
    match target {
        State::Established => {}
        State::FinWait1 => {
            t.shutdown_write();
            output(&mut t, ms(100));
        }
        State::FinWait2 => {
            t.shutdown_write();
            output(&mut t, ms(100));
            input(&mut t, ms(200), ack(IRS + 1, ISS + 2), Message::new());
        }
        State::CloseWait => {
            input(&mut t, ms(100), peer_fin, Message::new());
        }
        State::Closing => {
            t.shutdown_write();
            output(&mut t, ms(100));
            input(&mut t, ms(150), peer_fin, Message::new());
        }
        State::LastAck => {
            input(&mut t, ms(100), peer_fin, Message::new());
            t.shutdown_write();
            output(&mut t, ms(110));
        }
        State::TimeWait => {
            t.shutdown_write();
            output(&mut t, ms(100));
            let fin_ack = seg(Control::Fin, IRS + 1, Some(ISS + 2));
            input(&mut t, ms(200), fin_ack, Message::new());
        }
        other => panic!("not reachable this way: {other:?}"),
    }
    assert_eq!(t.state, target);
    t
}

/// RFC 9293 §3.10.7.4 "second, check the RST bit", ESTABLISHED, FIN-WAIT-1,
/// FIN-WAIT-2, CLOSE-WAIT: "If the RST bit is set, then any outstanding
/// RECEIVEs and SEND should receive 'reset' responses ... Enter the CLOSED
/// state". CLOSING, LAST-ACK, TIME-WAIT: "enter the CLOSED state, delete
/// the TCB, and return" (Linux also lets a RST end TIME-WAIT unless
/// `tcp_rfc1337` is set).
#[test]
fn an_exact_rst_closes_every_synchronized_state() {
    for state in [
        State::Established,
        State::FinWait1,
        State::FinWait2,
        State::CloseWait,
        State::Closing,
        State::LastAck,
        State::TimeWait,
    ] {
        let mut t = in_state(state);
        let rst = seg(Control::Rst, t.rcv_nxt, None);
        let (fx, out) = input(&mut t, ms(300), rst, Message::new());
        assert!(out.is_empty(), "{state:?}");
        assert!(fx.closed, "{state:?}");
        assert_eq!(t.state, State::Closed, "{state:?}");
        let reset = matches!(
            state,
            State::Established | State::FinWait1 | State::FinWait2 | State::CloseWait
        );
        assert_eq!(t.error.is_some(), reset, "{state:?}");
    }
}

/// RFC 5961 §3.2 challenge ACKs apply in every synchronized state.
#[test]
fn an_inexact_in_window_rst_gets_a_challenge_ack_in_every_synchronized_state() {
    for state in [
        State::Established,
        State::FinWait1,
        State::FinWait2,
        State::CloseWait,
        State::Closing,
        State::LastAck,
    ] {
        let mut t = in_state(state);
        let rst = seg(Control::Rst, t.rcv_nxt + 3, None);
        let (fx, out) = input(&mut t, ms(300), rst, Message::new());
        assert!(!fx.closed, "{state:?}");
        assert_eq!(t.state, state);
        assert_one_ack(&out, t.snd_nxt, t.rcv_nxt);
    }
}

/// RFC 5961 §4.2: "If the SYN bit is set, irrespective of the sequence
/// number, TCP MUST send an ACK (also referred to as challenge ACK) to the
/// remote peer: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>. After sending the
/// acknowledgment, TCP MUST drop the unacceptable segment".
#[test]
fn a_syn_in_a_synchronized_state_gets_a_challenge_ack() {
    for seq in [IRS + 10, IRS + 1 + (8 << 20), IRS] {
        let mut t = established();
        let (fx, out) = input(
            &mut t,
            ms(200),
            seg(Control::Syn, seq, None),
            Message::new(),
        );
        assert!(!fx.closed);
        assert_eq!(t.state, State::Established);
        assert_one_ack(&out, ISS + 1, IRS + 1);
    }
}

// ----------------------------------------------------------------------
// Closing
// ----------------------------------------------------------------------

/// RFC 9293 §3.10.4 CLOSE, ESTABLISHED: "Queue this until all preceding
/// SENDs have been segmentized, then form a FIN segment and send it ...
/// enter FIN-WAIT-1 state"; §3.10.7.4: FIN-WAIT-1 "if the FIN segment is
/// now acknowledged, then enter FIN-WAIT-2"; FIN-WAIT-2 + FIN: "Enter the
/// TIME-WAIT state. Start the time-wait timer"; §3.10.8: "If the time-wait
/// timeout expires on a connection, delete the TCB" (2·MSL = 60 s).
#[test]
fn active_close_walks_fin_wait_1_fin_wait_2_time_wait_and_closes_after_2_msl() {
    let mut t = established();
    t.write(bytes(100));
    t.shutdown_write();
    assert_eq!(t.send_space(), 0, "no writes after shutdown");
    let out = output(&mut t, ms(100));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].payload.len(), 100);
    let fin = &out[1].repr;
    assert_eq!((fin.control, fin.seq_number), (Control::Fin, ISS + 101));
    assert_eq!(t.state, State::FinWait1);
    input(&mut t, ms(200), ack(IRS + 1, ISS + 102), Message::new());
    assert_eq!(t.state, State::FinWait2);
    let (fx, out) = input(
        &mut t,
        ms(300),
        seg(Control::Fin, IRS + 1, Some(ISS + 102)),
        Message::new(),
    );
    assert!(fx.readable && t.at_eof());
    assert_eq!(t.state, State::TimeWait);
    assert_one_ack(&out, ISS + 102, IRS + 2);
    let end = ms(300) + Duration::from_secs(60);
    assert_eq!(t.deadline(), Some(end));
    let (fx, _) = timer(&mut t, Time::from_nanos(end.as_nanos() - 1));
    assert!(!fx.closed);
    assert_eq!(t.state, State::TimeWait);
    let (fx, out) = timer(&mut t, end);
    assert!(fx.closed && out.is_empty());
    assert_eq!(t.state, State::Closed);
}

/// RFC 9293 §3.10.7.4 "eighth, check the FIN bit", FIN-WAIT-1: "If our FIN
/// has been ACKed (perhaps in this segment), then enter TIME-WAIT".
#[test]
fn a_fin_that_acks_our_fin_in_fin_wait_1_goes_straight_to_time_wait() {
    let t = in_state(State::TimeWait);
    assert_eq!(t.rcv_nxt, IRS + 2);
}

/// RFC 9293 §3.10.7.4 "eighth", FIN-WAIT-1: "otherwise, enter the CLOSING
/// state"; CLOSING, "fifth": "if the ACK acknowledges our FIN, then enter
/// the TIME-WAIT state".
#[test]
fn simultaneous_close_goes_through_closing_to_time_wait() {
    let mut t = in_state(State::Closing);
    assert_eq!(t.rcv_nxt, IRS + 2);
    let (_, out) = input(&mut t, ms(200), ack(IRS + 2, ISS + 2), Message::new());
    assert!(out.is_empty());
    assert_eq!(t.state, State::TimeWait);
}

/// RFC 9293 §3.10.7.4 "eighth", ESTABLISHED: "Enter the CLOSE-WAIT state";
/// §3.10.4 CLOSE, CLOSE-WAIT: "Queue this request until all preceding
/// SENDs have been segmentized; then send a FIN segment, enter LAST-ACK";
/// LAST-ACK, "fifth": "If our FIN is now acknowledged, delete the TCB,
/// enter the CLOSED state, and return".
#[test]
fn passive_close_walks_close_wait_and_last_ack_to_closed() {
    let mut t = established();
    let (fx, out) = input(
        &mut t,
        ms(100),
        seg(Control::Fin, IRS + 1, Some(ISS + 1)),
        bytes(10),
    );
    assert!(fx.readable);
    assert_eq!(t.state, State::CloseWait);
    assert_one_ack(&out, ISS + 1, IRS + 12);
    assert!(!t.at_eof(), "ten bytes still to read");
    assert_eq!(t.read(100).len(), 10);
    assert!(t.at_eof());
    // Data may still be sent in CLOSE-WAIT.
    t.write(bytes(20));
    t.shutdown_write();
    let out = output(&mut t, ms(110));
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].repr.control, Control::Fin);
    assert_eq!(t.state, State::LastAck);
    let (fx, _) = input(&mut t, ms(200), ack(IRS + 12, ISS + 22), Message::new());
    assert!(fx.closed);
    assert_eq!(t.state, State::Closed);
}

/// RFC 9293 §3.10.7.4 "eighth", TIME-WAIT: "Remain in the TIME-WAIT state.
/// Restart the 2 MSL time-wait timeout" (and the FIN is acknowledged).
#[test]
fn time_wait_acks_a_retransmitted_fin_and_restarts_2_msl() {
    let mut t = in_state(State::TimeWait);
    let again = seg(Control::Fin, IRS + 1, Some(ISS + 2));
    let (_, out) = input(&mut t, ms(5_000), again, Message::new());
    assert_one_ack(&out, ISS + 2, IRS + 2);
    assert_eq!(t.state, State::TimeWait);
    assert_eq!(t.deadline(), Some(ms(5_000) + Duration::from_secs(60)));
}

/// RFC 9293 §3.10.7.4 "eighth", CLOSING: "Remain in the CLOSING state";
/// RFC 6298 §5.4: a timeout resends "the earliest segment that has not
/// been acknowledged" — here the FIN alone, once — and the peer's FIN,
/// already received, is not forgotten: the ACK of ours leads to TIME-WAIT.
#[test]
fn a_timeout_in_closing_resends_our_fin_once_and_keeps_the_peers() {
    let mut t = in_state(State::Closing);
    let at = t.deadline().expect("the FIN is timed");
    let (_, out) = timer(&mut t, at);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].repr.control, out[0].repr.seq_number),
        (Control::Fin, ISS + 1)
    );
    assert_eq!(t.state, State::Closing);
    input(
        &mut t,
        at + Duration::from_millis(1),
        ack(IRS + 2, ISS + 2),
        Message::new(),
    );
    assert_eq!(t.state, State::TimeWait);
}

/// RFC 6298 §5.4 in FIN-WAIT-1 with data before the FIN: the data is
/// resent first, then the FIN once, and the state stays FIN-WAIT-1.
#[test]
fn a_timeout_in_fin_wait_1_resends_the_data_then_the_fin() {
    let (mut t, out) = sending(100, ms(100));
    assert_eq!(out.len(), 1);
    t.shutdown_write();
    let out = output(&mut t, ms(101));
    assert_eq!(out[0].repr.control, Control::Fin);
    assert_eq!(t.state, State::FinWait1);
    let (_, out) = timer(&mut t, ms(400));
    let sent: Vec<(Control, SeqNumber, usize)> = out
        .iter()
        .map(|s| (s.repr.control, s.repr.seq_number, s.payload.len()))
        .collect();
    assert_eq!(sent[0], (Control::None, ISS + 1, 100));
    assert_eq!(t.state, State::FinWait1);
    // The ACK of the data lets the FIN follow.
    let (_, out) = input(&mut t, ms(500), ack(IRS + 1, ISS + 101), Message::new());
    let fins = out
        .iter()
        .filter(|s| s.repr.control == Control::Fin)
        .count()
        + sent.iter().filter(|s| s.0 == Control::Fin).count();
    assert_eq!(fins, 1, "the FIN is resent once");
    input(&mut t, ms(600), ack(IRS + 1, ISS + 102), Message::new());
    assert_eq!(t.state, State::FinWait2);
}

/// RFC 9293 §3.10.7.4 "fourth, check the SYN bit", SYN-RECEIVED: "If the
/// connection was initiated with a passive OPEN, then return this
/// connection to LISTEN state and return." An in-window SYN is never taken
/// as data.
#[test]
fn a_syn_in_syn_received_returns_a_passive_open_to_listen() {
    let (mut t, _) = syn_received(&plain(), client_syn());
    let syn = seg(Control::Syn, IRS + 1, Some(ISS + 1));
    let (fx, out) = input(&mut t, ms(1), syn, bytes(10));
    assert!(out.is_empty());
    assert_eq!(t.rcv_nxt, IRS + 1, "no data taken");
    assert!(fx.closed);
    assert_eq!(t.state, State::Closed);
    assert!(t.error.is_some());
}

/// RFC 9293 §3.10.4 CLOSE, SYN-SENT: "Delete the TCB" — so a timer that
/// was armed for the SYN sends nothing when it fires later.
#[test]
fn a_deleted_tcb_sends_nothing_when_an_old_timer_fires() {
    let (mut t, _) = syn_sent(&plain());
    t.write(bytes(100));
    t.shutdown_write();
    assert_eq!(t.deadline(), None);
    let (_, out) = timer(&mut t, Time::from_secs(1));
    assert!(out.is_empty());
}

/// RFC 9293 §3.10.4 CLOSE, SYN-SENT: "Delete the TCB and return 'error:
/// closing' responses to any queued SENDs, or RECEIVEs".
#[test]
fn close_in_syn_sent_deletes_the_connection() {
    let (mut t, _) = syn_sent(&plain());
    t.shutdown_write();
    assert_eq!(t.state, State::Closed);
    assert!(output(&mut t, ms(1)).is_empty());
}

/// RFC 9293 §3.10.5 ABORT: SYN-RECEIVED, ESTABLISHED, FIN-WAIT-1/2,
/// CLOSE-WAIT: "Send a reset segment: <SEQ=SND.NXT><CTL=RST>"; SYN-SENT:
/// nothing is sent; CLOSING, LAST-ACK, TIME-WAIT: "delete the TCB".
#[test]
fn abort_sends_a_reset_only_where_the_rfc_asks_for_one() {
    let (mut t, _) = syn_sent(&plain());
    assert!(t.abort().is_none());
    assert_eq!(t.state, State::Closed);
    let (mut t, _) = sending(100, ms(100));
    let rst = t.abort().expect("a reset");
    assert_eq!(
        (rst.repr.control, rst.repr.seq_number),
        (Control::Rst, ISS + 101)
    );
    assert_eq!(t.state, State::Closed);
    for state in [State::Closing, State::LastAck, State::TimeWait] {
        let mut t = in_state(state);
        assert!(t.abort().is_none(), "{state:?}");
        assert_eq!(t.state, State::Closed);
    }
}

// ----------------------------------------------------------------------
// Retransmission timer (RFC 6298)
// ----------------------------------------------------------------------

/// RFC 6298 §5.5 "RTO <- RTO * 2" on each expiry; with 6 SYN retries the
/// SYN goes out at 0, 1, 3, 7, 15, 31 and 63 s and the attempt fails at
/// 127 s, exactly as Linux's default `tcp_syn_retries = 6`.
#[test]
fn syn_retransmissions_back_off_from_1_s_and_give_up_after_the_configured_retries() {
    let (mut t, _) = syn_sent(&plain());
    for at in [1, 3, 7, 15, 31, 63] {
        assert_eq!(t.deadline(), Some(Time::from_secs(at)));
        let (fx, out) = timer(&mut t, Time::from_secs(at));
        assert!(!fx.closed);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].repr.control, out[0].repr.seq_number),
            (Control::Syn, ISS)
        );
    }
    assert_eq!(t.deadline(), Some(Time::from_secs(127)));
    let (fx, out) = timer(&mut t, Time::from_secs(127));
    assert!(fx.closed && out.is_empty());
    assert_eq!(t.error.as_deref(), Some(&SocketError::TimedOut));
}

/// RFC 6298 §4 / Karn: a SYN-ACK answering a retransmitted SYN gives no
/// sample ("RTT samples MUST NOT be made using segments that were
/// retransmitted"), so the backed-off RTO stays.
#[test]
fn a_handshake_with_a_retransmitted_syn_takes_no_rtt_sample() {
    let (mut t, _) = syn_sent(&plain());
    timer(&mut t, Time::from_secs(1));
    input(&mut t, ms(1_100), syn_ack(), Message::new());
    assert_eq!(t.state, State::Established);
    assert_eq!(t.stats.get(Count::RttSamples), 0);
    assert_eq!(t.srtt(), None);
    assert_eq!(t.rto(), Duration::from_secs(2));
}

/// RFC 6298 §2.2 (first sample: "SRTT <- R, RTTVAR <- R/2, RTO <- SRTT +
/// max (G, K*RTTVAR)") and §2.3 (later samples: "RTTVAR <- (1 - beta) *
/// RTTVAR + beta * |SRTT - R'|, SRTT <- (1 - alpha) * SRTT + alpha * R'"
/// with alpha = 1/8, beta = 1/4).
#[test]
fn rto_follows_rfc_6298_from_the_first_and_second_samples() {
    let (mut t, out) = sending(100, ms(100));
    assert_eq!(out.len(), 1);
    assert_eq!(t.rto(), Duration::from_millis(300));
    assert_eq!(t.deadline(), Some(ms(400)), "RTO armed when data is sent");
    input(&mut t, ms(300), ack(IRS + 1, ISS + 101), Message::new());
    // R' = 200 ms: RTTVAR = 3/4·50 + 1/4·100 = 62.5, SRTT = 7/8·100 + 1/8·200 = 112.5.
    assert_eq!(t.rttvar(), Duration::from_micros(62_500));
    assert_eq!(t.srtt(), Some(Duration::from_micros(112_500)));
    assert_eq!(t.rto(), Duration::from_micros(112_500 + 250_000));
    assert_eq!(
        t.deadline(),
        None,
        "everything acknowledged: timer off (§5.2)"
    );
}

/// RFC 6298 §2.4: "Whenever RTO is computed, if it is less than 1 second,
/// then the RTO SHOULD be rounded up to 1 second" — Linux (and we) use a
/// 200 ms floor instead, as the table in `tcp.rs` says.
#[test]
fn rto_is_never_below_the_configured_minimum() {
    let (mut t, _) = syn_sent(&plain());
    input(&mut t, ms(10), syn_ack(), Message::new());
    // 10 + 4·5 = 30 ms, floored.
    assert_eq!(t.rto(), Duration::from_millis(200));
}

/// RFC 6298 §5.4–5.6: on expiry "retransmit the earliest segment that has
/// not been acknowledged", "RTO <- RTO * 2", "Start the retransmission
/// timer"; §2.5: "A maximum value MAY be placed on RTO provided it is at
/// least 60 seconds" (here lowered to 1 s to see the cap).
#[test]
fn rto_doubles_on_each_timeout_up_to_the_maximum() {
    let cfg = TcpConfig {
        max_rto: Duration::from_secs(1),
        ..plain()
    };
    let mut t = established_with(&cfg, syn_ack());
    t.write(bytes(3 * MSS));
    assert_eq!(output(&mut t, ms(100)).len(), 3);
    let mut at = ms(400);
    for next in [600, 1_000, 1_000, 1_000] {
        assert_eq!(t.deadline(), Some(at));
        let (_, out) = timer(&mut t, at);
        assert_eq!(out.len(), 1, "one segment after a timeout (cwnd = 1 MSS)");
        assert_eq!(out[0].repr.seq_number, ISS + 1);
        assert_eq!(out[0].payload.len(), MSS);
        at += Duration::from_millis(next);
    }
    assert_eq!(t.stats.losses().timeouts, 4);
}

/// RFC 6298 §3 (Karn's algorithm): "RTT samples MUST NOT be made using
/// segments that were retransmitted"; §5.7 keeps the backed-off RTO until
/// a new sample arrives.
#[test]
fn karns_rule_takes_no_sample_from_a_retransmitted_segment() {
    let (mut t, _) = sending(100, ms(100));
    let samples = t.stats.get(Count::RttSamples);
    timer(&mut t, ms(400));
    assert_eq!(t.rto(), Duration::from_millis(600));
    input(&mut t, ms(450), ack(IRS + 1, ISS + 101), Message::new());
    assert_eq!(t.stats.get(Count::RttSamples), samples);
    assert_eq!(t.rto(), Duration::from_millis(600));
    // New data is timed again.
    t.write(bytes(100));
    output(&mut t, ms(500));
    input(&mut t, ms(600), ack(IRS + 1, ISS + 201), Message::new());
    assert_eq!(t.stats.get(Count::RttSamples), samples + 1);
}

// ----------------------------------------------------------------------
// Acknowledgment strategy, Nagle, persist
// ----------------------------------------------------------------------

/// RFC 1122 §4.2.3.2: "in a stream of full-sized segments there SHOULD be
/// an ACK for at least every second segment"; RFC 5681 §4.2.
#[test]
fn every_second_full_sized_segment_is_acked_at_once() {
    let mut t = established();
    let data = bytes(2 * MSS);
    let (_, out) = input(&mut t, ms(200), ack(IRS + 1, ISS + 1), data.slice(..MSS));
    assert!(out.is_empty(), "the first one waits");
    assert_eq!(t.deadline(), Some(ms(240)));
    let (_, out) = input(
        &mut t,
        ms(201),
        ack(IRS + 1 + MSS, ISS + 1),
        data.slice(MSS..),
    );
    assert_one_ack(&out, ISS + 1, IRS + 1 + 2 * MSS);
    assert_eq!(t.deadline(), None, "delayed-ACK timer cancelled");
}

/// RFC 1122 §4.2.3.2: "the delay MUST be less than 0.5 seconds"; like
/// Linux we wait 40 ms.
#[test]
fn a_lone_full_sized_segment_is_acked_when_the_delayed_ack_timer_fires() {
    let mut t = established();
    input(&mut t, ms(200), ack(IRS + 1, ISS + 1), bytes(MSS));
    let (_, out) = timer(&mut t, ms(239));
    assert!(out.is_empty());
    let (_, out) = timer(&mut t, ms(240));
    assert_one_ack(&out, ISS + 1, IRS + 1 + MSS);
}

/// RFC 9293 §3.7.4 (Nagle): "if there is unacknowledged data ..., the
/// sending TCP buffers all user data (regardless of the PSH bit) until the
/// outstanding data has been acknowledged or until the TCP can send a
/// full-sized segment".
#[test]
fn nagle_holds_a_small_segment_while_data_is_unacknowledged() {
    let (mut t, out) = sending(100, ms(100));
    assert_eq!(out.len(), 1, "nothing outstanding: sent at once");
    t.write(bytes(50));
    assert!(output(&mut t, ms(110)).is_empty());
    let (_, out) = input(&mut t, ms(200), ack(IRS + 1, ISS + 101), Message::new());
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].repr.seq_number, out[0].payload.len()),
        (ISS + 101, 50)
    );
}

/// RFC 9293 §3.7.4: "A TCP MUST provide a way for an application to
/// disable the Nagle algorithm on an individual connection" (TCP_NODELAY).
#[test]
fn nodelay_sends_small_segments_at_once() {
    let (mut t, _) = sending(100, ms(100));
    t.nodelay = true;
    t.write(bytes(50));
    let out = output(&mut t, ms(110));
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].repr.seq_number, out[0].payload.len()),
        (ISS + 101, 50)
    );
}

/// RFC 9293 §3.8.6.1: "The sending TCP must be prepared to accept from the
/// user and send at least one octet of new data even if the send window is
/// zero", probing periodically with exponential back-off (RFC 1122
/// §4.2.2.17).
#[test]
fn a_zero_window_is_probed_with_one_byte_with_backoff() {
    let mut t = established();
    let closed = Repr {
        window_len: 0,
        ..ack(IRS + 1, ISS + 1)
    };
    input(&mut t, ms(150), closed, Message::new());
    assert_eq!(t.snd_wnd, 0);
    t.write(bytes(1000));
    assert!(output(&mut t, ms(200)).is_empty());
    assert_eq!(t.deadline(), Some(ms(500)), "persist timer = RTO");
    let (_, out) = timer(&mut t, ms(500));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].repr.seq_number, out[0].payload.len()), (ISS + 1, 1));
    assert_eq!(t.deadline(), Some(ms(500 + 600)), "backed off");
    // The window opens: the data flows.
    let (_, out) = input(&mut t, ms(600), ack(IRS + 1, ISS + 1), Message::new());
    let sent: usize = out.iter().map(|s| s.payload.len()).sum();
    assert_eq!(sent, 1000);
}

// ----------------------------------------------------------------------
// Reassembly, SACK, fast retransmit
// ----------------------------------------------------------------------

/// RFC 5681 §4.2: "A TCP receiver SHOULD send an immediate duplicate ACK
/// when an out-of-order segment arrives ... [and] an immediate ACK when
/// the incoming segment fills in all or part of a gap"; RFC 9293 §3.10.7.4
/// "seventh": data is delivered in sequence.
#[test]
fn out_of_order_data_is_acked_at_once_and_delivered_when_the_hole_fills() {
    let mut t = established();
    let data = bytes(3 * MSS);
    let (fx, out) = input(
        &mut t,
        ms(200),
        ack(IRS + 1 + 2 * MSS, ISS + 1),
        data.slice(2 * MSS..),
    );
    assert!(!fx.readable);
    assert_one_ack(&out, ISS + 1, IRS + 1);
    let (_, out) = input(
        &mut t,
        ms(201),
        ack(IRS + 1 + MSS, ISS + 1),
        data.slice(MSS..2 * MSS),
    );
    assert_one_ack(&out, ISS + 1, IRS + 1);
    let (fx, out) = input(&mut t, ms(202), ack(IRS + 1, ISS + 1), data.slice(..MSS));
    assert!(fx.readable);
    assert_one_ack(&out, ISS + 1, IRS + 1 + 3 * MSS);
    assert_eq!(t.read(usize::MAX).to_vec(), data.to_vec());
}

fn sack_blocks(s: &Segment) -> Vec<(u32, u32)> {
    s.repr.sack_ranges.iter().map_while(|b| *b).collect()
}

/// RFC 2018 §4: "The first SACK block ... MUST specify the contiguous
/// block of data containing the segment which triggered this ACK"; "the
/// data receiver SHOULD include as many distinct SACK blocks as possible
/// ... repeating the most recently reported SACK blocks" (4, or 3 beside
/// timestamps, RFC 2018 §3).
#[test]
fn the_first_sack_block_covers_the_segment_that_triggered_the_ack() {
    let mut t = established_with(&with_sack(), syn_ack_all());
    let base = (IRS + 1).0;
    let block = |k: u32| (base + k * 100, base + k * 100 + 50);
    let mut last = Vec::new();
    // Disjoint 50-byte segments at offsets 300, 100, 500, 700, 900.
    for k in [3, 1, 5, 7, 9] {
        let (s, _) = block(k);
        let (_, out) = input(&mut t, ms(200), ack(SeqNumber(s), ISS + 1), bytes(50));
        assert_eq!(out.len(), 1);
        let blocks = sack_blocks(&out[0]);
        assert_eq!(blocks[0], block(k), "the newest block first");
        last = blocks;
    }
    assert_eq!(last.len(), 4, "four blocks without timestamps");
    // The others repeat the most recently reported blocks, newest first.
    assert_eq!(last, [block(9), block(7), block(5), block(1)]);
    // Extending a block reports the merged block first.
    let (_, out) = input(
        &mut t,
        ms(201),
        ack(SeqNumber(base + 350), ISS + 1),
        bytes(50),
    );
    assert_eq!(sack_blocks(&out[0])[0], (base + 300, base + 400));

    let mut t = established_with(
        &TcpConfig {
            timestamps: true,
            ..with_sack()
        },
        syn_ack_all(),
    );
    for k in [1, 3, 5, 7] {
        let (s, _) = block(k);
        let seg = Repr {
            timestamp: Some((800, 1)),
            ..ack(SeqNumber(s), ISS + 1)
        };
        let (_, out) = input(&mut t, ms(200), seg, bytes(50));
        last = sack_blocks(&out[0]);
    }
    assert_eq!(last.len(), 3, "three blocks beside timestamps");
    assert_eq!(last[0], block(7));
}

/// RFC 5681 §3.2: "The fast retransmit algorithm uses the arrival of 3
/// duplicate ACKs ... as an indication that a segment has been lost. After
/// receiving 3 duplicate ACKs, TCP performs a retransmission of what
/// appears to be the missing segment".
#[test]
fn three_duplicate_acks_trigger_a_fast_retransmit() {
    let (mut t, out) = sending(10 * MSS, ms(100));
    assert_eq!(out.len(), 10, "initial window of 10 segments");
    let dup = ack(IRS + 1, ISS + 1);
    for _ in 0..2 {
        let (_, out) = input(&mut t, ms(200), dup, Message::new());
        assert!(out.is_empty());
    }
    let (_, out) = input(&mut t, ms(201), dup, Message::new());
    assert!(!out.is_empty());
    assert_eq!(
        (out[0].repr.seq_number, out[0].payload.len()),
        (ISS + 1, MSS)
    );
    assert_eq!(t.stats.losses().fast_recoveries, 1);
    assert_eq!(t.stats.losses().retransmitted_segments, 1);
}

/// RFC 6675 §5: with SACK, the sender retransmits the first hole the
/// scoreboard shows once three segments above it are SACKed.
#[test]
fn sack_recovery_retransmits_the_hole_the_receiver_reports() {
    let mut t = established_with(
        &with_sack(),
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    t.write(bytes(10 * MSS));
    assert_eq!(output(&mut t, ms(100)).len(), 10);
    let una = ISS + 1;
    let mut rexmit = Vec::new();
    for k in 2..=4 {
        let sacked = Repr {
            sack_ranges: [Some(((una + MSS).0, (una + k * MSS).0)), None, None, None],
            ..ack(IRS + 1, una)
        };
        let (_, out) = input(&mut t, ms(200), sacked, Message::new());
        rexmit.extend(out.into_iter().filter(|s| s.repr.seq_number == una));
    }
    assert_eq!(rexmit.len(), 1, "the hole at SND.UNA, once");
    assert_eq!(rexmit[0].payload.len(), MSS);
    assert_eq!(t.stats.losses().fast_recoveries, 1);
}

/// The memory contract of an idle connection: loss recovery allocates the
/// cold state and the buffers hold queues while there is data, and both
/// are freed once everything is acknowledged and read (so an idle
/// connection that once lost a segment costs what a fresh one does).
#[test]
fn a_connection_back_from_loss_recovery_holds_no_cold_state_or_queues() {
    let mut t = established_with(
        &with_sack(),
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    assert!(t.cold.is_none(), "the handshake leaves nothing behind");
    t.write(bytes(10 * MSS));
    assert_eq!(output(&mut t, ms(100)).len(), 10);
    assert!(t.cold.is_some(), "a segment is timed (timestamps off)");
    let una = ISS + 1;
    for k in 2..=4 {
        let sacked = Repr {
            sack_ranges: [Some(((una + MSS).0, (una + k * MSS).0)), None, None, None],
            ..ack(IRS + 1, una)
        };
        input(&mut t, ms(200), sacked, Message::new());
    }
    assert!(t.cold().recovery.is_some() && t.cold().scoreboard.sacked_bytes() > 0);
    // Everything acknowledged, with a full segment from the peer in the
    // same ACK (its ACK is delayed).
    let (fx, _) = input(&mut t, ms(300), ack(IRS + 1, una + 10 * MSS), bytes(MSS));
    assert!(fx.readable);
    assert_eq!(t.read(10_000).len(), MSS);
    assert_eq!(t.sndbuf.len(), 0);
    assert!(t.cold.is_none(), "{:?}", t.cold);
    assert!(
        t.rcvbuf.is_allocated(),
        "a drained queue stays while data flows"
    );
    // The delayed ACK's timer: the peer sent nothing more meanwhile.
    let delack = t.deadline().expect("a delayed ACK is pending");
    timer(&mut t, delack);
    assert!(!t.rcvbuf.is_allocated() && t.rcvbuf.held() == 0);
    // The counters survive: they are not cold state.
    assert_eq!(t.stats.losses().fast_recoveries, 1);
    assert_eq!(t.stats().bytes_acked, 10 * MSS as u64);
    // Data in flight again: the cold state comes back (RACK's transmit
    // records, or the timed segment under RFC 6675).
    t.write(bytes(4 * MSS));
    assert_eq!(output(&mut t, ms(400)).len(), 4);
    assert!(t.cold.is_some());
}

// ----------------------------------------------------------------------
// ECN (RFC 3168 §6.1)
// ----------------------------------------------------------------------

use crate::tcp::ecn::{EcnMode, CE, ECT0};

fn with_ecn(mode: EcnMode) -> TcpConfig {
    TcpConfig {
        ecn: mode,
        ..plain()
    }
}

/// The peer's SYN-ACK with the given ECE and CWR flags.
fn syn_ack_ecn(ece: bool, cwr: bool) -> Repr {
    Repr {
        ece,
        cwr,
        ..syn_ack()
    }
}

/// ESTABLISHED with ECN negotiated (we asked, the peer agreed).
fn ecn_established() -> Tcb {
    let t = established_with(&with_ecn(EcnMode::On), syn_ack_ecn(true, false));
    assert!(t.ecn.is_on());
    t
}

/// Returns whether new data written after the handshake goes out ECT(0).
fn data_is_ect(t: &mut Tcb) -> bool {
    t.write(bytes(100));
    let out = output(t, ms(150));
    assert_eq!(out.len(), 1);
    out[0].ect
}

/// RFC 3168 §6.1.1: "Host A sets the ECE and CWR flags in the TCP header
/// of the SYN packet ... an 'ECN-setup SYN packet'"; Host B "sets the ECE
/// flag, but not the CWR flag, in the SYN-ACK packet ... an 'ECN-setup
/// SYN-ACK packet'"; "a host MUST NOT set ECT on data packets unless it
/// has sent at least one ECN-setup SYN or ECN-setup SYN-ACK packet, and
/// has received at least one ECN-setup SYN or ECN-setup SYN-ACK packet";
/// a SYN-ACK with both ECE and CWR set is not ECN-setup. The mode is
/// Linux's `tcp_ecn` (0 off, 1 on, 2 accept only).
#[test]
fn active_open_negotiates_ecn_only_when_asking_and_answered_with_ece_alone() {
    for (mode, asks) in [
        (EcnMode::Off, false),
        (EcnMode::Accept, false),
        (EcnMode::On, true),
    ] {
        let (_, out) = syn_sent(&with_ecn(mode));
        let syn = &out[0].repr;
        assert_eq!((syn.ece, syn.cwr), (asks, asks), "{mode:?} SYN");
        assert!(!out[0].ect, "a SYN is never ECT");
        for (ece, cwr) in [(true, false), (true, true), (false, false), (false, true)] {
            let mut t = established_with(&with_ecn(mode), syn_ack_ecn(ece, cwr));
            let want = asks && ece && !cwr;
            assert_eq!(t.ecn.is_on(), want, "{mode:?} SYN-ACK ece {ece} cwr {cwr}");
            assert_eq!(data_is_ect(&mut t), want);
        }
    }
}

/// RFC 3168 §6.1.1: "If a host has received an ECN-setup SYN packet, then
/// it MAY send an ECN-setup SYN-ACK packet"; "A host MUST NOT set ECE on
/// SYN-ACK packets if it has not received an ECN-setup SYN" (a SYN with
/// ECE alone is not one). `Accept` (Linux's default) agrees when asked.
#[test]
fn passive_open_answers_an_ecn_setup_syn_with_ece_alone_unless_ecn_is_off() {
    for mode in [EcnMode::Off, EcnMode::Accept, EcnMode::On] {
        for (ece, cwr) in [(true, true), (true, false), (false, true), (false, false)] {
            let syn = Repr {
                ece,
                cwr,
                ..client_syn()
            };
            let (mut t, out) = syn_received(&with_ecn(mode), syn);
            let agree = ece && cwr && mode != EcnMode::Off;
            let r = &out[0].repr;
            assert_eq!(
                (r.ece, r.cwr),
                (agree, false),
                "{mode:?} ece {ece} cwr {cwr}"
            );
            assert!(!out[0].ect, "a SYN-ACK is not ECT");
            input(&mut t, ms(100), ack(IRS + 1, ISS + 1), Message::new());
            assert_eq!(t.state, State::Established);
            assert_eq!(data_is_ect(&mut t), agree);
        }
    }
}

/// RFC 3168 §6.1.4: "pure ACK packets ... MUST NOT" be ECT; §6.1.5:
/// "the TCP data sender MUST NOT set either ECT codepoint in the IP
/// header" of retransmitted data packets.
#[test]
fn only_new_data_is_ect_never_pure_acks_or_retransmissions() {
    let mut t = ecn_established();
    t.write(bytes(3 * MSS));
    let out = output(&mut t, ms(100));
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|s| s.ect));
    let (_, out) = input(&mut t, ms(110), data(IRS + 1, 10), bytes(10));
    assert_eq!(out.len(), 1);
    assert!(out[0].payload.is_empty() && !out[0].ect, "pure ACK not ECT");
    let (_, out) = timer(&mut t, ms(400));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].repr.seq_number, ISS + 1);
    assert!(!out[0].ect, "a retransmission is not ECT");
}

/// A data segment from the peer: `n` bytes at `seq`, acknowledging our SYN.
fn data(seq: SeqNumber, n: usize) -> Repr {
    Repr {
        payload_len: n,
        ..ack(seq, ISS + 1)
    }
}

fn input_ip(t: &mut Tcb, now: Time, r: Repr, payload: Message, ip_ecn: u8) -> Vec<Segment> {
    let mut out = Vec::new();
    t.input_ecn(now, &r, ip_ecn, payload, &mut out);
    out
}

/// RFC 3168 §6.1.3: "If the CE codepoint is set on a received data packet,
/// the receiving TCP sets ECE in every subsequent ACK until it receives a
/// CWR packet"; "after receiving a CWR packet, the data receiver ... stops
/// setting ECE" unless the CWR packet is CE-marked itself. The first CE is
/// ACKed at once (Linux's quick-ACK), not after the delayed-ACK timer.
#[test]
fn the_receiver_echoes_ce_on_every_ack_until_it_sees_cwr() {
    let mut t = ecn_established();
    let mut seq = IRS + 1;
    let mut recv = |t: &mut Tcb, at: u64, ip: u8, cwr: bool| {
        let r = Repr {
            cwr,
            ..data(seq, MSS)
        };
        seq += MSS;
        input_ip(t, ms(at), r, bytes(MSS), ip)
    };
    assert!(recv(&mut t, 200, ECT0, false).is_empty(), "delayed ACK");
    let out = recv(&mut t, 201, CE, false);
    assert_eq!(out.len(), 1, "CE is acknowledged at once");
    assert!(out[0].repr.ece);
    assert_eq!(t.stats().ce_received, 1);
    // Unmarked segments: every ACK still carries ECE.
    assert!(recv(&mut t, 202, ECT0, false).is_empty());
    let out = recv(&mut t, 203, ECT0, false);
    assert_eq!(out.len(), 1);
    assert!(out[0].repr.ece, "ECE until CWR");
    let (_, out) = {
        let r = recv(&mut t, 204, ECT0, false);
        assert!(r.is_empty());
        timer(&mut t, ms(300))
    };
    assert!(out[0].repr.ece, "a delayed ACK echoes too");
    // Our own data carries ECE as well (it is an ACK).
    t.write(bytes(10));
    let out = output(&mut t, ms(301));
    assert!(out[0].repr.ece && out[0].ect);
    // CWR that is itself CE: the echo goes on.
    let out = recv(&mut t, 310, CE, true);
    assert!(out[0].repr.ece);
    assert_eq!(t.stats().ce_received, 2);
    // A plain CWR ends it.
    recv(&mut t, 311, ECT0, true);
    let out = recv(&mut t, 312, ECT0, false);
    assert_eq!(out.len(), 1);
    assert!(!out[0].repr.ece, "no ECE after CWR");
}

/// RFC 3168 §6.1.2: on ECE "the congestion window is halved and the
/// slow-start threshold is reduced", "the TCP source ... should not react
/// to congestion indications more than once every window of data", no
/// data is retransmitted, and "the TCP sender sets the CWR flag in the TCP
/// header of the first new data packet sent after the window reduction".
#[test]
fn ece_reduces_the_window_once_per_window_and_the_next_new_data_carries_cwr() {
    let mut t = ecn_established();
    t.write(bytes(20 * MSS));
    let out = output(&mut t, ms(100));
    assert_eq!(out.len(), 10, "initial window");
    assert!(out.iter().all(|s| s.ect && !s.repr.cwr));
    let ece = |a: SeqNumber| Repr {
        ece: true,
        ..ack(IRS + 1, a)
    };
    // First ECE: 9 segments in flight after the ACK, NewReno halves it.
    let (_, out) = input(&mut t, ms(200), ece(ISS + 1 + MSS), Message::new());
    assert_eq!(t.stats().ecn_reductions, 1);
    assert_eq!(t.stats().ece_received, 1);
    assert_eq!(t.cc.window(), (9 * MSS / 2) as u64);
    assert_eq!(t.cc.ssthresh(), (9 * MSS / 2) as u64);
    assert!(out.is_empty(), "pipe above the window: nothing sent");
    assert_eq!(t.stats().retransmitted_segments, 0, "no retransmission");
    // More ECEs for the same window: no further reduction.
    for i in 2..=5 {
        input(
            &mut t,
            ms(200 + i),
            ece(ISS + 1 + i as usize * MSS),
            Message::new(),
        );
    }
    assert_eq!(t.stats().ecn_reductions, 1);
    assert_eq!(t.stats().ece_received, 5);
    // The window opened: the first new segment carries CWR, later ones not.
    let (_, out) = input(&mut t, ms(206), ece(ISS + 1 + 7 * MSS), Message::new());
    assert_eq!(out.len(), 1, "3 in flight, window 4.5 segments: 1 full one");
    assert!(out[0].repr.cwr, "CWR on the first new data segment");
    let (_, out) = input(&mut t, ms(207), ece(ISS + 1 + 8 * MSS), Message::new());
    assert!(!out.is_empty() && out.iter().all(|s| !s.repr.cwr && s.ect));
    // The ACK of everything sent before the reduction still echoes (the
    // receiver had not seen CWR): not new congestion.
    input(&mut t, ms(210), ece(ISS + 1 + 10 * MSS), Message::new());
    assert_eq!(t.stats().ecn_reductions, 1);
    // An ECE acknowledging data sent after the reduction: a new window.
    input(&mut t, ms(300), ece(ISS + 1 + 11 * MSS), Message::new());
    assert_eq!(t.stats().ecn_reductions, 2);
    assert_eq!(t.stats().retransmitted_segments, 0);
}

/// RFC 3168 §6.1.2: the response to ECE is that to a loss, and a sender in
/// fast recovery has reduced already ("should not react to congestion
/// indications more than once every window of data"); the first new data
/// after the fast retransmit's reduction carries CWR.
#[test]
fn ece_during_fast_recovery_does_not_reduce_again() {
    let mut t = ecn_established();
    t.write(bytes(20 * MSS));
    output(&mut t, ms(100));
    for i in 0..3 {
        input(&mut t, ms(200 + i), ack(IRS + 1, ISS + 1), Message::new());
    }
    assert_eq!(t.stats().fast_recoveries, 1);
    let w = t.cc.window();
    input(
        &mut t,
        ms(204),
        Repr {
            ece: true,
            ..ack(IRS + 1, ISS + 1)
        },
        Message::new(),
    );
    assert_eq!(t.stats().ecn_reductions, 0);
    assert_eq!(t.cc.window(), w);
    // Full ACK ends recovery; new data goes out with CWR.
    let (_, out) = input(
        &mut t,
        ms(300),
        ack(IRS + 1, ISS + 1 + 10 * MSS),
        Message::new(),
    );
    assert!(out[0].repr.cwr && out[0].ect);
}

// ----------------------------------------------------------------------
// SACK scoreboard across a retransmission timeout
// ----------------------------------------------------------------------

/// A duplicate ACK of `una` carrying SACK blocks (segment numbers
/// relative to ISS + 1, end exclusive).
fn sack_ack(una: usize, blocks: &[(usize, usize)]) -> Repr {
    let mut r = ack(IRS + 1, ISS + 1 + una * MSS);
    for (i, (s, e)) in blocks.iter().enumerate() {
        r.sack_ranges[i] = Some(((ISS + 1 + s * MSS).0, (ISS + 1 + e * MSS).0));
    }
    r
}

/// Ten segments out, segments 0 and 5 lost, the rest SACKed; the fast
/// retransmissions are lost too. Returns the TCB just before its RTO and
/// the retransmitted bytes so far.
fn holes_0_and_5_then_rto_pending() -> (Tcb, u64) {
    let mut t = established_with(
        &with_sack(),
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    assert!(t.sack_enabled);
    t.write(bytes(10 * MSS));
    assert_eq!(output(&mut t, ms(100)).len(), 10);
    input(&mut t, ms(200), sack_ack(0, &[(1, 2)]), Message::new());
    input(&mut t, ms(201), sack_ack(0, &[(1, 5)]), Message::new());
    input(
        &mut t,
        ms(202),
        sack_ack(0, &[(6, 8), (1, 5)]),
        Message::new(),
    );
    input(
        &mut t,
        ms(203),
        sack_ack(0, &[(6, 10), (1, 5)]),
        Message::new(),
    );
    assert_eq!(t.stats().fast_recoveries, 1);
    let before = t.stats().retransmitted_bytes;
    (t, before)
}

/// RFC 6675 §5.1: after a timeout the sender "SHOULD" (RFC 2018 §8: MAY)
/// reset the scoreboard, but Linux keeps the SACK marks and resends only
/// what is not SACKed (`tcp_timeout_mark_lost`), which is what we do:
/// after the RTO only the two holes (segments 0 and 5) are resent, not the
/// eight SACKed segments a go-back-N would resend after segment 0.
#[test]
fn after_an_rto_only_the_holes_below_sacked_data_are_retransmitted() {
    let (mut t, before) = holes_0_and_5_then_rto_pending();
    let at = t.deadline().unwrap();
    let (_, out) = timer(&mut t, at);
    assert_eq!(t.stats().timeouts, 1);
    assert_eq!(out.len(), 1, "cwnd is one segment after the RTO");
    assert_eq!(
        (out[0].repr.seq_number, out[0].payload.len()),
        (ISS + 1, MSS)
    );
    // The receiver holds 1–4: its ACK jumps to segment 5.
    let (_, out) = input(
        &mut t,
        at + Duration::from_millis(100),
        sack_ack(5, &[(6, 10)]),
        Message::new(),
    );
    let seqs: Vec<_> = out
        .iter()
        .filter(|s| !s.payload.is_empty())
        .map(|s| s.repr.seq_number)
        .collect();
    assert_eq!(seqs, vec![ISS + 1 + 5 * MSS], "only the hole at 5, not 6–9");
    input(
        &mut t,
        at + Duration::from_millis(200),
        sack_ack(10, &[]),
        Message::new(),
    );
    assert_eq!(t.snd_una, ISS + 1 + 10 * MSS);
    assert_eq!(
        t.stats().retransmitted_bytes - before,
        2 * MSS as u64,
        "two holes resent after the RTO"
    );
    assert_eq!(
        t.stats().fast_recoveries,
        1,
        "no fast recovery after the RTO"
    );
}

/// A second timeout without progress means the receiver may have reneged
/// on its SACKs (RFC 2018 §8: "the data sender MUST NOT discard data ...
/// until it is cumulatively acknowledged"): the scoreboard is forgotten and
/// everything from SND.UNA is resent.
#[test]
fn a_second_rto_without_progress_forgets_the_scoreboard() {
    let (mut t, _) = holes_0_and_5_then_rto_pending();
    let at = t.deadline().unwrap();
    timer(&mut t, at);
    assert!(
        t.cold().scoreboard.sacked_bytes() > 0,
        "kept across the first RTO"
    );
    let at = t.deadline().unwrap();
    timer(&mut t, at);
    assert_eq!(t.stats().timeouts, 2);
    assert_eq!(
        t.cold().scoreboard.sacked_bytes(),
        0,
        "dropped at the second"
    );
}

// ----------------------------------------------------------------------
// PAWS (RFC 7323 §5)
// ----------------------------------------------------------------------

/// ESTABLISHED with timestamps; the peer's SYN-ACK had TSval 777.
fn with_timestamps() -> Tcb {
    let cfg = TcpConfig {
        timestamps: true,
        ..plain()
    };
    let t = established_with(
        &cfg,
        Repr {
            timestamp: Some((777, 1)),
            ..syn_ack()
        },
    );
    assert!(t.ts_enabled);
    t
}

/// A data segment from the peer at `seq` with `n` bytes and TSval `tsval`.
fn stamped(seq: SeqNumber, n: usize, tsval: u32) -> Repr {
    Repr {
        timestamp: Some((tsval, 1)),
        ..data(seq, n)
    }
}

/// RFC 7323 §5.3 R1: "If there is a Timestamps option in the arriving
/// segment, SEG.TSval < TS.Recent, TS.Recent is valid ..., and the RST bit
/// is not set, then treat the arriving segment as not acceptable: Send an
/// acknowledgment in reply ... and drop the segment." R3: TS.Recent is
/// not moved by it.
#[test]
fn paws_drops_an_in_window_segment_with_an_older_timestamp_and_acks() {
    let mut t = with_timestamps();
    let (_, out) = input(&mut t, ms(150), stamped(IRS + 1, 100, 776), bytes(100));
    assert_one_ack(&out, ISS + 1, IRS + 1);
    assert_eq!(
        out[0].repr.timestamp.map(|ts| ts.1),
        Some(777),
        "echo unchanged"
    );
    assert_eq!((t.rcv_nxt, t.ts_recent), (IRS + 1, 777));
    assert_eq!(t.stats().paws_rejected, 1);
    assert_eq!(t.stats.bytes_received, 0);
    // The same bytes with a current timestamp are taken.
    input(&mut t, ms(151), stamped(IRS + 1, 100, 900), bytes(100));
    assert_eq!((t.rcv_nxt, t.ts_recent), (IRS + 101, 900));
    assert_eq!(t.stats().paws_rejected, 1);
}

/// RFC 7323 §5.3 R1 exempts RSTs ("and the RST bit is not set"), and
/// timestamps compare modulo 2^32 (§5.2: "TSval ... are to be compared
/// ... using 32-bit unsigned arithmetic ... 'wraparound'").
#[test]
fn paws_spares_resets_and_compares_timestamps_modulo_2_to_the_32() {
    let mut t = with_timestamps();
    t.ts_recent = u32::MAX - 10;
    input(&mut t, ms(150), stamped(IRS + 1, 10, 5), bytes(10));
    assert_eq!(t.stats().paws_rejected, 0, "5 is after 2^32 - 11");
    assert_eq!(t.ts_recent, 5);
    let rst = Repr {
        control: Control::Rst,
        timestamp: Some((1, 1)),
        ..seg(Control::Rst, IRS + 11, None)
    };
    let (fx, _) = input(&mut t, ms(160), rst, Message::new());
    assert_eq!(t.stats().paws_rejected, 0);
    assert!(fx.closed, "an exact RST with an old timestamp still resets");
}

/// RFC 7323 §5.5: "If a connection remains idle for more than 24 days
/// [2^31 ticks of a 1 ms clock] ... TS.Recent is invalid" — our limit is
/// 2^31 ticks of our 1 µs clock (see `paws.rs`): after it, an older TSval
/// (the peer's clock wrapped) is accepted and becomes TS.Recent.
#[test]
fn paws_ignores_ts_recent_after_the_idle_limit() {
    let mut t = with_timestamps();
    input(&mut t, ms(150), stamped(IRS + 1, 10, 1_000), bytes(10));
    let just_before = ms(149) + super::super::paws::IDLE_LIMIT;
    input(&mut t, just_before, stamped(IRS + 11, 10, 999), bytes(10));
    assert_eq!(t.stats().paws_rejected, 1, "still valid");
    let after = ms(150) + super::super::paws::IDLE_LIMIT;
    input(&mut t, after, stamped(IRS + 11, 10, 999), bytes(10));
    assert_eq!(t.stats().paws_rejected, 1, "invalid after the idle limit");
    assert_eq!((t.rcv_nxt, t.ts_recent), (IRS + 21, 999));
}

// ----------------------------------------------------------------------
// RACK-TLP (RFC 8985)
// ----------------------------------------------------------------------

/// SACK on (RACK needs it), timestamps off, NewReno; ESTABLISHED with
/// SRTT = min RTT = 100 ms, then `n` segments sent at 1 s.
fn rack_sending(n: usize) -> Tcb {
    let cfg = TcpConfig {
        loss_detection: crate::tcp::LossDetection::Rack,
        ..with_sack()
    };
    let mut t = established_with(
        &cfg,
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    assert!(t.rack_on());
    t.write(bytes(n * MSS));
    assert_eq!(output(&mut t, ms(1000)).len(), n);
    t
}

/// An ACK of everything below `ack` that SACKs `[from, to)`.
fn sack(ack_to: SeqNumber, from: SeqNumber, to: SeqNumber) -> Repr {
    Repr {
        sack_ranges: [Some((from.0, to.0)), None, None, None],
        ..ack(IRS + 1, ack_to)
    }
}

/// RFC 8985 §7.2–7.3: the last segment of a flight is lost; the ACK of
/// the others arms the probe timeout PTO = 2·SRTT + WCDelAckT (one segment
/// in flight; our delayed-ACK time, 40 ms) = 240 ms, before the RTO (ACK +
/// 250 ms), and on expiry the last segment is sent again — not after the
/// RTO, and with no timeout counted.
#[test]
fn a_lost_tail_segment_is_repaired_by_a_probe_after_two_srtt_not_the_rto() {
    let mut t = rack_sending(3);
    let una = ISS + 1;
    // Segments 1 and 2 are ACKed after 100 ms; segment 3 was lost.
    let (_, out) = input(
        &mut t,
        ms(1100),
        ack(IRS + 1, una + 2 * MSS),
        Message::new(),
    );
    assert!(out.is_empty());
    assert_eq!(t.rto(), ms(250) - Time::ZERO, "RTO = 100 + 4·37.5 ms");
    assert_eq!(t.deadline(), Some(ms(1100 + 200 + 40)), "PTO, not the RTO");
    let (_, out) = timer(&mut t, ms(1340));
    assert_eq!(out.len(), 1, "one probe");
    assert_eq!(out[0].repr.seq_number, una + 2 * MSS, "the last segment");
    assert_eq!(out[0].payload.len(), MSS);
    let st = t.stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 0));
    // After the probe the RTO is armed (§7.3), not another probe.
    assert_eq!(t.deadline(), Some(ms(1340 + 250)));
    let (_, _) = input(
        &mut t,
        ms(1440),
        ack(IRS + 1, una + 3 * MSS),
        Message::new(),
    );
    assert_eq!(t.deadline(), None, "all acknowledged");
    assert_eq!(t.stats().timeouts, 0);
}

/// RFC 8985 §7.4: a probe that retransmitted data and is followed by an
/// ACK beyond `TLP.end_seq` (no DSACK, no duplicate ACK) repaired a loss:
/// the window is reduced, once (Linux's `TCPLossProbeRecovery`).
#[test]
fn a_probe_that_repaired_a_loss_reduces_the_window_once() {
    let mut t = rack_sending(3);
    let una = ISS + 1;
    input(
        &mut t,
        ms(1100),
        ack(IRS + 1, una + 2 * MSS),
        Message::new(),
    );
    timer(&mut t, ms(1340));
    let ssthresh = t.cc.ssthresh();
    // The probe's ACK ends at TLP.end_seq: nothing is known yet.
    input(
        &mut t,
        ms(1440),
        ack(IRS + 1, una + 3 * MSS),
        Message::new(),
    );
    assert_eq!(t.stats().tlp_recoveries, 0);
    // More data, and an ACK beyond TLP.end_seq.
    t.write(bytes(2 * MSS));
    assert_eq!(output(&mut t, ms(1500)).len(), 2);
    let flight = 2 * MSS as u64;
    input(
        &mut t,
        ms(1600),
        ack(IRS + 1, una + 4 * MSS),
        Message::new(),
    );
    assert_eq!(t.stats().tlp_recoveries, 1);
    // NewReno: ssthresh = max(FlightSize / 2, 2·SMSS) (RFC 5681 (4)).
    assert!(ssthresh > t.cc.ssthresh());
    assert_eq!(t.cc.ssthresh(), (flight / 2).max(2 * MSS as u64));
    let after = t.cc.ssthresh();
    input(
        &mut t,
        ms(1601),
        ack(IRS + 1, una + 5 * MSS),
        Message::new(),
    );
    assert_eq!((t.stats().tlp_recoveries, t.cc.ssthresh()), (1, after));
    assert_eq!(t.stats().fast_recoveries, 0);
}

/// RFC 8985 §6.2 step 5: segment 1 is missing while segment 2 (sent at
/// the same time) is SACKed; with one segment SACKed the reordering window
/// is min_RTT / 4 = 25 ms, so segment 1 is lost at its transmit time +
/// RACK.rtt + reo_wnd = 1000 + 100 + 25 ms, when the reordering timer
/// fires — not before, and without waiting for three duplicate ACKs.
#[test]
fn a_segment_lost_below_a_sacked_one_is_resent_after_rtt_plus_reo_wnd() {
    let mut t = rack_sending(4);
    let una = ISS + 1;
    let (_, out) = input(
        &mut t,
        ms(1100),
        sack(una, una + MSS, una + 2 * MSS),
        Message::new(),
    );
    assert!(out.is_empty(), "not lost yet");
    assert_eq!(t.deadline(), Some(ms(1125)), "the reordering timer");
    let (_, out) = timer(&mut t, ms(1124));
    assert!(out.is_empty());
    let (_, out) = timer(&mut t, ms(1125));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].repr.seq_number, out[0].payload.len()), (una, MSS));
    assert_eq!(t.stats().fast_recoveries, 1);
}

/// RFC 8985 §3.3.2: reordering shorter than the reordering window is not
/// loss. Segment 1 arrives 20 ms after segment 2 (< 25 ms): nothing is
/// retransmitted and the reordering timer goes away.
#[test]
fn reordering_within_the_reordering_window_triggers_no_retransmission() {
    let mut t = rack_sending(4);
    let una = ISS + 1;
    let (_, out) = input(
        &mut t,
        ms(1100),
        sack(una, una + MSS, una + 2 * MSS),
        Message::new(),
    );
    assert!(out.is_empty());
    let (_, out) = input(
        &mut t,
        ms(1120),
        ack(IRS + 1, una + 2 * MSS),
        Message::new(),
    );
    assert!(
        out.iter().all(|s| s.repr.seq_number >= una + 4 * MSS),
        "no resend"
    );
    assert_eq!(t.stats().retransmitted_segments, 0);
    assert_eq!(t.stats().fast_recoveries, 0);
    assert!(
        t.deadline().is_some_and(|d| d > ms(1125)),
        "no reordering timer"
    );
}

/// `rfc6675` keeps the old behaviour: no probe timer, the RTO alone.
#[test]
fn rfc6675_loss_detection_arms_no_probe_timer() {
    let cfg = TcpConfig {
        loss_detection: crate::tcp::LossDetection::Rfc6675,
        ..with_sack()
    };
    let mut t = established_with(
        &cfg,
        Repr {
            sack_permitted: true,
            ..syn_ack()
        },
    );
    assert!(!t.rack_on());
    t.write(bytes(3 * MSS));
    output(&mut t, ms(1000));
    input(
        &mut t,
        ms(1100),
        ack(IRS + 1, ISS + 1 + 2 * MSS),
        Message::new(),
    );
    assert_eq!(t.deadline(), Some(ms(1100 + 250)), "the RTO");
}

#[test]
fn event_counts_carry_past_32_bits_into_the_loss_box() {
    let mut c = Counters::default();
    c.low[Count::SegmentsSent as usize] = u32::MAX - 1;
    c.count(Count::SegmentsSent);
    assert_eq!(c.get(Count::SegmentsSent), u64::from(u32::MAX));
    assert!(c.loss.is_none(), "no carry yet");
    c.count(Count::SegmentsSent);
    c.count(Count::SegmentsSent);
    assert_eq!(c.get(Count::SegmentsSent), (1 << 32) + 1);
    assert_eq!(c.get(Count::SegmentsReceived), 0);
    c.count(Count::RttSamples);
    assert_eq!(c.get(Count::RttSamples), 1);
    // The loss counters the carry allocated still read as zero.
    assert_eq!(c.losses().timeouts, 0);
}

// ----------------------------------------------------------------------
// TCP segmentation offload (`stack::offload`)
// ----------------------------------------------------------------------

/// Linux's `tcp_tso_autosize` on a long path: about 1 ms at the pacing
/// rate (2 × cwnd / SRTT in slow start: 2 × 10 segments / 100 ms is a
/// fifth of a segment per ms), but never fewer than 2 segments; the
/// window of 10 goes out as five TSO segments of two frames.
#[test]
fn tso_on_a_100_ms_path_sends_the_two_segment_minimum() {
    let mut t = established();
    let smss = t.smss();
    t.tso_frames = u8::MAX;
    t.write(bytes(20 * smss));
    let out = output(&mut t, ms(100));
    let lens: Vec<_> = out.iter().map(|s| (s.payload.len(), s.gso_size)).collect();
    assert_eq!(lens, vec![(2 * smss, smss as u16); 5]);
    assert_eq!(
        t.stats.get(Count::SegmentsSent),
        2 + 10,
        "SYN, ACK and ten frames"
    );
}

/// On a short path (min RTT 100 µs) `tcp_tso_autosize` adds
/// `gso_max_size >> (min_rtt_us >> 9)` = 64 KiB: the whole initial
/// window leaves as one TSO segment; without TSO as ten segments.
#[test]
fn tso_on_a_short_path_sends_the_initial_window_as_one_segment() {
    for tso in [true, false] {
        let (mut t, _) = syn_sent(&plain());
        let (fx, _) = input(&mut t, Time::from_nanos(100_000), syn_ack(), Message::new());
        assert!(fx.established);
        let smss = t.smss();
        t.tso_frames = if tso { u8::MAX } else { 0 };
        t.write(bytes(20 * smss));
        let out = output(&mut t, Time::from_nanos(100_000));
        let lens: Vec<_> = out.iter().map(|s| s.payload.len()).collect();
        if tso {
            assert_eq!(lens, vec![10 * smss]);
            assert_eq!(out[0].gso_size as usize, smss);
        } else {
            assert_eq!(lens, vec![smss; 10]);
            assert!(out.iter().all(|s| s.gso_size == 0));
        }
    }
}

/// The NIC's room bounds a TSO segment in frames, like a run of plain
/// segments.
#[test]
fn tso_segments_stop_at_the_nic_room() {
    let (mut t, _) = syn_sent(&plain());
    input(&mut t, Time::from_nanos(100_000), syn_ack(), Message::new());
    let smss = t.smss();
    t.tso_frames = u8::MAX;
    t.budget = 3;
    t.write(bytes(20 * smss));
    let out = output(&mut t, Time::from_nanos(100_000));
    let lens: Vec<_> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(lens, vec![3 * smss]);
    assert!(t.nic_blocked);
}

/// A segment GRO merged from four counts as four received, and is
/// ACKed at once (more than one MSS since the last ACK).
#[test]
fn a_merged_segment_counts_its_frames_and_is_acked_at_once() {
    let mut t = established();
    let smss = t.smss();
    let rcv = t.rcv_nxt;
    let mut out = Vec::new();
    let data = seg(Control::None, rcv, Some(ISS + 1));
    let data = Repr {
        payload_len: 4 * smss,
        ..data
    };
    let before = t.stats.get(Count::SegmentsReceived);
    t.input_merged(ms(200), &data, 0, bytes(4 * smss), 4, &mut out);
    assert_eq!(t.stats.get(Count::SegmentsReceived) - before, 4);
    assert_one_ack(&out, ISS + 1, rcv + 4 * smss);
}

mod dctcp;
mod dsack;
mod prr;
mod undo;
