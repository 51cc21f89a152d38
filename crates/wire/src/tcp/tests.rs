//! Unit tests of the TCP segment format: byte vectors of Linux segments
//! (deconstruct, construct, parse, emit, display), options and their
//! layouts, malformed input, sequence number order, and property tests of
//! the round trip and of the checksum.

use super::options::Layout;
use super::*;
use proptest::prelude::*;

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// 10.0.0.1:54321 > 10.0.0.2:80 [S] seq 1066084881 win 64240 options
/// [mss 1460,sackOK,TS val 169552957 ecr 0,nop,wscale 7], byte for byte
/// as Linux lays out its SYN; checksum 0xc496 worked out independently
/// (Python, word by word, pseudo-header included; and [`naive`]).
static SYN_BYTES: [u8; 40] = [
    0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x11, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0,
    0xc4, 0x96, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x3d,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
];

/// [P.] seq 1066084882 ack 2000000011 win 502 options [nop,nop,TS val
/// 169552965 ecr 1584361601], "hello, elvis".
static DATA_BYTES: [u8; 44] = [
    0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x12, 0x77, 0x35, 0x94, 0x0b, 0x80, 0x18, 0x01, 0xf6,
    0xd7, 0xb2, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x45, 0x5e, 0x6f, 0x70, 0x81,
    0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x2c, 0x20, 0x65, 0x6c, 0x76, 0x69, 0x73,
];

/// [F.] seq 1066084894 ack 2000000011 win 502, same timestamps.
static FIN_ACK_BYTES: [u8; 32] = [
    0xd4, 0x31, 0x00, 0x50, 0x3f, 0x8b, 0x2a, 0x1e, 0x77, 0x35, 0x94, 0x0b, 0x80, 0x11, 0x01, 0xf6,
    0x12, 0x07, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x0a, 0x1b, 0x2c, 0x45, 0x5e, 0x6f, 0x70, 0x81,
];

/// [R] seq 2000000011 win 0, no options.
static RST_BYTES: [u8; 20] = [
    0xd4, 0x31, 0x00, 0x50, 0x77, 0x35, 0x94, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x50, 0x04, 0x00, 0x00,
    0xbc, 0x1b, 0x00, 0x00,
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
