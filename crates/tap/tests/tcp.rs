//! Linux's TCP against elvis's: a Python client in a namespace sends 2 MB
//! of random bytes to an elvis echo server across a simulated router and a
//! link that loses and reorders 1 % of frames each way, and gets every
//! byte back (SHA-256 of what came back equals what was sent). Needs
//! root, `/dev/net/tun`, `ip` and `python3`; says so and passes without.
#![forbid(unsafe_code)]

mod common;

use elvis_sim::net::NetworkConfig;
use elvis_sim::stack::route::Metric;
use elvis_sim::{Host, Protocols, Simulation};
use elvis_tap::{add_tap_machine, TapConfig};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const CLIENT: &str = r#"
import hashlib, os, socket, sys, threading
data = os.urandom(2_000_000)
s = socket.create_connection((sys.argv[1], 7), timeout=60)
threading.Thread(target=lambda: (s.sendall(data), s.shutdown(socket.SHUT_WR))).start()
got = bytearray()
while len(got) < len(data):
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
same = hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
print("echoed", len(got), "bytes,", "identical" if same else "DIFFERENT")
sys.exit(0 if same else 1)
"#;

fn link(name: &str, lossy: bool) -> NetworkConfig {
    let mut c = NetworkConfig::ideal(name);
    c.kind = elvis_sim::NetworkKind::Link;
    c.bandwidth_bps = Some(100_000_000);
    c.latency_ns = 5_000_000;
    if lossy {
        c.loss = 0.01;
        c.reorder = 0.01;
    }
    c
}

#[test]
fn linux_tcp_and_elvis_tcp_exchange_two_megabytes_over_loss_and_reordering() {
    if let Some(why) = common::missing(&["python3"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut sim = Simulation::new(3);
    let l0 = sim.add_network(link("l0", true));
    let l1 = sim.add_network(link("l1", false));
    let r = sim.add_group("r", None, Protocols::UDP).unwrap();
    sim.attach(r, l0, Ipv4Addr::new(10, 78, 0, 1)).unwrap();
    sim.attach(r, l1, Ipv4Addr::new(10, 78, 1, 1)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    let server = sim.add_group("server", None, Protocols::UDP_TCP).unwrap();
    let server_ip = Ipv4Addr::new(10, 78, 1, 2);
    sim.attach(server, l1, server_ip).unwrap();
    sim.spawn_daemon(server, "tcp_echo_server", |h: Host| {
        elvis_apps::tcp_echo::server(h, 7, None)
    });
    let ns = format!("elvis-tcp-{}", std::process::id());
    let cfg = TapConfig {
        device: format!("etcp{}", std::process::id() % 100_000),
        netns: Some(ns.clone()),
        prefix: 24,
        gateway: Some(Ipv4Addr::new(10, 78, 0, 1)),
    };
    let guard = match add_tap_machine(&mut sim, "linux", l0, Ipv4Addr::new(10, 78, 0, 2), &cfg) {
        Ok((_, guard)) => guard,
        Err(e) if common::unavailable(&e) => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    sim.set_auto_routes(Some(Metric::Hops));
    let client = Command::new("ip")
        .args(["netns", "exec", &ns, "python3", "-c", CLIENT])
        .arg(server_ip.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    // The run ends when the client does (or after 60 s of wall time).
    let done = Arc::new(AtomicBool::new(false));
    sim.set_interrupt_flag(done.clone());
    sim.set_wall_limit(std::time::Duration::from_secs(60));
    let waiter = std::thread::spawn(move || {
        let out = client.wait_with_output();
        done.store(true, Ordering::Relaxed);
        out
    });
    let report = sim.run();
    let out = waiter.join().unwrap().expect("the client ends");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && text.contains("echoed 2000000 bytes, identical"),
        "{text}"
    );
    let lost = report.packets.dropped.get("loss").copied().unwrap_or(0);
    eprintln!(
        "frames dropped in the network: {lost}; {:?}",
        report.packets.dropped
    );
    assert!(
        lost > 0,
        "the link lost nothing: the test tested no recovery"
    );
    assert!(guard.stats.from_kernel.get() > 1000);
}
