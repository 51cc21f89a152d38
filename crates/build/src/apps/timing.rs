//! When an application runs: `start` and `stop`, as ns-3's
//! `Application::SetStartTime`/`SetStopTime`, for every application.
//!
//! | option | value | meaning |
//! |---|---|---|
//! | `start` | a time (`'5s'`), `'uniform(0s,10s)'`, `'exp(2s)'` | the application begins then (virtual time from the start of the run); a random start is drawn from the machine's own seeded stream, so every machine of a group gets its own and the run stays reproducible |
//! | `stop` | a time (`'60s'`) | the application is stopped then if still running: its future is dropped (its sockets close as on `close`; a TCP connection ends with a FIN, or an RST if unread data remained) and it counts as finished |
//!
//! Without them an application starts at 0 and runs until it ends. A
//! `stop` time is an event: the run's clock reaches it even when the
//! application ended before.

use super::registry::ParamError;
use elvis_scenario::{Loc, Params};
use elvis_sim::{AppResult, Host, MachineId, Simulation, Time};
use std::future::Future;

/// When an application starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Start {
    /// At this virtual time, ns.
    At(u64),
    /// Uniformly at random in `[lo, hi]`, ns.
    Uniform(u64, u64),
    /// After an exponentially distributed time with this mean, ns.
    Exp(u64),
}

impl Start {
    /// Draws the start time from the random 64-bit words `next` gives (a
    /// fixed start draws nothing).
    pub(crate) fn draw(self, mut next: impl FnMut() -> u64) -> u64 {
        // A uniform draw in [0, 1) from the 53 high bits of one word.
        let mut unit = || (next() >> 11) as f64 / (1u64 << 53) as f64;
        match self {
            Start::At(t) => t,
            Start::Uniform(lo, hi) => lo + ((unit() * (hi - lo) as f64) as u64).min(hi - lo),
            // Inverse transform: -mean · ln(1 - u).
            Start::Exp(mean) => (-(mean as f64) * (1.0 - unit()).ln()) as u64,
        }
    }
}

/// An application's `start` and `stop`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    pub start: Option<Start>,
    /// Virtual time, ns.
    pub stop: Option<u64>,
}

impl Timing {
    /// Reads `start` and `stop` from an application's options.
    ///
    /// # Errors
    /// A value that does not parse, or a `stop` not after a fixed `start`,
    /// located at the value.
    pub fn parse(params: &Params) -> Result<Timing, ParamError> {
        let start = match params.get("start") {
            None => None,
            Some(p) => Some(parse_start(&p.value).map_err(|e| err(p.loc, e, START_HINT))?),
        };
        let stop = match params.get("stop") {
            None => None,
            Some(p) => Some(
                elvis_scenario::parse_duration_ns(&p.value)
                    .map_err(|e| err(p.loc, e, "stop='60s'"))?,
            ),
        };
        if let (Some(Start::At(s)), Some(e), Some(p)) = (start, stop, params.get("stop")) {
            if e <= s {
                return Err(err(
                    p.loc,
                    format!(
                        "stop ({}) is not after start ({})",
                        Time::from_nanos(e),
                        Time::from_nanos(s)
                    ),
                    "give a stop time later than the start",
                ));
            }
        }
        Ok(Timing { start, stop })
    }

    /// Starts `f` on machine `m` as application `app`, at its start time
    /// and until its stop time.
    pub fn spawn<F, Fut>(self, sim: &mut Simulation, m: MachineId, app: &str, f: F)
    where
        F: FnOnce(Host) -> Fut + 'static,
        Fut: Future<Output = AppResult> + 'static,
    {
        let gate = sim.waits_for_address(m);
        if self == Timing::default() && !gate {
            sim.spawn(m, app, f);
        } else {
            sim.spawn(m, app, move |h: Host| self.run(h, f, gate));
        }
    }

    /// [`Timing::spawn`] for a daemon.
    pub fn spawn_daemon<F, Fut>(self, sim: &mut Simulation, m: MachineId, app: &str, f: F)
    where
        F: FnOnce(Host) -> Fut + 'static,
        Fut: Future<Output = AppResult> + 'static,
    {
        let gate = sim.waits_for_address(m);
        if self == Timing::default() && !gate {
            sim.spawn_daemon(m, app, f);
        } else {
            sim.spawn_daemon(m, app, move |h: Host| self.run(h, f, gate));
        }
    }

    /// Runs `f` from its start to its stop; with `gate`, it begins only
    /// once the machine has an address (a DHCP client's first lease).
    async fn run<F, Fut>(self, h: Host, f: F, gate: bool) -> AppResult
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = AppResult>,
    {
        if let Some(s) = self.start {
            let at = s.draw(|| h.random_u64());
            if self.stop.is_some_and(|e| at >= e) {
                return Ok(()); // stopped before it began
            }
            h.sleep_until(Time::from_nanos(at)).await;
        }
        let gated = async move {
            if gate {
                h.configured().await;
            }
            f(h).await
        };
        let Some(stop) = self.stop else {
            return gated.await;
        };
        // Stopped: its future (and with it its sockets) is dropped.
        h.timeout_at(Time::from_nanos(stop), gated)
            .await
            .unwrap_or(Ok(()))
    }
}

const START_HINT: &str = "start='5s', start='uniform(0s,10s)' or start='exp(2s)'";

fn err(loc: Loc, message: impl Into<String>, hint: &str) -> ParamError {
    ParamError {
        message: message.into(),
        hint: Some(hint.into()),
        loc,
    }
}

/// Parses `'5s'`, `'uniform(0s,10s)'` or `'exp(2s)'`.
pub(crate) fn parse_start(v: &str) -> Result<Start, String> {
    let v = v.trim();
    let call = |name: &str| {
        v.strip_prefix(name)
            .and_then(|r| r.trim_start().strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
    };
    if let Some(args) = call("uniform") {
        let (lo, hi) = args
            .split_once(',')
            .ok_or_else(|| format!("'{v}': uniform takes two times, uniform(LOW,HIGH)"))?;
        let (lo, hi) = (
            elvis_scenario::parse_duration_ns(lo.trim())?,
            elvis_scenario::parse_duration_ns(hi.trim())?,
        );
        if hi < lo {
            return Err(format!("'{v}': the upper bound is below the lower one"));
        }
        Ok(Start::Uniform(lo, hi))
    } else if let Some(mean) = call("exp") {
        Ok(Start::Exp(elvis_scenario::parse_duration_ns(mean.trim())?))
    } else {
        Ok(Start::At(elvis_scenario::parse_duration_ns(v)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_values_parse_and_bad_ones_say_why() {
        assert_eq!(parse_start("5s"), Ok(Start::At(5_000_000_000)));
        assert_eq!(
            parse_start("uniform(0s, 10s)"),
            Ok(Start::Uniform(0, 10_000_000_000))
        );
        assert_eq!(parse_start("exp(2ms)"), Ok(Start::Exp(2_000_000)));
        assert!(parse_start("uniform(5s,1s)").unwrap_err().contains("below"));
        assert!(parse_start("uniform(5s)")
            .unwrap_err()
            .contains("two times"));
        assert!(parse_start("soon").is_err());
    }

    /// The draws follow their distributions: the sample mean and the
    /// median of 100,000 draws against the closed forms (uniform: (a+b)/2
    /// and (a+b)/2; exponential: the mean and mean · ln 2).
    #[test]
    fn random_starts_follow_their_distributions() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            // splitmix64
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let n = 100_000;
        let stats = |s: Start, next: &mut dyn FnMut() -> u64| {
            let mut v: Vec<u64> = (0..n).map(|_| s.draw(&mut *next)).collect();
            v.sort_unstable();
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
            (mean, v[n / 2] as f64, v[0], v[n - 1])
        };
        let (mean, median, lo, hi) = stats(Start::Uniform(2_000, 12_000), &mut next);
        assert!((mean - 7_000.0).abs() < 7_000.0 * 0.01, "{mean}");
        assert!((median - 7_000.0).abs() < 7_000.0 * 0.02, "{median}");
        assert!(lo >= 2_000 && hi <= 12_000);
        let (mean, median, _, _) = stats(Start::Exp(1_000_000), &mut next);
        assert!((mean - 1e6).abs() < 1e6 * 0.01, "{mean}");
        assert!(
            (median - 1e6 * std::f64::consts::LN_2).abs() < 1e6 * 0.02,
            "{median}"
        );
        assert_eq!(
            Start::At(5).draw(|| unreachable!("a fixed start draws nothing")),
            5
        );
    }
}
