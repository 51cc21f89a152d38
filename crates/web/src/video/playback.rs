//! A player's buffer in virtual time (integer ns, no I/O): segments are
//! pushed in as they arrive, playback drains the buffer at real speed,
//! and an empty buffer stalls playback until the next segment arrives.
//!
//! - Playback starts when the first segment arrives; the **start-up
//!   delay** is the time from the session's start (the manifest request)
//!   to that arrival.
//! - After that, time is either **play** (the buffer drains) or **stall**
//!   (it is empty and more is expected); a **rebuffering event** is each
//!   passage from play to stall.
//! - The **rebuffering ratio** is `stall / (play + stall)`.
//!
//! The client calls [`Playback::advance`] before reading the buffer and
//! sleeps exactly the buffer's length at the end, so the last segment
//! plays out without a stall.

/// The buffer and what it has played.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Playback {
    t0: u64,
    at: u64,
    buffer_ns: u64,
    startup_ns: Option<u64>,
    stalled: bool,
    /// Time spent playing, ns.
    pub play_ns: u64,
    /// Time spent stalled after start-up, ns.
    pub stall_ns: u64,
    /// Rebuffering events.
    pub stalls: u64,
}

impl Playback {
    /// A session started at `t0` (ns).
    pub fn new(t0: u64) -> Playback {
        Playback {
            t0,
            at: t0,
            ..Playback::default()
        }
    }

    /// Plays (or stalls) up to `now`.
    pub fn advance(&mut self, now: u64) {
        let elapsed = now.saturating_sub(self.at);
        self.at = self.at.max(now);
        if self.startup_ns.is_none() || elapsed == 0 {
            return;
        }
        if self.buffer_ns >= elapsed {
            self.buffer_ns -= elapsed;
            self.play_ns += elapsed;
            return;
        }
        self.play_ns += self.buffer_ns;
        self.stall_ns += elapsed - self.buffer_ns;
        self.buffer_ns = 0;
        if !self.stalled {
            self.stalled = true;
            self.stalls += 1;
        }
    }

    /// A segment of `seg_ns` arrived at `now`.
    pub fn push(&mut self, now: u64, seg_ns: u64) {
        self.advance(now);
        if self.startup_ns.is_none() {
            self.startup_ns = Some(now.saturating_sub(self.t0));
        }
        self.buffer_ns += seg_ns;
        self.stalled = false;
    }

    /// Returns the buffer's length, ns (as of the last update).
    pub fn buffer_ns(&self) -> u64 {
        self.buffer_ns
    }

    /// Returns the start-up delay, once playback started.
    pub fn startup_ns(&self) -> Option<u64> {
        self.startup_ns
    }

    /// Returns `stall / (play + stall)` (0 before any).
    pub fn ratio(&self) -> f64 {
        let all = self.play_ns + self.stall_ns;
        if all == 0 {
            0.0
        } else {
            self.stall_ns as f64 / all as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn nothing_plays_or_stalls_before_the_first_segment() {
        let mut p = Playback::new(5 * S);
        p.advance(7 * S);
        assert_eq!((p.play_ns, p.stall_ns, p.stalls), (0, 0, 0));
        p.push(8 * S, 4 * S);
        assert_eq!(p.startup_ns(), Some(3 * S));
        assert_eq!(p.buffer_ns(), 4 * S);
    }

    #[test]
    fn a_buffer_that_keeps_up_never_stalls() {
        let mut p = Playback::new(0);
        p.push(S, 4 * S);
        p.push(3 * S, 4 * S); // 2 s played, 6 left
        p.advance(9 * S);
        assert_eq!(
            (p.play_ns, p.stall_ns, p.stalls, p.buffer_ns()),
            (8 * S, 0, 0, 0)
        );
        assert_eq!(p.ratio(), 0.0);
    }

    /// Segments of D = 4 s arriving every T = 6 s: each gap after the
    /// first stalls T − D = 2 s; n = 3 segments: play 12 s, stall 4 s,
    /// 2 events, ratio 4/16.
    #[test]
    fn downloads_slower_than_playback_stall_t_minus_d_per_segment() {
        let mut p = Playback::new(0);
        for k in 1..=3 {
            p.push(6 * S * k, 4 * S);
        }
        p.advance(18 * S + 4 * S);
        assert_eq!((p.play_ns, p.stall_ns, p.stalls), (12 * S, 4 * S, 2));
        assert_eq!(p.ratio(), 0.25);
    }

    #[test]
    fn a_stall_is_one_event_however_many_updates_it_spans() {
        let mut p = Playback::new(0);
        p.push(0, S);
        p.advance(2 * S);
        p.advance(3 * S);
        p.advance(3 * S);
        assert_eq!((p.stall_ns, p.stalls), (2 * S, 1));
        // Time never runs back.
        p.advance(S);
        assert_eq!((p.play_ns, p.stall_ns), (S, 2 * S));
    }
}
