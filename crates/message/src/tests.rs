use super::*;
use proptest::prelude::*;

fn content(m: &Message) -> Vec<u8> {
    m.to_vec()
}

/// Concatenates `chunks()` with zeros written out.
fn chunks_concat(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    for c in m.chunks() {
        assert!(!c.is_empty(), "chunks() yielded an empty piece");
        match c {
            ChunkRef::Bytes(b) => v.extend_from_slice(b),
            ChunkRef::Zeros(n) => v.resize(v.len() + n, 0),
        }
    }
    v
}

/// A message made of several kinds of pieces: head bytes, a shared chunk,
/// a virtual zero run and another shared chunk.
fn mixed() -> Message {
    let mut m = Message::from_static(b"0123456789");
    m.append(Message::zeros(5));
    m.append(Message::from_vec(b"abcdef".to_vec()));
    m.push_front_slice(b"HDR");
    m
}

#[test]
fn message_fits_in_its_size_budget() {
    let size = size_of::<Message>();
    println!("size_of::<Message>() = {size}");
    // 88 head + 1 index (padded to 8) + 48 rope. Every byte adds to every
    // move of a message, and the compiler copies up to 128 bytes inline but
    // calls `memcpy` beyond (see `HEAD_ROOM`).
    assert_eq!(size, 144, "Message is {size} bytes");
}

#[test]
fn message_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Message>();
}

#[test]
fn new_message_is_empty() {
    let m = Message::new();
    assert!(m.is_empty());
    assert_eq!(m.len(), 0);
    assert_eq!(m.chunks().count(), 0);
    assert_eq!(m, Message::default());
    assert_eq!(m.headroom(), HEAD_ROOM);
}

#[test]
fn empty_constructors_store_no_chunk() {
    for m in [
        Message::from_static(b""),
        Message::from_vec(Vec::new()),
        Message::from_bytes(Bytes::new()),
        Message::zeros(0),
    ] {
        assert!(m.is_empty());
        assert_eq!(m.chunk_count(), 0);
    }
}

#[test]
fn headers_pushed_and_popped_leave_the_payload_uncopied() {
    let payload = Bytes::from_static(b"Hello!");
    let mut tx = Message::from_bytes(payload.clone());
    tx.push_front(8).copy_from_slice(&[1; 8]);
    tx.push_front(20).copy_from_slice(&[2; 20]);
    tx.push_front(14).copy_from_slice(&[3; 14]);
    assert_eq!(tx.len(), 48);
    assert_eq!(tx.chunk_count(), 2, "headers share the inline head");

    let mut rx = tx.clone();
    assert_eq!(rx.front(14).unwrap(), &[3; 14]);
    rx.pop_front(14).unwrap();
    assert_eq!(rx.front(20).unwrap(), &[2; 20]);
    rx.pop_front(20).unwrap();
    assert_eq!(rx.front(8).unwrap(), &[1; 8]);
    rx.pop_front(8).unwrap();

    assert_eq!(rx, &b"Hello!"[..]);
    let out = rx.to_bytes();
    assert_eq!(out.as_ptr(), payload.as_ptr(), "payload was copied");
    assert_eq!(tx.len(), 48, "the clone is independent");
}

#[test]
fn vec_payload_keeps_its_buffer_through_the_stack() {
    let v = b"some application payload".to_vec();
    let ptr = v.as_ptr();
    let mut m = Message::from_vec(v);
    m.push_front_slice(&[0; 8]);
    m.push_front_slice(&[0; 20]);
    let mut rx = m.clone();
    rx.pop_front(28).unwrap();
    assert_eq!(rx.to_bytes().as_ptr(), ptr);
    match rx.chunks().next() {
        Some(ChunkRef::Bytes(b)) => assert_eq!(b.as_ptr(), ptr),
        other => panic!("unexpected {other:?}"),
    };
}

#[test]
fn push_front_returns_zeroed_bytes() {
    let mut m = Message::new();
    m.push_front(4).copy_from_slice(&[9, 9, 9, 9]);
    m.pop_front(4).unwrap();
    assert_eq!(m.push_front(4), &[0, 0, 0, 0]);
}

#[test]
fn push_that_does_not_fit_spills_the_head_into_a_chunk() {
    let mut m = Message::from_static(b"payload");
    let second = HEAD_ROOM - 66;
    m.push_front_slice(&[1; 60]);
    m.push_front_slice(&vec![2; second]);
    assert_eq!(m.headroom(), 6);
    m.push_front_slice(&[3; 20]);
    assert_eq!(m.headroom(), HEAD_ROOM - 20);
    assert_eq!(m.chunk_count(), 3);
    let mut expect = vec![3; 20];
    expect.extend(vec![2; second]);
    expect.extend([1; 60]);
    expect.extend(b"payload");
    assert_eq!(content(&m), expect);
    assert_eq!(m.front(50).unwrap(), &expect[..50]);
    m.pop_front(20 + second + 60).unwrap();
    assert_eq!(m, &b"payload"[..]);
}

#[test]
fn push_larger_than_head_room_gets_its_own_chunk() {
    let mut m = Message::from_static(b"tail");
    m.push_front_slice(b"hd");
    let big = m.push_front(200);
    assert_eq!(big.len(), 200);
    assert!(big.iter().all(|&b| b == 0));
    big[0] = 7;
    big[199] = 8;
    assert_eq!(m.len(), 206);
    assert_eq!(m.byte_at(0), Some(7));
    assert_eq!(m.byte_at(199), Some(8));
    assert_eq!(&content(&m)[200..], b"hdtail");
    let c = m.clone();
    assert_eq!(c, m);
    m.push_front_slice(&[5; 300]);
    assert_eq!(m.len(), 506);
    assert_eq!(m.slice(300..506), c);
}

#[test]
fn pop_front_past_the_end_is_an_error_and_changes_nothing() {
    let mut m = mixed();
    let before = content(&m);
    assert_eq!(m.pop_front(before.len() + 1), Err(Truncated));
    assert_eq!(content(&m), before);
    assert_eq!(m.pop_front(before.len()), Ok(()));
    assert!(m.is_empty());
    assert_eq!(m.chunk_count(), 0);
}

#[test]
fn pop_front_crosses_from_head_into_chunks() {
    let mut m = mixed();
    m.pop_front(3 + 10 + 2).unwrap();
    assert_eq!(content(&m), b"\0\0\0abcdef");
    assert_eq!(m.chunk_count(), 2);
}

#[test]
fn front_of_a_split_header_gathers_it_into_the_head() {
    let mut m = Message::from_static(b"ab");
    m.append(Message::from_static(b"cd"));
    m.append(Message::from_static(b"ef"));
    assert_eq!(m.chunk_count(), 3);
    assert_eq!(m.front(5).unwrap(), b"abcde");
    assert_eq!(m.chunk_count(), 2);
    assert_eq!(m, &b"abcdef"[..]);
    assert_eq!(m.front(7), None);
}

#[test]
fn front_of_a_single_chunk_does_not_copy() {
    let payload = Bytes::from(vec![1u8; 500]);
    let mut m = Message::from_bytes(payload.clone());
    assert_eq!(m.front(300).unwrap().as_ptr(), payload.as_ptr());
    assert_eq!(m.chunk_count(), 1);
}

#[test]
fn front_longer_than_head_room_makes_one_chunk() {
    let mut m = Message::zeros(100);
    m.append(Message::from_static(&[1; 100]));
    m.push_front_slice(b"xyz");
    let f = m.front(150).unwrap().to_vec();
    assert_eq!(&f[..3], b"xyz");
    assert!(f[3..103].iter().all(|&b| b == 0));
    assert!(f[103..].iter().all(|&b| b == 1));
    assert_eq!(m.len(), 203);
    assert_eq!(m.chunk_count(), 2);
}

#[test]
fn front_mut_never_writes_through_a_shared_payload() {
    let payload = Bytes::from(vec![0u8; 40]);
    let mut a = Message::from_bytes(payload.clone());
    let b = a.clone();
    a.front_mut(20).unwrap()[8] = 0xff;
    assert_eq!(a.byte_at(8), Some(0xff));
    assert_eq!(b.byte_at(8), Some(0));
    assert_eq!(payload[8], 0);
    assert_eq!(a.len(), 40);

    let mut big = Message::from_bytes(payload.clone());
    big.append(Message::zeros(200));
    big.front_mut(150).unwrap()[149] = 3;
    assert_eq!(big.byte_at(149), Some(3));
    assert_eq!(big.len(), 240);
    assert!(payload.iter().all(|&b| b == 0));
    assert_eq!(big.front_mut(241), None);
}

#[test]
fn truncate_drops_ethernet_padding() {
    let mut m = Message::from_static(b"Hello!");
    m.push_front_slice(&[0x45; 28]);
    m.pad_to(60);
    assert_eq!(m.len(), 60);
    m.truncate(34);
    assert_eq!(m.len(), 34);
    assert_eq!(&content(&m)[28..], b"Hello!");
    m.truncate(100);
    assert_eq!(m.len(), 34);
    m.truncate(10);
    assert_eq!(content(&m), [0x45; 10]);
    assert_eq!(m.chunk_count(), 1);
    m.truncate(0);
    assert!(m.is_empty());
}

#[test]
fn pad_to_costs_no_memory_for_zeros() {
    let mut m = Message::from_static(&[7; 100]);
    m.pad_to(1000);
    assert_eq!(
        m.chunks().collect::<Vec<_>>(),
        [ChunkRef::Bytes(&[7; 100]), ChunkRef::Zeros(900)]
    );
    m.pad_to(10);
    assert_eq!(m.len(), 1000);
    m.pad_to(1 << 40);
    assert_eq!(m.chunk_count(), 2, "adjacent zero runs merge");
}

#[test]
fn short_frame_padded_to_the_minimum_lives_in_the_head() {
    let mut m = Message::from_vec(b"Hello!".to_vec());
    m.push_front_slice(&[8; 8]);
    m.push_front_slice(&[20; 20]);
    m.push_front_slice(&[14; 14]);
    m.pad_to(60);
    assert_eq!(m.chunk_count(), 1);
    assert_eq!(m.len(), 60);
    let mut expect = [14; 14].to_vec();
    expect.extend([20; 20]);
    expect.extend([8; 8]);
    expect.extend(b"Hello!");
    expect.resize(60, 0);
    assert_eq!(m, expect);
    let mut rx = m.clone();
    rx.truncate(48);
    rx.pop_front(42).unwrap();
    assert_eq!(rx, &b"Hello!"[..]);
}

#[test]
fn terabyte_virtual_payload_is_cheap() {
    const TB: u64 = 1 << 40;
    let mut m = Message::zeros(TB);
    m.push_front_slice(&[1; 20]);
    assert_eq!(m.len() as u64, TB + 20);
    let tail = m.split_off(1 << 39);
    assert_eq!(tail.len() as u64, TB + 20 - (1 << 39));
    let mid = m.slice(10..1 << 30);
    assert_eq!(mid.len(), (1 << 30) - 10);
    assert_eq!(mid.byte_at(9), Some(1));
    assert_eq!(mid.byte_at(10), Some(0));
    let mut t = tail.clone();
    t.flip_bit(8 * 12345 + 1);
    assert_eq!(t.byte_at(12345), Some(0x40));
    assert_eq!(t.chunk_count(), 3);
    assert_ne!(t, tail);
    t.flip_bit(8 * 12345 + 1);
    assert_eq!(t, tail);
    let mut checksum = 0u64;
    for c in t.chunks() {
        if let ChunkRef::Bytes(b) = c {
            checksum += b.iter().map(|&x| x as u64).sum::<u64>();
        }
    }
    assert_eq!(checksum, 0);
}

#[test]
fn zeros_is_clamped_to_max_len() {
    let mut m = Message::zeros(u64::MAX);
    assert_eq!(m.len(), MAX_LEN);
    m.append(Message::zeros(10));
    assert_eq!(m.len(), MAX_LEN);
    m.pad_to(usize::MAX);
    assert_eq!(m.len(), MAX_LEN);
}

#[test]
fn split_off_shares_chunks() {
    let payload = Bytes::from(vec![7u8; 100]);
    let mut m = Message::from_bytes(payload.clone());
    m.push_front_slice(b"hdr");
    let tail = m.split_off(53);
    assert_eq!(m.len(), 53);
    assert_eq!(tail.len(), 50);
    match tail.chunks().next() {
        Some(ChunkRef::Bytes(b)) => assert_eq!(b.as_ptr(), payload[50..].as_ptr()),
        other => panic!("unexpected {other:?}"),
    };
    let mut m2 = mixed();
    let all = content(&m2);
    let t2 = m2.split_off(2);
    assert_eq!(content(&m2), &all[..2]);
    assert_eq!(content(&t2), &all[2..]);
    let mut m3 = mixed();
    assert!(m3.split_off(1000).is_empty());
    assert_eq!(content(&m3), all);
}

#[test]
fn slice_clamps_out_of_range_bounds() {
    let m = mixed();
    let all = content(&m);
    assert_eq!(content(&m.slice(..)), all);
    assert_eq!(content(&m.slice(5..)), &all[5..]);
    assert_eq!(content(&m.slice(..=4)), &all[..=4]);
    assert_eq!(content(&m.slice(2..1000)), &all[2..]);
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = m.slice(10..3);
    assert!(inverted.is_empty());
    assert!(m.slice(1000..2000).is_empty());
    assert!(m
        .slice((Bound::Excluded(usize::MAX), Bound::Unbounded))
        .is_empty());
}

#[test]
fn append_of_small_messages_stays_inline() {
    let mut m = Message::new();
    m.push_front_slice(b"ab");
    let mut o = Message::new();
    o.push_front_slice(b"cd");
    m.append(o);
    assert_eq!(m.chunk_count(), 1);
    assert_eq!(m, &b"abcd"[..]);
    m.append(Message::from_static(b"ef"));
    assert_eq!(m, &b"abcdef"[..]);
}

#[test]
fn flip_bit_in_the_head_is_in_place() {
    let mut m = Message::from_static(b"payload");
    m.push_front_slice(&[0; 4]);
    m.flip_bit(0);
    m.flip_bit(15);
    assert_eq!(m.byte_at(0), Some(0x80));
    assert_eq!(m.byte_at(1), Some(0x01));
    assert_eq!(m.chunk_count(), 2);
}

#[test]
fn flip_bit_in_a_shared_chunk_copies_only_that_chunk() {
    let payload = Bytes::from(vec![0u8; 1000]);
    let mut m = Message::from_bytes(payload.clone());
    let orig = m.clone();
    m.flip_bit(8 * 500);
    assert_eq!(payload[500], 0);
    assert_eq!(orig.byte_at(500), Some(0));
    assert_eq!(m.byte_at(500), Some(0x80));
    let pieces: Vec<_> = m.chunks().collect();
    assert_eq!(pieces.len(), 3, "long chunk split around the byte");
    match (pieces[0], pieces[2]) {
        (ChunkRef::Bytes(a), ChunkRef::Bytes(c)) => {
            assert_eq!(a.as_ptr(), payload.as_ptr());
            assert_eq!(c.as_ptr(), payload[501..].as_ptr());
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut small = Message::from_static(b"abc");
    small.flip_bit(8 * 2 + 7);
    assert_eq!(small, &b"abb"[..]);
    assert_eq!(small.chunk_count(), 1);
}

#[test]
fn flip_bit_in_a_unique_chunk_is_in_place() {
    let v = vec![0u8; 1000];
    let ptr = v.as_ptr();
    let mut m = Message::from_vec(v);
    m.flip_bit(7);
    assert_eq!(m.byte_at(0), Some(1));
    assert_eq!(m.to_bytes().as_ptr(), ptr);
}

#[test]
fn flip_bit_past_the_end_does_nothing() {
    let mut m = mixed();
    let before = content(&m);
    m.flip_bit(8 * before.len());
    m.flip_bit(usize::MAX);
    assert_eq!(content(&m), before);
}

#[test]
fn equality_ignores_chunking_and_virtual_zeros() {
    let mut a = Message::from_static(b"ab\0\0cd");
    let mut b = Message::from_static(b"ab");
    b.append(Message::zeros(2));
    b.append(Message::from_static(b"cd"));
    assert_eq!(a, b);
    a.flip_bit(20);
    assert_ne!(a, b);
    assert_ne!(Message::zeros(3), Message::zeros(4));
    assert_eq!(Message::zeros(3), vec![0u8; 3]);
}

#[test]
fn debug_is_short() {
    let mut m = Message::zeros(1 << 40);
    m.push_front_slice(&[0xab; 20]);
    let s = format!("{m:?}");
    assert!(
        s.starts_with("Message(len=1099511627796, chunks=2, ab ab"),
        "{s}"
    );
    assert!(s.len() < 120, "{s}");
    assert_eq!(format!("{:?}", Message::new()), "Message(len=0, chunks=0)");
}

#[test]
fn copy_to_vec_appends_with_zeros_written_out() {
    let m = mixed();
    let mut out = vec![9];
    m.copy_to_vec(&mut out);
    assert_eq!(out, b"\x09HDR0123456789\0\0\0\0\0abcdef");
    assert_eq!(chunks_concat(&m), &out[1..]);
}

#[test]
fn copy_to_slice_reads_across_pieces() {
    let m = mixed();
    let mut buf = [0xffu8; 8];
    m.copy_to_slice(10, &mut buf).unwrap();
    assert_eq!(&buf, b"789\0\0\0\0\0");
    assert_eq!(m.copy_to_slice(20, &mut buf), Err(Truncated));
    assert_eq!(m.copy_to_slice(usize::MAX, &mut buf), Err(Truncated));
}

// ---------------------------------------------------------------------------
// Model-based property test: every operation is applied to a `Message` and to
// a plain `Vec<u8>`, and their contents must always agree.

#[derive(Clone, Debug)]
enum Piece {
    Real(Vec<u8>),
    Zeros(u16),
    Static(u8),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200).prop_map(Piece::Real),
        (0u16..300).prop_map(Piece::Zeros),
        (0u8..=40).prop_map(Piece::Static),
    ]
}

static STATIC: [u8; 40] = *b"The quick brown fox jumps over the lazy ";

fn build(pieces: &[Piece]) -> (Message, Vec<u8>) {
    let mut m = Message::new();
    let mut v = Vec::new();
    for p in pieces {
        match p {
            Piece::Real(b) => {
                m.append(Message::from_vec(b.clone()));
                v.extend_from_slice(b);
            }
            Piece::Zeros(n) => {
                m.append(Message::zeros(u64::from(*n)));
                v.resize(v.len() + *n as usize, 0);
            }
            Piece::Static(n) => {
                let s = &STATIC[..*n as usize];
                m.append(Message::from_static(s));
                v.extend_from_slice(s);
            }
        }
    }
    (m, v)
}

#[derive(Clone, Debug)]
enum Op {
    PushFront(Vec<u8>),
    PushFrontSlice(Vec<u8>),
    PushFrontBig(u16),
    PopFront(usize),
    Truncate(usize),
    SplitOffKeepFront(usize),
    SplitOffKeepBack(usize),
    Append(Vec<Piece>),
    Slice(usize, usize),
    FlipBit(usize),
    Front(usize),
    FrontMut(usize, u8),
    PadTo(usize),
    CloneAndMutateClone(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..40).prop_map(Op::PushFront),
        2 => prop::collection::vec(any::<u8>(), 0..130).prop_map(Op::PushFrontSlice),
        1 => (97u16..300).prop_map(Op::PushFrontBig),
        3 => (0usize..400).prop_map(Op::PopFront),
        1 => (0usize..800).prop_map(Op::Truncate),
        1 => (0usize..800).prop_map(Op::SplitOffKeepFront),
        1 => (0usize..800).prop_map(Op::SplitOffKeepBack),
        2 => prop::collection::vec(piece(), 0..4).prop_map(Op::Append),
        1 => (0usize..800, 0usize..800).prop_map(|(a, b)| Op::Slice(a, b)),
        2 => (0usize..8 * 800).prop_map(Op::FlipBit),
        2 => (0usize..300).prop_map(Op::Front),
        2 => ((0usize..300), any::<u8>()).prop_map(|(n, x)| Op::FrontMut(n, x)),
        1 => (0usize..900).prop_map(Op::PadTo),
        1 => (0usize..8 * 800).prop_map(Op::CloneAndMutateClone),
    ]
}

fn apply(m: &mut Message, v: &mut Vec<u8>, op: &Op) {
    match op {
        Op::PushFront(b) => {
            let out = m.push_front(b.len());
            assert!(out.iter().all(|&x| x == 0));
            out.copy_from_slice(b);
            v.splice(0..0, b.iter().copied());
        }
        Op::PushFrontSlice(b) => {
            m.push_front_slice(b);
            v.splice(0..0, b.iter().copied());
        }
        Op::PushFrontBig(n) => {
            let n = *n as usize;
            let out = m.push_front(n);
            assert_eq!(out.len(), n);
            for (i, x) in out.iter_mut().enumerate() {
                *x = i as u8;
            }
            v.splice(0..0, (0..n).map(|i| i as u8));
        }
        Op::PopFront(n) => {
            let r = m.pop_front(*n);
            if *n <= v.len() {
                assert_eq!(r, Ok(()));
                v.drain(..*n);
            } else {
                assert_eq!(r, Err(Truncated));
            }
        }
        Op::Truncate(n) => {
            m.truncate(*n);
            v.truncate(*n);
        }
        Op::SplitOffKeepFront(at) => {
            let tail = m.split_off(*at);
            let vt = if *at <= v.len() {
                v.split_off(*at)
            } else {
                Vec::new()
            };
            assert_eq!(tail.to_vec(), vt);
        }
        Op::SplitOffKeepBack(at) => {
            let tail = m.split_off(*at);
            let vt = if *at <= v.len() {
                v.split_off(*at)
            } else {
                Vec::new()
            };
            assert_eq!(m.to_vec(), *v);
            *m = tail;
            *v = vt;
        }
        Op::Append(pieces) => {
            let (o, ov) = build(pieces);
            m.append(o);
            v.extend_from_slice(&ov);
        }
        Op::Slice(a, b) => {
            let s = m.slice(*a..*b);
            let (ca, cb) = ((*a).min(v.len()), (*b).min(v.len()));
            let expect = if ca < cb { &v[ca..cb] } else { &[][..] };
            assert_eq!(s.to_vec(), expect);
            *m = s;
            *v = expect.to_vec();
        }
        Op::FlipBit(i) => {
            m.flip_bit(*i);
            if let Some(b) = v.get_mut(i / 8) {
                *b ^= 0x80 >> (i % 8);
            }
        }
        Op::Front(n) => {
            let f = m.front(*n).map(<[u8]>::to_vec);
            assert_eq!(f.as_deref(), v.get(..*n));
        }
        Op::FrontMut(n, x) => match m.front_mut(*n) {
            Some(f) => {
                assert_eq!(f, &v[..*n]);
                if let Some(first) = f.first_mut() {
                    *first = *x;
                    v[0] = *x;
                }
            }
            None => assert!(*n > v.len()),
        },
        Op::PadTo(n) => {
            m.pad_to(*n);
            if *n > v.len() {
                v.resize(*n, 0);
            }
        }
        Op::CloneAndMutateClone(i) => {
            let before = m.to_vec();
            let mut c = m.clone();
            c.flip_bit(*i);
            c.push_front_slice(b"xx");
            let _ = c.front_mut(50).map(|f| f.fill(0xee));
            c.append(Message::from_static(b"yy"));
            assert_eq!(m.to_vec(), before, "mutating a clone changed the original");
        }
    }
}

fn check_agrees(m: &Message, v: &[u8]) {
    assert_eq!(m.len(), v.len());
    assert_eq!(m.is_empty(), v.is_empty());
    assert_eq!(m.to_vec(), v);
    assert_eq!(chunks_concat(m), v);
    let mut pieces = Vec::new();
    m.for_each_chunk(|c| pieces.push(c));
    assert_eq!(pieces, m.chunks().collect::<Vec<_>>());
    assert_eq!(m.to_bytes(), v);
    assert!(*m == *v);
    assert_eq!(*m, Message::from_vec(v.to_vec()));
    for i in [
        0,
        v.len() / 2,
        v.len().saturating_sub(1),
        v.len(),
        v.len() + 1,
    ] {
        assert_eq!(m.byte_at(i), v.get(i).copied());
    }
    assert!(m.headroom() <= HEAD_ROOM);
}

/// 512 cases unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok());
    ProptestConfig {
        cases: cases.unwrap_or(512),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn message_agrees_with_a_vec_model(
        init in prop::collection::vec(piece(), 0..4),
        ops in prop::collection::vec(op(), 0..40),
    ) {
        let (mut m, mut v) = build(&init);
        check_agrees(&m, &v);
        for op in &ops {
            apply(&mut m, &mut v, op);
            check_agrees(&m, &v);
        }
    }

    #[test]
    fn equality_matches_content_equality(
        a in prop::collection::vec(piece(), 0..4),
        b in prop::collection::vec(piece(), 0..4),
    ) {
        let (ma, va) = build(&a);
        let (mb, vb) = build(&b);
        prop_assert_eq!(ma == mb, va == vb);
    }

    #[test]
    fn copy_to_slice_agrees_with_the_model(
        pieces in prop::collection::vec(piece(), 0..5),
        off in 0usize..1000,
        n in 0usize..300,
    ) {
        let (m, v) = build(&pieces);
        let mut buf = vec![0xaa; n];
        let r = m.copy_to_slice(off, &mut buf);
        match v.get(off..off + n) {
            Some(expect) => {
                prop_assert_eq!(r, Ok(()));
                prop_assert_eq!(&buf[..], expect);
            }
            None => prop_assert_eq!(r, Err(Truncated)),
        }
    }

    #[test]
    fn take_from_moves_the_content_and_leaves_the_source_empty(
        old in prop::collection::vec(piece(), 0..4),
        pieces in prop::collection::vec(piece(), 0..4),
        header in prop::collection::vec(any::<u8>(), 0..40),
        popped in 0usize..60,
    ) {
        // The model: `mem::take`. The source has a head of pushed bytes
        // and maybe some popped, the destination some old content.
        let (mut src, mut v) = build(&pieces);
        src.push_front(header.len()).copy_from_slice(&header);
        let mut expect = header.clone();
        expect.append(&mut v);
        let popped = popped.min(expect.len());
        src.pop_front(popped).unwrap();
        let expect = expect[popped..].to_vec();
        let (mut dst, _) = build(&old);
        dst.take_from(&mut src);
        prop_assert_eq!(content(&dst), expect.clone());
        prop_assert_eq!(dst.len(), expect.len());
        prop_assert!(src.is_empty());
        prop_assert_eq!(content(&src), Vec::<u8>::new());
        // The emptied source works as a new message.
        src.push_front(4).copy_from_slice(b"abcd");
        prop_assert_eq!(content(&src), b"abcd".to_vec());
    }
}
