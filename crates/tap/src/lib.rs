//! Real Linux hosts in a simulation: a TAP device as a machine.
//!
//! [`add_tap_machine`] adds a machine whose Ethernet frames come from and
//! go to a Linux TAP device: the kernel's own ARP, IPv4, ICMP, TCP and
//! UDP, and every program in the network namespace the device sits in,
//! become a host of the simulated network. Its frames cross the same NIC
//! queues, links, switches, routers, impairments and captures as
//! simulated traffic. The machine is a foreign machine
//! (`elvis_sim::foreign`): the simulator runs none of its own stack on it.
//!
//! The device is created by elvis (the `tun-rs` crate) and, when a
//! namespace is named, moved into it (created if missing, removed at the
//! end when elvis created it). There elvis gives it the simulator's MAC
//! address for the machine, the machine's address and prefix, and a
//! default route via the gateway, with `ip` (iproute2): `ip netns exec ns1
//! ping 10.6.0.2` then works with no further setup.
//!
//! A simulation with a TAP machine runs in real time
//! (`Simulation::set_realtime`): the kernel does not wait for virtual
//! time. The device is read every [`POLL`] of virtual (so wall) time; a
//! frame from the kernel enters the network at the virtual time of the
//! wall-clock instant it was read: up to [`POLL`] after it was written,
//! never before (when the run lags, it waits for virtual time to catch
//! up).
//!
//! # Gaps
//! - One interface per TAP machine.
//! - Frames the NIC queue refuses are dropped (counted in
//!   [`TapStats::refused`]), as a full `txqueuelen` drops them in Linux.
//! - Runs as root (creating a TAP device and a namespace needs
//!   `CAP_NET_ADMIN`); anything else is a [`TapError`] naming the step.
#![forbid(unsafe_code)]

use elvis_sim::foreign::{ForeignCtx, ForeignStack};
use elvis_sim::net::NetId;
use elvis_sim::{MachineId, Simulation, Time};
use std::cell::Cell;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tun_rs::{DeviceBuilder, Layer, SyncDevice};

/// How often, in virtual time, the device is read.
pub const POLL: Duration = Duration::from_micros(100);

/// Where and how the kernel side of a TAP machine is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapConfig {
    /// The device's name (at most 15 bytes, Linux's `IFNAMSIZ` − 1).
    pub device: String,
    /// The network namespace to put it in (created when missing); `None`
    /// leaves it in elvis's own namespace, unconfigured.
    pub netns: Option<String>,
    /// The prefix length of the machine's address.
    pub prefix: u8,
    /// The default route's gateway, if any.
    pub gateway: Option<Ipv4Addr>,
}

/// Frames that crossed a TAP machine, both ways.
#[derive(Clone, Debug, Default)]
pub struct TapStats {
    /// Frames read from the kernel and sent into the network.
    pub from_kernel: Cell<u64>,
    /// Frames from the network written to the kernel.
    pub to_kernel: Cell<u64>,
    /// Frames from the kernel that the NIC queue refused.
    pub refused: Cell<u64>,
}

/// Why a TAP machine could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    #[error("cannot create TAP device '{device}': {source} (hint: run as root, with /dev/net/tun present)")]
    Create {
        device: String,
        source: std::io::Error,
    },
    #[error("TAP device name '{0}' is longer than 15 bytes")]
    Name(String),
    #[error("the simulation refused TAP machine '{machine}': {message}")]
    Simulation { machine: String, message: String },
    #[error("`ip {args}` failed: {message}")]
    Ip { args: String, message: String },
}

/// The kernel side of a TAP machine: removes the namespace elvis created
/// when dropped (the device goes with the process).
#[derive(Debug)]
pub struct TapGuard {
    created_netns: Option<String>,
    /// The machine's frame counts.
    pub stats: Rc<TapStats>,
    /// The simulator's MAC address for it.
    pub mac: [u8; 6],
}

impl Drop for TapGuard {
    fn drop(&mut self) {
        if let Some(ns) = self.created_netns.take() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

/// The foreign stack of a TAP machine: frames to the device, frames from
/// it into the network.
struct Tap {
    dev: SyncDevice,
    buf: Vec<u8>,
    stats: Rc<TapStats>,
    /// The wall-clock instant of the first poll and its virtual time.
    origin: Option<(Instant, Time)>,
    /// Frames read from the kernel, each with the virtual time it may
    /// enter the network.
    held: VecDeque<(Time, Vec<u8>)>,
}

impl ForeignStack for Tap {
    fn receive(&mut self, _cx: &mut ForeignCtx<'_>, _iface: usize, frame: &[u8]) {
        if self.dev.send(frame).is_ok() {
            bump(&self.stats.to_kernel);
        }
    }

    fn poll(&mut self, cx: &mut ForeignCtx<'_>) {
        // A frame read now was written before this wall-clock instant;
        // it enters the network at the virtual time of that instant, which
        // is later than now when the run lags (or by the microseconds this
        // poll ran after its due instant): never before the kernel wrote it.
        let now = cx.now();
        let (wall0, virtual0) = *self.origin.get_or_insert((Instant::now(), now));
        let release = virtual0 + wall0.elapsed();
        loop {
            match self.dev.recv(&mut self.buf) {
                Ok(n) => self.held.push_back((release, self.buf[..n].to_vec())),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        while let Some((at, _)) = self.held.front() {
            if *at > now {
                break;
            }
            let Some((_, frame)) = self.held.pop_front() else {
                break;
            };
            if cx.transmit_on(0, &frame).is_ok() {
                bump(&self.stats.from_kernel);
            } else {
                bump(&self.stats.refused);
            }
        }
        let next = now + POLL;
        cx.poll_at(self.held.front().map_or(next, |(at, _)| (*at).min(next)));
    }
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// Adds machine `name` on network `net` with address `addr`, its frames
/// those of a new TAP device set up as `cfg` says, and turns real-time
/// pacing on. Keep the returned guard until the run is over.
///
/// # Errors
/// [`TapError`], naming the step that failed.
pub fn add_tap_machine(
    sim: &mut Simulation,
    name: &str,
    net: NetId,
    addr: Ipv4Addr,
    cfg: &TapConfig,
) -> Result<(MachineId, TapGuard), TapError> {
    let (stack, stats) = tap_stack(&cfg.device)?;
    let refused = |e: elvis_sim::SimError| TapError::Simulation {
        machine: name.to_string(),
        message: e.to_string(),
    };
    let m = sim.add_foreign_machine(name, stack).map_err(refused)?;
    sim.attach(m, net, addr).map_err(refused)?;
    let guard = set_up(sim, m, cfg, stats)?;
    Ok((m, guard))
}

/// Creates the TAP device `device` and the foreign stack that moves
/// frames between it and a machine (for `Simulation::add_foreign_machine`;
/// [`set_up`] then readies the kernel side).
///
/// # Errors
/// [`TapError::Name`], [`TapError::Create`].
pub fn tap_stack(device: &str) -> Result<(Box<dyn ForeignStack>, Rc<TapStats>), TapError> {
    if device.is_empty() || device.len() > 15 {
        return Err(TapError::Name(device.to_string()));
    }
    let dev = DeviceBuilder::new()
        .name(device.to_string())
        .layer(Layer::L2)
        .build_sync()
        .and_then(|d| d.set_nonblocking(true).map(|()| d))
        .map_err(|source| TapError::Create {
            device: device.to_string(),
            source,
        })?;
    let stats = Rc::new(TapStats::default());
    let tap = Tap {
        dev,
        buf: vec![0; 65_536],
        stats: stats.clone(),
        origin: None,
        held: VecDeque::new(),
    };
    Ok((Box::new(tap), stats))
}

/// Readies the kernel side of TAP machine `m` (attached, with its address
/// on interface 0) as `cfg` says, and turns real-time pacing on.
///
/// # Errors
/// [`TapError::Ip`] for a step of the namespace's setup.
pub fn set_up(
    sim: &mut Simulation,
    m: MachineId,
    cfg: &TapConfig,
    stats: Rc<TapStats>,
) -> Result<TapGuard, TapError> {
    sim.set_realtime(true);
    let mac = sim.mac_address(m, 0).unwrap_or_default();
    let addr = sim.primary_addresses().get(m as usize).copied().flatten();
    let mut guard = TapGuard {
        created_netns: None,
        stats,
        mac,
    };
    let Some(ns) = &cfg.netns else {
        return Ok(guard);
    };
    if !netns_exists(ns) {
        ip(&["netns", "add", ns])?;
        guard.created_netns = Some(ns.clone());
    }
    ip(&["link", "set", "dev", &cfg.device, "netns", ns])?;
    let mac_text = mac
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        "dev",
        &cfg.device,
        "address",
        &mac_text,
    ])?;
    if let Some(addr) = addr {
        let cidr = format!("{addr}/{}", cfg.prefix);
        ip(&["-n", ns, "addr", "add", &cidr, "dev", &cfg.device])?;
    }
    ip(&["-n", ns, "link", "set", "dev", &cfg.device, "up"])?;
    if let Some(gw) = cfg.gateway {
        ip(&["-n", ns, "route", "add", "default", "via", &gw.to_string()])?;
    }
    Ok(guard)
}

fn netns_exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Runs `ip ARGS`.
fn ip(args: &[&str]) -> Result<(), TapError> {
    let failed = |message: String| TapError::Ip {
        args: args.join(" "),
        message,
    };
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}
