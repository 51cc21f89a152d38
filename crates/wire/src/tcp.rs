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

mod options;

pub use options::TcpOption;

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
mod tests;
