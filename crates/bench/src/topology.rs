//! `elvis-bench topology --type fattree --k K [--pings P]`: builds a
//! generated topology (the same generator the NDL `[Topology]` block
//! uses), builds its routing tables, optionally pings P host pairs across
//! pods, and reports build time, route-table time, peak RSS and counts.

use crate::Measurement;
use elvis_sim::topology::{self, FatTreeParams};
use elvis_sim::{Host, Message, Simulation};
use std::time::Instant;

/// Builds FatTree(k) with 10 Gbit/s, 1 µs links; pings `pings` pairs
/// (host h → the host at the same place in the opposite pod), each RTT
/// checked against 12 × (serialization + latency).
pub fn fat_tree(k: u32, pings: u32) -> Measurement {
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let (bps, lat) = (10_000_000_000u64, 1_000u64);
    let p = FatTreeParams::new(k).with_rate(bps, lat);
    let topo = match topology::fat_tree(&mut sim, &p) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let tables = sim.build_routes().expect("routes");
    let routes_s = t1.elapsed().as_secs_f64();
    let rss_built = elvis_sim::report::peak_rss_bytes();
    let frame = 14 + 20 + 8 + 56;
    let want = 12 * (frame as u64 * 8 * 1_000_000_000).div_ceil(bps) + 12 * lat;
    let n = topo.hosts.len();
    let stride = (n / pings.max(1) as usize).max(1);
    for s in 0..pings as usize {
        let a = (s * stride) % n;
        let (pod, e, i) = p.host_position(a);
        let dst = topo.addresses[p.host_index((pod + k / 2) % k, e, i)];
        sim.spawn(topo.hosts[a], "ping", move |host: Host| async move {
            // One ping at a time (20 µs apart), so none queues behind another.
            host.sleep(std::time::Duration::from_micros(20 * s as u64))
                .await;
            let sock = host.icmp_socket(1)?;
            let t = host.now();
            sock.send_echo(dst, 1, Message::zeros(56))?;
            sock.recv_echo().await?;
            let rtt = host.now().as_nanos() - t.as_nanos();
            if rtt != want {
                return Err(elvis_sim::AppError::new(format!(
                    "RTT {rtt} ns, expected {want} ns"
                )));
            }
            Ok(())
        });
    }
    let t2 = Instant::now();
    let report = sim.run();
    let run_s = t2.elapsed().as_secs_f64();
    for pr in report.problems.iter().take(3) {
        eprintln!("{}: {}", pr.machine, pr.message);
    }
    let finished: u64 = report.applications.iter().map(|a| a.finished).sum();
    Measurement {
        scenario: "topology-fattree".into(),
        n: n as u64,
        build_s,
        run_s,
        events: report.events,
        delivered: finished,
        ok: report.success() && finished == u64::from(pings),
        extra: serde_json::json!({
            "k": k,
            "hosts": n,
            "switches": topo.routers.len(),
            "links": topo.networks.len(),
            "route_tables": tables,
            "routes": report.routing.routes,
            "route_build_s": routes_s,
            "peak_rss_after_routes_bytes": rss_built,
            "pings": pings,
        }),
        ..Default::default()
    }
}
