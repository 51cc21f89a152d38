//! The elvis simulation core.
//!
//! A [`Simulation`] owns every machine, network and application of a run.
//! Machines run a protocol stack in the x-kernel style (Ethernet/ARP, IPv4
//! with fragmentation, ICMP, UDP; routers forwarding by longest-prefix
//! match with ECMP, see [`Simulation::set_forwarding`] and
//! [`Simulation::set_auto_routes`]); networks carry real frames with a
//! bandwidth, latency, loss, corruption, MTU and queue; applications are
//! `async` code written against the UNIX-like socket API of [`Host`].
//!
//! ```
//! use elvis_sim::{Simulation, NetworkConfig, Host};
//! use std::net::{Ipv4Addr, SocketAddrV4};
//!
//! let mut sim = Simulation::new(42);
//! let lan = sim.add_network(NetworkConfig::ideal("lan"));
//! let a = sim.add_machine("a");
//! let b = sim.add_machine("b");
//! sim.attach(a, lan, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
//! sim.attach(b, lan, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
//! sim.spawn(b, "echo-sink", |host: Host| async move {
//!     let sock = host.udp_bind(7)?;
//!     let (msg, from) = sock.recv_from().await?;
//!     assert_eq!(msg.to_vec(), b"hi");
//!     assert_eq!(*from.ip(), Ipv4Addr::new(10, 0, 0, 1));
//!     Ok(())
//! });
//! sim.spawn(a, "greeter", |host: Host| async move {
//!     let sock = host.udp_bind(0)?;
//!     sock.send_to(b"hi".to_vec(), SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 7)).await?;
//!     Ok(())
//! });
//! let report = sim.run();
//! assert!(report.success());
//! ```
//!
//! # How a run works
//! One event queue ([`elvis_kernel::EventQueue`]) holds frame hops, timer
//! expiries and task wake-ups. Protocol processing is plain synchronous code
//! run when a frame arrives; only time (serialization, latency, timers)
//! creates events. Applications are polled when something they wait on
//! happens. The whole state lives in one `World` owned by the running
//! thread: no locks, no `Arc` on the packet path. While a simulation runs,
//! the world sits in a thread-local so that application futures can make
//! "system calls" without holding a reference across an `await`.
//!
//! # Gaps
//! - TCP (a later issue), IPv6, DHCP, DNS wire formats.
//! - Foreign futures that rely on their `Waker` are not woken: elvis wakes
//!   tasks by id when a socket or timer they wait on is ready.
#![forbid(unsafe_code)]

pub mod parallel;
pub mod realtime;
pub mod report;
mod routing;
mod simulation;
mod stop;
pub mod topology;

/// Sockets: the application API's socket types (the `elvis-api` crate).
pub use elvis_api::socket;
use elvis_api::{executor, world};
/// The network layer (the `elvis-net` crate).
pub use elvis_net as net;
pub use elvis_net::{pcap, pfc, qdisc};
/// The protocol stack (the `elvis-stack` crate).
pub use elvis_stack as stack;
pub use elvis_stack::foreign;
use elvis_stack::machine;

/// Bodies of the cargo-fuzz targets in `fuzz/` that need the simulator's
/// internals; not a public API. `cargo test -p elvis-sim` runs them over
/// their seed corpus and as property tests.
#[doc(hidden)]
pub mod fuzz_bodies {
    pub use elvis_stack::dhcp::fuzz::dhcp;
    pub use elvis_stack::tcp::tcb::fuzz::tcp_input;
}

pub use elvis_api::host::{Host, Sleep};
pub use elvis_kernel::Time;
pub use elvis_message::Message;
pub use elvis_tcpcc::Algorithm as Congestion;
pub use elvis_tcpcc::SlowStart;
pub use executor::{AppError, AppResult, TaskState};
pub use foreign::{ForeignCtx, ForeignStack};
pub use machine::{MachineId, Protocols};
pub use net::{NetId, NetworkConfig, NetworkKind};
pub use report::{DropReason, Report};
pub use simulation::{Progress, RunLimits, SimError, Simulation};
pub use socket::{
    EchoOptions, EchoReply, IcmpError, IcmpSocket, Shutdown, SocketError, TcpListener, TcpSocket,
    TcpStream, UdpSocket,
};
pub use stack::icmp_limit::IcmpRateLimit;
pub use stack::offload::Offloads;
pub use stack::tcp::keepalive::Keepalive;
pub use stack::tcp::tcb::State as TcpState;
pub use stack::tcp::trace::{Sample, Sampling, Series};
pub use stack::tcp::{EcnMode, LossDetection, TcpConfig, TcpStats};
