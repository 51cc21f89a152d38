//! TCP keep-alive (RFC 1122 §4.2.3.6, RFC 9293 §3.8.4) with Linux's
//! timing (`net/ipv4/tcp_timer.c`, `tcp_keepalive_timer`).
//!
//! Off unless the application asks for it (`SO_KEEPALIVE`). Once on, the
//! timer runs while the connection is synchronized:
//!
//! - when it fires with data unacknowledged or unsent, the RTO is in charge
//!   and the timer is re-armed `time` later;
//! - when the connection has received nothing for at least `time`, and
//!   fewer than `probes` probes are unanswered, it sends a probe (an empty
//!   segment with `SEG.SEQ = SND.UNA − 1`, which the peer must acknowledge)
//!   and re-arms `interval` later;
//! - with `probes` probes unanswered it resets the connection (RST, as
//!   Linux does) and reports `TimedOut`.
//!
//! Any arriving segment resets the count of unanswered probes. A dead peer
//! is therefore detected exactly `time + probes · interval` after the last
//! segment it sent.
//!
//! # Gaps
//! `TCP_USER_TIMEOUT` (which overrides the probe count on Linux) is not
//! modelled; neither is the keep-alive of a FIN-WAIT-2 orphan
//! (`tcp_fin_timeout`).

use crate::endpoint::SocketError;
use elvis_kernel::Time;
use std::time::Duration;

/// Keep-alive settings (`TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// Idle time before the first probe (Linux `tcp_keepalive_time`).
    pub time: Duration,
    /// Time between unanswered probes (`tcp_keepalive_intvl`).
    pub interval: Duration,
    /// Unanswered probes before the connection is dropped
    /// (`tcp_keepalive_probes`).
    pub probes: u32,
}

impl Default for Keepalive {
    /// Returns Linux's defaults: 7200 s, 75 s, 9 probes.
    fn default() -> Self {
        Keepalive {
            time: Duration::from_secs(7200),
            interval: Duration::from_secs(75),
            probes: 9,
        }
    }
}

/// Linux's limit for `TCP_KEEPIDLE` and `TCP_KEEPINTVL` (seconds).
const MAX_KEEP_SECS: u64 = 32_767;
/// Linux's limit for `TCP_KEEPCNT`.
const MAX_KEEP_PROBES: u32 = 127;

impl Keepalive {
    /// Checks the settings against Linux's ranges (1 s to 32767 s for the
    /// times, 1 to 127 probes).
    ///
    /// # Errors
    /// `InvalidInput` naming the setting out of range.
    pub fn validate(&self) -> Result<(), SocketError> {
        let secs = Duration::from_secs(1)..=Duration::from_secs(MAX_KEEP_SECS);
        if !secs.contains(&self.time) {
            return Err(SocketError::InvalidInput(
                "keep-alive time must be 1 s to 32767 s (TCP_KEEPIDLE)",
            ));
        }
        if !secs.contains(&self.interval) {
            return Err(SocketError::InvalidInput(
                "keep-alive interval must be 1 s to 32767 s (TCP_KEEPINTVL)",
            ));
        }
        if !(1..=MAX_KEEP_PROBES).contains(&self.probes) {
            return Err(SocketError::InvalidInput(
                "keep-alive probes must be 1 to 127 (TCP_KEEPCNT)",
            ));
        }
        Ok(())
    }
}

/// What the keep-alive timer asks the connection to do when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing now (re-armed).
    Wait,
    /// Send a probe.
    Probe,
    /// Too many probes unanswered: reset and report `TimedOut`.
    Abort,
}

/// One connection's keep-alive state (boxed in the TCB, so connections
/// without keep-alive pay one pointer).
#[derive(Clone, Debug)]
pub struct KeepaliveTimer {
    pub cfg: Keepalive,
    /// When the timer fires next; `None` until the connection is
    /// synchronized.
    at: Option<Time>,
    /// When the last segment arrived.
    last_rcv: Time,
    /// Probes sent and not answered.
    probes_out: u32,
}

impl KeepaliveTimer {
    /// Returns a timer; `synchronized_at` arms it (`time` from then).
    pub fn new(cfg: Keepalive, synchronized_at: Option<Time>) -> KeepaliveTimer {
        KeepaliveTimer {
            cfg,
            at: synchronized_at.map(|t| t + cfg.time),
            last_rcv: synchronized_at.unwrap_or(Time::ZERO),
            probes_out: 0,
        }
    }

    /// Returns when the timer fires next.
    pub fn deadline(&self) -> Option<Time> {
        self.at
    }

    /// Notes an arriving segment on a synchronized connection (the first
    /// one arms the timer, as Linux arms it on entering ESTABLISHED).
    pub fn received(&mut self, now: Time) {
        self.last_rcv = now;
        self.probes_out = 0;
        if self.at.is_none() {
            self.at = Some(now + self.cfg.time);
        }
    }

    /// The timer fired at `now`; `busy` when data is unacknowledged or
    /// unsent. Returns what to do and re-arms.
    pub fn fire(&mut self, now: Time, busy: bool) -> Action {
        if busy {
            self.at = Some(now + self.cfg.time);
            return Action::Wait;
        }
        let idle = now.since(self.last_rcv);
        if idle < self.cfg.time {
            self.at = Some(now + (self.cfg.time - idle));
            return Action::Wait;
        }
        if self.probes_out >= self.cfg.probes {
            self.at = None;
            return Action::Abort;
        }
        self.probes_out += 1;
        self.at = Some(now + self.cfg.interval);
        Action::Probe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Time {
        Time::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn a_silent_peer_is_given_up_after_time_plus_probes_times_interval() {
        let cfg = Keepalive {
            time: Duration::from_secs(10),
            interval: Duration::from_secs(2),
            probes: 3,
        };
        let mut k = KeepaliveTimer::new(cfg, Some(secs(5)));
        let mut probes = Vec::new();
        loop {
            let at = k.deadline().expect("armed");
            match k.fire(at, false) {
                Action::Probe => probes.push(at),
                Action::Wait => {}
                Action::Abort => {
                    assert_eq!(at, secs(5 + 10 + 3 * 2));
                    break;
                }
            }
        }
        assert_eq!(probes, vec![secs(15), secs(17), secs(19)]);
    }

    #[test]
    fn an_answered_probe_restarts_the_idle_time() {
        let mut k = KeepaliveTimer::new(Keepalive::default(), Some(secs(0)));
        assert_eq!(k.fire(secs(7200), false), Action::Probe);
        k.received(secs(7201));
        assert_eq!(k.fire(secs(7275), false), Action::Wait);
        assert_eq!(k.deadline(), Some(secs(7201 + 7200)));
    }

    #[test]
    fn data_in_flight_postpones_probing_by_the_idle_time() {
        let mut k = KeepaliveTimer::new(Keepalive::default(), Some(secs(0)));
        assert_eq!(k.fire(secs(7200), true), Action::Wait);
        assert_eq!(k.deadline(), Some(secs(14_400)));
    }

    #[test]
    fn settings_outside_linux_ranges_are_rejected() {
        let ok = Keepalive::default();
        assert!(ok.validate().is_ok());
        for bad in [
            Keepalive {
                time: Duration::ZERO,
                ..ok
            },
            Keepalive {
                interval: Duration::from_secs(40_000),
                ..ok
            },
            Keepalive { probes: 0, ..ok },
            Keepalive { probes: 128, ..ok },
        ] {
            assert!(matches!(bad.validate(), Err(SocketError::InvalidInput(_))));
        }
    }
}
