//! The User Datagram Protocol (RFC 768).
//!
//! The checksum covers an IPv4 pseudo-header, the UDP header and the
//! payload. RFC 768: "If the computed checksum is zero, it is transmitted as
//! all ones ... An all zero transmitted checksum value means that the
//! transmitter generated no checksum."
//!
//! Payloads often come in pieces (or are virtual), so besides the ordinary
//! contiguous [`Repr::emit`] / [`Repr::parse`] there are
//! [`Repr::emit_header`] and [`verify_checksum_with`], which take the
//! payload's running [`Checksum`] instead of its bytes.
//!
//! # Gaps
//! - IPv6 pseudo-headers; UDP-Lite.

use crate::checksum::{self, Checksum};
use crate::ipv4::Protocol;
use crate::{Checksums, Error, Result};
use std::fmt;
use std::net::Ipv4Addr;

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// Largest payload a UDP length field can describe.
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - HEADER_LEN;

/// A view of a UDP datagram in a buffer.
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

    /// Wraps a buffer and checks that the datagram fits.
    ///
    /// # Errors
    /// See [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the header fits and that the length field lies between
    /// the header length and the buffer length; afterwards no accessor
    /// panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the header or the datagram does not fit;
    /// [`Error::BadLength`] if the length field is shorter than the header.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            Err(Error::BadLength)
        } else if field_len > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Returns the source port.
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Returns the destination port.
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Returns the length field (header and payload).
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Returns whether the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Returns the checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Returns the payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Returns whether the checksum is correct for a datagram from `src` to
    /// `dst`; a zero checksum field ("none") is accepted.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let mut c = checksum::pseudo_header(src, dst, Protocol::Udp, u32::from(len));
        c.add(&self.buffer.as_ref()[..usize::from(len)]);
        c.finish() == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the length field.
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Returns the payload, mutably, up to the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes the checksum for a datagram from `src` to `dst` over the
    /// header and the payload in the buffer, and writes it.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let mut payload_sum = Checksum::new();
        payload_sum.add(self.payload());
        self.fill_checksum_with(src, dst, payload_sum);
    }

    /// As [`Packet::fill_checksum`], with the payload given by its running
    /// sum; only the header bytes are read and written.
    pub fn fill_checksum_with(&mut self, src: Ipv4Addr, dst: Ipv4Addr, payload_sum: Checksum) {
        self.set_checksum(0);
        let len = self.len();
        let mut c = checksum::pseudo_header(src, dst, Protocol::Udp, u32::from(len));
        c.add(&self.buffer.as_ref()[..HEADER_LEN]);
        c.append(payload_sum);
        // RFC 768: a computed zero is transmitted as all ones.
        let v = match c.finish() {
            0 => 0xffff,
            v => v,
        };
        self.set_checksum(v);
    }
}

/// Returns whether a datagram's checksum is correct, given its header bytes
/// (at least [`HEADER_LEN`]; the length field counts the payload) and the
/// running sum of its payload. A zero checksum field is accepted.
///
/// # Panics
/// Panics if `header` is shorter than [`HEADER_LEN`].
pub fn verify_checksum_with(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    header: &[u8],
    payload_sum: Checksum,
) -> bool {
    let p = Packet::new_unchecked(&header[..HEADER_LEN]);
    if p.checksum() == 0 {
        return true;
    }
    let mut c = checksum::pseudo_header(src, dst, Protocol::Udp, u32::from(p.len()));
    c.add(&header[..HEADER_LEN]);
    c.append(payload_sum);
    c.finish() == 0
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.check_len() {
            Ok(()) => write!(
                f,
                "UDP {} > {}, length {}",
                self.src_port(),
                self.dst_port(),
                self.payload().len()
            ),
            Err(e) => write!(f, "UDP ({e})"),
        }
    }
}

/// The meaning of a UDP header. The payload length is kept by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl Repr {
    /// Reads a datagram from `src` to `dst`; the payload is
    /// `packet.payload()`.
    ///
    /// # Errors
    /// Those of [`Packet::check_len`]; [`Error::Malformed`] for destination
    /// port 0; [`Error::BadChecksum`] if verification is on and fails.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        checksums: Checksums,
    ) -> Result<Repr> {
        packet.check_len()?;
        // RFC 768 allows source port 0 ("not used"); destination 0 is reserved.
        if packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        if checksums.verify() && !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// Returns the header length.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Returns the datagram length for a payload of `payload_len` bytes.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header (ports, length, checksum) for a payload of
    /// `payload_len` bytes whose running sum is `payload_sum`; the buffer
    /// may hold only the header.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`HEADER_LEN`] or `payload_len`
    /// exceeds [`MAX_PAYLOAD_LEN`].
    #[inline]
    pub fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        header: &mut Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
        payload_sum: Checksum,
    ) {
        assert!(payload_len <= MAX_PAYLOAD_LEN, "UDP payload too long");
        header.set_src_port(self.src_port);
        header.set_dst_port(self.dst_port);
        header.set_len((HEADER_LEN + payload_len) as u16);
        header.fill_checksum_with(src, dst, payload_sum);
    }

    /// Writes the whole datagram: `emit_payload` fills the payload (of
    /// `payload_len` bytes), then the header and checksum are written.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`Repr::buffer_len`] or
    /// `payload_len` exceeds [`MAX_PAYLOAD_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
    ) {
        assert!(payload_len <= MAX_PAYLOAD_LEN, "UDP payload too long");
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + payload_len) as u16);
        emit_payload(packet.payload_mut());
        packet.fill_checksum(src, dst);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UDP {} > {}", self.src_port, self.dst_port)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// 10.0.0.1:49153 > 10.0.0.2:53 "hello, elvis"; checksum 0xf13f worked
    /// out independently (Python, word by word, pseudo-header included).
    pub(crate) static DATAGRAM_BYTES: [u8; 20] = [
        0xc0, 0x01, 0x00, 0x35, 0x00, 0x14, 0xf1, 0x3f, b'h', b'e', b'l', b'l', b'o', b',', b' ',
        b'e', b'l', b'v', b'i', b's',
    ];

    fn repr() -> Repr {
        Repr {
            src_port: 49153,
            dst_port: 53,
        }
    }

    #[test]
    fn deconstruct_reads_every_field() {
        let p = Packet::new_checked(&DATAGRAM_BYTES[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (49153, 53));
        assert_eq!(p.len(), 20);
        assert_eq!(p.checksum(), 0xf13f);
        assert_eq!(p.payload(), b"hello, elvis");
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0u8; 20];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(49153);
        p.set_dst_port(53);
        p.set_len(20);
        p.payload_mut().copy_from_slice(b"hello, elvis");
        p.fill_checksum(SRC, DST);
        assert_eq!(buf, DATAGRAM_BYTES);
    }

    #[test]
    fn parse_gives_the_repr() {
        let p = Packet::new_checked(&DATAGRAM_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(repr()));
        assert_eq!(p.to_string(), "UDP 49153 > 53, length 12");
    }

    #[test]
    fn emit_writes_the_capture_bytes() {
        let mut buf = [0u8; 20];
        repr().emit(
            &mut Packet::new_unchecked(&mut buf[..]),
            SRC,
            DST,
            12,
            |p| p.copy_from_slice(b"hello, elvis"),
        );
        assert_eq!(buf, DATAGRAM_BYTES);
    }

    #[test]
    fn emit_header_with_payload_in_pieces_matches_emit() {
        let mut sum = Checksum::new();
        sum.add(b"hel");
        sum.add(b"lo, ");
        sum.add(b"elvis");
        let mut head = [0u8; HEADER_LEN];
        repr().emit_header(&mut Packet::new_unchecked(&mut head[..]), SRC, DST, 12, sum);
        assert_eq!(head, DATAGRAM_BYTES[..HEADER_LEN]);
        assert!(verify_checksum_with(SRC, DST, &head, sum));
        assert!(!verify_checksum_with(DST, DST, &head, sum));
    }

    #[test]
    fn wrong_addresses_fail_the_checksum() {
        let p = Packet::new_checked(&DATAGRAM_BYTES[..]).unwrap();
        let other = Ipv4Addr::new(10, 0, 0, 3);
        assert_eq!(
            Repr::parse(&p, SRC, other, Checksums::Verify),
            Err(Error::BadChecksum)
        );
        assert_eq!(Repr::parse(&p, SRC, other, Checksums::Ignore), Ok(repr()));
    }

    #[test]
    fn zero_checksum_means_none() {
        let mut buf = DATAGRAM_BYTES;
        buf[6..8].fill(0);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(repr()));
    }

    #[test]
    fn computed_zero_is_sent_as_all_ones() {
        // Choose the last payload word so that the sum comes to 0xffff.
        let mut buf = [0u8; 10];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_len(10);
        let mut c = checksum::pseudo_header(SRC, DST, Protocol::Udp, 10);
        c.add(&p.buffer[..]);
        let filler = !c.sum();
        p.payload_mut().copy_from_slice(&filler.to_be_bytes());
        p.fill_checksum(SRC, DST);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn length_field_is_checked() {
        let mut buf = DATAGRAM_BYTES;
        buf[5] = 7;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::BadLength));
        buf[5] = 21;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        for bit in 0..DATAGRAM_BYTES.len() * 8 {
            let mut buf = DATAGRAM_BYTES;
            buf[bit / 8] ^= 1 << (bit % 8);
            let p = Packet::new_unchecked(&buf[..]);
            assert!(
                Repr::parse(&p, SRC, DST, Checksums::Verify).is_err(),
                "bit {bit}"
            );
        }
    }

    proptest! {
        #[test]
        fn parse_inverts_emit(
            src_port in any::<u16>(),
            dst_port in 1..=u16::MAX,
            payload in proptest::collection::vec(any::<u8>(), 0..100),
            (s, d) in any::<(u32, u32)>(),
        ) {
            let (s, d) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let r = Repr { src_port, dst_port };
            let mut buf = vec![0u8; r.buffer_len(payload.len())];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]), s, d, payload.len(), |p| p.copy_from_slice(&payload));
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Repr::parse(&p, s, d, Checksums::Verify), Ok(r));
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&p, SRC, DST, Checksums::Verify);
            let _ = p.to_string();
        }

        #[test]
        fn any_flipped_bit_is_caught(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            bit in any::<proptest::sample::Index>(),
        ) {
            let r = repr();
            let mut buf = vec![0u8; r.buffer_len(payload.len())];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]), SRC, DST, payload.len(), |p| p.copy_from_slice(&payload));
            let bit = bit.index(buf.len() * 8);
            // A flip in the length field makes a different (usually
            // truncated) datagram, and one that clears the only set bit of
            // the checksum field means "no checksum": not one-bit errors
            // of the same message.
            prop_assume!(!field::LENGTH.contains(&(bit / 8)));
            buf[bit / 8] ^= 1 << (bit % 8);
            let p = Packet::new_unchecked(&buf[..]);
            prop_assume!(p.checksum() != 0);
            prop_assert!(Repr::parse(&p, SRC, DST, Checksums::Verify).is_err());
        }
    }
}
