//! Explicit Congestion Notification for TCP (RFC 3168 §6.1).
//!
//! A router that would drop a packet of an ECN-capable transport marks it
//! instead: it sets the IPv4 ECN field to CE (`0b11`). The receiving TCP
//! echoes the mark to the sender with the ECE flag, and the sender reduces
//! its congestion window as it would for a loss, without retransmitting
//! anything, and tells the receiver with the CWR flag.
//!
//! | RFC 3168 | here |
//! |---|---|
//! | §6.1.1 negotiation: SYN with ECE and CWR, SYN-ACK with ECE only; any other SYN-ACK means no ECN | `EcnState::syn_flags`, `EcnState::on_syn_ack`, `EcnState::on_syn` |
//! | §6.1.1 "SYN and SYN-ACK packets ... MUST NOT" be ECT, nor pure ACKs (§6.1.4), retransmissions (§6.1.5) or window probes (§6.1.6) | only new data segments are sent as ECT(0) (`EcnState::ect`) |
//! | §6.1.3 "the receiving TCP sets ECE in every subsequent ACK until it receives a CWR packet" | `EcnState::on_data` latches ECE; a CWR segment clears it (unless it is itself CE) |
//! | §6.1.2 the sender reacts "not ... more than once every window of data": halve cwnd and ssthresh, no retransmission | one reduction ([`elvis_tcpcc::CongestionControl::on_ecn`]) until everything sent before it is acknowledged; none during loss recovery, which already reduced |
//! | §6.1.2 "sets the CWR flag in the TCP header of the first new data packet sent after the window reduction" (after ECE, fast retransmit or RTO) | `EcnState::take_cwr` |
//!
//! A connection whose congestion control is DCTCP runs RFC 8257's ECN
//! instead ([`elvis_tcpcc::EcnFeedback::Dctcp`]): it asks for ECN whatever
//! the host's mode; it sends every segment ECT(0), SYN, SYN-ACK, pure
//! ACKs and retransmissions included, as Linux does for DCTCP (RFC 8311
//! §4.3 lifts RFC 3168's rule for such experiments), once ECN is agreed
//! (and its SYN, which asks); its receiver echoes the CE state of the latest data
//! segment in every ACK, CWR or not (§3.2, `EcnState::set_ce`), and ACKs
//! at once when that state changes, first ACKing any data whose ACK was
//! being delayed with the old state (the Tcb's `ecn_receive`, as Linux's
//! `dctcp_ece_ack_update`); its sender reports every ACK's ECE to the
//! algorithm.
//!
//! Like Linux's `net.ipv4.tcp_ecn`, [`EcnMode`] chooses whether a host
//! asks for ECN in its SYNs (`On`, Linux 1), only agrees when asked
//! (`Accept`, Linux's default 2, and ours), or neither (`Off`, Linux 0).
//!
//! # Gaps
//! A SYN that times out is resent with ECE and CWR still set (RFC 3168
//! §6.1.1.1 MAY send it without; Linux does). Simultaneous open never
//! negotiates ECN. ECN nonces (RFC 3540, historic) and Accurate ECN are
//! not implemented; a CE mark on a reassembled datagram counts if the last
//! fragment carried it.

use elvis_wire::tcp::{Repr, SeqNumber};

/// Whether a host uses ECN (Linux's `net.ipv4.tcp_ecn`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EcnMode {
    /// Never: SYNs do not ask, SYN-ACKs do not agree (Linux `tcp_ecn=0`).
    Off,
    /// Agree when the peer's SYN asks, never ask (Linux's default,
    /// `tcp_ecn=2`).
    #[default]
    Accept,
    /// Ask in our SYNs and agree when asked (Linux `tcp_ecn=1`).
    On,
}

/// The IPv4 ECN codepoints (RFC 3168 §5).
pub const NOT_ECT: u8 = 0b00;
/// ECN-capable transport, codepoint 0.
pub const ECT0: u8 = 0b10;
/// Congestion experienced.
pub const CE: u8 = 0b11;

/// One connection's ECN state (8 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct EcnState {
    /// ECN was negotiated: data goes out ECT(0) and ECE/CWR mean something.
    on: bool,
    /// Receiver: a CE mark was seen and no CWR yet; every ACK carries ECE.
    ece: bool,
    /// Sender: the window was reduced; the next new data segment has CWR.
    cwr_pending: bool,
    /// Sender: in an ECN window reduction until `recover` is acknowledged.
    in_cwr: bool,
    /// `SND.MAX` at the last window reduction (ECN, fast retransmit or
    /// RTO): an ECE counts as new congestion only on an ACK beyond it.
    recover: SeqNumber,
}

/// What the sender does with an ACK's ECE flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    /// No ECE, or ECN is off.
    None,
    /// ECE within a window already reduced for: counted, nothing done.
    Ignore,
    /// New congestion: reduce the window once.
    Reduce,
}

impl EcnState {
    /// Returns the state of a new connection sending from `iss`.
    pub fn new(iss: SeqNumber) -> EcnState {
        EcnState {
            recover: iss,
            ..EcnState::default()
        }
    }

    /// Returns true when ECN was negotiated.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// A passive open: notes whether the peer's SYN is an ECN-setup SYN
    /// (ECE and CWR both set, RFC 3168 §6.1.1) and whether we agree.
    pub fn on_syn(&mut self, syn: &Repr, mode: EcnMode) {
        // An ECN-setup SYN (ECE and CWR) asks; we accept unless off.
        self.on = syn.ece && syn.cwr && mode != EcnMode::Off;
    }

    /// Returns (ECE, CWR) for our SYN or SYN-ACK: an ECN-setup SYN when
    /// `mode` is `On` (active open), an ECN-setup SYN-ACK (ECE only) when
    /// the peer asked and we agree (passive open, "MUST NOT set ECE in a
    /// SYN-ACK" answering a non-ECN-setup SYN).
    pub fn syn_flags(&self, active: bool, mode: EcnMode) -> (bool, bool) {
        if active {
            let ask = mode == EcnMode::On;
            (ask, ask)
        } else {
            (self.on, false)
        }
    }

    /// An active open got its SYN-ACK: ECN is on only if we asked and it
    /// is an ECN-setup SYN-ACK (ECE set, CWR clear).
    pub fn on_syn_ack(&mut self, syn_ack: &Repr, mode: EcnMode) {
        self.on = mode == EcnMode::On && syn_ack.ece && !syn_ack.cwr;
    }

    /// Returns true if a new data segment should be sent as ECT(0).
    pub fn ect(&self) -> bool {
        self.on
    }

    /// Returns the IPv4 ECN field for a segment (`ECT(0)` or `Not-ECT`).
    pub fn codepoint(ect: bool) -> u8 {
        if ect {
            ECT0
        } else {
            NOT_ECT
        }
    }

    /// Returns true if our ACKs carry ECE now.
    pub fn echo(&self) -> bool {
        self.on && self.ece
    }

    /// Receiver: an acceptable segment arrived with the given CWR flag,
    /// `data` payload bytes and IPv4 ECN field `ip_ecn`. Returns
    /// (CE seen, ACK at once): a CE mark that starts the echo is ACKed
    /// immediately, as Linux does (quick-ACK on congestion).
    pub fn on_segment(&mut self, cwr: bool, data: bool, ip_ecn: u8) -> (bool, bool) {
        if !self.on {
            return (false, false);
        }
        // "When a CWR packet is received ... stop setting ECE" (§6.1.3);
        // a CWR packet that is itself CE-marked starts a new echo below.
        if cwr {
            self.ece = false;
        }
        if data && ip_ecn == CE {
            let start = !self.ece;
            self.ece = true;
            return (true, start);
        }
        (false, false)
    }

    /// Returns the RFC 8257 §3.2 receiver state `DCTCP.CE` (true when
    /// our ACKs carry ECE).
    pub fn ce_state(&self) -> bool {
        self.ece
    }

    /// Sets the RFC 8257 §3.2 receiver state `DCTCP.CE`: the ECE our ACKs
    /// carry from now on.
    pub fn set_ce(&mut self, ce: bool) {
        self.ece = ce && self.on;
    }

    /// Sender: an ACK with `ece` acknowledging up to `ack` arrived, with
    /// loss recovery `in_recovery` (already reduced). Ends an ECN window
    /// reduction once `recover` is acknowledged (returns `ended`), and
    /// says what to do with ECE.
    pub fn on_ack(&mut self, ece: bool, ack: SeqNumber, in_recovery: bool) -> (bool, Reaction) {
        if !self.on {
            return (false, Reaction::None);
        }
        let ended = self.in_cwr && ack >= self.recover;
        if ended {
            self.in_cwr = false;
        }
        let reaction = if !ece {
            Reaction::None
        } else if in_recovery || self.in_cwr || ack <= self.recover {
            // ACKs of data sent before the last reduction still carry the
            // echo of the marks that caused it (the receiver has not seen
            // our CWR yet): the same congestion, not new.
            Reaction::Ignore
        } else {
            Reaction::Reduce
        };
        (ended, reaction)
    }

    /// Sender: the window was reduced at `snd_max` by ECN (`ecn`), or by a
    /// fast retransmit or an RTO: the next new data segment carries CWR
    /// (§6.1.2), and ECEs for data sent before now are old news.
    pub fn reduced(&mut self, snd_max: SeqNumber, ecn: bool) {
        if !self.on {
            return;
        }
        self.cwr_pending = true;
        self.recover = snd_max;
        self.in_cwr = ecn;
    }

    /// Sender: loss recovery or an RTO takes over an ECN window reduction
    /// (one reduction for both, as Linux); returns true if one was running.
    pub fn take_reduction(&mut self) -> bool {
        std::mem::take(&mut self.in_cwr)
    }

    /// Returns true (once) if this new data segment must carry CWR.
    pub fn take_cwr(&mut self) -> bool {
        self.on && std::mem::take(&mut self.cwr_pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwr_that_is_itself_ce_marked_keeps_the_echo_on() {
        let mut e = EcnState {
            on: true,
            ..EcnState::default()
        };
        assert_eq!(e.on_segment(false, true, CE), (true, true));
        assert!(e.echo());
        assert_eq!(e.on_segment(true, true, CE), (true, true));
        assert!(e.echo());
        assert_eq!(e.on_segment(true, true, ECT0), (false, false));
        assert!(!e.echo());
    }

    #[test]
    fn a_pure_ack_with_ce_starts_no_echo() {
        let mut e = EcnState {
            on: true,
            ..EcnState::default()
        };
        assert_eq!(e.on_segment(false, false, CE), (false, false));
        assert!(!e.echo());
    }
}
