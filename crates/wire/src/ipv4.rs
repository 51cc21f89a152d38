//! The Internet Protocol, version 4 (RFC 791).
//!
//! [`Packet`] reads every header field; [`Repr`] keeps those the simulator
//! acts on, fragmentation included, since the simulator fragments and
//! reassembles. Options (IHL > 5) are skipped: `Packet::header_len` counts
//! them, `Packet::options` returns their bytes, `Repr` ignores them and
//! `Repr::emit` writes none.
//!
//! `Repr::parse_header` accepts a buffer that holds only the header (the
//! payload may be virtual, or cut short as in an ICMP error's quote).
//!
//! # Gaps
//! - Options are never interpreted (no source routing, record route).
//! - The reserved flag bit ("evil bit") is readable but not in `Repr`.

use crate::checksum::{self, Checksum};
use crate::{Checksums, Error, Result};
use std::fmt;
use std::net::Ipv4Addr;

/// The protocol carried by an IP packet (RFC 790 "Assigned Numbers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// ICMP, 1.
    Icmp,
    /// IGMP, 2.
    Igmp,
    /// TCP, 6.
    Tcp,
    /// UDP, 17.
    Udp,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for Protocol {
    fn from(v: u8) -> Self {
        match v {
            1 => Protocol::Icmp,
            2 => Protocol::Igmp,
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            n => Protocol::Unknown(n),
        }
    }
}

impl From<Protocol> for u8 {
    fn from(p: Protocol) -> u8 {
        match p {
            Protocol::Icmp => 1,
            Protocol::Igmp => 2,
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Unknown(n) => n,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protocol::Icmp => f.write_str("ICMP"),
            Protocol::Igmp => f.write_str("IGMP"),
            Protocol::Tcp => f.write_str("TCP"),
            Protocol::Udp => f.write_str("UDP"),
            Protocol::Unknown(n) => write!(f, "proto {n}"),
        }
    }
}

mod field {
    use std::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// Largest total length a packet can declare.
pub const MAX_PACKET_LEN: usize = u16::MAX as usize;

const FLAG_RESERVED: u16 = 0x8000;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet in a buffer.
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

    /// Wraps a buffer and checks that the whole packet fits.
    ///
    /// # Errors
    /// See [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the header, options included, fits and that the total
    /// length is at least the header length; afterwards no accessor panics,
    /// but [`Packet::payload`] may be shorter than the total length says.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the header does not fit; [`Error::Malformed`]
    /// if IHL < 5; [`Error::BadLength`] if the total length is shorter than
    /// the header.
    pub fn check_header_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < header_len {
            return Err(Error::Truncated);
        }
        if usize::from(self.total_len()) < header_len {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    /// Checks [`Packet::check_header_len`] and that the buffer holds the
    /// whole packet (it may hold more: link-layer padding); afterwards no
    /// accessor panics.
    ///
    /// # Errors
    /// As `check_header_len`, and [`Error::Truncated`] if the total length
    /// exceeds the buffer.
    pub fn check_len(&self) -> Result<()> {
        self.check_header_len()?;
        if usize::from(self.total_len()) > self.buffer.as_ref().len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Returns the version field.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Returns the header length in bytes (IHL × 4), options included.
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Returns the DSCP and ECN byte (the old type of service).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Returns the differentiated services code point (RFC 2474).
    pub fn dscp(&self) -> u8 {
        self.dscp_ecn() >> 2
    }

    /// Returns the explicit congestion notification bits (RFC 3168).
    pub fn ecn(&self) -> u8 {
        self.dscp_ecn() & 0x03
    }

    /// Returns the total length, header included.
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Returns the identification.
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }

    fn flags_offset(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::FLG_OFF])
    }

    /// Returns the reserved flag bit, which must be zero.
    pub fn reserved_flag(&self) -> bool {
        self.flags_offset() & FLAG_RESERVED != 0
    }

    /// Returns the don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.flags_offset() & FLAG_DF != 0
    }

    /// Returns the more-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.flags_offset() & FLAG_MF != 0
    }

    /// Returns the fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.flags_offset() & OFFSET_MASK) << 3
    }

    /// Returns the time to live.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Returns the protocol of the payload.
    pub fn next_header(&self) -> Protocol {
        Protocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Returns the header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Returns the source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Returns the destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Returns the option bytes (empty when IHL = 5).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// Returns whether the header checksum is correct.
    ///
    /// RFC 791: "The checksum field is the 16 bit one's complement of the
    /// one's complement sum of all 16 bit words in the header."
    pub fn verify_checksum(&self) -> bool {
        let header = &self.buffer.as_ref()[..usize::from(self.header_len())];
        match <&[u8; HEADER_LEN]>::try_from(header) {
            Ok(plain) => checksum::header(plain) == 0xffff,
            Err(_) => checksum::data(header) == 0xffff,
        }
    }

    /// Returns the payload: from the end of the header to the total length,
    /// or to the end of the buffer if that comes first. Link-layer padding
    /// past the total length is not included.
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(data.len());
        let start = usize::from(self.header_len()).min(end);
        &data[start..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the header length in bytes, which must be a multiple of 4.
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) & 0x0f);
    }

    /// Sets the DSCP and ECN byte.
    pub fn set_dscp_ecn(&mut self, v: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = v;
    }

    /// Sets the DSCP, keeping the ECN bits.
    pub fn set_dscp(&mut self, v: u8) {
        let ecn = self.ecn();
        self.set_dscp_ecn((v << 2) | ecn);
    }

    /// Sets the ECN bits, keeping the DSCP.
    pub fn set_ecn(&mut self, v: u8) {
        let dscp = self.dscp();
        self.set_dscp_ecn((dscp << 2) | (v & 0x03));
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    fn set_flags_offset(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    fn set_flag(&mut self, flag: u16, on: bool) {
        let v = self.flags_offset() & !flag;
        self.set_flags_offset(if on { v | flag } else { v });
    }

    /// Clears the flags and the fragment offset.
    pub fn clear_flags(&mut self) {
        self.set_flags_offset(0);
    }

    /// Sets the don't-fragment flag.
    pub fn set_dont_frag(&mut self, on: bool) {
        self.set_flag(FLAG_DF, on);
    }

    /// Sets the more-fragments flag.
    pub fn set_more_frags(&mut self, on: bool) {
        self.set_flag(FLAG_MF, on);
    }

    /// Sets the fragment offset in bytes; the low three bits are dropped
    /// (fragments start at multiples of 8 bytes).
    pub fn set_frag_offset(&mut self, bytes: u16) {
        let v = self.flags_offset() & !OFFSET_MASK;
        self.set_flags_offset(v | (bytes >> 3));
    }

    /// Sets the time to live.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol of the payload.
    pub fn set_next_header(&mut self, v: Protocol) {
        self.buffer.as_mut()[field::PROTOCOL] = u8::from(v);
    }

    /// Sets the header checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Computes the header checksum and writes it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let mut c = Checksum::new();
        c.add(&self.buffer.as_ref()[..usize::from(self.header_len())]);
        self.set_checksum(c.finish());
    }

    /// Returns the payload, mutably, bounded as in [`Packet::payload`].
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.total_len()).min(self.buffer.as_ref().len());
        let start = usize::from(self.header_len()).min(end);
        &mut self.buffer.as_mut()[start..end]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse_header(self, Checksums::Verify) {
            Ok(r) => write!(f, "{r}"),
            Err(e) => write!(f, "IPv4 ({e})"),
        }
    }
}

/// The meaning of an IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub next_header: Protocol,
    /// Payload length (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub hop_limit: u8,
    /// Identification, shared by the fragments of one datagram.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// More fragments follow.
    pub more_frags: bool,
    /// Offset of this fragment in the datagram, in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// DSCP and ECN byte.
    pub dscp_ecn: u8,
}

impl Repr {
    /// Reads a packet that the buffer holds whole.
    ///
    /// # Errors
    /// Those of [`Packet::check_len`]; [`Error::Unsupported`] if the version
    /// is not 4; [`Error::BadChecksum`] if verification is on and fails.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>, checksums: Checksums) -> Result<Repr> {
        packet.check_len()?;
        Self::parse_header(packet, checksums)
    }

    /// Reads a header whose payload need not be in the buffer (it may be
    /// virtual, or cut short as in the quote of an ICMP error).
    ///
    /// # Errors
    /// Those of [`Packet::check_header_len`], and as [`Repr::parse`].
    pub fn parse_header<T: AsRef<[u8]>>(packet: &Packet<T>, checksums: Checksums) -> Result<Repr> {
        packet.check_header_len()?;
        if packet.version() != 4 {
            return Err(Error::Unsupported);
        }
        if checksums.verify() && !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.total_len()) - usize::from(packet.header_len()),
            hop_limit: packet.hop_limit(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            dscp_ecn: packet.dscp_ecn(),
        })
    }

    /// Returns the length of the emitted header (no options).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Returns the length of the whole packet.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header and its checksum; the payload is not touched, so
    /// the buffer may hold only the header.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`HEADER_LEN`] or the total
    /// length exceeds [`MAX_PACKET_LEN`].
    ///
    /// The 20 bytes are assembled in registers and summed with the
    /// unrolled [`checksum::header`] (one pass, no per-field setters: this
    /// runs for every datagram a host sends); `emit_by_fields`, the
    /// setter-by-setter version, checks it in the tests.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let total = u16::try_from(self.buffer_len()).expect("IPv4 packet longer than 65535");
        let mut flags = self.frag_offset >> 3;
        if self.dont_frag {
            flags |= FLAG_DF;
        }
        if self.more_frags {
            flags |= FLAG_MF;
        }
        let [t0, t1] = total.to_be_bytes();
        let [i0, i1] = self.ident.to_be_bytes();
        let [f0, f1] = flags.to_be_bytes();
        let [s0, s1, s2, s3] = self.src_addr.octets();
        let [d0, d1, d2, d3] = self.dst_addr.octets();
        let mut h = [
            0x45,
            self.dscp_ecn,
            t0,
            t1,
            i0,
            i1,
            f0,
            f1,
            self.hop_limit,
            u8::from(self.next_header),
            0,
            0,
            s0,
            s1,
            s2,
            s3,
            d0,
            d1,
            d2,
            d3,
        ];
        let sum = !checksum::header(&h);
        h[field::CHECKSUM].copy_from_slice(&sum.to_be_bytes());
        packet.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&h);
    }

    /// [`Repr::emit`] one setter at a time (the reference it is tested
    /// against).
    #[cfg(test)]
    fn emit_by_fields<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let total = u16::try_from(self.buffer_len()).expect("IPv4 packet longer than 65535");
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len(total);
        packet.set_ident(self.ident);
        packet.clear_flags();
        packet.set_dont_frag(self.dont_frag);
        packet.set_more_frags(self.more_frags);
        packet.set_frag_offset(self.frag_offset);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IP {} > {}: {}, ttl {}, id {}",
            self.src_addr, self.dst_addr, self.next_header, self.hop_limit, self.ident
        )?;
        if self.dont_frag {
            f.write_str(", DF")?;
        }
        if self.more_frags || self.frag_offset != 0 {
            write!(
                f,
                ", frag {}{}",
                self.frag_offset,
                if self.more_frags { "+" } else { "" }
            )?;
        }
        if self.dscp_ecn != 0 {
            write!(f, ", tos 0x{:02x}", self.dscp_ecn)?;
        }
        write!(f, ", length {}", self.buffer_len())
    }
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use proptest::prelude::*;

    /// An IGMPv2 membership report for 224.0.0.251 (mDNS), as a host sends
    /// it: IHL 6 with a Router Alert option (RFC 2113), TTL 1, DF.
    pub(crate) static IGMP_BYTES: [u8; 32] = [
        0x46, 0xc0, 0x00, 0x20, 0x00, 0x00, 0x40, 0x00, 0x01, 0x02, 0x41, 0x10, 0xc0, 0xa8, 0x01,
        0x64, 0xe0, 0x00, 0x00, 0xfb, 0x94, 0x04, 0x00, 0x00, 0x16, 0x00, 0x09, 0x04, 0xe0, 0x00,
        0x00, 0xfb,
    ];

    /// The header of a Windows ping (see `icmpv4::test::ECHO_BYTES`).
    pub(crate) static PING_HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x3c, 0x1a, 0x2b, 0x00, 0x00, 0x80, 0x01, 0x9c, 0xe0, 0xc0, 0xa8, 0x01,
        0x64, 0xc0, 0xa8, 0x01, 0x01,
    ];

    fn igmp_repr() -> Repr {
        Repr {
            src_addr: Ipv4Addr::new(192, 168, 1, 100),
            dst_addr: Ipv4Addr::new(224, 0, 0, 251),
            next_header: Protocol::Igmp,
            payload_len: 8,
            hop_limit: 1,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            dscp_ecn: 0xc0,
        }
    }

    fn ping_repr() -> Repr {
        Repr {
            src_addr: Ipv4Addr::new(192, 168, 1, 100),
            dst_addr: Ipv4Addr::new(192, 168, 1, 1),
            next_header: Protocol::Icmp,
            payload_len: 40,
            hop_limit: 128,
            ident: 0x1a2b,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            dscp_ecn: 0,
        }
    }

    #[test]
    fn deconstruct_reads_every_field_and_skips_options() {
        let p = Packet::new_checked(&IGMP_BYTES[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 24);
        assert_eq!((p.dscp(), p.ecn()), (0x30, 0));
        assert_eq!(p.total_len(), 32);
        assert_eq!(p.ident(), 0);
        assert!(p.dont_frag() && !p.more_frags() && !p.reserved_flag());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.hop_limit(), 1);
        assert_eq!(p.next_header(), Protocol::Igmp);
        assert_eq!(p.checksum(), 0x4110);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 1, 100));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(224, 0, 0, 251));
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &IGMP_BYTES[24..]);
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0u8; 32];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version(4);
        p.set_header_len(24);
        p.set_dscp(0x30);
        p.set_ecn(0);
        p.set_total_len(32);
        p.set_ident(0);
        p.set_dont_frag(true);
        p.set_frag_offset(0);
        p.set_hop_limit(1);
        p.set_next_header(Protocol::Igmp);
        p.set_src_addr(Ipv4Addr::new(192, 168, 1, 100));
        p.set_dst_addr(Ipv4Addr::new(224, 0, 0, 251));
        p.buffer[20..].copy_from_slice(&IGMP_BYTES[20..]);
        p.fill_checksum();
        assert_eq!(buf, IGMP_BYTES);
    }

    #[test]
    fn parse_gives_the_repr_with_options_ignored() {
        let p = Packet::new_checked(&IGMP_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p, Checksums::Verify), Ok(igmp_repr()));
    }

    #[test]
    fn emit_writes_the_ping_header() {
        let mut buf = [0u8; 20];
        ping_repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PING_HEADER);
    }

    #[test]
    fn parse_header_accepts_a_header_without_its_payload() {
        let p = Packet::new_unchecked(&PING_HEADER[..]);
        assert_eq!(Repr::parse(&p, Checksums::Verify), Err(Error::Truncated));
        assert_eq!(Repr::parse_header(&p, Checksums::Verify), Ok(ping_repr()));
        assert!(p.payload().is_empty());
    }

    #[test]
    fn link_padding_is_not_payload() {
        let mut buf = IGMP_BYTES.to_vec();
        buf.extend_from_slice(&[0; 14]);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload().len(), 8);
    }

    #[test]
    fn bad_checksum_is_rejected_unless_ignored() {
        let mut buf = IGMP_BYTES;
        buf[8] = 2; // TTL
        let p = Packet::new_unchecked(&buf[..]);
        assert_eq!(Repr::parse(&p, Checksums::Verify), Err(Error::BadChecksum));
        assert!(Repr::parse(&p, Checksums::Ignore).is_ok());
    }

    #[test]
    fn malformed_lengths_are_rejected() {
        let mut buf = IGMP_BYTES;
        buf[0] = 0x44; // IHL 4
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Malformed));
        buf[0] = 0x4f; // IHL 15 = 60 bytes > 32
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
        buf[0] = 0x46;
        buf[3] = 20; // total length < header length
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::BadLength));
        buf[3] = 33;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
    }

    #[test]
    fn version_6_is_unsupported() {
        let mut buf = IGMP_BYTES;
        buf[0] = 0x66;
        let p = Packet::new_unchecked(&buf[..]);
        assert_eq!(Repr::parse(&p, Checksums::Ignore), Err(Error::Unsupported));
    }

    #[test]
    fn fragment_fields_round_trip_in_bytes() {
        let r = Repr {
            more_frags: true,
            frag_offset: 1480,
            ..ping_repr()
        };
        let mut buf = [0u8; 20];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[6..8], &[0x20, 185]);
        let p = Packet::new_unchecked(&buf[..]);
        assert_eq!(Repr::parse_header(&p, Checksums::Verify), Ok(r));
        assert_eq!(
            p.to_string(),
            "IP 192.168.1.100 > 192.168.1.1: ICMP, ttl 128, id 6699, frag 1480+, length 60"
        );
    }

    #[test]
    fn every_single_bit_flip_in_the_header_is_caught() {
        // The payload is covered by IGMP's own checksum, not IP's.
        for bit in 0..24 * 8 {
            let mut buf = IGMP_BYTES;
            buf[bit / 8] ^= 1 << (bit % 8);
            let p = Packet::new_unchecked(&buf[..]);
            assert!(Repr::parse(&p, Checksums::Verify).is_err(), "bit {bit}");
        }
    }

    pub(crate) fn arb_repr() -> impl Strategy<Value = Repr> {
        (
            any::<(u32, u32, u8, u8, u16, u8)>(),
            0usize..=MAX_PACKET_LEN - HEADER_LEN,
            any::<(bool, bool)>(),
            0u16..=OFFSET_MASK,
        )
            .prop_map(|((s, d, p, ttl, id, tos), len, (df, mf), off)| Repr {
                src_addr: Ipv4Addr::from(s),
                dst_addr: Ipv4Addr::from(d),
                next_header: Protocol::from(p),
                payload_len: len,
                hop_limit: ttl,
                ident: id,
                dont_frag: df,
                more_frags: mf,
                frag_offset: off << 3,
                dscp_ecn: tos,
            })
    }

    proptest! {
        #[test]
        fn protocol_round_trips(v in any::<u8>()) {
            prop_assert_eq!(u8::from(Protocol::from(v)), v);
        }

        #[test]
        fn parse_inverts_emit(r in arb_repr()) {
            let mut buf = [0u8; HEADER_LEN];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse_header(&Packet::new_unchecked(&buf[..]), Checksums::Verify), Ok(r));
        }

        #[test]
        fn the_one_pass_emit_writes_what_the_setters_write(
            r in arb_repr(),
            junk in proptest::array::uniform20(any::<u8>()),
        ) {
            let (mut fast, mut slow) = (junk, junk);
            r.emit(&mut Packet::new_unchecked(&mut fast[..]));
            r.emit_by_fields(&mut Packet::new_unchecked(&mut slow[..]));
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&p, Checksums::Verify);
            let _ = Repr::parse_header(&p, Checksums::Ignore);
            let _ = p.to_string();
        }

    }
}
