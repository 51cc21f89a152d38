//! `ping`: ICMP echo requests with round-trip statistics, like ping(8).
//!
//! Sends `count` requests of `size` data bytes every `interval`, waits up to
//! `timeout` for each reply, and publishes `rtt_min_ns`, `rtt_avg_ns`,
//! `rtt_max_ns`, `rtt_mdev_ns`, `sent`, `received` and `loss_percent` in the
//! run report. It fails when no reply came back at all.

use crate::Host;
use elvis_api::{AppError, AppResult, Message};
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Options of `ping`.
#[derive(Clone, Debug)]
pub struct Config {
    pub to: Ipv4Addr,
    pub count: u16,
    pub interval: Duration,
    pub timeout: Duration,
    pub size: usize,
}

/// Round-trip statistics (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RttStats {
    pub sent: u64,
    pub received: u64,
    pub min: u64,
    pub avg: u64,
    pub max: u64,
    pub mdev: u64,
}

impl RttStats {
    /// Computes the statistics of `samples` out of `sent` probes.
    pub fn of(sent: u64, samples: &[u64]) -> RttStats {
        if samples.is_empty() {
            return RttStats {
                sent,
                ..Default::default()
            };
        }
        let n = samples.len() as f64;
        let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / n;
        let sq = samples
            .iter()
            .map(|&s| (s as f64) * (s as f64))
            .sum::<f64>()
            / n;
        RttStats {
            sent,
            received: samples.len() as u64,
            min: *samples.iter().min().unwrap_or(&0),
            avg: mean.round() as u64,
            max: *samples.iter().max().unwrap_or(&0),
            // ping(8)'s mdev: sqrt(E[x²] − E[x]²).
            mdev: (sq - mean * mean).max(0.0).sqrt().round() as u64,
        }
    }
}

/// Pings and publishes the statistics.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let ident = (host.id() & 0xffff) as u16;
    // Another ping on this machine takes the next identifier.
    let sock = host.icmp_socket_from(ident)?;
    let payload = Message::zeros(cfg.size as u64);
    let mut samples = Vec::with_capacity(cfg.count as usize);
    for seq in 0..cfg.count {
        let sent_at = host.now();
        sock.send_echo(cfg.to, seq, payload.clone())?;
        let deadline = sent_at + cfg.timeout;
        loop {
            match host.timeout_at(deadline, sock.recv_echo()).await {
                Some(Ok(reply))
                    if reply.seq == seq && reply.from == cfg.to && reply.error.is_none() =>
                {
                    samples.push(host.now().as_nanos() - sent_at.as_nanos());
                    break;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => break,
            }
        }
        if seq + 1 < cfg.count {
            host.sleep_until(sent_at + cfg.interval).await;
        }
    }
    let stats = RttStats::of(u64::from(cfg.count), &samples);
    host.publish("sent", stats.sent as f64);
    host.publish("received", stats.received as f64);
    let loss = 100.0 * (stats.sent - stats.received) as f64 / stats.sent.max(1) as f64;
    host.publish("loss_percent", loss);
    if stats.received == 0 {
        return Err(AppError::new(format!(
            "no reply from {} ({} sent)",
            cfg.to, stats.sent
        )));
    }
    host.publish("rtt_min_ns", stats.min as f64);
    host.publish("rtt_avg_ns", stats.avg as f64);
    host.publish("rtt_max_ns", stats.max as f64);
    host.publish("rtt_mdev_ns", stats.mdev as f64);
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rtt_statistics_match_ping_definitions() {
        let s = RttStats::of(4, &[10, 20, 30]);
        assert_eq!(
            (s.min, s.avg, s.max, s.received, s.sent),
            (10, 20, 30, 3, 4)
        );
        // sqrt(mean of squares − square of mean) = sqrt(466.67 − 400) = 8.16
        assert_eq!(s.mdev, 8);
    }
}
