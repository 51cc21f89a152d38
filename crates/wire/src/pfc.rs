//! Priority-based flow control frames (IEEE 802.1Qbb, MAC Control).
//!
//! A PFC frame is a MAC Control frame (IEEE 802.3 Annex 31B, EtherType
//! 0x8808) with opcode 0x0101, sent to the reserved multicast address
//! 01-80-C2-00-00-01. After the Ethernet header come the opcode, a
//! two-byte priority-enable vector whose low byte has one bit per
//! priority (bit *i* = priority *i*; the high byte is reserved, zero) and
//! eight two-byte pause times, priority 0 first, each in quanta of 512
//! bit times at the link's speed. A time of 0 for an enabled priority
//! resumes it at once (XON). The frame is padded to the Ethernet minimum
//! of 60 bytes (64 with the FCS, which is not modelled):
//!
//! ```text
//!  0      6      12     14     16     18                       34      60
//! +------+------+------+------+------+-------------------------+-------+
//! | dst  | src  |0x8808|0x0101| cev  | time[0] .. time[7]      |  pad  |
//! +------+------+------+------+------+-------------------------+-------+
//! ```
//!
//! The offsets are the whole frame's (Ethernet header included), as
//! Wireshark's `pfc` dissector reads them (`pfc.ena`, `pfc.quanta`).

use crate::{Error, Result};

/// The MAC Control EtherType (IEEE 802.3 §31.4.1.3).
pub const ETHERTYPE: u16 = 0x8808;
/// The PFC opcode (IEEE 802.1Qbb §36.1.3.2; PAUSE is 0x0001).
pub const OPCODE: u16 = 0x0101;
/// The destination of every MAC Control frame.
pub const DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// A PFC frame's length without FCS: the Ethernet minimum.
pub const FRAME_LEN: usize = 60;
/// Bit times per pause quantum.
pub const QUANTUM_BITS: u64 = 512;

mod field {
    pub type Field = std::ops::Range<usize>;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const OPCODE: Field = 14..16;
    pub const ENABLE: Field = 16..18;
    pub const TIMES: usize = 18;
    pub const END: usize = 34;
}

/// A read-only or writable view of a PFC frame (Ethernet header first).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps `buffer` after [`Packet::check_len`].
    ///
    /// # Errors
    /// [`Error::Truncated`] when shorter than the fields.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the fields fit (after which no accessor panics).
    ///
    /// # Errors
    /// [`Error::Truncated`].
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < field::END {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    fn u16_at(&self, at: usize) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    /// Returns the destination address.
    pub fn dst(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        a
    }

    /// Returns the source address.
    pub fn src(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        a
    }

    /// Returns the EtherType.
    pub fn ethertype(&self) -> u16 {
        self.u16_at(field::ETHERTYPE.start)
    }

    /// Returns the MAC Control opcode.
    pub fn opcode(&self) -> u16 {
        self.u16_at(field::OPCODE.start)
    }

    /// Returns the priority-enable vector (both bytes).
    pub fn enable(&self) -> u16 {
        self.u16_at(field::ENABLE.start)
    }

    /// Returns priority `i`'s pause time, quanta (`i` < 8).
    pub fn time(&self, i: usize) -> u16 {
        self.u16_at(field::TIMES + 2 * (i & 7))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16(&mut self, at: usize, v: u16) {
        self.buffer.as_mut()[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
}

/// What a PFC frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// The sender's MAC address.
    pub src: [u8; 6],
    /// Bit `i`: priority `i`'s time is meaningful.
    pub enable: u8,
    /// Pause time per priority, quanta of 512 bit times (0 = resume).
    pub quanta: [u16; 8],
}

impl Repr {
    /// Parses a PFC frame.
    ///
    /// # Errors
    /// [`Error::Truncated`]; [`Error::Unsupported`] for another EtherType
    /// or opcode (a plain 802.3x PAUSE); [`Error::Malformed`] when the
    /// reserved byte of the enable vector is not zero.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.ethertype() != ETHERTYPE || p.opcode() != OPCODE {
            return Err(Error::Unsupported);
        }
        let enable = p.enable();
        if enable >> 8 != 0 {
            return Err(Error::Malformed);
        }
        let mut quanta = [0; 8];
        for (i, q) in quanta.iter_mut().enumerate() {
            *q = p.time(i);
        }
        Ok(Repr {
            src: p.src(),
            enable: enable as u8,
            quanta,
        })
    }

    /// Length of the emitted frame.
    pub fn buffer_len(&self) -> usize {
        FRAME_LEN
    }

    /// Writes the whole frame (addresses, header, times, zero padding).
    ///
    /// # Panics
    /// `p`'s buffer is shorter than [`FRAME_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..FRAME_LEN];
        b.fill(0);
        b[field::DST].copy_from_slice(&DST);
        b[field::SRC].copy_from_slice(&self.src);
        p.set_u16(field::ETHERTYPE.start, ETHERTYPE);
        p.set_u16(field::OPCODE.start, OPCODE);
        p.set_u16(field::ENABLE.start, u16::from(self.enable));
        for (i, q) in self.quanta.iter().enumerate() {
            p.set_u16(field::TIMES + 2 * i, *q);
        }
    }

    /// Returns the frame as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; FRAME_LEN];
        self.emit(&mut Packet::new_unchecked(&mut v[..]));
        v
    }
}

/// Returns `quanta` pause quanta as nanoseconds on a link of `bps`
/// (rounded up; 0 on a link without a rate).
pub fn quanta_ns(quanta: u16, bps: u64) -> u64 {
    if bps == 0 {
        return 0;
    }
    (u64::from(quanta) * QUANTUM_BITS * 1_000_000_000).div_ceil(bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PFC frame pausing priority 3 for 0xffff quanta and resuming
    /// priority 5, laid out byte by byte from IEEE 802.1Qbb Figure 36-2.
    const BYTES: [u8; 60] = {
        let mut b = [0u8; 60];
        let head = [
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst
            0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
            0x88, 0x08, // MAC Control
            0x01, 0x01, // opcode: PFC
            0x00, 0x28, // enable: priorities 3 and 5
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // times 0, 1, 2
            0xff, 0xff, // time 3
            0x00, 0x00, // time 4
            0x00, 0x00, // time 5: XON
            0x00, 0x00, 0x00, 0x00, // times 6, 7
        ];
        let mut i = 0;
        while i < head.len() {
            b[i] = head[i];
            i += 1;
        }
        b
    };

    fn repr() -> Repr {
        let mut quanta = [0; 8];
        quanta[3] = 0xffff;
        Repr {
            src: [2, 0, 0, 0, 0, 1],
            enable: 0b0010_1000,
            quanta,
        }
    }

    #[test]
    fn emit_lays_out_the_8021qbb_fields() {
        assert_eq!(repr().to_bytes(), BYTES);
    }

    #[test]
    fn parse_reads_the_8021qbb_fields() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.dst(), DST);
        assert_eq!(p.ethertype(), 0x8808);
        assert_eq!(p.opcode(), 0x0101);
        assert_eq!(Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn parse_refuses_short_frames_a_plain_pause_and_a_reserved_bit() {
        let short = Packet::new_unchecked(&BYTES[..33]);
        assert_eq!(Repr::parse(&short), Err(Error::Truncated));
        let mut pause = BYTES;
        pause[14] = 0x00; // opcode 0x0001: 802.3x PAUSE
        let p = Packet::new_unchecked(&pause[..]);
        assert_eq!(Repr::parse(&p), Err(Error::Unsupported));
        let mut reserved = BYTES;
        reserved[16] = 1;
        let p = Packet::new_unchecked(&reserved[..]);
        assert_eq!(Repr::parse(&p), Err(Error::Malformed));
    }

    #[test]
    fn a_quantum_is_512_bit_times() {
        // 512 bits at 10 Gbit/s: 51.2 ns; 0xffff quanta: 3.355 ms.
        assert_eq!(quanta_ns(1, 10_000_000_000), 52);
        assert_eq!(quanta_ns(0xffff, 10_000_000_000), 3_355_392);
        assert_eq!(quanta_ns(10, 1_000_000_000), 5_120);
    }

    proptest::proptest! {
        #[test]
        fn parse_emit_round_trips(src: [u8; 6], enable: u8, quanta: [u16; 8]) {
            let r = Repr { src, enable, quanta };
            let b = r.to_bytes();
            proptest::prop_assert_eq!(Repr::parse(&Packet::new_unchecked(&b[..])), Ok(r));
        }
    }
}
