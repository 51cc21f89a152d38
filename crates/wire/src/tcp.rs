//! The Transmission Control Protocol's segment format (RFC 9293 §3.1), with
//! the options of RFC 9293 (MSS), RFC 7323 (window scale, timestamps) and
//! RFC 2018 (SACK).
//!
//! The checksum covers an IPv4 pseudo-header, the TCP header and the
//! payload. TCP has no length field: the segment is the whole buffer (the
//! IP payload), so the pseudo-header's length is the buffer's length, and a
//! zero checksum field means nothing special.
//!
//! As in smoltcp, a [`Repr`] holds one [`Control`] (none, PSH, SYN, FIN or
//! RST); ACK is `ack_number: Some(..)`. PSH combined with SYN, FIN or RST is
//! dropped on parse, and SYN, FIN and RST together are [`Error::Malformed`].
//!
//! Payloads often come in pieces (or are virtual), so besides the ordinary
//! contiguous [`Repr::emit`] / [`Repr::parse`] there are
//! [`Repr::emit_header`] and [`verify_checksum_with`], which take the
//! payload's running [`Checksum`] instead of its bytes; `Repr::parse` over
//! a buffer holding only the header reads the header with
//! [`Checksums::Ignore`].
//!
//! `emit` lays the options out as Linux does (MSS; timestamps behind
//! SACK-permitted or two NOPs; NOP, window scale; two NOPs, SACK) whenever
//! that fits in 40 bytes, and packed otherwise, so any parsed `Repr` can be
//! emitted again.
//!
//! # Gaps
//! - IPv6 pseudo-headers.
//! - The urgent pointer is read and written by [`Packet`] but not carried
//!   by [`Repr`] (URG is ignored on parse and never emitted).
//! - No TCP-AO, MD5, MPTCP or Fast Open options: they are skipped as
//!   unknown.

use crate::checksum::{self, Checksum};
use crate::ipv4::Protocol;
use crate::{Checksums, Error, Result};
use std::cmp::Ordering;
use std::fmt;
use std::net::Ipv4Addr;
use std::ops;

/// A TCP sequence number: arithmetic and comparison modulo 2^32 (RFC 9293
/// §3.4, RFC 1982 serial arithmetic).
///
/// `a < b` when `b` is less than 2^31 ahead of `a`. Two numbers exactly
/// 2^31 apart are incomparable (`partial_cmp` is `None`, so `<`, `<=`, `>`
/// and `>=` are all false). The order is only meaningful within a window
/// narrower than 2^31 (it is cyclic, so not transitive over the whole
/// space); do not sort numbers spread wider than that.
///
/// ```
/// use elvis_wire::TcpSeqNumber as S;
/// assert!(S(u32::MAX - 1) < S(3));
/// assert_eq!(S(u32::MAX - 1) + 5, S(3));
/// assert_eq!(S(3) - S(u32::MAX - 1), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// Returns the later of two numbers (`self` if they are incomparable).
    #[must_use]
    pub fn max(self, rhs: SeqNumber) -> SeqNumber {
        if rhs > self {
            rhs
        } else {
            self
        }
    }

    /// Returns the earlier of two numbers (`self` if they are incomparable).
    #[must_use]
    pub fn min(self, rhs: SeqNumber) -> SeqNumber {
        if rhs < self {
            rhs
        } else {
            self
        }
    }
}

impl ops::Add<usize> for SeqNumber {
    type Output = SeqNumber;

    /// Adds modulo 2^32.
    fn add(self, rhs: usize) -> SeqNumber {
        // Truncation is the reduction modulo 2^32.
        SeqNumber(self.0.wrapping_add(rhs as u32))
    }
}

impl ops::Sub<usize> for SeqNumber {
    type Output = SeqNumber;

    /// Subtracts modulo 2^32.
    fn sub(self, rhs: usize) -> SeqNumber {
        SeqNumber(self.0.wrapping_sub(rhs as u32))
    }
}

impl ops::AddAssign<usize> for SeqNumber {
    fn add_assign(&mut self, rhs: usize) {
        *self = *self + rhs;
    }
}

impl ops::SubAssign<usize> for SeqNumber {
    fn sub_assign(&mut self, rhs: usize) {
        *self = *self - rhs;
    }
}

impl ops::Sub for SeqNumber {
    type Output = i32;

    /// Returns the signed distance from `rhs` to `self`, in
    /// `-2^31..2^31`: positive when `self` is later.
    fn sub(self, rhs: SeqNumber) -> i32 {
        self.0.wrapping_sub(rhs.0) as i32
    }
}

impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &SeqNumber) -> Option<Ordering> {
        match *self - *other {
            i32::MIN => None,
            d => Some(d.cmp(&0)),
        }
    }
}

impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset (high nibble) and reserved bits.
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;

    pub const FLG_FIN: u8 = 0x01;
    pub const FLG_SYN: u8 = 0x02;
    pub const FLG_RST: u8 = 0x04;
    pub const FLG_PSH: u8 = 0x08;
    pub const FLG_ACK: u8 = 0x10;
    pub const FLG_URG: u8 = 0x20;
    pub const FLG_ECE: u8 = 0x40;
    pub const FLG_CWR: u8 = 0x80;

    pub const OPT_EOL: u8 = 0;
    pub const OPT_NOP: u8 = 1;
    pub const OPT_MSS: u8 = 2;
    pub const OPT_WS: u8 = 3;
    pub const OPT_SACK_PERM: u8 = 4;
    pub const OPT_SACK: u8 = 5;
    pub const OPT_TS: u8 = 8;
}

/// Length of the TCP header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

/// Longest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// Most option bytes a header can hold.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;

/// Most blocks a SACK option can hold (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;

fn be16(d: &[u8]) -> u16 {
    u16::from_be_bytes([d[0], d[1]])
}

fn be32(d: &[u8]) -> u32 {
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// A view of a TCP segment in a buffer: the segment is the whole buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks that the header fits.
    ///
    /// # Errors
    /// See [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the fixed header fits and that the data offset lies
    /// between the fixed header length and the buffer length; afterwards no
    /// accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the fixed header or the header with its
    /// options does not fit; [`Error::BadLength`] if the data offset is
    /// shorter than the fixed header.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            Err(Error::BadLength)
        } else if header_len > len {
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

    /// Returns the sequence number.
    pub fn seq_number(&self) -> SeqNumber {
        SeqNumber(be32(&self.buffer.as_ref()[field::SEQ_NUM]))
    }

    /// Returns the acknowledgment number field (meaningful only with ACK).
    pub fn ack_number(&self) -> SeqNumber {
        SeqNumber(be32(&self.buffer.as_ref()[field::ACK_NUM]))
    }

    /// Returns the header length in bytes (the data offset times 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// Returns the flags byte (CWR, ECE, URG, ACK, PSH, RST, SYN, FIN from
    /// the high bit down).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    fn flag(&self, f: u8) -> bool {
        self.flags() & f != 0
    }

    /// Returns the FIN flag.
    pub fn fin(&self) -> bool {
        self.flag(field::FLG_FIN)
    }

    /// Returns the SYN flag.
    pub fn syn(&self) -> bool {
        self.flag(field::FLG_SYN)
    }

    /// Returns the RST flag.
    pub fn rst(&self) -> bool {
        self.flag(field::FLG_RST)
    }

    /// Returns the PSH flag.
    pub fn psh(&self) -> bool {
        self.flag(field::FLG_PSH)
    }

    /// Returns the ACK flag.
    pub fn ack(&self) -> bool {
        self.flag(field::FLG_ACK)
    }

    /// Returns the URG flag.
    pub fn urg(&self) -> bool {
        self.flag(field::FLG_URG)
    }

    /// Returns the ECE flag (RFC 3168).
    pub fn ece(&self) -> bool {
        self.flag(field::FLG_ECE)
    }

    /// Returns the CWR flag (RFC 3168).
    pub fn cwr(&self) -> bool {
        self.flag(field::FLG_CWR)
    }

    /// Returns the window field (unscaled).
    pub fn window_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::WINDOW])
    }

    /// Returns the checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Returns the urgent pointer field.
    pub fn urgent_at(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::URGENT])
    }

    /// Returns the options region (between the fixed header and the data
    /// offset).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// Returns the payload: everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..]
    }

    /// Returns the sequence space the segment occupies: payload, plus one
    /// for SYN and one for FIN.
    pub fn segment_len(&self) -> usize {
        self.payload().len() + usize::from(self.syn()) + usize::from(self.fin())
    }

    /// Returns whether the checksum is correct for a segment (the whole
    /// buffer) from `src` to `dst`.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let data = self.buffer.as_ref();
        let mut c = checksum::pseudo_header(src, dst, Protocol::Tcp, data.len() as u32);
        c.add(data);
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, v: SeqNumber) {
        self.buffer.as_mut()[field::SEQ_NUM].copy_from_slice(&v.0.to_be_bytes());
    }

    /// Sets the acknowledgment number field.
    pub fn set_ack_number(&mut self, v: SeqNumber) {
        self.buffer.as_mut()[field::ACK_NUM].copy_from_slice(&v.0.to_be_bytes());
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60) and
    /// clears the reserved bits.
    pub fn set_header_len(&mut self, len: u8) {
        self.buffer.as_mut()[field::DATA_OFF] = (len / 4) << 4;
    }

    /// Sets the whole flags byte.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Clears every flag.
    pub fn clear_flags(&mut self) {
        self.set_flags(0);
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        let v = self.flags();
        self.set_flags(if on { v | f } else { v & !f });
    }

    /// Sets the FIN flag.
    pub fn set_fin(&mut self, on: bool) {
        self.set_flag(field::FLG_FIN, on);
    }

    /// Sets the SYN flag.
    pub fn set_syn(&mut self, on: bool) {
        self.set_flag(field::FLG_SYN, on);
    }

    /// Sets the RST flag.
    pub fn set_rst(&mut self, on: bool) {
        self.set_flag(field::FLG_RST, on);
    }

    /// Sets the PSH flag.
    pub fn set_psh(&mut self, on: bool) {
        self.set_flag(field::FLG_PSH, on);
    }

    /// Sets the ACK flag.
    pub fn set_ack(&mut self, on: bool) {
        self.set_flag(field::FLG_ACK, on);
    }

    /// Sets the URG flag.
    pub fn set_urg(&mut self, on: bool) {
        self.set_flag(field::FLG_URG, on);
    }

    /// Sets the ECE flag.
    pub fn set_ece(&mut self, on: bool) {
        self.set_flag(field::FLG_ECE, on);
    }

    /// Sets the CWR flag.
    pub fn set_cwr(&mut self, on: bool) {
        self.set_flag(field::FLG_CWR, on);
    }

    /// Sets the window field.
    pub fn set_window_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::WINDOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the urgent pointer field.
    pub fn set_urgent_at(&mut self, v: u16) {
        self.buffer.as_mut()[field::URGENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Returns the options region, mutably.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.header_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Returns the payload, mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = usize::from(self.header_len());
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes the checksum for a segment (the whole buffer) from `src` to
    /// `dst` and writes it.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let mut payload_sum = Checksum::new();
        payload_sum.add(self.payload());
        let payload_len = self.payload().len();
        self.fill_checksum_with(src, dst, payload_len, payload_sum);
    }

    /// As [`Packet::fill_checksum`], with a payload of `payload_len` bytes
    /// given by its running sum; only the header (up to the data offset) is
    /// read and written, so the buffer may hold only the header.
    pub fn fill_checksum_with(
        &mut self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
        payload_sum: Checksum,
    ) {
        self.set_checksum(0);
        let header_len = usize::from(self.header_len());
        let len = (header_len + payload_len) as u32;
        let mut c = checksum::pseudo_header(src, dst, Protocol::Tcp, len);
        c.add(&self.buffer.as_ref()[..header_len]);
        c.append(payload_sum);
        self.set_checksum(c.finish());
    }
}

/// Returns whether a segment's checksum is correct, given the bytes before
/// its payload (`header`: the header, options included) and the
/// `payload_len` bytes of payload as a running sum. Never panics.
pub fn verify_checksum_with(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    header: &[u8],
    payload_len: usize,
    payload_sum: Checksum,
) -> bool {
    let len = (header.len() + payload_len) as u32;
    let mut c = checksum::pseudo_header(src, dst, Protocol::Tcp, len);
    c.add(header);
    c.append(payload_sum);
    c.finish() == 0
}

/// Writes tcpdump's letters for a flags byte ("S.", "P.", "F.", "R").
fn write_flags(f: &mut fmt::Formatter<'_>, flags: u8) -> fmt::Result {
    const LETTERS: [(u8, char); 8] = [
        (field::FLG_FIN, 'F'),
        (field::FLG_SYN, 'S'),
        (field::FLG_RST, 'R'),
        (field::FLG_PSH, 'P'),
        (field::FLG_ACK, '.'),
        (field::FLG_URG, 'U'),
        (field::FLG_ECE, 'E'),
        (field::FLG_CWR, 'W'),
    ];
    f.write_str("[")?;
    for (bit, c) in LETTERS {
        if flags & bit != 0 {
            write!(f, "{c}")?;
        }
    }
    if flags == 0 {
        f.write_str("none")?;
    }
    f.write_str("]")
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Err(e) = self.check_len() {
            return write!(f, "TCP ({e})");
        }
        write!(f, "TCP {} > {} ", self.src_port(), self.dst_port())?;
        write_flags(f, self.flags())?;
        write!(f, " seq {}", self.seq_number())?;
        if self.ack() {
            write!(f, " ack {}", self.ack_number())?;
        }
        write!(f, " win {}", self.window_len())?;
        if self.urg() {
            write!(f, " urg {}", self.urgent_at())?;
        }
        let mut opts = self.options();
        if !opts.is_empty() {
            f.write_str(" options [")?;
            let mut first = true;
            while !opts.is_empty() {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                match TcpOption::parse(opts) {
                    Ok((rest, opt)) => {
                        write!(f, "{opt}")?;
                        opts = if opt == TcpOption::EndOfList {
                            &[]
                        } else {
                            rest
                        };
                    }
                    Err(_) => {
                        f.write_str("malformed")?;
                        break;
                    }
                }
            }
            f.write_str("]")?;
        }
        write!(f, ", length {}", self.payload().len())
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpOption<'a> {
    /// End of option list (kind 0): the rest of the region is padding.
    EndOfList,
    /// No-operation (kind 1), used for alignment.
    NoOperation,
    /// Maximum segment size (kind 2, RFC 9293 §3.7.1).
    MaxSegmentSize(u16),
    /// Window scale shift count (kind 3, RFC 7323 §2), as sent.
    WindowScale(u8),
    /// SACK permitted (kind 4, RFC 2018 §2).
    SackPermitted,
    /// SACK blocks (kind 5, RFC 2018 §3): (left edge, right edge), the
    /// leading entries `Some`.
    SackRange([Option<(u32, u32)>; MAX_SACK_BLOCKS]),
    /// Timestamps (kind 8, RFC 7323 §3).
    Timestamp {
        /// TSval: the sender's clock.
        tsval: u32,
        /// TSecr: the echoed TSval.
        tsecr: u32,
    },
    /// Any other kind, with its data (after kind and length).
    Unknown {
        /// The option kind.
        kind: u8,
        /// The option data.
        data: &'a [u8],
    },
}

impl<'a> TcpOption<'a> {
    /// Reads the option at the start of `buffer` (which must not be
    /// empty); returns the bytes after it and the option.
    ///
    /// # Errors
    /// [`Error::Truncated`] for an empty buffer; [`Error::Malformed`] for
    /// an option cut short, a length below 2, or a known kind with a wrong
    /// length.
    pub fn parse(buffer: &'a [u8]) -> Result<(&'a [u8], TcpOption<'a>)> {
        let (&kind, rest) = buffer.split_first().ok_or(Error::Truncated)?;
        match kind {
            field::OPT_EOL => return Ok((rest, TcpOption::EndOfList)),
            field::OPT_NOP => return Ok((rest, TcpOption::NoOperation)),
            _ => {}
        }
        let len = usize::from(*rest.first().ok_or(Error::Malformed)?);
        if len < 2 || len > buffer.len() {
            return Err(Error::Malformed);
        }
        let (data, rest) = (&buffer[2..len], &buffer[len..]);
        let opt = match (kind, len) {
            (field::OPT_MSS, 4) => TcpOption::MaxSegmentSize(be16(data)),
            (field::OPT_WS, 3) => TcpOption::WindowScale(data[0]),
            (field::OPT_SACK_PERM, 2) => TcpOption::SackPermitted,
            (field::OPT_SACK, 10 | 18 | 26 | 34) => {
                let mut blocks = [None; MAX_SACK_BLOCKS];
                for (b, d) in blocks.iter_mut().zip(data.chunks_exact(8)) {
                    *b = Some((be32(&d[..4]), be32(&d[4..])));
                }
                TcpOption::SackRange(blocks)
            }
            (field::OPT_TS, 10) => TcpOption::Timestamp {
                tsval: be32(&data[..4]),
                tsecr: be32(&data[4..]),
            },
            (field::OPT_MSS | field::OPT_WS | field::OPT_SACK_PERM, _)
            | (field::OPT_SACK | field::OPT_TS, _) => return Err(Error::Malformed),
            _ => TcpOption::Unknown { kind, data },
        };
        Ok((rest, opt))
    }

    /// Returns the option's length in bytes.
    pub fn buffer_len(&self) -> usize {
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation => 1,
            TcpOption::MaxSegmentSize(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::SackRange(r) => 2 + 8 * r.iter().flatten().count(),
            TcpOption::Timestamp { .. } => 10,
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buffer` and returns the bytes
    /// after it. `None` SACK blocks are skipped.
    ///
    /// # Panics
    /// Panics if `buffer` is shorter than [`TcpOption::buffer_len`], or an
    /// unknown option's data exceeds 253 bytes.
    pub fn emit<'b>(&self, buffer: &'b mut [u8]) -> &'b mut [u8] {
        let len = self.buffer_len();
        let (out, rest) = buffer.split_at_mut(len);
        out[0] = match self {
            TcpOption::EndOfList => field::OPT_EOL,
            TcpOption::NoOperation => field::OPT_NOP,
            TcpOption::MaxSegmentSize(_) => field::OPT_MSS,
            TcpOption::WindowScale(_) => field::OPT_WS,
            TcpOption::SackPermitted => field::OPT_SACK_PERM,
            TcpOption::SackRange(_) => field::OPT_SACK,
            TcpOption::Timestamp { .. } => field::OPT_TS,
            TcpOption::Unknown { kind, .. } => *kind,
        };
        if len > 1 {
            out[1] = u8::try_from(len).expect("TCP option too long");
        }
        let data = &mut out[usize::min(2, len)..];
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation | TcpOption::SackPermitted => {}
            TcpOption::MaxSegmentSize(v) => data.copy_from_slice(&v.to_be_bytes()),
            TcpOption::WindowScale(v) => data[0] = *v,
            TcpOption::SackRange(blocks) => {
                for ((left, right), d) in blocks.iter().flatten().zip(data.chunks_exact_mut(8)) {
                    d[..4].copy_from_slice(&left.to_be_bytes());
                    d[4..].copy_from_slice(&right.to_be_bytes());
                }
            }
            TcpOption::Timestamp { tsval, tsecr } => {
                data[..4].copy_from_slice(&tsval.to_be_bytes());
                data[4..].copy_from_slice(&tsecr.to_be_bytes());
            }
            TcpOption::Unknown { data: d, .. } => data.copy_from_slice(d),
        }
        rest
    }
}

impl fmt::Display for TcpOption<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpOption::EndOfList => f.write_str("eol"),
            TcpOption::NoOperation => f.write_str("nop"),
            TcpOption::MaxSegmentSize(v) => write!(f, "mss {v}"),
            TcpOption::WindowScale(v) => write!(f, "wscale {v}"),
            TcpOption::SackPermitted => f.write_str("sackOK"),
            TcpOption::SackRange(r) => {
                write!(f, "sack {}", r.iter().flatten().count())?;
                for (l, r) in r.iter().flatten() {
                    write!(f, " {{{l}:{r}}}")?;
                }
                Ok(())
            }
            TcpOption::Timestamp { tsval, tsecr } => write!(f, "TS val {tsval} ecr {tsecr}"),
            TcpOption::Unknown { kind, data } => write!(f, "opt-{kind}:{}", data.len()),
        }
    }
}

/// The one control flag a [`Repr`] carries besides ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Control {
    /// None.
    #[default]
    None,
    /// PSH (only without SYN, FIN and RST).
    Psh,
    /// SYN.
    Syn,
    /// FIN.
    Fin,
    /// RST.
    Rst,
}

impl Control {
    /// Returns the sequence space the flag occupies (1 for SYN and FIN).
    pub const fn len(self) -> usize {
        match self {
            Control::Syn | Control::Fin => 1,
            _ => 0,
        }
    }

    /// Returns whether the flag occupies no sequence space.
    pub const fn is_empty(self) -> bool {
        self.len() == 0
    }

    fn flags(self) -> u8 {
        match self {
            Control::None => 0,
            Control::Psh => field::FLG_PSH,
            Control::Syn => field::FLG_SYN,
            Control::Fin => field::FLG_FIN,
            Control::Rst => field::FLG_RST,
        }
    }
}

/// The meaning of a TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// The control flag besides ACK.
    pub control: Control,
    /// Sequence number.
    pub seq_number: SeqNumber,
    /// Acknowledgment number; `Some` exactly when ACK is set.
    pub ack_number: Option<SeqNumber>,
    /// Window field (unscaled).
    pub window_len: u16,
    /// Window scale option; parse caps the shift at 14 (RFC 7323 §2.3).
    pub window_scale: Option<u8>,
    /// MSS option.
    pub max_seg_size: Option<u16>,
    /// SACK-permitted option.
    pub sack_permitted: bool,
    /// SACK blocks (left edge, right edge); only the leading `Some`s
    /// count, and no option is sent when the first is `None`. At most 3
    /// fit beside timestamps.
    pub sack_ranges: [Option<(u32, u32)>; MAX_SACK_BLOCKS],
    /// Timestamps option: (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
    /// ECE flag (RFC 3168).
    pub ece: bool,
    /// CWR flag (RFC 3168).
    pub cwr: bool,
    /// Payload length in bytes.
    pub payload_len: usize,
}

/// How the options are laid out.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// As Linux: each option aligned to 4 bytes with NOPs.
    Linux,
    /// Packed, then padded with EOL and zeros.
    Packed,
}

impl Repr {
    /// Reads a segment from `src` to `dst`. The payload is
    /// `packet.payload()`; its length becomes `payload_len`.
    ///
    /// # Errors
    /// Those of [`Packet::check_len`]; [`Error::Malformed`] for port 0, for
    /// more than one of SYN, FIN and RST, or for a malformed option;
    /// [`Error::BadChecksum`] if verification is on and fails.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        checksums: Checksums,
    ) -> Result<Repr> {
        packet.check_len()?;
        if packet.src_port() == 0 || packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        if checksums.verify() && !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        let control = match (packet.syn(), packet.fin(), packet.rst(), packet.psh()) {
            (false, false, false, false) => Control::None,
            (false, false, false, true) => Control::Psh,
            (true, false, false, _) => Control::Syn,
            (false, true, false, _) => Control::Fin,
            (false, false, true, _) => Control::Rst,
            _ => return Err(Error::Malformed),
        };
        let mut repr = Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            control,
            seq_number: packet.seq_number(),
            ack_number: packet.ack().then(|| packet.ack_number()),
            window_len: packet.window_len(),
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None; MAX_SACK_BLOCKS],
            timestamp: None,
            ece: packet.ece(),
            cwr: packet.cwr(),
            payload_len: packet.payload().len(),
        };
        let mut opts = packet.options();
        // Fast path for the layout of nearly every segment of a connection
        // with timestamps (Linux's NOP, NOP, TS); the loop below reads the
        // same bytes to the same result.
        if let [field::OPT_NOP, field::OPT_NOP, field::OPT_TS, 10, ts @ ..] = opts {
            if ts.len() == 8 {
                repr.timestamp = Some((be32(&ts[..4]), be32(&ts[4..])));
                return Ok(repr);
            }
        }
        while !opts.is_empty() {
            let (rest, opt) = TcpOption::parse(opts).map_err(|_| Error::Malformed)?;
            match opt {
                TcpOption::EndOfList => break,
                TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
                TcpOption::MaxSegmentSize(v) => repr.max_seg_size = Some(v),
                // RFC 7323 §2.3: a shift above 14 "MUST" be used as 14.
                TcpOption::WindowScale(v) => repr.window_scale = Some(v.min(14)),
                TcpOption::SackPermitted => repr.sack_permitted = true,
                TcpOption::SackRange(r) => repr.sack_ranges = r,
                TcpOption::Timestamp { tsval, tsecr } => repr.timestamp = Some((tsval, tsecr)),
            }
            opts = rest;
        }
        Ok(repr)
    }

    fn sack_blocks(&self) -> usize {
        self.sack_ranges.iter().take_while(|r| r.is_some()).count()
    }

    /// Returns the SACK option: the leading `Some` blocks.
    fn sack_option(&self) -> TcpOption<'static> {
        let mut blocks = [None; MAX_SACK_BLOCKS];
        let n = self.sack_blocks();
        blocks[..n].copy_from_slice(&self.sack_ranges[..n]);
        TcpOption::SackRange(blocks)
    }

    /// Returns the option bytes in a layout, before padding.
    fn options_len(&self, layout: Layout) -> usize {
        let linux = layout == Layout::Linux;
        let mut len = 0;
        if self.max_seg_size.is_some() {
            len += 4;
        }
        if self.window_scale.is_some() {
            len += if linux { 4 } else { 3 };
        }
        if self.timestamp.is_some() {
            // Linux puts SACK-permitted in the timestamps' two NOPs.
            len += if linux { 12 } else { 10 };
            if self.sack_permitted && !linux {
                len += 2;
            }
        } else if self.sack_permitted {
            len += if linux { 4 } else { 2 };
        }
        match self.sack_blocks() {
            0 => {}
            n => len += if linux { 4 } else { 2 } + 8 * n,
        }
        len
    }

    fn layout(&self) -> Layout {
        if self.options_len(Layout::Linux) <= MAX_OPTIONS_LEN {
            Layout::Linux
        } else {
            Layout::Packed
        }
    }

    /// Returns the header length: 20 bytes plus the options, padded to a
    /// multiple of 4. A valid `Repr` has at most 60.
    pub fn header_len(&self) -> usize {
        match self.common_options() {
            Some(Some(_)) => HEADER_LEN + 12,
            Some(None) => HEADER_LEN,
            None => HEADER_LEN + self.options_len(self.layout()).div_ceil(4) * 4,
        }
    }

    /// Returns `Some(timestamp)` when the options are those of almost
    /// every segment of an established connection: a timestamp alone
    /// (laid out NOP, NOP, TS as every layout does) or nothing; `None`
    /// when there are others (SYN options, SACK blocks).
    fn common_options(&self) -> Option<Option<(u32, u32)>> {
        match (
            self.max_seg_size,
            self.window_scale,
            self.sack_permitted,
            self.sack_ranges[0],
        ) {
            (None, None, false, None) => Some(self.timestamp),
            _ => None,
        }
    }

    /// Writes the header of a segment with [`Repr::common_options`] in one
    /// pass (the general `emit_fields` sets field by field) and returns
    /// true; returns false, writing nothing, for other segments or a
    /// buffer too short.
    fn emit_common(
        &self,
        buf: &mut [u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
        payload_sum: Checksum,
    ) -> bool {
        let Some(ts) = self.common_options() else {
            return false;
        };
        let len = if ts.is_some() {
            HEADER_LEN + 12
        } else {
            HEADER_LEN
        };
        let Some(buf) = buf.get_mut(..len) else {
            return false;
        };
        let mut h = [0u8; HEADER_LEN + 12];
        h[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        h[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        h[4..8].copy_from_slice(&self.seq_number.0.to_be_bytes());
        let ack = self.ack_number.unwrap_or_default();
        h[8..12].copy_from_slice(&ack.0.to_be_bytes());
        h[field::DATA_OFF] = ((len / 4) << 4) as u8;
        h[field::FLAGS] = self.flags();
        h[14..16].copy_from_slice(&self.window_len.to_be_bytes());
        if let Some((tsval, tsecr)) = ts {
            h[20..24].copy_from_slice(&[field::OPT_NOP, field::OPT_NOP, field::OPT_TS, 10]);
            h[24..28].copy_from_slice(&tsval.to_be_bytes());
            h[28..32].copy_from_slice(&tsecr.to_be_bytes());
        }
        // The bytes past `len` are zero and add nothing: the sum runs over
        // the fixed 32 bytes, unrolled, and both copies have a fixed size.
        let mut c = checksum::pseudo_header(src, dst, Protocol::Tcp, (len + payload_len) as u32);
        c.add_words(&h);
        c.append(payload_sum);
        h[16..18].copy_from_slice(&c.finish().to_be_bytes());
        if len == HEADER_LEN + 12 {
            buf.copy_from_slice(&h);
        } else {
            buf.copy_from_slice(&h[..HEADER_LEN]);
        }
        true
    }

    /// Returns the segment length in bytes (header and payload).
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Returns the sequence space the segment occupies: payload, plus one
    /// for SYN and one for FIN.
    pub fn segment_len(&self) -> usize {
        self.payload_len + self.control.len()
    }

    fn flags(&self) -> u8 {
        let mut flags = self.control.flags();
        if self.ack_number.is_some() {
            flags |= field::FLG_ACK;
        }
        if self.ece {
            flags |= field::FLG_ECE;
        }
        if self.cwr {
            flags |= field::FLG_CWR;
        }
        flags
    }

    /// Writes the options into `buf` (exactly the padded options region).
    fn emit_options(&self, buf: &mut [u8]) {
        use TcpOption as O;
        if let (Some((tsval, tsecr)), None, None, false, None) = (
            self.timestamp,
            self.max_seg_size,
            self.window_scale,
            self.sack_permitted,
            self.sack_ranges[0],
        ) {
            // Fast path: timestamps alone (NOP, NOP, TS), as the general
            // code below would lay them out.
            if buf.len() == 12 {
                buf[..4].copy_from_slice(&[field::OPT_NOP, field::OPT_NOP, field::OPT_TS, 10]);
                buf[4..8].copy_from_slice(&tsval.to_be_bytes());
                buf[8..].copy_from_slice(&tsecr.to_be_bytes());
                return;
            }
        }
        let linux = self.layout() == Layout::Linux;
        let mut at = 0;
        let mut put = |buf: &mut [u8], o: TcpOption| {
            o.emit(&mut buf[at..]);
            at += o.buffer_len();
        };
        if let Some(mss) = self.max_seg_size {
            put(buf, O::MaxSegmentSize(mss));
        }
        if let Some((tsval, tsecr)) = self.timestamp {
            if self.sack_permitted {
                put(buf, O::SackPermitted);
            } else if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, O::Timestamp { tsval, tsecr });
        } else if self.sack_permitted {
            if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, O::SackPermitted);
        }
        if let Some(ws) = self.window_scale {
            if linux {
                put(buf, O::NoOperation);
            }
            put(buf, O::WindowScale(ws));
        }
        if self.sack_blocks() > 0 {
            if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, self.sack_option());
        }
        // End of list, then zeros (RFC 9293 §3.1).
        buf[at..].fill(field::OPT_EOL);
    }

    /// Writes the fixed header and the options; the checksum is left zero.
    fn emit_fields<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let header_len = self.header_len();
        assert!(header_len <= MAX_HEADER_LEN, "TCP options do not fit");
        assert!(
            packet.buffer.as_ref().len() >= header_len,
            "buffer too short for the TCP header"
        );
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number.unwrap_or_default());
        packet.set_header_len(header_len as u8);
        packet.set_flags(self.flags());
        packet.set_window_len(self.window_len);
        packet.set_checksum(0);
        packet.set_urgent_at(0);
        self.emit_options(packet.options_mut());
    }

    /// Writes the header (fields, options, checksum) for a payload of
    /// `payload_len` bytes whose running sum is `payload_sum`; the buffer
    /// may hold only the header. `self.payload_len` is not read: the
    /// checksum is over `payload_len`.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`Repr::header_len`] or the
    /// options do not fit in 40 bytes (4 SACK blocks beside timestamps).
    pub fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        header: &mut Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
        payload_sum: Checksum,
    ) {
        if self.emit_common(header.buffer.as_mut(), src, dst, payload_len, payload_sum) {
            return;
        }
        self.emit_fields(header);
        header.fill_checksum_with(src, dst, payload_len, payload_sum);
    }

    /// Writes the whole segment into the first [`Repr::buffer_len`] bytes
    /// of the buffer (the segment is the whole buffer, so it should be that
    /// long): `emit_payload` fills the `payload_len` bytes of payload, then
    /// the checksum is written.
    ///
    /// # Panics
    /// Panics if the buffer is shorter than [`Repr::buffer_len`] or the
    /// options do not fit in 40 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        emit_payload: impl FnOnce(&mut [u8]),
    ) {
        assert!(
            packet.buffer.as_ref().len() >= self.buffer_len(),
            "buffer too short for the TCP segment"
        );
        self.emit_fields(packet);
        let payload = &mut packet.payload_mut()[..self.payload_len];
        emit_payload(payload);
        let mut sum = Checksum::new();
        sum.add(payload);
        packet.fill_checksum_with(src, dst, self.payload_len, sum);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TCP {} > {} ", self.src_port, self.dst_port)?;
        write_flags(f, self.flags())?;
        write!(f, " seq {}", self.seq_number)?;
        if let Some(ack) = self.ack_number {
            write!(f, " ack {ack}")?;
        }
        write!(f, " win {}", self.window_len)?;
        let mut opts = Vec::new();
        if let Some(v) = self.max_seg_size {
            opts.push(TcpOption::MaxSegmentSize(v));
        }
        if self.sack_permitted {
            opts.push(TcpOption::SackPermitted);
        }
        if let Some((tsval, tsecr)) = self.timestamp {
            opts.push(TcpOption::Timestamp { tsval, tsecr });
        }
        if let Some(v) = self.window_scale {
            opts.push(TcpOption::WindowScale(v));
        }
        if self.sack_blocks() > 0 {
            opts.push(self.sack_option());
        }
        for (i, o) in opts.iter().enumerate() {
            f.write_str(if i == 0 { " options [" } else { "," })?;
            write!(f, "{o}")?;
        }
        if !opts.is_empty() {
            f.write_str("]")?;
        }
        write!(f, ", length {}", self.payload_len)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// 10.0.0.1:54321 > 10.0.0.2:80 [S] seq 1066084881 win 64240 options
    /// [mss 1460,sackOK,TS val 169552957 ecr 0,nop,wscale 7], byte for byte
    /// as Linux lays out its SYN; checksum 0xc496 worked out independently
    /// (Python, word by word, pseudo-header included; and [`naive`]).
    static SYN_BYTES: [u8; 40] = [
        0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x11, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0xc4, 0x96, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x0a, 0x1b,
        0x2c, 0x3d, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    /// [P.] seq 1066084882 ack 2000000011 win 502 options [nop,nop,TS val
    /// 169552965 ecr 1584361601], "hello, elvis".
    static DATA_BYTES: [u8; 44] = [
        0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x12, 0x77, 0x35, 0x94, 0x0b, 0x80, 0x18, 0x01,
        0xf6, 0xd7, 0xb2, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x45, 0x5e, 0x6f,
        0x70, 0x81, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x2c, 0x20, 0x65, 0x6c, 0x76, 0x69, 0x73,
    ];

    /// [F.] seq 1066084894 ack 2000000011 win 502, same timestamps.
    static FIN_ACK_BYTES: [u8; 32] = [
        0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x1e, 0x77, 0x35, 0x94, 0x0b, 0x80, 0x11, 0x01,
        0xf6, 0x12, 0x07, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x45, 0x5e, 0x6f,
        0x70, 0x81,
    ];

    /// [R] seq 2000000011 win 0, no options.
    static RST_BYTES: [u8; 20] = [
        0xd4, 0x31, 0x00, 0x50, 0x77, 0x35, 0x94, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x50, 0x04, 0x00,
        0x00, 0xbc, 0x1b, 0x00, 0x00,
    ];

    /// The textbook checksum over an explicit pseudo-header: big-endian
    /// 16-bit words, end-around carry, complemented.
    fn naive(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&src.octets());
        bytes.extend_from_slice(&dst.octets());
        bytes.extend_from_slice(&[0, 6]);
        bytes.extend_from_slice(&(segment.len() as u16).to_be_bytes());
        bytes.extend_from_slice(segment);
        if bytes.len() % 2 == 1 {
            bytes.push(0);
        }
        let mut sum: u32 = 0;
        for w in bytes.chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn empty_repr() -> Repr {
        Repr {
            src_port: 54321,
            dst_port: 80,
            control: Control::None,
            seq_number: SeqNumber(0),
            ack_number: None,
            window_len: 0,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None; MAX_SACK_BLOCKS],
            timestamp: None,
            ece: false,
            cwr: false,
            payload_len: 0,
        }
    }

    fn syn_repr() -> Repr {
        Repr {
            control: Control::Syn,
            seq_number: SeqNumber(0x3f8b_2a11),
            window_len: 64240,
            window_scale: Some(7),
            max_seg_size: Some(1460),
            sack_permitted: true,
            timestamp: Some((0x0a1b_2c3d, 0)),
            ..empty_repr()
        }
    }

    fn data_repr() -> Repr {
        Repr {
            control: Control::Psh,
            seq_number: SeqNumber(0x3f8b_2a12),
            ack_number: Some(SeqNumber(0x7735_940b)),
            window_len: 502,
            timestamp: Some((0x0a1b_2c45, 0x5e6f_7081)),
            payload_len: 12,
            ..empty_repr()
        }
    }

    fn fin_ack_repr() -> Repr {
        Repr {
            control: Control::Fin,
            seq_number: SeqNumber(0x3f8b_2a1e),
            payload_len: 0,
            ..data_repr()
        }
    }

    fn rst_repr() -> Repr {
        Repr {
            control: Control::Rst,
            seq_number: SeqNumber(0x7735_940b),
            ..empty_repr()
        }
    }

    fn captures() -> [(&'static [u8], Repr); 4] {
        [
            (&SYN_BYTES, syn_repr()),
            (&DATA_BYTES, data_repr()),
            (&FIN_ACK_BYTES, fin_ack_repr()),
            (&RST_BYTES, rst_repr()),
        ]
    }

    fn emit_vec(r: &Repr, payload: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]), SRC, DST, |p| {
            p.copy_from_slice(payload)
        });
        buf
    }

    #[test]
    fn checksums_of_the_captures_match_the_naive_sum() {
        for (bytes, _) in captures() {
            let mut zeroed = bytes.to_vec();
            zeroed[16..18].fill(0);
            assert_eq!(naive(SRC, DST, &zeroed).to_be_bytes(), bytes[16..18]);
            assert!(Packet::new_unchecked(bytes).verify_checksum(SRC, DST));
        }
    }

    #[test]
    fn deconstruct_reads_every_field() {
        let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (54321, 80));
        assert_eq!(p.seq_number(), SeqNumber(1_066_084_881));
        assert_eq!(p.ack_number(), SeqNumber(0));
        assert_eq!(p.header_len(), 40);
        assert!(p.syn() && !p.ack() && !p.fin() && !p.rst() && !p.psh());
        assert!(!p.urg() && !p.ece() && !p.cwr());
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0xc496);
        assert_eq!(p.urgent_at(), 0);
        assert_eq!(p.options().len(), 20);
        assert_eq!(p.payload(), b"");
        assert_eq!(p.segment_len(), 1);

        let p = Packet::new_checked(&DATA_BYTES[..]).unwrap();
        assert!(p.psh() && p.ack() && !p.syn());
        assert_eq!(p.ack_number(), SeqNumber(2_000_000_011));
        assert_eq!(p.header_len(), 32);
        assert_eq!(p.payload(), b"hello, elvis");
        assert_eq!(p.segment_len(), 12);

        let p = Packet::new_checked(&FIN_ACK_BYTES[..]).unwrap();
        assert!(p.fin() && p.ack() && !p.psh());
        assert_eq!(p.segment_len(), 1);

        let p = Packet::new_checked(&RST_BYTES[..]).unwrap();
        assert!(p.rst() && !p.ack());
        assert_eq!(p.options(), b"");
    }

    #[test]
    fn options_parse_one_by_one() {
        let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
        let mut opts = p.options();
        let mut got = Vec::new();
        while !opts.is_empty() {
            let (rest, o) = TcpOption::parse(opts).unwrap();
            got.push(o);
            opts = rest;
        }
        assert_eq!(
            got,
            [
                TcpOption::MaxSegmentSize(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamp {
                    tsval: 0x0a1b_2c3d,
                    tsecr: 0
                },
                TcpOption::NoOperation,
                TcpOption::WindowScale(7),
            ]
        );
    }

    #[test]
    fn construct_writes_the_capture_bytes() {
        let mut buf = [0u8; 40];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(54321);
        p.set_dst_port(80);
        p.set_seq_number(SeqNumber(1_066_084_881));
        p.set_ack_number(SeqNumber(0));
        p.set_header_len(40);
        p.clear_flags();
        p.set_syn(true);
        p.set_window_len(64240);
        p.set_urgent_at(0);
        let rest = TcpOption::MaxSegmentSize(1460).emit(p.options_mut());
        let rest = TcpOption::SackPermitted.emit(rest);
        let rest = TcpOption::Timestamp {
            tsval: 0x0a1b_2c3d,
            tsecr: 0,
        }
        .emit(rest);
        let rest = TcpOption::NoOperation.emit(rest);
        let rest = TcpOption::WindowScale(7).emit(rest);
        assert!(rest.is_empty());
        p.fill_checksum(SRC, DST);
        assert_eq!(buf, SYN_BYTES);
    }

    #[test]
    fn parse_gives_the_reprs() {
        for (bytes, repr) in captures() {
            let p = Packet::new_checked(bytes).unwrap();
            assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(repr));
        }
    }

    #[test]
    fn emit_writes_the_capture_bytes() {
        for (bytes, repr) in captures() {
            let payload = &bytes[repr.header_len()..];
            assert_eq!(repr.buffer_len(), bytes.len());
            assert_eq!(emit_vec(&repr, payload), bytes);
        }
    }

    #[test]
    fn display_reads_like_tcpdump() {
        let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
        let s = "TCP 54321 > 80 [S] seq 1066084881 win 64240 options [mss 1460,sackOK,\
                 TS val 169552957 ecr 0,nop,wscale 7], length 0";
        assert_eq!(p.to_string(), s);
        assert_eq!(syn_repr().to_string(), s.replace("ecr 0,nop,", "ecr 0,"));
        let p = Packet::new_checked(&DATA_BYTES[..]).unwrap();
        assert_eq!(
            p.to_string(),
            "TCP 54321 > 80 [P.] seq 1066084882 ack 2000000011 win 502 options \
             [nop,nop,TS val 169552965 ecr 1584361601], length 12"
        );
        assert_eq!(
            rst_repr().to_string(),
            "TCP 54321 > 80 [R] seq 2000000011 win 0, length 0"
        );
        assert_eq!(
            Packet::new_unchecked(&SYN_BYTES[..10]).to_string(),
            "TCP (truncated packet)"
        );
    }

    #[test]
    fn emit_header_with_payload_in_pieces_matches_emit() {
        let r = data_repr();
        let mut sum = Checksum::new();
        sum.add(b"hel");
        sum.add(b"lo, ");
        sum.add(b"elvis");
        let mut head = [0u8; 32];
        r.emit_header(&mut Packet::new_unchecked(&mut head[..]), SRC, DST, 12, sum);
        assert_eq!(head, DATA_BYTES[..32]);
        assert!(verify_checksum_with(SRC, DST, &head, 12, sum));
        assert!(!verify_checksum_with(DST, DST, &head, 12, sum));
        assert!(!verify_checksum_with(SRC, DST, &head, 13, sum));
        // The header alone parses, with the checksum ignored.
        let p = Packet::new_checked(&head[..]).unwrap();
        let parsed = Repr::parse(&p, SRC, DST, Checksums::Ignore).unwrap();
        assert_eq!(
            Repr {
                payload_len: 12,
                ..parsed
            },
            r
        );
    }

    #[test]
    fn wrong_addresses_fail_the_checksum() {
        let p = Packet::new_checked(&DATA_BYTES[..]).unwrap();
        let other = Ipv4Addr::new(10, 0, 0, 3);
        assert_eq!(
            Repr::parse(&p, SRC, other, Checksums::Verify),
            Err(Error::BadChecksum)
        );
        assert_eq!(
            Repr::parse(&p, SRC, other, Checksums::Ignore),
            Ok(data_repr())
        );
    }

    #[test]
    fn data_offset_is_checked() {
        let mut buf = SYN_BYTES;
        buf[12] = 0x40;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::BadLength));
        buf[12] = 0xb0;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
        assert_eq!(
            Packet::new_checked(&buf[..19]).err(),
            Some(Error::Truncated)
        );
    }

    fn parse_ignoring(bytes: &[u8]) -> Result<Repr> {
        Repr::parse(&Packet::new_unchecked(bytes), SRC, DST, Checksums::Ignore)
    }

    #[test]
    fn bad_flags_and_ports_are_malformed() {
        for flags in [0x03, 0x05, 0x06, 0x07, 0x13] {
            let mut buf = RST_BYTES;
            buf[13] = flags;
            assert_eq!(parse_ignoring(&buf), Err(Error::Malformed), "{flags:#x}");
        }
        let mut buf = RST_BYTES;
        buf[0..2].fill(0);
        assert_eq!(parse_ignoring(&buf), Err(Error::Malformed));
        // PSH beside FIN is dropped; URG is ignored; reserved bits too.
        let mut buf = FIN_ACK_BYTES;
        buf[12] |= 0x0f;
        buf[13] |= 0x28;
        assert_eq!(parse_ignoring(&buf), Ok(fin_ack_repr()));
    }

    /// Puts `opts` (a multiple of 4 bytes) after a bare ACK header.
    fn with_options(opts: &[u8]) -> Vec<u8> {
        let mut buf = RST_BYTES.to_vec();
        buf[12] = ((20 + opts.len() as u8) / 4) << 4;
        buf[13] = 0x10;
        buf.extend_from_slice(opts);
        buf
    }

    #[test]
    fn options_are_robust_to_garbage() {
        let r = |opts: &[u8]| parse_ignoring(&with_options(opts));
        // Unknown kinds are skipped by their length.
        let ok = r(&[30, 6, 9, 9, 9, 9, 2, 4, 1, 0, 0, 0]).unwrap();
        assert_eq!(ok.max_seg_size, Some(256));
        // Anything after EOL is padding.
        let ok = r(&[0, 2, 4, 5, 3, 9, 9, 9]).unwrap();
        assert_eq!(ok.max_seg_size, None);
        // A window scale above 14 counts as 14.
        assert_eq!(r(&[3, 3, 200, 0]).unwrap().window_scale, Some(14));
        assert!(r(&[2, 4, 5, 1]).is_ok());
        for bad in [
            &[1, 1, 1, 2],  // kind without its length
            &[1, 1, 30, 1], // length below 2
            &[1, 1, 30, 0], // length 0 (would loop)
            &[1, 1, 30, 3], // longer than the region
            &[2, 3, 5, 1],  // MSS of the wrong length
            &[1, 4, 3, 0],  // SACK-permitted of the wrong length
            &[5, 2, 0, 0],  // SACK without a block
            &[3, 2, 0, 0],  // window scale of the wrong length
        ] {
            assert_eq!(r(bad), Err(Error::Malformed), "{bad:?}");
        }
        let mut ts_short = vec![8, 8];
        ts_short.extend_from_slice(&[0; 6]);
        assert_eq!(r(&ts_short), Err(Error::Malformed));
    }

    #[test]
    fn sack_blocks_round_trip_beside_timestamps() {
        let r = Repr {
            sack_ranges: [Some((1, 2)), Some((3, 4)), Some((5, 6)), None],
            ..data_repr()
        };
        assert_eq!(r.header_len(), 60);
        let buf = emit_vec(&r, b"hello, elvis");
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(&p.options()[12..16], [1, 1, 5, 26]);
        assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(r));
        // Four blocks alone fit too.
        let r = Repr {
            sack_ranges: [Some((1, 2)), Some((3, 4)), Some((5, 6)), Some((7, 8))],
            ..data_repr()
        };
        let r = Repr {
            timestamp: None,
            ..r
        };
        let buf = emit_vec(&r, b"hello, elvis");
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(r));
    }

    #[test]
    fn packed_layout_when_linux_does_not_fit() {
        // MSS + timestamps + 3 SACK blocks: 44 bytes the Linux way, 40
        // packed.
        let r = Repr {
            max_seg_size: Some(1460),
            sack_ranges: [Some((1, 2)), Some((3, 4)), Some((5, 6)), None],
            ..data_repr()
        };
        assert_eq!(r.header_len(), 60);
        let buf = emit_vec(&r, b"hello, elvis");
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(&p.options()[..6], [2, 4, 5, 0xb4, 8, 10]);
        assert_eq!(Repr::parse(&p, SRC, DST, Checksums::Verify), Ok(r));
        // Window scale too: 43 bytes packed, so it does not fit.
        let r = Repr {
            window_scale: Some(3),
            ..r
        };
        assert!(r.options_len(Layout::Packed) > MAX_OPTIONS_LEN);
    }

    #[test]
    fn seq_numbers_compare_across_the_wrap() {
        let s = SeqNumber;
        assert!(s(u32::MAX - 1) < s(3));
        assert!(s(3) > s(u32::MAX - 1));
        assert!(s(u32::MAX) <= s(u32::MAX));
        assert_eq!(s(3) - s(u32::MAX - 1), 5);
        assert_eq!(s(u32::MAX - 1) - s(3), -5);
        assert_eq!(s(u32::MAX - 1) + 5, s(3));
        assert_eq!(s(3) - 5, s(u32::MAX - 1));
        let mut x = s(u32::MAX);
        x += 1;
        assert_eq!(x, s(0));
        x -= 2;
        assert_eq!(x, s(u32::MAX - 1));
        assert_eq!(s(u32::MAX).max(s(1)), s(1));
        assert_eq!(s(u32::MAX).min(s(1)), s(u32::MAX));
        // Exactly half the space apart: incomparable.
        let (a, b) = (s(0), s(1 << 31));
        assert_eq!(a.partial_cmp(&b), None);
        assert_eq!([a < b, a > b, a <= b, a >= b, b < a], [false; 5]);
        assert_eq!((a.max(b), b.max(a)), (a, b));
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        for (bytes, _) in captures() {
            for bit in 0..bytes.len() * 8 {
                let mut buf = bytes.to_vec();
                buf[bit / 8] ^= 1 << (bit % 8);
                let p = Packet::new_unchecked(&buf[..]);
                assert!(
                    Repr::parse(&p, SRC, DST, Checksums::Verify).is_err(),
                    "bit {bit}"
                );
            }
        }
    }

    fn arb_seq() -> impl Strategy<Value = SeqNumber> {
        any::<u32>().prop_map(SeqNumber)
    }

    /// Any `Repr` whose options fit: at most 3 SACK blocks beside
    /// timestamps, and the Linux or packed layout within 40 bytes.
    fn arb_repr() -> impl Strategy<Value = Repr> {
        let control = prop_oneof![
            Just(Control::None),
            Just(Control::Psh),
            Just(Control::Syn),
            Just(Control::Fin),
            Just(Control::Rst),
        ];
        (
            (1..=u16::MAX, 1..=u16::MAX, control, arb_seq()),
            (proptest::option::of(arb_seq()), any::<u16>()),
            (
                proptest::option::of(0u8..=14),
                proptest::option::of(any::<u16>()),
                any::<bool>(),
                proptest::collection::vec(any::<(u32, u32)>(), 0..=4),
                proptest::option::of(any::<(u32, u32)>()),
            ),
            (any::<bool>(), any::<bool>(), 0usize..64),
        )
            .prop_map(|(a, b, o, c)| {
                let mut sack_ranges = [None; MAX_SACK_BLOCKS];
                for (s, r) in sack_ranges.iter_mut().zip(o.3) {
                    *s = Some(r);
                }
                Repr {
                    src_port: a.0,
                    dst_port: a.1,
                    control: a.2,
                    seq_number: a.3,
                    ack_number: b.0,
                    window_len: b.1,
                    window_scale: o.0,
                    max_seg_size: o.1,
                    sack_permitted: o.2,
                    sack_ranges,
                    timestamp: o.4,
                    ece: c.0,
                    cwr: c.1,
                    payload_len: c.2,
                }
            })
            .prop_filter("options fit", |r| {
                r.options_len(Layout::Packed) <= MAX_OPTIONS_LEN
            })
    }

    proptest! {
        #[test]
        fn parse_inverts_emit(
            r in arb_repr(),
            payload in proptest::collection::vec(any::<u8>(), 64),
            (s, d) in any::<(u32, u32)>(),
        ) {
            let (s, d) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let payload = &payload[..r.payload_len];
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut buf[..]), s, d, |p| p.copy_from_slice(payload));
            prop_assert!(r.header_len() <= MAX_HEADER_LEN);
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Repr::parse(&p, s, d, Checksums::Verify), Ok(r));
            prop_assert_eq!(p.payload(), payload);
            prop_assert_eq!(p.segment_len(), r.segment_len());
            let _ = (p.to_string(), r.to_string());
            // The header alone, with the payload as a sum, agrees.
            let mut sum = Checksum::new();
            sum.add(payload);
            let mut head = vec![0u8; r.header_len()];
            r.emit_header(&mut Packet::new_unchecked(&mut head[..]), s, d, payload.len(), sum);
            prop_assert_eq!(&head[..], &buf[..r.header_len()]);
            prop_assert!(verify_checksum_with(s, d, &head, payload.len(), sum));
        }

        #[test]
        fn the_one_pass_header_of_a_common_segment_matches_the_general_emit(
            r in arb_repr().prop_map(|mut r| {
                (r.max_seg_size, r.window_scale, r.sack_permitted) = (None, None, false);
                r.sack_ranges = [None; MAX_SACK_BLOCKS];
                r
            }),
            payload in proptest::collection::vec(any::<u8>(), 64),
            (s, d) in any::<(u32, u32)>(),
        ) {
            let (s, d) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let payload = &payload[..r.payload_len];
            let general = HEADER_LEN + r.options_len(r.layout()).div_ceil(4) * 4;
            prop_assert_eq!(r.header_len(), general);
            let mut sum = Checksum::new();
            sum.add(payload);
            // The general path: field by field, then the checksum.
            let mut slow = vec![0xaau8; general];
            let mut p = Packet::new_unchecked(&mut slow[..]);
            r.emit_fields(&mut p);
            p.fill_checksum_with(s, d, payload.len(), sum);
            let mut fast = vec![0x55u8; general];
            r.emit_header(&mut Packet::new_unchecked(&mut fast[..]), s, d, payload.len(), sum);
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Repr::parse(&p, SRC, DST, Checksums::Verify);
            let _ = p.to_string();
            if let Ok(r) = Repr::parse(&p, SRC, DST, Checksums::Ignore) {
                // Whatever parses can be emitted again.
                prop_assert!(r.header_len() <= MAX_HEADER_LEN);
                let _ = r.to_string();
            }
        }

        #[test]
        fn options_region_of_garbage_never_panics(
            opts in proptest::collection::vec(any::<u8>(), 0..=10)
                .prop_map(|v| v.into_iter().flat_map(|b| [b, b % 12, b.wrapping_mul(7), 2]).collect::<Vec<_>>()),
        ) {
            let buf = with_options(&opts);
            if let Ok(r) = parse_ignoring(&buf) {
                let again = emit_vec(&r, &[]);
                prop_assert_eq!(parse_ignoring(&again), Ok(r));
            }
            let _ = Packet::new_unchecked(&buf[..]).to_string();
        }

        #[test]
        fn any_flipped_bit_is_caught(r in arb_repr(), bit in any::<proptest::sample::Index>()) {
            let payload = vec![0x5a; r.payload_len];
            let mut buf = emit_vec(&r, &payload);
            let bit = bit.index(buf.len() * 8);
            buf[bit / 8] ^= 1 << (bit % 8);
            let p = Packet::new_unchecked(&buf[..]);
            prop_assert!(Repr::parse(&p, SRC, DST, Checksums::Verify).is_err());
        }

        #[test]
        fn seq_order_agrees_with_the_signed_distance(a in any::<u32>(), d in 1u32..(1 << 31)) {
            let (a, b) = (SeqNumber(a), SeqNumber(a.wrapping_add(d)));
            prop_assert_eq!([a < b, b > a, a <= b, b >= a], [true; 4]);
            prop_assert_eq!([a == b, a > b, b < a], [false; 3]);
            prop_assert_eq!(b - a, d as i32);
            prop_assert_eq!(a + d as usize, b);
            prop_assert_eq!(b - d as usize, a);
            prop_assert_eq!((a.max(b), a.min(b)), (b, a));
        }
    }
}
