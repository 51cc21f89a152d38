//! The application API of elvis: what an application running on a
//! simulated machine sees.
//!
//! An application is `async` code given a [`Host`]: it opens UDP, TCP and
//! ICMP sockets with a UNIX-like API ([`socket`]), sleeps, publishes
//! metrics. Each application is a task ([`executor`]); while a simulation
//! runs, the [`world`] (the hosts of `elvis-stack` plus the task records)
//! sits in a thread-local so that a socket call reaches it without
//! holding a reference across an `await`.
//!
//! # Layer
//! Above the protocol stack (`elvis-stack`), below the simulation facade
//! (`elvis-sim`, which builds worlds and runs them) and the applications
//! (`elvis-apps`, which depend on this crate only).
#![forbid(unsafe_code)]

pub mod executor;
pub mod flows;
pub mod host;
pub mod socket;
pub mod world;

pub use elvis_stack as stack;
use elvis_stack::machine;

pub use elvis_kernel::Time;
pub use elvis_message::Message;
pub use elvis_tcpcc::Algorithm as Congestion;
pub use executor::{AppError, AppResult, TaskState};
pub use flows::{FlowRecord, FlowTransport};
pub use host::{Host, LiveMetric, Sleep};
pub use machine::{MachineId, ResolverConf};
pub use socket::{
    EchoOptions, EchoReply, IcmpError, IcmpSocket, Shutdown, SocketError, TcpListener, TcpSocket,
    TcpStream, UdpSocket,
};
