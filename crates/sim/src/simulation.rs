//! [`Simulation`]: build a world, run it, get a [`Report`](crate::Report).
//!
//! The methods are grouped by job: `build` adds networks, machines,
//! routes and applications; `run` holds the run loop; `reporting`
//! assembles the report; `observe` holds the traces, captures and test
//! switches.

mod build;
mod manet;
mod observe;
pub(crate) mod partition;
mod reporting;
mod run;
mod wireless;

use crate::executor::TaskFuture;
use crate::machine::MachineId;
use crate::net::NetId;
use crate::world::World;
use elvis_kernel::Time;
use run::Watchdog;
use std::net::Ipv4Addr;
use std::time::Duration;
use thiserror::Error;

/// Why building a simulation failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    #[error("address {ip} is already used by machine '{owner}'")]
    AddressConflict { ip: Ipv4Addr, owner: String },
    #[error("link '{0}' already joins two machines")]
    LinkFull(String),
    #[error("no machine with id {0}")]
    NoSuchMachine(MachineId),
    #[error("no network with id {0}")]
    NoSuchNetwork(NetId),
    #[error("a machine group named '{0}' already exists")]
    DuplicateName(String),
    #[error("the simulation is already running")]
    Running,
    #[error("bad route on machine '{machine}': {message}")]
    BadRoute { machine: String, message: String },
    /// A queue discipline parameter is out of range (`place` names the
    /// network or the machine interface).
    #[error("bad queue discipline on {place}: {message}")]
    BadQdisc { place: String, message: String },
    #[error("machine '{0}' is not a router (make it forward first)")]
    NotARouter(String),
    /// More distinct NIC offload settings than the simulation's table
    /// holds (65,536).
    #[error(
        "machine '{0}': too many distinct NIC offload settings (at most 65,536 per simulation)"
    )]
    TooManyOffloads(String),
    /// A bandwidth change asked of a network that has none (an ideal
    /// network), or a bandwidth of zero.
    #[error("network '{0}': the bandwidth can only change on a network that has one, to a rate above zero")]
    BadBandwidth(String),
}

/// Limits of one call to [`Simulation::run_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RunLimits {
    /// Stop at this virtual time.
    pub until: Option<Time>,
}

/// What a progress callback sees.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub sim_time: Time,
    pub events: u64,
    pub wall: Duration,
}

/// A simulation: networks, machines, applications, and the run loop.
pub struct Simulation {
    world: Option<Box<World>>,
    futures: Vec<Option<TaskFuture>>,
    watchdog: Option<Watchdog>,
    wall: Duration,
    /// Task polls so far (counted as events in the report).
    polls: u64,
    /// What ends a run early: an interrupt flag, a wall-clock limit.
    stop: crate::stop::Stop,
    /// Real-time pacing, when on ([`Simulation::set_realtime`]).
    pacer: Option<crate::realtime::Pacer>,
    /// What the other partitions of a parallel run reported, for the
    /// report of the first (see `partition`).
    merged: partition::Merged,
}

impl Simulation {
    /// Returns an empty simulation whose random streams derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Simulation {
            world: Some(Box::new(World::new(seed))),
            futures: Vec::new(),
            watchdog: None,
            wall: Duration::ZERO,
            polls: 0,
            stop: crate::stop::Stop::default(),
            pacer: None,
            merged: Default::default(),
        }
    }

    fn w(&mut self) -> &mut World {
        let w = self.world.as_mut().expect("world is present outside run");
        // Whatever changes now (routes, interfaces, networks) leaves the
        // TCP connections' cached routes stale.
        w.hosts.stack.dst_epoch = w.hosts.stack.dst_epoch.wrapping_add(1);
        w
    }
}
