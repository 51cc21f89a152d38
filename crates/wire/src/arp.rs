//! The Address Resolution Protocol (RFC 826).
//!
//! [`Packet`] reads any hardware/protocol address lengths; [`Repr`] covers
//! the only pair the simulator uses, Ethernet and IPv4.
//!
//! # Gaps
//! - No RARP or InARP operations beyond `Operation::Unknown`.

use crate::ethernet::Address as EthernetAddress;
use crate::{Error, Result};
use std::fmt;
use std::net::Ipv4Addr;

/// The hardware type for Ethernet (RFC 826: `ar$hrd` = `ares_hrd$Ethernet`).
pub const HARDWARE_ETHERNET: u16 = 1;
/// The protocol type for IPv4 (an EtherType).
pub const PROTOCOL_IPV4: u16 = 0x0800;

/// An ARP operation (`ar$op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `ares_op$REQUEST`, 1.
    Request,
    /// `ares_op$REPLY`, 2.
    Reply,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(v: u16) -> Self {
        match v {
            1 => Operation::Request,
            2 => Operation::Reply,
            n => Operation::Unknown(n),
        }
    }
}

impl From<Operation> for u16 {
    fn from(o: Operation) -> u16 {
        match o {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(n) => n,
        }
    }
}

mod field {
    use std::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;

    pub const fn sha(hlen: u8, _plen: u8) -> Range<usize> {
        let start = OPER.end;
        start..start + hlen as usize
    }
    pub const fn spa(hlen: u8, plen: u8) -> Range<usize> {
        let start = sha(hlen, plen).end;
        start..start + plen as usize
    }
    pub const fn tha(hlen: u8, plen: u8) -> Range<usize> {
        let start = spa(hlen, plen).end;
        start..start + hlen as usize
    }
    pub const fn tpa(hlen: u8, plen: u8) -> Range<usize> {
        let start = tha(hlen, plen).end;
        start..start + plen as usize
    }
}

/// Length of the fixed part, before the addresses.
pub const HEADER_LEN: usize = field::OPER.end;

/// Length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = field::tpa(6, 4).end;

/// A view of an ARP packet in a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(d: &[u8]) -> u16 {
    u16::from_be_bytes([d[0], d[1]])
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks that the packet fits.
    ///
    /// # Errors
    /// See [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the fixed part and the four addresses fit; afterwards no
    /// accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if they do not.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < field::tpa(self.hardware_len(), self.protocol_len()).end {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Returns the hardware type.
    pub fn hardware_type(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::HTYPE])
    }

    /// Returns the protocol type.
    pub fn protocol_type(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::PTYPE])
    }

    /// Returns the hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Returns the protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Returns the operation.
    pub fn operation(&self) -> Operation {
        Operation::from(be16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Returns the source hardware address.
    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::sha(self.hardware_len(), self.protocol_len())]
    }

    /// Returns the source protocol address.
    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::spa(self.hardware_len(), self.protocol_len())]
    }

    /// Returns the target hardware address.
    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tha(self.hardware_len(), self.protocol_len())]
    }

    /// Returns the target protocol address.
    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tpa(self.hardware_len(), self.protocol_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the hardware type.
    pub fn set_hardware_type(&mut self, v: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the protocol type.
    pub fn set_protocol_type(&mut self, v: u16) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the hardware address length.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets the protocol address length.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets the operation.
    pub fn set_operation(&mut self, v: Operation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&u16::from(v).to_be_bytes());
    }

    /// Sets the source hardware address; its length must equal the
    /// hardware length field.
    pub fn set_source_hardware_addr(&mut self, v: &[u8]) {
        let r = field::sha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v);
    }

    /// Sets the source protocol address; its length must equal the
    /// protocol length field.
    pub fn set_source_protocol_addr(&mut self, v: &[u8]) {
        let r = field::spa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v);
    }

    /// Sets the target hardware address.
    pub fn set_target_hardware_addr(&mut self, v: &[u8]) {
        let r = field::tha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v);
    }

    /// Sets the target protocol address.
    pub fn set_target_protocol_addr(&mut self, v: &[u8]) {
        let r = field::tpa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(self) {
            Ok(r) => write!(f, "{r}"),
            Err(e) => write!(f, "ARP ({e})"),
        }
    }
}

fn ipv4(d: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(d[0], d[1], d[2], d[3])
}

/// The meaning of an ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr {
    /// Ethernet hardware addresses, IPv4 protocol addresses.
    EthernetIpv4 {
        /// Request or reply.
        operation: Operation,
        /// Sender's MAC address.
        source_hardware_addr: EthernetAddress,
        /// Sender's IPv4 address.
        source_protocol_addr: Ipv4Addr,
        /// Target's MAC address (zero in a request).
        target_hardware_addr: EthernetAddress,
        /// Target's IPv4 address.
        target_protocol_addr: Ipv4Addr,
    },
}

impl Repr {
    /// Reads an ARP packet.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not fit; [`Error::Unsupported`] for
    /// anything but Ethernet/IPv4.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.hardware_type() != HARDWARE_ETHERNET
            || packet.protocol_type() != PROTOCOL_IPV4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::Unsupported);
        }
        Ok(Repr::EthernetIpv4 {
            operation: packet.operation(),
            source_hardware_addr: EthernetAddress::from_bytes(packet.source_hardware_addr()),
            source_protocol_addr: ipv4(packet.source_protocol_addr()),
            target_hardware_addr: EthernetAddress::from_bytes(packet.target_hardware_addr()),
            target_protocol_addr: ipv4(packet.target_protocol_addr()),
        })
    }

    /// Returns the length of the packet.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Repr::EthernetIpv4 { .. } => ETHERNET_IPV4_LEN,
        }
    }

    /// Writes the packet.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`Repr::buffer_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let Repr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_hardware_addr,
            target_protocol_addr,
        } = *self;
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(PROTOCOL_IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(operation);
        packet.set_source_hardware_addr(&source_hardware_addr.0);
        packet.set_source_protocol_addr(&source_protocol_addr.octets());
        packet.set_target_hardware_addr(&target_hardware_addr.0);
        packet.set_target_protocol_addr(&target_protocol_addr.octets());
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Repr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_hardware_addr,
            target_protocol_addr,
        } = self;
        match operation {
            Operation::Request => write!(
                f,
                "ARP, Request who-has {target_protocol_addr} tell {source_protocol_addr}"
            ),
            Operation::Reply => write!(
                f,
                "ARP, Reply {source_protocol_addr} is-at {source_hardware_addr}"
            ),
            Operation::Unknown(n) => write!(
                f,
                "ARP, op {n} {source_hardware_addr}/{source_protocol_addr} > \
                 {target_hardware_addr}/{target_protocol_addr}"
            ),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Who has 192.168.1.1? Tell 192.168.1.100 (from a home-LAN capture,
    /// Ethernet header removed).
    pub(crate) static REQUEST_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x1b, 0x21, 0x3a, 0x4c, 0x5d, 0xc0,
        0xa8, 0x01, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01,
    ];

    fn request() -> Repr {
        Repr::EthernetIpv4 {
            operation: Operation::Request,
            source_hardware_addr: EthernetAddress([0x00, 0x1b, 0x21, 0x3a, 0x4c, 0x5d]),
            source_protocol_addr: Ipv4Addr::new(192, 168, 1, 100),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Addr::new(192, 168, 1, 1),
        }
    }

    #[test]
    fn deconstruct_reads_every_field() {
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), 0x0800);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), Operation::Request);
        assert_eq!(
            p.source_hardware_addr(),
            &[0x00, 0x1b, 0x21, 0x3a, 0x4c, 0x5d]
        );
        assert_eq!(p.source_protocol_addr(), &[192, 168, 1, 100]);
        assert_eq!(p.target_hardware_addr(), &[0; 6]);
        assert_eq!(p.target_protocol_addr(), &[192, 168, 1, 1]);
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0xffu8; 28];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_hardware_type(1);
        p.set_protocol_type(0x0800);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(Operation::Request);
        p.set_source_hardware_addr(&[0x00, 0x1b, 0x21, 0x3a, 0x4c, 0x5d]);
        p.set_source_protocol_addr(&[192, 168, 1, 100]);
        p.set_target_hardware_addr(&[0; 6]);
        p.set_target_protocol_addr(&[192, 168, 1, 1]);
        assert_eq!(buf, REQUEST_BYTES);
    }

    #[test]
    fn parse_gives_the_repr() {
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(request()));
        assert_eq!(
            p.to_string(),
            "ARP, Request who-has 192.168.1.1 tell 192.168.1.100"
        );
    }

    #[test]
    fn emit_writes_the_capture_bytes() {
        let mut buf = [0u8; ETHERNET_IPV4_LEN];
        request().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST_BYTES);
    }

    #[test]
    fn other_hardware_types_are_unsupported() {
        let mut buf = REQUEST_BYTES;
        buf[1] = 6; // IEEE 802
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&buf[..])),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn long_addresses_past_the_end_are_truncated() {
        let mut buf = REQUEST_BYTES;
        buf[4] = 200;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
    }

    fn arb_repr() -> impl Strategy<Value = Repr> {
        (
            any::<u16>(),
            any::<[u8; 6]>(),
            any::<u32>(),
            any::<[u8; 6]>(),
            any::<u32>(),
        )
            .prop_map(|(op, sha, spa, tha, tpa)| Repr::EthernetIpv4 {
                operation: Operation::from(op),
                source_hardware_addr: EthernetAddress(sha),
                source_protocol_addr: Ipv4Addr::from(spa),
                target_hardware_addr: EthernetAddress(tha),
                target_protocol_addr: Ipv4Addr::from(tpa),
            })
    }

    proptest! {
        #[test]
        fn parse_inverts_emit(r in arb_repr()) {
            let mut buf = [0u8; ETHERNET_IPV4_LEN];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&p);
            let _ = p.to_string();
        }
    }
}
