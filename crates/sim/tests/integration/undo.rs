//! Undo of spurious window reductions (Linux's `tcp_try_undo_*`,
//! `tcb/undo.rs`) between two elvis stacks on a reordering path.
//!
//! The path is the DSACK test's: 1 Gbit/s, 5 ms each way (min RTT 10 ms,
//! RACK's first reordering window `min_rtt / 4` = 2.5 ms), 1 % of frames
//! held back by 3 ms, nothing lost. Every fast recovery is spurious: the
//! held-back original arrives 0.5 ms after RACK gave up on it. Early in
//! the transfer, before DSACKs widen the reordering window, such
//! recoveries halve (CUBIC: × 0.7) the window; the DSACK of the
//! retransmission then shows each one spurious, and the sender undoes it.
//! Without undo CUBIC climbs back along its curve over many round trips
//! (at a 10 ms RTT, about one segment per round trip: seconds).

use crate::common::{reordering_transfer, Transfer};
use elvis_sim::TcpConfig;

const BYTES: u64 = 60_000_000;

/// Sends `BYTES` over the reordering path with undo on or off, DSACK
/// only (no timestamps).
fn transfer(undo: bool, seed: u64) -> Transfer {
    transfer_with(undo, seed, false)
}

/// Sends `BYTES` over the reordering path with undo on or off; with
/// `eifel`, timestamps on and DSACK off, so only the timestamp echo can
/// show a recovery spurious.
fn transfer_with(undo: bool, seed: u64, eifel: bool) -> Transfer {
    let tcp = TcpConfig {
        undo,
        // Without timestamps: with them our 1 µs TSval clock lets PAWS
        // drop a held-back original whose TSval is older than that of a
        // retransmission that filled an earlier hole (Linux's 1 ms clock
        // and one-tick PAWS window accept it), and that retransmission is
        // then no duplicate. DSACK undo is what this test is about.
        timestamps: eifel,
        dsack: !eifel,
        ..TcpConfig::default()
    };
    reordering_transfer(seed, tcp, BYTES)
}

/// Over six seeds every retransmission is spurious and DSACKed, and most
/// recoveries are undone. The rest overlap: a recovery that begins
/// before the DSACKs of the one before arrive starts a new episode
/// (Linux's `tcp_init_undo`), and only that one is undone then.
///
/// Without timestamps undo buys no time on this path: 2.9 to 4.4 s
/// against 3.1 to 3.4 s, 10 % more in all. PRR (`prr.rs`) resends a
/// held-back segment on the ACK that finds it lost, before the original
/// arrives 0.5 ms later, so no never-retransmitted segment is ever
/// acknowledged out of order and RACK never records reordering (RFC 8985
/// §6.2 step 3, as Linux's `tcp_check_sack_reordering`): with three
/// segments SACKed above a hole its window is 0 whatever the DSACKs, and
/// every window undo restores meets the next held-back frame at full size
/// (30 to 97 recoveries against 2 to 9 without undo). With timestamps the
/// original's echo shows the same recoveries spurious and undo does pay
/// (`undoing_by_timestamps_alone_shortens_the_transfer`).
#[test]
fn undoing_spurious_recoveries_on_a_reordering_path_keeps_every_dsacked_window() {
    let (mut total_on, mut total_off) = (0, 0);
    for seed in 1..=6 {
        let on = transfer(true, seed);
        let off = transfer(false, seed);
        eprintln!(
            "seed {seed}: undo on: {} retransmitted, {} DSACKed, {} recoveries, {} undone, \
             {} ms; off: {} recoveries, {} ms",
            on.tx.retransmitted_segments,
            on.rx.dsacks_sent,
            on.tx.fast_recoveries,
            on.tx.undos,
            on.elapsed_ns / 1_000_000,
            off.tx.fast_recoveries,
            off.elapsed_ns / 1_000_000,
        );
        assert_eq!(off.tx.undos, 0, "seed {seed}");
        assert_eq!(on.tx.timeouts + off.tx.timeouts, 0, "seed {seed}");
        // Nothing is lost: each retransmission arrives as a duplicate
        // (a tail loss probe's may come after the receiver closed).
        let (rexmit, dsacked) = (on.tx.retransmitted_segments, on.rx.dsacks_sent);
        assert!(
            dsacked <= rexmit && rexmit <= dsacked + on.tx.tlp_probes,
            "seed {seed}"
        );
        assert!(on.tx.fast_recoveries > 0, "seed {seed}");
        assert!(
            2 * on.tx.undos >= on.tx.fast_recoveries,
            "seed {seed}: {} of {} recoveries undone",
            on.tx.undos,
            on.tx.fast_recoveries
        );
        total_on += on.elapsed_ns;
        total_off += off.elapsed_ns;
    }
    assert!(
        total_on * 10 <= total_off * 12,
        "undo: {total_on} ns in all, without: {total_off} ns"
    );
}

/// Eifel detection (RFC 3522) on the same path: timestamps on (the
/// default), DSACK off.
/// A held-back original fills its hole, and its ACK echoes the original's
/// TSval, older than the retransmission's: the recovery was spurious.
#[test]
fn undoing_by_timestamps_alone_shortens_the_transfer() {
    for seed in 1..=3 {
        let on = transfer_with(true, seed, true);
        let off = transfer_with(false, seed, true);
        eprintln!(
            "seed {seed}: undo on: {} recoveries, {} undone, {} ms; off: {} recoveries, {} ms",
            on.tx.fast_recoveries,
            on.tx.undos,
            on.elapsed_ns / 1_000_000,
            off.tx.fast_recoveries,
            off.elapsed_ns / 1_000_000,
        );
        assert_eq!(on.tx.dsacks_received + off.tx.undos, 0, "seed {seed}");
        // Without DSACK RACK's reordering window never widens, so nearly
        // every held-back frame costs a recovery (about 300 per run);
        // most are undone, and the transfer takes 3.0 to 3.6 times less
        // (8.4, 8.8, 10.3 s against 29.6, 31.4, 31.5 s).
        assert!(2 * on.tx.undos >= on.tx.fast_recoveries, "seed {seed}");
        assert!(3 * on.elapsed_ns <= off.elapsed_ns, "seed {seed}");
    }
}
