//! Wire formats: typed, zero-copy views over header bytes.
//!
//! This crate follows smoltcp's `wire` module. Each protocol has a file with
//! two types:
//!
//! - `Packet<T: AsRef<[u8]>>` wraps a buffer and reads (and, for
//!   `T: AsMut<[u8]>`, writes) the header fields in place. A `mod field` lists
//!   the byte ranges.
//! - `Repr` is a plain value holding the meaning of a header. `Repr::parse`
//!   reads it from a `Packet` and validates it; `Repr::emit` writes it back.
//!
//! ```
//! use elvis_wire::{udp, Checksums};
//! use std::net::Ipv4Addr;
//! let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! let repr = udp::Repr { src_port: 5353, dst_port: 53 };
//! let mut buf = vec![0u8; repr.buffer_len(3)];
//! let mut packet = udp::Packet::new_unchecked(&mut buf[..]);
//! repr.emit(&mut packet, src, dst, 3, |p| p.copy_from_slice(b"abc"));
//! let packet = udp::Packet::new_checked(&buf[..]).unwrap();
//! assert_eq!(udp::Repr::parse(&packet, src, dst, Checksums::Verify), Ok(repr));
//! assert_eq!(packet.payload(), b"abc");
//! ```
//!
//! # The no-panic contract
//! Bytes from the network are untrusted. `Packet::new_checked` (or
//! `new_unchecked` followed by a successful `check_len()`) guarantees that no
//! accessor of that packet panics, whatever the bytes say; `Repr::parse`
//! never panics on any input and instead returns an [`Error`] saying why the
//! packet is unacceptable. Only `emit` into a buffer that is too short (a
//! bug of the caller, not of the input) panics; each `emit` documents it.
//!
//! Checksums ([`checksum`]) can be computed over a message given in pieces,
//! including runs of zeros with no memory behind them (the simulator's
//! *virtual payload*), so UDP, TCP and ICMP offer `emit_header` /
//! `verify_*_with` variants that take the checksum of a payload instead of
//! its bytes.
//!
//! # Gaps
//! - No IPv6, IGMP, DNS or DHCP yet.
//! - IPv4 options are skipped, never interpreted or emitted.
//! - ICMP redirects, parameter problems and timestamps parse as
//!   [`Error::Unsupported`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arp;
pub mod checksum;
pub mod ethernet;
#[doc(hidden)]
pub mod fuzz_bodies;
pub mod icmpv4;
pub mod ipv4;
pub mod pfc;
pub mod tcp;
pub mod udp;

pub use arp::{Operation as ArpOperation, Packet as ArpPacket, Repr as ArpRepr};
pub use checksum::Checksum;
pub use ethernet::{
    Address as EthernetAddress, EtherType, Frame as EthernetFrame, Repr as EthernetRepr,
};
pub use icmpv4::{
    DstUnreachable as Icmpv4DstUnreachable, Message as Icmpv4Message, Packet as Icmpv4Packet,
    Repr as Icmpv4Repr, TimeExceeded as Icmpv4TimeExceeded,
};
pub use ipv4::{Packet as Ipv4Packet, Protocol as IpProtocol, Repr as Ipv4Repr};
pub use tcp::{
    Control as TcpControl, Packet as TcpPacket, Repr as TcpRepr, SeqNumber as TcpSeqNumber,
};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};

use std::fmt;

/// Why a packet could not be parsed. Small and `Copy`, so a trace can record
/// why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header or than a length field claims.
    Truncated,
    /// A checksum does not match the bytes.
    BadChecksum,
    /// A length field is inconsistent (e.g. smaller than the header).
    BadLength,
    /// A well-formed packet of a kind this crate does not handle (another
    /// IP version, ARP for another hardware type, an unknown ICMP message).
    Unsupported,
    /// A field holds a value the protocol forbids.
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated packet",
            Error::BadChecksum => "bad checksum",
            Error::BadLength => "bad length field",
            Error::Unsupported => "unsupported packet",
            Error::Malformed => "malformed packet",
        })
    }
}

impl std::error::Error for Error {}

/// The result of parsing.
pub type Result<T> = std::result::Result<T, Error>;

/// Whether `parse` verifies checksums. `emit` always computes them.
///
/// The simulator always computes them; a test or a benchmark may turn
/// verification off to accept hand-made packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checksums {
    /// Verify checksums on parse.
    #[default]
    Verify,
    /// Accept any checksum on parse.
    Ignore,
}

impl Checksums {
    fn verify(self) -> bool {
        self == Checksums::Verify
    }
}
