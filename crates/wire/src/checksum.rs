//! The Internet checksum (RFC 1071), computed incrementally.
//!
//! A [`Checksum`] accumulates a message given in pieces of any length, odd or
//! even, in order. Runs of zero bytes that have no memory behind them (the
//! simulator's virtual payload) are added with [`Checksum::add_zeros`] in
//! constant time. Two running sums over consecutive parts of a message can
//! be joined with [`Checksum::append`], so a payload's checksum can be
//! computed once and reused in several headers.
//!
//! The trick for odd pieces is RFC 1071 §2(B): the ones'-complement sum is
//! byte-order independent, so a piece that starts at an odd offset is summed
//! as if aligned and its folded sum byte-swapped.
//!
//! # Gaps
//! - No incremental update of an existing checksum (RFC 1624).

use crate::ipv4::Protocol;
use std::net::Ipv4Addr;

/// A running Internet checksum.
///
/// ```
/// use elvis_wire::Checksum;
/// let mut whole = Checksum::new();
/// whole.add(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
/// let mut pieces = Checksum::new();
/// pieces.add(&[0x00, 0x01, 0xf2]);
/// pieces.add(&[0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
/// assert_eq!(whole.finish(), pieces.finish());
/// assert_eq!(whole.sum(), 0xddf2); // RFC 1071 §3's example
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checksum {
    /// Sum of folded 16-bit partial sums; folded only at the end.
    sum: u64,
    /// Whether an odd number of bytes has been added, so that the next byte
    /// is the low byte of a 16-bit word.
    odd: bool,
}

impl Checksum {
    /// Returns an empty running sum.
    pub const fn new() -> Self {
        Checksum { sum: 0, odd: false }
    }

    /// Adds the next `bytes` of the message.
    pub fn add(&mut self, bytes: &[u8]) {
        let mut s = data(bytes);
        if self.odd {
            s = s.swap_bytes();
        }
        self.sum += u64::from(s);
        self.odd ^= bytes.len() % 2 == 1;
    }

    /// Adds `N` bytes (a multiple of 4: a fixed-size header) as
    /// big-endian 32-bit words, unrolled; the same as [`Checksum::add`].
    #[inline]
    pub fn add_words<const N: usize>(&mut self, bytes: &[u8; N]) {
        let mut s = words(bytes);
        if self.odd {
            s = s.swap_bytes();
        }
        self.sum += u64::from(s);
    }

    /// Adds `n` zero bytes without touching memory. Zeros add nothing to the
    /// sum; only the alignment of what follows changes.
    pub fn add_zeros(&mut self, n: usize) {
        self.odd ^= n % 2 == 1;
    }

    /// Adds a 16-bit value in network byte order.
    pub fn add_u16(&mut self, v: u16) {
        self.add(&v.to_be_bytes());
    }

    /// Adds a 32-bit value in network byte order.
    pub fn add_u32(&mut self, v: u32) {
        self.add(&v.to_be_bytes());
    }

    /// Adds the running sum of the part of the message that follows.
    pub fn append(&mut self, next: Checksum) {
        let mut s = fold(next.sum);
        if self.odd {
            s = s.swap_bytes();
        }
        self.sum += u64::from(s);
        self.odd ^= next.odd;
    }

    /// Returns the folded ones'-complement sum, not complemented.
    pub fn sum(self) -> u16 {
        fold(self.sum)
    }

    /// Returns the checksum as written into a header: the ones' complement of
    /// the folded sum. Over a message that includes a correct checksum field
    /// this returns 0.
    pub fn finish(self) -> u16 {
        !self.sum()
    }
}

/// Folds a wide sum to 16 bits with end-around carry.
#[inline]
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Returns the folded ones'-complement sum of `bytes` (not complemented),
/// as if they started at an even offset; an odd last byte is the high byte
/// of a word padded with zero (RFC 1071 §4.1).
pub fn data(bytes: &[u8]) -> u16 {
    if let Ok(tcp) = <&[u8; 32]>::try_from(bytes) {
        return words(tcp); // a TCP header with timestamps
    }
    if bytes.len() < 64 {
        return data_be(bytes); // headers: not worth the setup below
    }
    // The bulk, 32 bytes a step, as little-endian 64-bit words added into
    // a 128-bit sum (an add and an add-with-carry per word; it overflows
    // only after 2^64 words): the ones'-complement sum does not depend on
    // byte order (RFC 1071 §2(B)), so swapping the folded result gives
    // the big-endian sum.
    let mut chunks = bytes.chunks_exact(32);
    let mut acc = 0u128;
    for c in &mut chunks {
        for w in c.chunks_exact(8) {
            let word = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            acc += u128::from(word);
        }
    }
    // 2^64 ≡ 1 (mod 2^16 - 1): the high half adds like a carry.
    let (sum, carry) = (acc as u64).overflowing_add((acc >> 64) as u64);
    let bulk = fold(u64::from(fold(sum)) + u64::from(carry)).swap_bytes();
    fold(u64::from(bulk) + u64::from(data_be(chunks.remainder())))
}

/// [`data`] of `N` bytes (a multiple of 4), as big-endian 32-bit words,
/// unrolled.
#[inline]
fn words<const N: usize>(bytes: &[u8; N]) -> u16 {
    const { assert!(N.is_multiple_of(4), "whole 32-bit words") };
    let mut acc = 0u64;
    for w in bytes.chunks_exact(4) {
        acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    // 2^16 ≡ 1 (mod 2^16 − 1): a 32-bit word adds as its two halves.
    fold(acc)
}

/// [`data`] of a 20-byte IPv4 header without options: five big-endian
/// 32-bit words, added without a loop. Over a header whose checksum field
/// is right this returns 0xffff (RFC 1071 §1).
#[inline]
pub fn header(h: &[u8; 20]) -> u16 {
    let word = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    fold(word(0) + word(4) + word(8) + word(12) + word(16))
}

/// [`data`] for short slices: big-endian words, two 32-bit words a step.
fn data_be(bytes: &[u8]) -> u16 {
    // Each step adds two 32-bit words into a u64; 2^31 steps (16 GiB) of the
    // largest words fit, far beyond any packet.
    let mut acc: u64 = 0;
    let mut chunks = bytes.chunks_exact(16);
    for c in &mut chunks {
        let a = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let b = u64::from_be_bytes([c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15]]);
        acc += (a >> 32) + (a & 0xffff_ffff) + (b >> 32) + (b & 0xffff_ffff);
    }
    let mut words = chunks.remainder().chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    fold(acc)
}

/// Returns the running sum of the IPv4 pseudo-header (RFC 768, RFC 793)
/// for a transport message of `length` bytes.
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: Protocol, length: u32) -> Checksum {
    // Twelve bytes at an even offset, as three 32-bit big-endian words and
    // the protocol: a 32-bit word `hi·2^16 + lo` is congruent to `hi + lo`
    // modulo 2^16 − 1, so adding the words whole and folding at the end is
    // the ones'-complement sum of their 16-bit halves (RFC 1071 §2(C)).
    let sum = u64::from(u32::from(src))
        + u64::from(u32::from(dst))
        + u64::from(u8::from(protocol))
        + u64::from(length);
    Checksum { sum, odd: false }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// The textbook definition: big-endian 16-bit words, end-around carry.
    fn naive(bytes: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, b) in bytes.iter().enumerate() {
            sum += if i % 2 == 0 {
                u32::from(*b) << 8
            } else {
                u32::from(*b)
            };
            if sum > 0xffff {
                sum = (sum & 0xffff) + 1;
            }
        }
        sum as u16
    }

    #[test]
    fn header_sums_a_known_good_header_to_all_ones() {
        // The classic worked example (192.168.0.1 -> 192.168.0.199, UDP,
        // checksum 0xb861): summed with its checksum it gives 0xffff.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(header(&h), 0xffff);
        assert_eq!(naive(&h), 0xffff);
    }

    proptest! {
        #[test]
        fn header_agrees_with_the_textbook_sum(h in proptest::array::uniform20(any::<u8>())) {
            prop_assert_eq!(header(&h), naive(&h));
        }

        #[test]
        fn data_of_a_32_byte_header_agrees_with_the_textbook_sum(
            h in proptest::array::uniform32(any::<u8>()),
        ) {
            prop_assert_eq!(data(&h), naive(&h));
        }

        #[test]
        fn add_words_agrees_with_add_after_any_prefix(
            prefix in proptest::collection::vec(any::<u8>(), 0..7),
            h in proptest::array::uniform32(any::<u8>()),
        ) {
            let (mut words, mut bytes) = (Checksum::new(), Checksum::new());
            words.add(&prefix);
            bytes.add(&prefix);
            words.add_words(&h);
            bytes.add(&h);
            prop_assert_eq!(words.finish(), bytes.finish());
            let mut whole = prefix.clone();
            whole.extend_from_slice(&h);
            prop_assert_eq!(words.sum(), naive(&whole));
        }
    }

    #[test]
    fn rfc1071_example_sums_to_ddf2() {
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(data(&bytes), 0xddf2);
        let mut c = Checksum::new();
        c.add(&bytes);
        assert_eq!(c.finish(), !0xddf2);
    }

    #[test]
    fn odd_length_pads_the_last_byte_on_the_right() {
        assert_eq!(data(&[0x12]), 0x1200);
        assert_eq!(data(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn all_ones_never_folds_to_zero() {
        assert_eq!(data(&[0xff; 1500]), 0xffff);
        assert_eq!(data(&[]), 0);
    }

    #[test]
    fn zeros_after_an_odd_piece_shift_what_follows() {
        let mut c = Checksum::new();
        c.add(&[1]);
        c.add_zeros(3);
        c.add(&[2, 3]);
        assert_eq!(c.sum(), naive(&[1, 0, 0, 0, 2, 3]));
    }

    #[test]
    fn pseudo_header_matches_its_bytes() {
        let (s, d) = (Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(10, 1, 2, 3));
        let bytes = [192, 168, 0, 1, 10, 1, 2, 3, 0, 17, 0, 0, 0x01, 0x02];
        assert_eq!(
            pseudo_header(s, d, Protocol::Udp, 0x102).sum(),
            naive(&bytes)
        );
    }

    /// A message as pieces: `Some(bytes)` or `None(n)` zeros.
    fn pieces() -> impl Strategy<Value = Vec<std::result::Result<Vec<u8>, usize>>> {
        let piece = prop_oneof![
            3 => proptest::collection::vec(any::<u8>(), 0..70).prop_map(Ok),
            1 => (0usize..40).prop_map(Err),
        ];
        proptest::collection::vec(piece, 0..8)
    }

    proptest! {
        #[test]
        fn pseudo_header_matches_the_naive_sum_of_its_bytes(
            s in any::<u32>(), d in any::<u32>(), p in any::<u8>(), len in any::<u32>(),
        ) {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&s.to_be_bytes());
            bytes.extend_from_slice(&d.to_be_bytes());
            bytes.extend_from_slice(&[0, p]);
            bytes.extend_from_slice(&len.to_be_bytes());
            let c = pseudo_header(Ipv4Addr::from(s), Ipv4Addr::from(d), Protocol::from(p), len);
            prop_assert_eq!(c.sum(), naive(&bytes));
        }

        #[test]
        fn data_matches_the_naive_sum(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            prop_assert_eq!(data(&bytes), naive(&bytes));
        }

        #[test]
        fn data_of_mostly_high_bytes_matches_the_naive_sum(
            bytes in proptest::collection::vec(0xf0u8..=0xff, 0..2000),
        ) {
            // Many 64-bit carries.
            prop_assert_eq!(data(&bytes), naive(&bytes));
        }

        #[test]
        fn pieces_sum_like_the_whole(ps in pieces()) {
            let mut whole = Vec::new();
            let mut c = Checksum::new();
            for p in &ps {
                match p {
                    Ok(b) => { whole.extend_from_slice(b); c.add(b); }
                    Err(n) => { whole.resize(whole.len() + n, 0); c.add_zeros(*n); }
                }
            }
            prop_assert_eq!(c.sum(), naive(&whole));
        }

        #[test]
        fn appended_sums_equal_the_sum_of_the_concatenation(
            a in proptest::collection::vec(any::<u8>(), 0..50),
            b in proptest::collection::vec(any::<u8>(), 0..50),
        ) {
            let (mut ca, mut cb) = (Checksum::new(), Checksum::new());
            ca.add(&a);
            cb.add(&b);
            ca.append(cb);
            let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(ca.sum(), naive(&whole));
        }
    }
}
