//! The Internet Control Message Protocol for IPv4 (RFC 792).
//!
//! Echo request and reply (ping), destination unreachable (with the next-hop
//! MTU of RFC 1191 for "fragmentation needed") and time exceeded. The two
//! error messages carry the invoking datagram's IP header and the first 8
//! bytes of its payload; [`Repr`] keeps those bytes raw and [`parse_quote`]
//! reads them.
//!
//! The checksum covers the whole ICMP message. When the data is in pieces
//! (or virtual), use [`Repr::emit_header`] and
//! [`Packet::verify_checksum_with`], which take the data's running sum.
//!
//! # Gaps
//! - Redirect, parameter problem, timestamp and router discovery messages
//!   parse as [`Error::Unsupported`].
//! - `parse` does not check that an error message quotes a valid header.

use crate::checksum::{self, Checksum};
use crate::ipv4;
use crate::{Checksums, Error, Result};
use std::fmt;

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $val:expr,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $var,)*
            /// Any other value.
            Unknown(u8),
        }
        impl From<u8> for $name {
            fn from(v: u8) -> Self {
                match v { $($val => $name::$var,)* n => $name::Unknown(n) }
            }
        }
        impl From<$name> for u8 {
            fn from(v: $name) -> u8 {
                match v { $($name::$var => $val,)* $name::Unknown(n) => n }
            }
        }
    };
}

code_enum! {
    /// The ICMP message type.
    Message {
        /// Echo reply, 0.
        EchoReply = 0,
        /// Destination unreachable, 3.
        DstUnreachable = 3,
        /// Redirect, 5.
        Redirect = 5,
        /// Echo request, 8.
        EchoRequest = 8,
        /// Router advertisement, 9.
        RouterAdvert = 9,
        /// Router solicitation, 10.
        RouterSolicit = 10,
        /// Time exceeded, 11.
        TimeExceeded = 11,
        /// Parameter problem, 12.
        ParamProblem = 12,
        /// Timestamp, 13.
        Timestamp = 13,
        /// Timestamp reply, 14.
        TimestampReply = 14,
    }
}

code_enum! {
    /// The code of a destination unreachable message.
    DstUnreachable {
        /// Net unreachable, 0.
        NetUnreachable = 0,
        /// Host unreachable, 1.
        HostUnreachable = 1,
        /// Protocol unreachable, 2.
        ProtoUnreachable = 2,
        /// Port unreachable, 3.
        PortUnreachable = 3,
        /// Fragmentation needed and DF set, 4 (carries the next-hop MTU).
        FragRequired = 4,
        /// Source route failed, 5.
        SrcRouteFailed = 5,
        /// Communication administratively prohibited, 13 (RFC 1812).
        AdminProhibited = 13,
    }
}

code_enum! {
    /// The code of a time exceeded message.
    TimeExceeded {
        /// Time to live exceeded in transit, 0.
        TtlExpired = 0,
        /// Fragment reassembly time exceeded, 1.
        FragExpired = 1,
    }
}

mod field {
    use std::ops::{Range, RangeFrom};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const MTU: Range<usize> = 6..8;
    pub const DATA: RangeFrom<usize> = 8..;
}

/// Length of the ICMP header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::DATA.start;

/// How much of the invoking datagram's payload an error message quotes.
pub const QUOTED_PAYLOAD_LEN: usize = 8;

/// A view of an ICMP message in a buffer that holds exactly the message.
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

    /// Wraps a buffer and checks that the header fits.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the header fits; afterwards no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not.
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

    /// Returns the message type.
    pub fn msg_type(&self) -> Message {
        Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Returns the message code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Returns the checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Returns the four "rest of header" bytes as one number.
    pub fn rest_of_header(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::REST];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Returns the identifier of an echo message.
    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Returns the sequence number of an echo message.
    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Returns the next-hop MTU of a "fragmentation needed" message.
    pub fn next_hop_mtu(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::MTU])
    }

    /// Returns the data after the header.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// Returns the data after the header (alias of [`Packet::data`]).
    pub fn payload(&self) -> &[u8] {
        self.data()
    }

    /// Returns whether the checksum over the whole buffer is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(self.buffer.as_ref()) == 0xffff
    }

    /// Returns whether the checksum is correct for this header followed by
    /// data whose running sum is `data_sum`; only the first
    /// [`HEADER_LEN`] bytes of the buffer are read.
    pub fn verify_checksum_with(&self, data_sum: Checksum) -> bool {
        let mut c = Checksum::new();
        c.add(&self.buffer.as_ref()[..HEADER_LEN]);
        c.append(data_sum);
        c.finish() == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type.
    pub fn set_msg_type(&mut self, v: Message) {
        self.buffer.as_mut()[field::TYPE] = u8::from(v);
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the four "rest of header" bytes.
    pub fn set_rest_of_header(&mut self, v: u32) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the identifier of an echo message.
    pub fn set_echo_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_IDENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the sequence number of an echo message.
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_SEQNO].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the next-hop MTU of a "fragmentation needed" message.
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        self.buffer.as_mut()[field::MTU].copy_from_slice(&v.to_be_bytes());
    }

    /// Returns the data after the header, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// Returns the data after the header, mutably (alias of `data_mut`).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.data_mut()
    }

    /// Computes the checksum over the whole buffer and writes it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::data(self.buffer.as_ref());
        self.set_checksum(!c);
    }

    /// Computes the checksum over this header and data whose running sum is
    /// `data_sum`, and writes it; only the header bytes are touched.
    pub fn fill_checksum_with(&mut self, data_sum: Checksum) {
        self.set_checksum(0);
        let mut c = Checksum::new();
        c.add(&self.buffer.as_ref()[..HEADER_LEN]);
        c.append(data_sum);
        self.set_checksum(c.finish());
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(
            &Packet::new_unchecked(self.buffer.as_ref()),
            Checksums::Verify,
        ) {
            Ok(r) => write!(f, "{r}"),
            Err(e) => write!(f, "ICMP ({e})"),
        }
    }
}

/// Reads the quote of an error message: the invoking datagram's IP header
/// and the payload bytes that follow it (at most 8 in a well-formed quote).
///
/// # Errors
/// As [`ipv4::Repr::parse_header`].
pub fn parse_quote(data: &[u8], checksums: Checksums) -> Result<(ipv4::Repr, &[u8])> {
    let packet = ipv4::Packet::new_unchecked(data);
    let repr = ipv4::Repr::parse_header(&packet, checksums)?;
    Ok((repr, &data[usize::from(packet.header_len())..]))
}

/// The meaning of an ICMP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr<'a> {
    /// Echo request (ping).
    EchoRequest {
        /// Identifier, to match replies to requests.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Data, echoed back.
        data: &'a [u8],
    },
    /// Echo reply.
    EchoReply {
        /// Identifier of the request.
        ident: u16,
        /// Sequence number of the request.
        seq_no: u16,
        /// Data of the request.
        data: &'a [u8],
    },
    /// Destination unreachable.
    DstUnreachable {
        /// Why.
        reason: DstUnreachable,
        /// Next-hop MTU for [`DstUnreachable::FragRequired`] (RFC 1191);
        /// zero otherwise.
        next_hop_mtu: u16,
        /// The invoking datagram's IP header and first 8 payload bytes.
        data: &'a [u8],
    },
    /// Time exceeded.
    TimeExceeded {
        /// Why.
        reason: TimeExceeded,
        /// The invoking datagram's IP header and first 8 payload bytes.
        data: &'a [u8],
    },
}

impl<'a> Repr<'a> {
    /// Reads a message that the buffer holds exactly.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the header does not fit;
    /// [`Error::BadChecksum`] if verification is on and fails;
    /// [`Error::Malformed`] for an echo message with a nonzero code;
    /// [`Error::Unsupported`] for other message types.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
        checksums: Checksums,
    ) -> Result<Repr<'a>> {
        packet.check_len()?;
        if checksums.verify() && !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        let data = &packet.buffer.as_ref()[field::DATA];
        let code = packet.msg_code();
        match packet.msg_type() {
            Message::EchoRequest | Message::EchoReply if code != 0 => Err(Error::Malformed),
            Message::EchoRequest => Ok(Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            }),
            Message::EchoReply => Ok(Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            }),
            Message::DstUnreachable => Ok(Repr::DstUnreachable {
                reason: DstUnreachable::from(code),
                next_hop_mtu: packet.next_hop_mtu(),
                data,
            }),
            Message::TimeExceeded => Ok(Repr::TimeExceeded {
                reason: TimeExceeded::from(code),
                data,
            }),
            _ => Err(Error::Unsupported),
        }
    }

    /// Returns the data carried after the header.
    pub const fn data(&self) -> &'a [u8] {
        match *self {
            Repr::EchoRequest { data, .. }
            | Repr::EchoReply { data, .. }
            | Repr::DstUnreachable { data, .. }
            | Repr::TimeExceeded { data, .. } => data,
        }
    }

    /// Returns the header length.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Returns the length of the whole message.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    fn emit_fields<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let (msg, code, rest) = match *self {
            Repr::EchoRequest { ident, seq_no, .. } => (
                Message::EchoRequest,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Repr::EchoReply { ident, seq_no, .. } => (
                Message::EchoReply,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Repr::DstUnreachable {
                reason,
                next_hop_mtu,
                ..
            } => (
                Message::DstUnreachable,
                u8::from(reason),
                u32::from(next_hop_mtu),
            ),
            Repr::TimeExceeded { reason, .. } => (Message::TimeExceeded, u8::from(reason), 0),
        };
        packet.set_msg_type(msg);
        packet.set_msg_code(code);
        packet.set_rest_of_header(rest);
    }

    /// Writes the header, with a checksum over data whose running sum is
    /// `data_sum`; the data itself (and `self`'s data field) is not read,
    /// so the buffer may hold only [`HEADER_LEN`] bytes.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`HEADER_LEN`].
    pub fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        data_sum: Checksum,
    ) {
        self.emit_fields(packet);
        packet.fill_checksum_with(data_sum);
    }

    /// Writes the whole message: header, data and checksum.
    ///
    /// # Panics
    /// Panics if the buffer is not exactly [`Repr::buffer_len`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        self.emit_fields(packet);
        packet.data_mut().copy_from_slice(self.data());
        packet.fill_checksum();
    }
}

impl fmt::Display for Repr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Repr::EchoRequest { ident, seq_no, .. } => {
                write!(f, "ICMP echo request, id {ident}, seq {seq_no}")?
            }
            Repr::EchoReply { ident, seq_no, .. } => {
                write!(f, "ICMP echo reply, id {ident}, seq {seq_no}")?
            }
            Repr::DstUnreachable {
                reason: DstUnreachable::FragRequired,
                next_hop_mtu,
                ..
            } => write!(f, "ICMP unreachable - need to frag (mtu {next_hop_mtu})")?,
            Repr::DstUnreachable { reason, .. } => write!(f, "ICMP unreachable ({reason:?})")?,
            Repr::TimeExceeded {
                reason: TimeExceeded::TtlExpired,
                ..
            } => f.write_str("ICMP time exceeded in-transit")?,
            Repr::TimeExceeded { reason, .. } => write!(f, "ICMP time exceeded ({reason:?})")?,
        }
        write!(f, ", length {}", self.buffer_len())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ipv4::test::PING_HEADER;
    use proptest::prelude::*;

    /// A Windows `ping 192.168.1.1`: 32 bytes of "abcdefghijklmnopqrstuvwabcdefghi".
    pub(crate) static ECHO_BYTES: [u8; 40] = [
        0x08, 0x00, 0x4d, 0x3a, 0x00, 0x01, 0x00, 0x21, b'a', b'b', b'c', b'd', b'e', b'f', b'g',
        b'h', b'i', b'j', b'k', b'l', b'm', b'n', b'o', b'p', b'q', b'r', b's', b't', b'u', b'v',
        b'w', b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h', b'i',
    ];

    /// 10.0.0.2 says port 53 is unreachable to 10.0.0.1, quoting the UDP
    /// datagram of `udp::test::DATAGRAM_BYTES`.
    pub(crate) static PORT_UNREACHABLE_BYTES: [u8; 36] = [
        0x03, 0x03, 0x4b, 0x72, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x00,
        0x00, 0x40, 0x11, 0x66, 0xc2, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc0, 0x01,
        0x00, 0x35, 0x00, 0x14, 0xf1, 0x3f,
    ];

    fn echo() -> Repr<'static> {
        Repr::EchoRequest {
            ident: 1,
            seq_no: 33,
            data: &ECHO_BYTES[8..],
        }
    }

    #[test]
    fn deconstruct_reads_every_field() {
        let p = Packet::new_checked(&ECHO_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), Message::EchoRequest);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x4d3a);
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (1, 33));
        assert_eq!(p.data(), b"abcdefghijklmnopqrstuvwabcdefghi");
        assert!(p.verify_checksum());
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0u8; 40];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_msg_type(Message::EchoRequest);
        p.set_msg_code(0);
        p.set_echo_ident(1);
        p.set_echo_seq_no(33);
        p.data_mut()
            .copy_from_slice(b"abcdefghijklmnopqrstuvwabcdefghi");
        p.fill_checksum();
        assert_eq!(buf, ECHO_BYTES);
    }

    #[test]
    fn parse_gives_the_repr_inside_its_ip_packet() {
        let mut whole = PING_HEADER.to_vec();
        whole.extend_from_slice(&ECHO_BYTES);
        let ip = ipv4::Packet::new_checked(&whole[..]).unwrap();
        assert!(ipv4::Repr::parse(&ip, Checksums::Verify).is_ok());
        let p = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(Repr::parse(&p, Checksums::Verify), Ok(echo()));
        assert_eq!(p.to_string(), "ICMP echo request, id 1, seq 33, length 40");
    }

    #[test]
    fn emit_writes_the_capture_bytes() {
        let mut buf = [0u8; 40];
        echo().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, ECHO_BYTES);
    }

    #[test]
    fn emit_header_with_data_in_pieces_matches_emit() {
        let mut sum = Checksum::new();
        sum.add(b"abcdefghi"); // odd piece
        sum.add(b"jklmnopqrstuvwabcdefghi");
        let mut buf = [0u8; HEADER_LEN];
        echo().emit_header(&mut Packet::new_unchecked(&mut buf[..]), sum);
        assert_eq!(buf, ECHO_BYTES[..HEADER_LEN]);
        assert!(Packet::new_unchecked(&buf[..]).verify_checksum_with(sum));
    }

    #[test]
    fn virtual_zero_data_checks_out() {
        let mut sum = Checksum::new();
        sum.add_zeros(1473);
        let r = Repr::EchoReply {
            ident: 7,
            seq_no: 9,
            data: &[],
        };
        let mut head = [0u8; HEADER_LEN];
        r.emit_header(&mut Packet::new_unchecked(&mut head[..]), sum);
        let mut whole = head.to_vec();
        whole.resize(HEADER_LEN + 1473, 0);
        assert!(Packet::new_unchecked(&whole[..]).verify_checksum());
    }

    #[test]
    fn port_unreachable_quotes_the_udp_header() {
        let p = Packet::new_checked(&PORT_UNREACHABLE_BYTES[..]).unwrap();
        let r = Repr::parse(&p, Checksums::Verify).unwrap();
        let Repr::DstUnreachable {
            reason,
            next_hop_mtu,
            data,
        } = r
        else {
            panic!("wrong message: {r:?}")
        };
        assert_eq!((reason, next_hop_mtu), (DstUnreachable::PortUnreachable, 0));
        let (ip, rest) = parse_quote(data, Checksums::Verify).unwrap();
        assert_eq!(ip.next_header, ipv4::Protocol::Udp);
        assert_eq!(ip.payload_len, 20);
        assert_eq!(rest, &[0xc0, 0x01, 0x00, 0x35, 0x00, 0x14, 0xf1, 0x3f]);
        let mut buf = [0u8; 36];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PORT_UNREACHABLE_BYTES);
    }

    #[test]
    fn frag_required_carries_the_mtu() {
        let r = Repr::DstUnreachable {
            reason: DstUnreachable::FragRequired,
            next_hop_mtu: 1400,
            data: &PORT_UNREACHABLE_BYTES[8..],
        };
        let mut buf = [0u8; 36];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..2], &[3, 4]);
        assert_eq!(&buf[4..8], &[0, 0, 0x05, 0x78]);
        let p = Packet::new_unchecked(&buf[..]);
        assert_eq!(Repr::parse(&p, Checksums::Verify), Ok(r));
        assert_eq!(
            p.to_string(),
            "ICMP unreachable - need to frag (mtu 1400), length 36"
        );
    }

    #[test]
    fn redirect_is_unsupported() {
        let mut buf = [5u8, 0, 0, 0, 0, 0, 0, 0];
        Packet::new_unchecked(&mut buf[..]).fill_checksum();
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&buf[..]), Checksums::Verify),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        for bit in 0..ECHO_BYTES.len() * 8 {
            let mut buf = ECHO_BYTES;
            buf[bit / 8] ^= 1 << (bit % 8);
            let p = Packet::new_unchecked(&buf[..]);
            assert!(!p.verify_checksum(), "bit {bit}");
            assert!(Repr::parse(&p, Checksums::Verify).is_err(), "bit {bit}");
        }
    }

    fn arb_repr(data: &[u8]) -> impl Strategy<Value = Repr<'_>> {
        (
            0u8..4,
            any::<u16>(),
            any::<u16>(),
            any::<u8>(),
            0..=data.len(),
        )
            .prop_map(move |(kind, a, b, code, n)| {
                let data = &data[..n];
                match kind {
                    0 => Repr::EchoRequest {
                        ident: a,
                        seq_no: b,
                        data,
                    },
                    1 => Repr::EchoReply {
                        ident: a,
                        seq_no: b,
                        data,
                    },
                    2 => Repr::DstUnreachable {
                        reason: DstUnreachable::from(code),
                        next_hop_mtu: a,
                        data,
                    },
                    _ => Repr::TimeExceeded {
                        reason: TimeExceeded::from(code),
                        data,
                    },
                }
            })
    }

    proptest! {
        #[test]
        fn codes_round_trip(v in any::<u8>()) {
            prop_assert_eq!(u8::from(Message::from(v)), v);
            prop_assert_eq!(u8::from(DstUnreachable::from(v)), v);
            prop_assert_eq!(u8::from(TimeExceeded::from(v)), v);
        }

        #[test]
        fn parse_inverts_emit(r in arb_repr(&PORT_UNREACHABLE_BYTES)) {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..]), Checksums::Verify), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&p, Checksums::Verify);
            let _ = parse_quote(&bytes, Checksums::Ignore);
            let _ = p.to_string();
        }

        #[test]
        fn any_flipped_bit_is_caught(r in arb_repr(&ECHO_BYTES), bit in any::<proptest::sample::Index>()) {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]));
            let bit = bit.index(buf.len() * 8);
            buf[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(Repr::parse(&Packet::new_unchecked(&buf[..]), Checksums::Verify).is_err());
        }
    }
}
