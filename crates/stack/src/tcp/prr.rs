//! Proportional Rate Reduction (PRR, RFC 9937, which obsoletes RFC 6937):
//! how much a sender in fast recovery may send for each ACK.
//!
//! Without it, entering recovery cuts the window to `ssthresh` at once
//! and RFC 6675 sends whenever the pipe falls below it: after a cut from
//! 20 segments to 10, the first 10 ACKs send nothing and the next ones
//! one segment each, so the ACK clock goes silent for half a round trip
//! and, with many losses, the pipe can fall far below `ssthresh` and stay
//! there. PRR spreads the reduction over the round trip instead: while
//! the data in flight is above `ssthresh` it sends `ssthresh / RecoverFS`
//! of what each ACK reports delivered (one segment per two ACKs for a
//! halving), and once it is at or below `ssthresh` it rebuilds towards it
//! no faster than slow start (PRR-SSRB, at most one segment more than was
//! delivered), or, when the ACK reports a new loss or does not advance
//! `SND.UNA`, no faster than it was delivered (PRR-CRB).
//!
//! Linux has used PRR in every recovery since 3.2 (`tcp_cwnd_reduction`
//! in `net/ipv4/tcp_input.c`), and ns-3's default recovery is its
//! `TcpPrrRecovery`. This module is the arithmetic only, in bytes as the
//! RFC writes it; the TCB (`tcb.rs`) starts it on entering fast recovery,
//! reports each ACK's delivered bytes and every byte it sends, and sends
//! against [`Prr::cwnd`] until the recovery ends, when the window becomes
//! `ssthresh` (§6.3).
//!
//! Choices, each as Linux or the RFC:
//! - `RecoverFS` is the RFC 9937 §6.1 value: the bytes outstanding when
//!   the triggering ACK arrived, less those SACKed before it (Linux uses
//!   the window before the cut, `prior_cwnd`, which is the same for a
//!   window-limited sender).
//! - An ACK that delivers nothing changes nothing (§6.2).
//! - The first ACK of a recovery may always send one segment, the fast
//!   retransmit (§6.2, "prr_out == 0 and SndCnt == 0").
//! - The proportional share is rounded up to whole segments, as Linux,
//!   which counts packets, rounds it (the RFC's examples are in segments
//!   too); in bytes a share of half a segment would send nothing.

/// One recovery's PRR state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// The bytes the recovery expects to see delivered (`RecoverFS`).
    recover_fs: u64,
    /// Bytes reported delivered since the recovery began (`prr_delivered`).
    delivered: u64,
    /// Bytes sent since the recovery began, new and retransmitted
    /// (`prr_out`).
    out: u64,
    /// The window the sender sends against: data in flight plus what PRR
    /// allows (`cwnd = inflight + SndCnt`).
    cwnd: u64,
}

impl Prr {
    /// No recovery.
    pub const NONE: Prr = Prr {
        recover_fs: 0,
        delivered: 0,
        out: 0,
        cwnd: 0,
    };

    /// Starts a recovery with `recover_fs` bytes expected to be delivered.
    /// Until an ACK is counted the window is 0: the fast retransmit goes
    /// regardless, and what else may go is the ACK's to say (Linux runs
    /// `tcp_cwnd_reduction` before it sends anything in recovery).
    pub fn start(recover_fs: u64) -> Prr {
        Prr {
            recover_fs,
            delivered: 0,
            out: 0,
            cwnd: 0,
        }
    }

    /// Returns the window to send against.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Returns `prr_delivered` and `prr_out`.
    #[cfg(test)]
    pub fn counts(&self) -> (u64, u64) {
        (self.delivered, self.out)
    }

    /// Counts `bytes` sent (`prr_out += data sent`).
    pub fn on_send(&mut self, bytes: u64) {
        self.out = self.out.saturating_add(bytes);
    }

    /// Counts an ACK that reported `delivered` bytes delivered (newly
    /// cumulatively acknowledged plus newly SACKed) and left `inflight`
    /// bytes in the network; `safe` when it advanced `SND.UNA` and showed
    /// no new loss (RFC 9937's `safeACK`). `first` is the ACK that began
    /// the recovery: what it delivered counts in `RecoverFS` too (§6.1).
    /// Returns the new window (RFC 9937 §6.2).
    pub fn on_ack(
        &mut self,
        delivered: u64,
        inflight: u64,
        ssthresh: u64,
        smss: u64,
        safe: bool,
        first: bool,
    ) -> u64 {
        if first {
            self.recover_fs = self.recover_fs.saturating_add(delivered);
        }
        if delivered == 0 {
            return self.cwnd;
        }
        self.delivered = self.delivered.saturating_add(delivered);
        let sndcnt = if inflight > ssthresh {
            // Proportional rate reduction: CEIL(prr_delivered * ssthresh
            // / RecoverFS) - prr_out, the CEIL in whole segments (Linux
            // counts packets).
            let fs = u128::from(self.recover_fs.max(1)) * u128::from(smss.max(1));
            let segs = (u128::from(self.delivered) * u128::from(ssthresh)).div_ceil(fs);
            ((segs * u128::from(smss)) as u64).saturating_sub(self.out)
        } else {
            // PRR-CRB, or PRR-SSRB (one segment more) on a safe ACK.
            let mut n = self.delivered.saturating_sub(self.out).max(delivered);
            if safe {
                n += smss;
            }
            n.min(ssthresh - inflight)
        };
        let sndcnt = if self.out == 0 && sndcnt == 0 {
            smss // the fast retransmit
        } else {
            sndcnt
        };
        self.cwnd = inflight + sndcnt;
        self.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// The single-loss example of RFC 9937 §7 (RFC 6937 §6): 20 segments
    /// in flight, one lost, `ssthresh` 10 (a halving), every ACK SACKs
    /// one more segment. PRR sends on every other ACK while the pipe is
    /// above `ssthresh`, then one for one, and ends with the pipe at
    /// `ssthresh` (RFC 6675 instead stays silent for the first half of
    /// the ACKs, then sends one for one).
    #[test]
    fn a_halving_sends_one_segment_for_every_two_acks_and_ends_at_ssthresh() {
        let mut prr = Prr::start(20 * MSS - MSS);
        let mut pipe = 19 * MSS;
        let mut pattern = String::new();
        for k in 0..19 {
            pipe -= MSS; // the ACK SACKed a segment: it left the network
            let cwnd = prr.on_ack(MSS, pipe, 10 * MSS, MSS, false, k == 0);
            if pipe + MSS <= cwnd {
                prr.on_send(MSS);
                pipe += MSS;
                pattern.push('S');
            } else {
                pattern.push('.');
            }
            assert!(pipe + MSS > prr.cwnd(), "one segment per ACK at most");
        }
        assert_eq!(pattern, "S.S.S.S.S.S.S.S..SS");
        assert_eq!(pipe, 10 * MSS);
        assert_eq!(prr.counts(), (19 * MSS, 10 * MSS));
    }

    #[test]
    fn below_ssthresh_rebuilds_no_faster_than_slow_start() {
        // Heavy loss left 2 segments in flight against ssthresh 10; the
        // fast retransmit went already.
        let mut prr = Prr::start(20 * MSS);
        prr.on_send(MSS);
        // A safe ACK (SND.UNA advanced, no new loss) delivering one
        // segment: PRR-SSRB allows what was delivered, plus one.
        let mut ssrb = prr;
        assert_eq!(
            ssrb.on_ack(MSS, 2 * MSS, 10 * MSS, MSS, true, false),
            4 * MSS
        );
        // The same ACK showing a new loss: PRR-CRB, what was delivered.
        let mut crb = prr;
        assert_eq!(
            crb.on_ack(MSS, 2 * MSS, 10 * MSS, MSS, false, false),
            3 * MSS
        );
        // Never above ssthresh, however much was delivered.
        assert_eq!(
            prr.on_ack(20 * MSS, 9 * MSS, 10 * MSS, MSS, true, false),
            10 * MSS
        );
    }

    #[test]
    fn an_ack_delivering_nothing_changes_nothing() {
        let mut prr = Prr::start(10 * MSS);
        assert_eq!(prr.on_ack(0, 3 * MSS, 5 * MSS, MSS, false, false), 0);
        assert_eq!(prr.counts(), (0, 0));
    }

    #[test]
    fn the_first_ack_may_always_send_the_fast_retransmit() {
        // Delivered one byte: the share rounds up to a segment, and a
        // share of 0 still lets the retransmission go.
        let mut prr = Prr::start(100 * MSS);
        assert_eq!(
            prr.on_ack(1, 99 * MSS, 50 * MSS, MSS, false, true),
            100 * MSS
        );
        let mut prr = Prr::start(100 * MSS);
        assert_eq!(prr.on_ack(1, 99 * MSS, 0, MSS, false, true), 100 * MSS);
    }
}
