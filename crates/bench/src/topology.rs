//! `elvis-bench topology --type fattree --k K [--pings P]`: builds a
//! generated topology (the same generator the NDL `[Topology]` block
//! uses), builds its routing tables, optionally pings P host pairs across
//! pods, and reports build time, route-table time, peak RSS and counts.

use crate::Measurement;
use elvis_sim::topology::{self, FatTreeParams};
use elvis_sim::{Host, MachineId, Message, Simulation};
use std::cell::Cell;
use std::net::SocketAddrV4;
use std::rc::Rc;
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

/// `elvis-bench fattree-cubic`: the Days paper's Fig. 4b/4c scale run.
/// FatTree(k) with 100 Mbit/s, 10 µs links; `flows` CUBIC connections
/// between seeded random host pairs, each application-limited to
/// `rate_bps` (it writes `rate × 10 ms` every 10 ms) for `duration_s`
/// simulated seconds. Reports wall time, peak RSS and the goodput.
pub fn fat_tree_cubic(k: u32, flows: u32, rate_bps: u64, duration_s: u64) -> Measurement {
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let p = FatTreeParams::new(k).with_rate(100_000_000, 10_000);
    let topo = match topology::fat_tree(&mut sim, &p) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    sim.build_routes().expect("routes");
    let n = topo.hosts.len() as u64;
    // Seeded pairs (splitmix64), source ≠ destination.
    let mut next = splitmix64(0x5eed);
    let received = Rc::new(Cell::new(0u64));
    let chunk = rate_bps / 8 / 100; // bytes per 10 ms
    let end = std::time::Duration::from_secs(duration_s);
    for f in 0..flows {
        let src = (next() % n) as usize;
        let mut dst = (next() % n) as usize;
        if dst == src {
            dst = (dst + 1) % n as usize;
        }
        let port = 5000 + f as u16;
        let to = SocketAddrV4::new(topo.addresses[dst], port);
        spawn_cubic_sink(&mut sim, topo.hosts[dst], port, received.clone());
        spawn_cubic_source(&mut sim, topo.hosts[src], to, chunk, end);
    }
    let build_s = t0.elapsed().as_secs_f64();
    let limits = elvis_sim::RunLimits {
        until: Some(elvis_sim::Time::from_nanos(
            (duration_s + 1) * 1_000_000_000,
        )),
    };
    let t1 = Instant::now();
    let report = sim.run_with(limits, &mut |_| {});
    let run_s = t1.elapsed().as_secs_f64();
    for pr in report.problems.iter().take(3) {
        eprintln!("{}: {}", pr.machine, pr.message);
    }
    let offered = u64::from(flows) * chunk * duration_s * 100;
    let got = received.get();
    Measurement {
        scenario: "fattree-cubic".into(),
        n,
        messages: u64::from(flows),
        build_s,
        run_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: got,
        // Application-limited flows on an idle 100 Mbit/s fabric deliver
        // (almost) all they offer: the last RTT's data may be in flight.
        ok: report.problems.is_empty() && got * 100 >= offered * 99,
        extra: serde_json::json!({
            "k": k,
            "hosts": n,
            "switches": topo.routers.len(),
            "links": topo.networks.len(),
            "flows": flows,
            "rate_bps": rate_bps,
            "simulated_s": duration_s,
            "offered_bytes": offered,
            "received_bytes": got,
            "tcp_segments": report.packets.tcp_received,
        }),
        ..Default::default()
    }
}

/// Returns the splitmix64 sequence from `state`.
fn splitmix64(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Spawns a fattree-cubic sink on `machine`: accepts one connection on
/// `port` and adds the bytes it reads to `got`.
fn spawn_cubic_sink(sim: &mut Simulation, machine: MachineId, port: u16, got: Rc<Cell<u64>>) {
    sim.spawn_daemon(machine, "cubic-sink", move |h: Host| async move {
        let l = h.tcp_listen(port, 1)?;
        let (s, _) = l.accept().await?;
        loop {
            let m = s.recv(1 << 20).await?;
            if m.is_empty() {
                return Ok(());
            }
            got.set(got.get() + m.len() as u64);
        }
    });
}

/// Spawns a fattree-cubic source on `machine`: a CUBIC connection to
/// `to` that writes `chunk` bytes every 10 ms for `end`.
fn spawn_cubic_source(
    sim: &mut Simulation,
    machine: MachineId,
    to: SocketAddrV4,
    chunk: u64,
    end: std::time::Duration,
) {
    sim.spawn_daemon(machine, "cubic-source", move |h: Host| async move {
        let s = h.tcp_connect_with(to, elvis_sim::Congestion::Cubic).await?;
        let tick = std::time::Duration::from_millis(10);
        let t0 = h.now();
        let mut at = t0;
        while at.as_nanos() - t0.as_nanos() < end.as_nanos() as u64 {
            s.write_all(Message::zeros(chunk)).await?;
            at += tick;
            h.sleep_until(at).await;
        }
        Ok(())
    });
}
