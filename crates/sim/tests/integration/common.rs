//! Helpers shared by the integration tests: closed forms of the timing
//! model, small scenario builders, a receive-with-deadline.

use elvis_sim::{
    Host, MachineId, Message, NetworkConfig, NetworkKind, Report, Simulation, TcpConfig, TcpStats,
    Time,
};
use std::cell::RefCell;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Ethernet II header.
pub const ETH_HEADER: usize = 14;
/// IPv4 header without options.
pub const IP_HEADER: usize = 20;
/// UDP header.
pub const UDP_HEADER: usize = 8;
/// Smallest Ethernet frame without FCS (IEEE 802.3: 64 with the FCS).
pub const MIN_FRAME: usize = 60;

/// A log shared between an application (a `'static` future) and the test.
pub type Log<T> = Rc<RefCell<Vec<T>>>;

/// Returns an empty log.
pub fn log<T>() -> Log<T> {
    Rc::new(RefCell::new(Vec::new()))
}

/// Returns the length of the Ethernet frame carrying one unfragmented UDP
/// datagram with `payload` bytes (padded to the 60-byte minimum).
pub fn udp_frame_len(payload: usize) -> usize {
    (ETH_HEADER + IP_HEADER + UDP_HEADER + payload).max(MIN_FRAME)
}

/// Returns the serialization time of `bytes` at `bps`, in ns, rounded up:
/// `ceil(bytes × 8 × 10⁹ / bps)`.
pub fn ser_ns(bytes: usize, bps: u64) -> u64 {
    let bits = bytes as u128 * 8 * 1_000_000_000;
    let bps = u128::from(bps);
    bits.div_ceil(bps) as u64
}

/// Returns the data bytes per fragment on a network of `mtu` (RFC 791: the
/// largest multiple of 8 that fits after a 20-byte header).
pub fn fragment_data(mtu: usize) -> usize {
    (mtu - IP_HEADER) / 8 * 8
}

/// Returns the frame lengths of an IP payload of `ip_payload` bytes sent
/// over `mtu`, one per fragment.
pub fn fragment_frames(ip_payload: usize, mtu: usize) -> Vec<usize> {
    if IP_HEADER + ip_payload <= mtu {
        return vec![(ETH_HEADER + IP_HEADER + ip_payload).max(MIN_FRAME)];
    }
    let per = fragment_data(mtu);
    let mut frames = Vec::new();
    let mut left = ip_payload;
    while left > 0 {
        let d = left.min(per);
        frames.push((ETH_HEADER + IP_HEADER + d).max(MIN_FRAME));
        left -= d;
    }
    frames
}

/// Returns `10.a.b.c` for a machine index (0 → 10.0.0.1).
pub fn nth_ip(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0001 + i)
}

/// Returns `ip:port`.
pub fn sa(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}

/// Returns a point-to-point link with the given rate (`None`: ideal).
pub fn link(name: &str, bps: Option<u64>, latency_ns: u64) -> NetworkConfig {
    let mut cfg = NetworkConfig::ideal(name);
    cfg.kind = NetworkKind::Link;
    cfg.bandwidth_bps = bps;
    cfg.latency_ns = latency_ns;
    cfg
}

/// Returns a switched LAN with the given rate (`None`: ideal).
pub fn switch(name: &str, bps: Option<u64>, latency_ns: u64) -> NetworkConfig {
    let mut cfg = NetworkConfig::ideal(name);
    cfg.bandwidth_bps = bps;
    cfg.latency_ns = latency_ns;
    cfg
}

/// A simulation with machines `a` (10.0.0.1) and `b` (10.0.0.2) on one
/// network.
pub fn pair(seed: u64, cfg: NetworkConfig) -> (Simulation, MachineId, MachineId) {
    let mut sim = Simulation::new(seed);
    let net = sim.add_network(cfg);
    let a = sim.add_machine("a");
    let b = sim.add_machine("b");
    sim.attach(a, net, nth_ip(0)).expect("attach a");
    sim.attach(b, net, nth_ip(1)).expect("attach b");
    (sim, a, b)
}

/// Returns a drop counter of the report (0 when absent).
pub fn dropped(r: &Report, reason: &str) -> u64 {
    r.packets.dropped.get(reason).copied().unwrap_or(0)
}

/// Asserts that every application finished well, with the report on
/// failure.
pub fn assert_success(r: &Report) {
    assert!(r.success(), "run failed: {}", r.deterministic_json());
}

/// Runs `fut` until virtual time `deadline`; `None` if the deadline came
/// first (`Host::timeout_at`).
pub async fn timeout_at<F: Future>(host: &Host, deadline: Time, fut: F) -> Option<F::Output> {
    host.timeout_at(deadline, fut).await
}

/// Returns a fresh directory under the system temp dir (removed by
/// [`TempDir`]'s `Drop`).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("elvis-sim-it-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Binomial bound: asserts `|x − n·p| ≤ 5·sqrt(n·p·(1−p))`.
pub fn assert_binomial(what: &str, x: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let dev = (x as f64 - mean).abs();
    assert!(
        dev <= 5.0 * sd,
        "{what}: {x} of {n} is {dev:.1} from the mean {mean:.1} (5σ = {:.1})",
        5.0 * sd
    );
}

/// What a bulk transfer measured at both ends.
pub struct Transfer {
    /// The sender's and the receiver's statistics.
    pub tx: TcpStats,
    pub rx: TcpStats,
    /// Frames the path held back (both directions).
    pub reordered: u64,
    /// From the connection's opening to the last ACK the sender got, ns.
    pub elapsed_ns: u64,
}

/// Sends `bytes` (virtual payload) from machine `tx` to machine `rx` over
/// the reordering path of the DSACK and undo tests (1 Gbit/s, 5 ms each
/// way, 1 % of frames held back by 3 ms, nothing lost) with TCP settings
/// `tcp`; checks that the run succeeded and every byte was acknowledged
/// and delivered in order.
pub fn reordering_transfer(seed: u64, tcp: TcpConfig, bytes: u64) -> Transfer {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("path").with_rate(1_000_000_000, 5_000_000);
    cfg.kind = NetworkKind::Link;
    cfg.reorder = 0.01;
    cfg.reorder_delay_ns = 3_000_000;
    let net = sim.add_network(cfg);
    let what = format!("{tcp:?} seed {seed}");
    sim.set_tcp_config(tcp);
    let a = sim
        .add_group("tx", None, elvis_sim::Protocols::UDP_TCP)
        .unwrap();
    let b = sim
        .add_group("rx", None, elvis_sim::Protocols::UDP_TCP)
        .unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.spawn(b, "sink", move |h: Host| async move {
        let l = h.tcp_listen(5001, 1)?;
        let (s, _) = l.accept().await?;
        let mut got = 0;
        while got < bytes {
            got += s.recv(1 << 20).await?.len() as u64;
        }
        assert_eq!(got, bytes);
        Ok(())
    });
    sim.spawn(a, "bulk", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 5001)).await?;
        s.write_all(Message::zeros(bytes)).await?;
        s.close().await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{what}: {:?}", r.problems);
    let conn = |m: &str| {
        r.tcp_connections
            .iter()
            .find(|c| c.machine == m)
            .expect("a connection")
    };
    let (tx, rx) = (conn("tx"), conn("rx"));
    assert_eq!(tx.stats.bytes_acked, bytes, "every byte acknowledged");
    assert_eq!(
        rx.stats.bytes_received, bytes,
        "every byte delivered in order"
    );
    Transfer {
        tx: tx.stats.clone(),
        rx: rx.stats.clone(),
        reordered: r.networks[0].stats.reordered,
        elapsed_ns: tx.last_ack_ns - tx.opened_ns,
    }
}
