//! The end-of-run summary printed by `elvis run`.

use elvis_sim::report::{End, Report};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.2} k", x / 1e3),
        x => format!("{x:.0} "),
    }
}

/// A virtual duration for people: `334.8 µs`, `41.20 ms`, `60.837 s`
/// (the report keeps the exact nanoseconds).
pub fn duration(ns: f64) -> String {
    match ns.abs() {
        x if x >= 1e9 => format!("{:.3} s", ns / 1e9),
        x if x >= 1e6 => format!("{:.2} ms", ns / 1e6),
        x if x >= 1e3 => format!("{:.1} µs", ns / 1e3),
        _ => format!("{ns:.0} ns"),
    }
}

/// A published metric's value in the unit its name ends with (`_ns`,
/// `_bps`, `_bytes`, `_percent`), else as a plain number.
pub fn metric_value(name: &str, v: f64) -> String {
    if name.ends_with("_ns") {
        duration(v)
    } else if name.ends_with("_bps") {
        format!("{}bit/s", si(v))
    } else if name.ends_with("_bytes") {
        format!("{}B", si(v))
    } else if name.ends_with("_percent") {
        format!("{v:.2} %")
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// How many queues the summary lists.
const QUEUES_SHOWN: usize = 5;

/// Lists the queues that dropped or marked most (nothing when none did).
fn queues(s: &mut String, r: &Report) {
    let mut busy: Vec<_> = (r.queues.iter())
        .filter(|q| q.dropped + q.marked > 0)
        .collect();
    if busy.is_empty() {
        return;
    }
    busy.sort_by_key(|q| std::cmp::Reverse(q.dropped + q.marked));
    let _ = writeln!(
        s,
        "  queues           {} with drops or marks (of {} used); top by drops:",
        busy.len(),
        r.queues_total
    );
    for q in busy.iter().take(QUEUES_SHOWN) {
        let reasons: Vec<String> = (q.dropped_by.iter())
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            s,
            "    {:<24} {:<8} {:<8} dropped {} ({}), marked {}, max {} waiting, mean {:.1}",
            format!("{}/{}", q.network, q.machine),
            q.direction,
            q.discipline,
            q.dropped,
            reasons.join(", "),
            q.marked,
            q.max_packets,
            q.mean_packets
        );
    }
}

/// Says why a run stopped early and which network carried most frames
/// (the one a storm saturates); nothing for a run that ended by itself.
fn stopped(s: &mut String, r: &Report) {
    if !matches!(r.end, End::Interrupted | End::WallLimit) {
        return;
    }
    let _ = write!(s, "  stopped          {} at this simulated time", r.end);
    if let Some(n) = (r.networks.iter())
        .filter(|n| n.stats.frames_sent > 0)
        .max_by_key(|n| n.stats.frames_sent)
    {
        let _ = write!(
            s,
            "; busiest network '{}' ({} frames sent, {} dropped at its queues)",
            n.name, n.stats.frames_sent, n.stats.queue_drops
        );
    }
    s.push('\n');
}

/// How many written files the summary names.
const FILES_SHOWN: usize = 20;

/// Lists the files a run wrote (nothing when it wrote none).
pub fn files(written: &[PathBuf]) -> String {
    let mut s = String::new();
    if written.is_empty() {
        return s;
    }
    let _ = writeln!(s, "  files written    {}", written.len());
    for f in written.iter().take(FILES_SHOWN) {
        let _ = writeln!(s, "    {}", f.display());
    }
    if written.len() > FILES_SHOWN {
        let _ = writeln!(s, "    … {} more", written.len() - FILES_SHOWN);
    }
    s
}

/// Returns the summary table of a run.
pub fn render(name: &str, r: &Report, build: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "== elvis run: {name} (seed {}) ==", r.seed);
    simulated_time(&mut s, r);
    stopped(&mut s, r);
    costs(&mut s, r, build);
    let _ = writeln!(s, "  machines         {}", r.machines);
    packets(&mut s, r);
    dhcp(&mut s, r);
    tcp(&mut s, r);
    queues(&mut s, r);
    applications(&mut s, r);
    metrics(&mut s, r);
    problems(&mut s, r);
    s
}

/// Says how long the run lasted in simulated time, and when the
/// applications were done if timers ran on after them.
fn simulated_time(s: &mut String, r: &Report) {
    let _ = write!(s, "  simulated time   {}", duration(r.sim_time_ns as f64));
    match r.apps_ended_ns {
        Some(a) if a < r.sim_time_ns => {
            let _ = write!(
                s,
                " (applications done at {}; timers ran on)",
                duration(a as f64)
            );
        }
        _ => {}
    }
    s.push('\n');
}

/// Says what the run cost: wall time of the run and the build
/// (`build`), events and their rate, peak memory (and its estimate).
fn costs(s: &mut String, r: &Report, build: Duration) {
    let p = &r.performance;
    let _ = writeln!(
        s,
        "  wall time        {:.3} s run + {:.3} s build",
        p.wall_time_s,
        build.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "  events           {} ({}events/s)",
        r.events,
        si(p.events_per_s)
    );
    let _ = write!(
        s,
        "  peak memory      {:.1} MiB",
        p.peak_rss_bytes as f64 / 1048576.0
    );
    if let Some(e) = &r.memory_estimate {
        let _ = write!(s, " (estimated {:.1} MiB)", e.bytes as f64 / 1048576.0);
    }
    s.push('\n');
    if let Some(rt) = &p.realtime {
        let _ = write!(
            s,
            "  real time        largest lag {:.3} ms",
            rt.max_lag_ns as f64 / 1e6
        );
        if rt.fell_behind == 0 {
            s.push_str(", kept up\n");
        } else {
            let _ = writeln!(
                s,
                ", fell behind {} times ({} events over {:.0} ms late): \
                 the machine cannot run this scenario in real time",
                rt.fell_behind,
                rt.late_events,
                rt.tolerance_ns as f64 / 1e6
            );
        }
    }
}

/// Counts the frames and UDP datagrams sent and delivered, the drops by
/// reason, and the frames GRO merged (when any were).
fn packets(s: &mut String, r: &Report) {
    let k = &r.packets;
    let _ = writeln!(
        s,
        "  frames           {} sent, {} delivered",
        k.frames_sent, k.frames_delivered
    );
    let _ = writeln!(
        s,
        "  UDP datagrams    {} sent, {} delivered",
        k.udp_sent, k.udp_delivered
    );
    if k.dropped_total == 0 {
        let _ = writeln!(s, "  dropped          0");
    } else {
        let reasons: Vec<String> = k.dropped.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(
            s,
            "  dropped          {} ({})",
            k.dropped_total,
            reasons.join(", ")
        );
    }
    // Only hosts with NIC offloads merge: no line without them.
    if k.gro_merged > 0 {
        let _ = writeln!(
            s,
            "  GRO              {} frames merged into an earlier frame's segment",
            k.gro_merged
        );
    }
}

/// Lists the TCP connections' throughput shares by congestion control
/// (nothing without TCP).
/// Says how the DHCP clients fared, naming a few that got no address.
fn dhcp(s: &mut String, r: &Report) {
    let Some(d) = &r.dhcp else { return };
    let acks = d.messages.get("ack").copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "  DHCP             {} of {} clients configured; {} ACKs, {} renewed, {} expired, {} server{}",
        d.configured,
        d.clients,
        acks,
        d.extended,
        d.expired,
        d.servers.len(),
        if d.servers.len() == 1 { "" } else { "s" }
    );
    if d.never_configured > 0 {
        let names: Vec<&str> = d.unconfigured.iter().take(5).map(String::as_str).collect();
        let more = d.never_configured.saturating_sub(names.len() as u64);
        let _ = writeln!(
            s,
            "                   never configured: {}{}{}",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            if d.pool_exhausted > 0 {
                format!(" ({} DISCOVERs found the pools empty)", d.pool_exhausted)
            } else {
                String::new()
            }
        );
    }
}

fn tcp(s: &mut String, r: &Report) {
    if r.tcp_shares.is_empty() {
        return;
    }
    let shares: Vec<String> = r
        .tcp_shares
        .iter()
        .map(|c| {
            format!(
                "{} {:.1} % ({} sender{}, {}B, {}bit/s)",
                c.congestion,
                c.throughput_share * 100.0,
                c.senders,
                if c.senders == 1 { "" } else { "s" },
                si(c.bytes_acked as f64),
                si(c.throughput_bps as f64)
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  TCP              {} connections; throughput shares: {}",
        r.tcp_connections_total,
        shares.join(", ")
    );
    // The busiest senders (a web server's throughput), with and without
    // retransmissions, when any retransmitted.
    let mut senders: Vec<&elvis_sim::report::SenderReport> = r.tcp_senders.iter().collect();
    senders.sort_by_key(|t| std::cmp::Reverse(t.bytes_sent));
    if senders.iter().any(|t| t.retransmitted_bytes > 0) {
        let top: Vec<String> = senders
            .iter()
            .take(3)
            .map(|t| {
                format!(
                    "{} {}bit/s ({}bit/s without retransmissions)",
                    t.machine,
                    si(t.throughput_bps as f64),
                    si(t.nrt_throughput_bps as f64)
                )
            })
            .collect();
        let _ = writeln!(s, "  TCP senders      {}", top.join(", "));
    }
}

/// Lists the first 20 metrics the applications published, each in its
/// unit.
fn metrics(s: &mut String, r: &Report) {
    for m in r.metrics.iter().take(20) {
        let _ = writeln!(
            s,
            "    {:<14} on {:<16} {} = {}",
            m.application,
            m.machine,
            m.name,
            metric_value(&m.name, m.value)
        );
    }
}

/// Lists the first 10 problems (applications that failed, crashed or
/// still wait), and how many more the report holds.
fn problems(s: &mut String, r: &Report) {
    for pr in r.problems.iter().take(10) {
        let _ = writeln!(
            s,
            "  ! {} ({}): {:?}: {}",
            pr.machine, pr.application, pr.state, pr.message
        );
    }
    if r.problems.len() > 10 {
        let _ = writeln!(s, "  ! … {} more in the report", r.problems.len() - 10);
    }
}

/// How many (machine group, application) pairs the summary lists.
const APPLICATIONS_SHOWN: usize = 20;

/// Lists the outcome of each (machine group, application) pair; of many,
/// those with problems first, then the sums over all of them.
fn applications(s: &mut String, r: &Report) {
    let _ = writeln!(s, "  applications");
    let mut shown: Vec<_> = r.applications.iter().collect();
    if shown.len() > APPLICATIONS_SHOWN {
        shown.sort_by_key(|a| {
            let waiting = if a.daemon { 0 } else { a.waiting };
            std::cmp::Reverse((a.failed + a.crashed, waiting))
        });
        shown.truncate(APPLICATIONS_SHOWN);
    }
    for a in &shown {
        let mut parts = vec![format!("{} finished", a.finished)];
        if a.failed > 0 {
            parts.push(format!("{} FAILED", a.failed));
        }
        if a.crashed > 0 {
            parts.push(format!("{} CRASHED", a.crashed));
        }
        if a.waiting > 0 {
            parts.push(format!(
                "{} {}",
                a.waiting,
                if a.daemon {
                    "running (daemon)"
                } else {
                    "STILL WAITING"
                }
            ));
        }
        let _ = writeln!(
            s,
            "    {:<14} on {:<16} x{:<8} {}",
            a.application,
            a.group,
            a.instances,
            parts.join(", ")
        );
    }
    let t = &r.applications_total;
    if t.entries > shown.len() as u64 {
        let _ = writeln!(
            s,
            "    … {} more; all {} pairs: {} instances, {} finished, {} failed, {} crashed, {} waiting",
            t.entries - shown.len() as u64,
            t.entries,
            t.instances,
            t.finished,
            t.failed,
            t.crashed,
            t.waiting
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_unit_that_fits() {
        assert_eq!(duration(334_752.0), "334.8 µs");
        assert_eq!(duration(41_200_000.0), "41.20 ms");
        assert_eq!(duration(60_837_150_918.0), "60.837 s");
        assert_eq!(duration(999.0), "999 ns");
    }

    #[test]
    fn metrics_take_the_unit_their_name_ends_with() {
        assert_eq!(
            metric_value("goodput_bps", 9_557_046_519.588_148),
            "9.56 Gbit/s"
        );
        assert_eq!(metric_value("rtt_avg_ns", 334_752.0), "334.8 µs");
        assert_eq!(metric_value("received", 1000.0), "1000");
        assert_eq!(metric_value("loss_percent", 2.5), "2.50 %");
        assert_eq!(metric_value("ratio", 0.123_456), "0.1235");
        assert_eq!(metric_value("sent_bytes", 1_500_000.0), "1.50 MB");
    }
}
