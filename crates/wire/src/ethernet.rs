//! Ethernet II frames (IEEE 802.3 with an EtherType, RFC 894).
//!
//! A frame is destination address, source address, EtherType and payload.
//! The frame check sequence (FCS) is not part of the buffer: links in the
//! simulator do not corrupt bits unless told to, and captures are written
//! without it. Senders pad short frames to [`MIN_FRAME_LEN`]; a receiver
//! must therefore take the payload length from the header above (IPv4 total
//! length), not from the frame.
//!
//! # Gaps
//! - No 802.1Q VLAN tags and no 802.3 length/LLC frames (EtherType < 0x0600
//!   reads as `EtherType::Unknown`).

use crate::{Error, Result};
use std::fmt;
use std::net::Ipv4Addr;

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Address(pub [u8; 6]);

impl Address {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: Address = Address([0xff; 6]);

    /// Returns the address held in the first six bytes of `data`.
    ///
    /// # Panics
    /// Panics if `data` is shorter than six bytes.
    pub fn from_bytes(data: &[u8]) -> Address {
        let mut a = [0; 6];
        a.copy_from_slice(&data[..6]);
        Address(a)
    }

    /// Returns the address as bytes.
    pub const fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Returns whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Returns whether the group bit is set (this includes broadcast).
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Returns whether this is an individual (unicast) address.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Returns the Ethernet group address for an IPv4 multicast group:
    /// `01:00:5e` followed by the low 23 bits of the group (RFC 1112 §6.4).
    pub fn from_ipv4_multicast(group: Ipv4Addr) -> Address {
        let o = group.octets();
        Address([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]])
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// The protocol carried in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EtherType {
    /// IPv4, 0x0800.
    Ipv4,
    /// ARP, 0x0806.
    Arp,
    /// IPv6, 0x86dd.
    Ipv6,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        match v {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86dd => EtherType::Ipv6,
            n => EtherType::Unknown(n),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(t: EtherType) -> u16 {
        match t {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Unknown(n) => n,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtherType::Ipv4 => f.write_str("IPv4"),
            EtherType::Arp => f.write_str("ARP"),
            EtherType::Ipv6 => f.write_str("IPv6"),
            EtherType::Unknown(n) => write!(f, "0x{n:04x}"),
        }
    }
}

mod field {
    use std::ops::{Range, RangeFrom};
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Shortest frame on the wire, header included, FCS excluded. Senders pad
/// shorter frames with zeros up to this length.
pub const MIN_FRAME_LEN: usize = 60;

/// A view of an Ethernet II frame in a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer and checks that the header fits.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than the header.
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks that the header fits; afterwards no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than the header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Returns the destination address.
    pub fn dst_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::DESTINATION])
    }

    /// Returns the source address.
    pub fn src_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::SOURCE])
    }

    /// Returns the EtherType.
    pub fn ethertype(&self) -> EtherType {
        let d = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType::from(u16::from_be_bytes([d[0], d[1]]))
    }

    /// Returns the payload, padding included.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(t).to_be_bytes());
    }

    /// Returns the payload, mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Frame<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(self) {
            Ok(r) => write!(f, "{r} len {}", self.buffer.as_ref().len()),
            Err(e) => write!(f, "Ethernet ({e})"),
        }
    }
}

/// The meaning of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Address,
    /// Destination address.
    pub dst_addr: Address,
    /// Protocol of the payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Reads the header of a frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the header does not fit.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Returns the header length.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Returns the frame length for a payload of `payload_len` bytes,
    /// before padding to [`MIN_FRAME_LEN`].
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header into a frame.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_src_addr(self.src_addr);
        frame.set_dst_addr(self.dst_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} > {}, ethertype {}",
            self.src_addr, self.dst_addr, self.ethertype
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    // An ARP request from 00:11:22:33:44:55 to broadcast, header only.
    static FRAME_BYTES: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06, 0xaa,
        0xbb, 0xcc, 0xdd,
    ];

    fn repr() -> Repr {
        Repr {
            src_addr: Address([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]),
            dst_addr: Address::BROADCAST,
            ethertype: EtherType::Arp,
        }
    }

    #[test]
    fn deconstruct_reads_every_field() {
        let f = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert!(f.dst_addr().is_broadcast());
        assert_eq!(f.src_addr(), Address([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]));
        assert_eq!(f.ethertype(), EtherType::Arp);
        assert_eq!(f.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0u8; 18];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_dst_addr(Address::BROADCAST);
        f.set_src_addr(Address([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]));
        f.set_ethertype(EtherType::Arp);
        f.payload_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(buf, FRAME_BYTES);
    }

    #[test]
    fn parse_gives_the_repr() {
        let f = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&f), Ok(repr()));
    }

    #[test]
    fn emit_writes_the_header() {
        let mut buf = FRAME_BYTES;
        buf[..HEADER_LEN].fill(0);
        repr().emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, FRAME_BYTES);
    }

    #[test]
    fn short_buffer_is_truncated() {
        assert_eq!(
            Frame::new_checked(&FRAME_BYTES[..13]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn multicast_group_maps_low_23_bits() {
        let a = Address::from_ipv4_multicast(Ipv4Addr::new(224, 129, 2, 3));
        assert_eq!(a, Address([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]));
        assert!(a.is_multicast() && !a.is_broadcast() && !a.is_unicast());
        assert_eq!(a.to_string(), "01:00:5e:01:02:03");
    }

    #[test]
    fn display_reads_like_tcpdump() {
        let f = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(
            f.to_string(),
            "00:11:22:33:44:55 > ff:ff:ff:ff:ff:ff, ethertype ARP len 18"
        );
    }

    fn arb_repr() -> impl Strategy<Value = Repr> {
        (any::<[u8; 6]>(), any::<[u8; 6]>(), any::<u16>()).prop_map(|(s, d, t)| Repr {
            src_addr: Address(s),
            dst_addr: Address(d),
            ethertype: EtherType::from(t),
        })
    }

    proptest! {
        #[test]
        fn ethertype_round_trips(v in any::<u16>()) {
            prop_assert_eq!(u16::from(EtherType::from(v)), v);
        }

        #[test]
        fn parse_inverts_emit(r in arb_repr()) {
            let mut buf = [0u8; HEADER_LEN];
            r.emit(&mut Frame::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Frame::new_unchecked(&buf[..])), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let f = Frame::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&f);
            let _ = f.to_string();
        }
    }
}
