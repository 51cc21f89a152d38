//! The zero-copy packet buffer that travels through a simulated protocol stack.
//!
//! A sender's application hands a payload down; UDP, IPv4 and Ethernet each
//! *push* a header at the front; the frame crosses a simulated network; the
//! receiver's layers *pop* headers at the front and the application gets the
//! payload. The payload bytes are never copied on the way.
//!
//! ```
//! use elvis_message::Message;
//!
//! let mut msg = Message::from_static(b"Hello!");
//! msg.push_front(8).copy_from_slice(&[0x04, 0x00, 0x00, 0x35, 0, 14, 0, 0]); // UDP
//! msg.push_front_slice(&[0x45; 20]); // IPv4 (contents elided)
//! msg.pad_to(60); // Ethernet minimum frame, as a virtual zero run
//! assert_eq!(msg.len(), 60);
//!
//! let mut rx = msg.clone(); // cheap: shares the payload
//! rx.truncate(34); // drop the Ethernet padding
//! rx.pop_front(20).unwrap();
//! assert_eq!(rx.front(8).unwrap()[3], 0x35);
//! rx.pop_front(8).unwrap();
//! assert_eq!(rx, &b"Hello!"[..]);
//! ```
//!
//! # Layout
//!
//! A [`Message`] is `head ++ rope`:
//!
//! - **head**: an inline `[u8; HEAD_ROOM]` array used from the back. Its live
//!   bytes are `head[start..HEAD_ROOM]`; pushing an `n`-byte header moves
//!   `start` down by `n`, popping moves it up. Protocol headers are written
//!   and read here without touching the heap.
//! - **rope**: a `SmallVec<[Chunk; 1]>` of payload chunks. A chunk is a shared
//!   [`Bytes`] slice (cloning or slicing it bumps a reference count, never
//!   copies), a *virtual* run of zeros (a length with no memory behind it: a
//!   terabyte costs a word), or, rarely, an owned boxed buffer created by
//!   [`Message::push_front`] / [`Message::front_mut`] for more than
//!   [`HEAD_ROOM`] contiguous bytes.
//!
//! # Invariants
//!
//! - Head bytes come logically before rope bytes.
//! - The rope stores no empty chunk, so a message is empty exactly when its
//!   head is empty and its rope has no chunks.
//! - Every operation leaves the logical content (the byte string a
//!   [`Message::to_vec`] would return) exactly as its documentation says;
//!   which chunks hold those bytes is an implementation detail that
//!   [`Message::chunks`] reveals but equality ignores. Virtual zeros compare
//!   equal to real zero bytes.
//!
//! # Costs
//!
//! - `size_of::<Message>()` is 144 bytes on 64-bit targets (88 head + 48
//!   rope + index; [`HEAD_ROOM`] says why not more); a message whose
//!   payload is one chunk does not allocate beyond that payload's own
//!   buffer.
//! - [`push_front`](Message::push_front), [`pop_front`](Message::pop_front)
//!   and [`front`](Message::front) of a header already in the head are index
//!   arithmetic plus a copy of the header bytes. The first push that does not
//!   fit in the head *spills* the head into one `Bytes` chunk (one
//!   allocation) and starts a fresh head.
//! - [`front`](Message::front) / [`front_mut`](Message::front_mut) of bytes
//!   that are not contiguous (a header split across chunks, or a payload
//!   header the caller wants to rewrite) copy at most [`HEAD_ROOM`] bytes into
//!   the head.
//! - [`Clone`], [`slice`](Message::slice) and
//!   [`split_off`](Message::split_off) share chunks: a reference-count bump
//!   per chunk plus a copy of the 88-byte head array. Cloning a `Bytes` made
//!   from a `Vec` allocates its shared control block once (a `bytes` crate
//!   detail); `from_static` payloads never allocate.
//! - [`len`](Message::len), [`byte_at`](Message::byte_at) and range
//!   operations walk the rope: O(number of chunks), which is 0–2 for a
//!   packet. A long TCP-stream rope should be sliced, not indexed byte by
//!   byte.
//! - A rope of more than one chunk spills the `SmallVec` to the heap (one
//!   allocation): reassembly, spilled heads, corrupted chunks, padding
//!   beyond [`HEAD_ROOM`]. Padding a short frame (Ethernet's 60-byte
//!   minimum) instead gathers its few bytes into the head, so the common
//!   small frame never allocates.
//!
//! # Lengths
//!
//! All lengths are `usize` (the simulator targets 64-bit hosts, where that is
//! `u64`). Lengths are clamped to [`MAX_LEN`] (`isize::MAX`) by the
//! operations that could otherwise overflow ([`Message::zeros`],
//! [`Message::pad_to`], [`Message::append`]).
//!
//! # Errors and panics
//!
//! No method panics on caller input: out-of-range reads return `None` or
//! [`Truncated`], out-of-range ranges are clamped, and an out-of-range
//! [`flip_bit`](Message::flip_bit) does nothing. The only panics are
//! allocation failures (as for `Vec`), for example
//! `push_front(usize::MAX)`.
//!
//! # Gaps
//!
//! - Adjacent `Bytes` chunks that are contiguous slices of one buffer are not
//!   merged back together (the `bytes` crate has no `Bytes::unsplit`), so a
//!   rope that is split and re-joined many times keeps its pieces.
//! - The rope is a `SmallVec`, so popping whole chunks off the front of a
//!   long rope shifts the rest (a `VecDeque` would not); fine for packets,
//!   worth revisiting if TCP keeps long send buffers as one `Message`.
//! - [`Message::to_bytes`] and [`Message::to_vec`] materialize virtual zeros;
//!   callers that may see huge virtual payloads should use
//!   [`Message::chunks`].
//! - No pooling of spilled heads or of the rope's heap storage yet.
//! - No `Hash` (hashing by content would have to expand virtual zeros).

#![forbid(unsafe_code)]

use std::fmt;
use std::mem;
use std::ops::{Bound, Range, RangeBounds};

use bytes::Bytes;
use smallvec::SmallVec;

/// Inline room for headers, in bytes: enough for Ethernet (14) + IPv4 with
/// options (60) + UDP (8), or Ethernet + IPv4 + TCP with up to 34 bytes of
/// options (timestamps and two SACK blocks; a pure ACK with three SACK
/// blocks spills its headers into a chunk, one allocation).
///
/// Why not 96, room for any TCP header: a [`Message`] is then 152 bytes,
/// and moving one (through the stack, into and out of sockets and frames)
/// copies its parts past the first 16 bytes, 136 bytes, through a `memcpy`
/// call, since the compiler copies at most 128 bytes inline; glibc's AVX-512
/// `memcpy` writes them in 64-byte stores, and the 16-byte loads that read
/// the copy right after must wait for those stores to reach the cache. At
/// 88 bytes (144 in all) those copies are inline 16-byte moves. Measured
/// with `elvis-bench socket-overhead` (paired wall runs: Ping Pong +7.7 %
/// → +5.4 %, Server Client +7.2 % → +6.0 % on a busy machine, +5.2 / +4.6 %
/// → +1.3 / +2.4 % on a quiet one) and `tcp-bulk --loss 0.01` (+0.7 %
/// instructions, the same as without loss: the spills are rare).
pub const HEAD_ROOM: usize = 88;

/// The largest length a message can have; operations that could exceed it
/// clamp to it.
pub const MAX_LEN: usize = isize::MAX as usize;

// `start` is stored as a `u8`.
const _: () = assert!(HEAD_ROOM <= u8::MAX as usize);

/// Chunks at most this long are copied whole when a bit in them is flipped;
/// longer ones are split so that only the flipped byte is replaced.
const FLIP_COPY_MAX: usize = 64;

/// Every byte value, so a one-byte chunk can be a `Bytes::from_static` slice.
static ALL_BYTES: [u8; 256] = {
    let mut a = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        a[i] = i as u8;
        i += 1;
    }
    a
};

/// The message is shorter than the operation needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Truncated;

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("message truncated")
    }
}

impl std::error::Error for Truncated {}

/// A read-only view of one piece of a message, as yielded by
/// [`Message::chunks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkRef<'a> {
    /// Real bytes.
    Bytes(&'a [u8]),
    /// This many virtual zero bytes (no memory behind them).
    Zeros(usize),
}

impl ChunkRef<'_> {
    /// Returns the number of bytes this piece stands for.
    pub fn len(&self) -> usize {
        match self {
            ChunkRef::Bytes(b) => b.len(),
            ChunkRef::Zeros(n) => *n,
        }
    }

    /// Returns whether this piece is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the first `n` bytes (`n <= len`).
    fn skip(self, n: usize) -> Self {
        match self {
            ChunkRef::Bytes(b) => ChunkRef::Bytes(&b[n..]),
            ChunkRef::Zeros(z) => ChunkRef::Zeros(z - n),
        }
    }

    /// Returns whether the first `n` bytes of `self` and `other` agree.
    fn prefix_eq(self, other: ChunkRef<'_>, n: usize) -> bool {
        match (self, other) {
            (ChunkRef::Bytes(a), ChunkRef::Bytes(b)) => a[..n] == b[..n],
            (ChunkRef::Bytes(a), ChunkRef::Zeros(_)) | (ChunkRef::Zeros(_), ChunkRef::Bytes(a)) => {
                a[..n].iter().all(|&x| x == 0)
            }
            (ChunkRef::Zeros(_), ChunkRef::Zeros(_)) => true,
        }
    }
}

/// One piece of the rope. Never empty once stored.
enum Chunk {
    /// A shared slice of real bytes.
    Bytes(Bytes),
    /// A virtual run of zero bytes.
    Zeros(usize),
    /// An owned buffer the caller may be writing through a `&mut [u8]`
    /// (only made for more than `HEAD_ROOM` contiguous mutable bytes).
    Owned(Box<[u8]>),
}

impl Clone for Chunk {
    #[inline]
    fn clone(&self) -> Self {
        match self {
            Chunk::Bytes(b) => Chunk::Bytes(b.clone()),
            Chunk::Zeros(n) => Chunk::Zeros(*n),
            Chunk::Owned(o) => Chunk::Bytes(Bytes::copy_from_slice(o)),
        }
    }
}

impl Chunk {
    #[inline]
    fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::Zeros(n) => *n,
            Chunk::Owned(o) => o.len(),
        }
    }

    #[inline]
    fn as_ref(&self) -> ChunkRef<'_> {
        match self {
            Chunk::Bytes(b) => ChunkRef::Bytes(b),
            Chunk::Zeros(n) => ChunkRef::Zeros(*n),
            Chunk::Owned(o) => ChunkRef::Bytes(o),
        }
    }

    /// Returns the sub-chunk `r` (non-empty, within bounds), sharing when
    /// possible.
    fn slice(&self, r: Range<usize>) -> Chunk {
        match self {
            Chunk::Bytes(b) => Chunk::Bytes(b.slice(r)),
            Chunk::Zeros(_) => Chunk::Zeros(r.len()),
            Chunk::Owned(o) => Chunk::Bytes(Bytes::copy_from_slice(&o[r])),
        }
    }

    /// Turns an owned buffer into a shared one (no copy).
    fn share(&mut self) {
        if let Chunk::Owned(o) = self {
            *self = Chunk::Bytes(Bytes::from(mem::take(o)));
        }
    }

    /// Drops the first `n` bytes (`0 < n < len`).
    fn advance(&mut self, n: usize) {
        self.share();
        match self {
            Chunk::Bytes(b) => *b = b.slice(n..),
            Chunk::Zeros(z) => *z -= n,
            Chunk::Owned(_) => unreachable!("shared above"),
        }
    }

    /// Keeps the first `n` bytes (`0 < n < len`).
    fn truncate(&mut self, n: usize) {
        self.share();
        match self {
            Chunk::Bytes(b) => b.truncate(n),
            Chunk::Zeros(z) => *z = n,
            Chunk::Owned(_) => unreachable!("shared above"),
        }
    }

    /// Splits at `at` (`0 < at < len`), keeping the front.
    fn split_off(&mut self, at: usize) -> Chunk {
        self.share();
        match self {
            Chunk::Bytes(b) => Chunk::Bytes(b.split_off(at)),
            Chunk::Zeros(z) => {
                let tail = *z - at;
                *z = at;
                Chunk::Zeros(tail)
            }
            Chunk::Owned(_) => unreachable!("shared above"),
        }
    }
}

type Rope = SmallVec<[Chunk; 1]>;

/// A packet: inline header room followed by a rope of payload chunks.
///
/// See the [crate documentation](crate) for the layout, invariants and
/// costs.
pub struct Message {
    head: [u8; HEAD_ROOM],
    /// Index of the first live head byte; `HEAD_ROOM` when the head is empty.
    start: u8,
    rope: Rope,
}

impl Clone for Message {
    /// Shares every chunk (a reference-count bump each) and copies the head
    /// array. Written out because `SmallVec`'s generic `clone` costs several
    /// times more for the common one-chunk rope.
    #[inline]
    fn clone(&self) -> Message {
        let rope = match self.rope.as_slice() {
            [] => Rope::new(),
            [c] => Rope::from_buf([c.clone()]),
            cs => cs.iter().cloned().collect(),
        };
        Message {
            head: self.head,
            start: self.start,
            rope,
        }
    }
}

impl Default for Message {
    fn default() -> Self {
        Message::new()
    }
}

impl Message {
    /// Returns an empty message.
    pub fn new() -> Message {
        Message {
            head: [0; HEAD_ROOM],
            start: HEAD_ROOM as u8,
            rope: SmallVec::new(),
        }
    }

    /// Moves the contents of `src` into `self`, leaving `src` empty;
    /// what `self` held is dropped.
    ///
    /// The same as `*self = std::mem::take(src)`, at a fraction of the
    /// cost: a message is 144 bytes, and a `take` copies all of them out,
    /// writes an empty message in their place and copies them in again.
    /// Here only the live head bytes move (none for a message whose
    /// headers were all popped, as a received payload's) and the rope is
    /// swapped.
    #[inline(always)]
    pub fn take_from(&mut self, src: &mut Message) {
        let start = usize::from(src.start);
        if start < HEAD_ROOM {
            self.head[start..].copy_from_slice(&src.head[start..]);
        }
        self.start = src.start;
        std::mem::swap(&mut self.rope, &mut src.rope);
        src.rope.clear();
        src.start = HEAD_ROOM as u8;
    }

    fn from_chunk(c: Chunk) -> Message {
        let mut m = Message::new();
        if c.len() > 0 {
            m.rope.push(c);
        }
        m
    }

    /// Returns a message holding `bytes`, shared (not copied).
    pub fn from_bytes(bytes: Bytes) -> Message {
        Message::from_chunk(Chunk::Bytes(bytes))
    }

    /// Returns a message holding `bytes` (no copy, no allocation).
    pub fn from_static(bytes: &'static [u8]) -> Message {
        Message::from_bytes(Bytes::from_static(bytes))
    }

    /// Returns a message holding `vec` (no copy).
    pub fn from_vec(vec: Vec<u8>) -> Message {
        Message::from_bytes(Bytes::from(vec))
    }

    /// Returns a message of `len` virtual zero bytes: no memory is allocated
    /// for them, whatever `len` is. `len` is clamped to [`MAX_LEN`].
    pub fn zeros(len: u64) -> Message {
        let n = usize::try_from(len).unwrap_or(MAX_LEN).min(MAX_LEN);
        Message::from_chunk(Chunk::Zeros(n))
    }

    #[inline]
    fn head_len(&self) -> usize {
        HEAD_ROOM - self.start as usize
    }

    #[inline]
    fn head(&self) -> &[u8] {
        &self.head[self.start as usize..]
    }

    #[inline]
    fn rope_len(&self) -> usize {
        match self.rope.as_slice() {
            [] => 0,
            [c] => c.len(),
            cs => cs.iter().fold(0, |acc, c| acc.saturating_add(c.len())),
        }
    }

    /// Returns the total length in bytes, virtual zeros included.
    #[inline]
    pub fn len(&self) -> usize {
        self.head_len().saturating_add(self.rope_len())
    }

    /// Returns whether the message has no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head_len() == 0 && self.rope.is_empty()
    }

    /// Returns how many bytes can be pushed before the head spills.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.start as usize
    }

    /// Returns the number of stored pieces (the head counts as one when it is
    /// not empty). For tests and diagnostics.
    pub fn chunk_count(&self) -> usize {
        usize::from(self.head_len() > 0) + self.rope.len()
    }

    /// Moves the head's bytes into a shared chunk at the front of the rope,
    /// leaving the head empty.
    fn spill_head(&mut self) {
        if self.head_len() > 0 {
            let spilled = Bytes::copy_from_slice(self.head());
            self.rope.insert(0, Chunk::Bytes(spilled));
            self.start = HEAD_ROOM as u8;
        }
    }

    /// Keeps only the first `keep` head bytes (`keep <= head_len`).
    fn keep_head_prefix(&mut self, keep: usize) {
        let s = self.start as usize;
        let ns = HEAD_ROOM - keep;
        self.head.copy_within(s..s + keep, ns);
        self.start = ns as u8;
    }

    /// Prepends `n` bytes and returns them, zeroed, for the caller to fill.
    ///
    /// Costs index arithmetic and zeroing `n` bytes when `n` fits in the
    /// [`headroom`](Message::headroom); otherwise the head is first spilled
    /// into a shared chunk (one allocation). More than [`HEAD_ROOM`] bytes
    /// become an owned chunk of their own.
    ///
    /// # Panics
    ///
    /// Only if allocating `n` bytes fails (as `vec![0; n]` would).
    #[inline]
    pub fn push_front(&mut self, n: usize) -> &mut [u8] {
        if n > self.start as usize {
            return self.push_front_spill(n);
        }
        let s = self.start as usize - n;
        self.start = s as u8;
        let out = &mut self.head[s..s + n];
        out.fill(0);
        out
    }

    /// The slow path of `push_front`: the head is full.
    #[cold]
    #[inline(never)]
    fn push_front_spill(&mut self, n: usize) -> &mut [u8] {
        self.spill_head();
        if n > HEAD_ROOM {
            self.rope
                .insert(0, Chunk::Owned(vec![0; n].into_boxed_slice()));
            let Chunk::Owned(o) = &mut self.rope[0] else {
                unreachable!("just inserted")
            };
            return o;
        }
        let s = HEAD_ROOM - n;
        self.start = s as u8;
        let out = &mut self.head[s..];
        out.fill(0);
        out
    }

    /// Prepends a copy of `bytes`.
    #[inline]
    pub fn push_front_slice(&mut self, bytes: &[u8]) {
        if bytes.len() > HEAD_ROOM {
            self.spill_head();
            self.rope
                .insert(0, Chunk::Bytes(Bytes::copy_from_slice(bytes)));
        } else {
            self.push_front(bytes.len()).copy_from_slice(bytes);
        }
    }

    /// Drops the first `n` bytes, which may span the head and any number of
    /// chunks.
    ///
    /// # Errors
    ///
    /// [`Truncated`] if the message is shorter than `n`; it is then left
    /// unchanged.
    #[inline]
    pub fn pop_front(&mut self, n: usize) -> Result<(), Truncated> {
        if n <= self.head_len() {
            self.start += n as u8;
            return Ok(());
        }
        self.pop_front_rope(n)
    }

    /// The slow path of `pop_front`: popping crosses into the rope.
    #[inline(never)]
    fn pop_front_rope(&mut self, n: usize) -> Result<(), Truncated> {
        let h = self.head_len();
        if n - h > self.rope_len() {
            return Err(Truncated);
        }
        self.start = HEAD_ROOM as u8;
        rope_advance(&mut self.rope, n - h);
        Ok(())
    }

    /// Returns the first `n` bytes as one slice, or `None` if the message is
    /// shorter.
    ///
    /// Free when they are already contiguous (in the head, or at the start
    /// of a single real chunk when the head is empty). Otherwise, for
    /// `n <= HEAD_ROOM`, they are copied into the head (and removed from the
    /// rope, so the content is unchanged); for larger `n` they are gathered
    /// into a new shared chunk.
    #[inline]
    pub fn front(&mut self, n: usize) -> Option<&[u8]> {
        if n <= self.head_len() {
            let s = self.start as usize;
            return Some(&self.head[s..s + n]);
        }
        self.front_slow(n)
    }

    /// The slow path of `front`: the bytes are not all in the head.
    #[inline(never)]
    fn front_slow(&mut self, n: usize) -> Option<&[u8]> {
        let in_first_chunk = self.head_len() == 0
            && matches!(self.rope.first(), Some(Chunk::Bytes(b)) if b.len() >= n);
        if !in_first_chunk {
            if n > self.len() {
                return None;
            }
            self.make_contiguous(n, false);
        }
        if n <= self.head_len() {
            let s = self.start as usize;
            return Some(&self.head[s..s + n]);
        }
        match self.rope.first() {
            Some(c) => match c.as_ref() {
                ChunkRef::Bytes(b) => Some(&b[..n]),
                ChunkRef::Zeros(_) => unreachable!("made contiguous"),
            },
            None => unreachable!("made contiguous"),
        }
    }

    /// Returns the first `n` bytes as one mutable slice, or `None` if the
    /// message is shorter.
    ///
    /// Bytes already in the head are returned in place. Otherwise, for
    /// `n <= HEAD_ROOM`, they are copied into the head (copy-on-write: a
    /// shared payload is never written through); for larger `n` they are
    /// copied into an owned chunk.
    #[inline]
    pub fn front_mut(&mut self, n: usize) -> Option<&mut [u8]> {
        if n <= self.head_len() {
            let s = self.start as usize;
            return Some(&mut self.head[s..s + n]);
        }
        self.front_mut_slow(n)
    }

    /// The slow path of `front_mut`: the bytes are not all in the head.
    #[inline(never)]
    fn front_mut_slow(&mut self, n: usize) -> Option<&mut [u8]> {
        let in_first_chunk = self.head_len() == 0
            && matches!(self.rope.first(), Some(Chunk::Owned(o)) if o.len() >= n);
        if !in_first_chunk {
            if n > self.len() {
                return None;
            }
            self.make_contiguous(n, true);
        }
        if n <= self.head_len() {
            let s = self.start as usize;
            return Some(&mut self.head[s..s + n]);
        }
        match self.rope.first_mut() {
            Some(Chunk::Owned(o)) => Some(&mut o[..n]),
            _ => unreachable!("made contiguous"),
        }
    }

    /// Makes the first `n` bytes contiguous (`head_len < n <= len`): in the
    /// head when they fit, else in a new first chunk (owned when `owned`).
    fn make_contiguous(&mut self, n: usize, owned: bool) {
        let h = self.head_len();
        if n <= HEAD_ROOM {
            let s = self.start as usize;
            let ns = HEAD_ROOM - n;
            self.head.copy_within(s.., ns);
            rope_copy_prefix(&self.rope, &mut self.head[ns + h..]);
            rope_advance(&mut self.rope, n - h);
            self.start = ns as u8;
        } else {
            let mut v = vec![0; n];
            v[..h].copy_from_slice(self.head());
            rope_copy_prefix(&self.rope, &mut v[h..]);
            rope_advance(&mut self.rope, n - h);
            self.start = HEAD_ROOM as u8;
            let c = if owned {
                Chunk::Owned(v.into_boxed_slice())
            } else {
                Chunk::Bytes(Bytes::from(v))
            };
            self.rope.insert(0, c);
        }
    }

    /// Keeps the first `len` bytes and drops the rest; does nothing if the
    /// message is not longer than `len`.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return; // the common case: a datagram as long as its frame
        }
        let h = self.head_len();
        if len <= h {
            self.keep_head_prefix(len);
            self.rope.clear();
            return;
        }
        let mut keep = len - h;
        for i in 0..self.rope.len() {
            if keep == 0 {
                self.rope.truncate(i);
                return;
            }
            let l = self.rope[i].len();
            if l > keep {
                self.rope[i].truncate(keep);
                self.rope.truncate(i + 1);
                return;
            }
            keep -= l;
        }
    }

    /// Splits the message at `at`: `self` keeps `[0, at)` and the returned
    /// message holds `[at, len)`. Chunks are shared, not copied (head bytes
    /// after `at` are copied with the head array). If `at >= len`, `self` is
    /// unchanged and the result is empty.
    pub fn split_off(&mut self, at: usize) -> Message {
        let h = self.head_len();
        if at <= h {
            let tail = Message {
                head: self.head,
                start: self.start + at as u8,
                rope: mem::take(&mut self.rope),
            };
            self.keep_head_prefix(at);
            return tail;
        }
        let Some((i, off)) = rope_locate(&self.rope, at - h) else {
            return Message::new();
        };
        let mut tail = Message::new();
        if off > 0 {
            let second = self.rope[i].split_off(off);
            tail.rope.push(second);
            tail.rope.extend(self.rope.drain(i + 1..));
        } else {
            tail.rope.extend(self.rope.drain(i..));
        }
        tail
    }

    /// Returns the bytes in `range` as a new message sharing this one's
    /// chunks. Bounds beyond the length are clamped; an empty or inverted
    /// range gives an empty message.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Message {
        let total = self.len();
        let a = match range.start_bound() {
            Bound::Included(&x) => x,
            Bound::Excluded(&x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        }
        .min(total);
        let b = match range.end_bound() {
            Bound::Included(&x) => x.saturating_add(1),
            Bound::Excluded(&x) => x,
            Bound::Unbounded => total,
        }
        .min(total);
        let mut out = Message::new();
        if a >= b {
            return out;
        }
        let h = self.head_len();
        if a < h {
            let part = &self.head()[a..b.min(h)];
            let ns = HEAD_ROOM - part.len();
            out.head[ns..].copy_from_slice(part);
            out.start = ns as u8;
        }
        if b > h {
            let (ra, rb) = (a.saturating_sub(h), b - h);
            let mut pos = 0;
            for c in &self.rope {
                let end = pos + c.len();
                if end > ra && pos < rb {
                    let (from, to) = (ra.max(pos) - pos, rb.min(end) - pos);
                    out.rope.push(if from == 0 && to == c.len() {
                        c.clone()
                    } else {
                        c.slice(from..to)
                    });
                }
                if end >= rb {
                    break;
                }
                pos = end;
            }
        }
        out
    }

    /// Appends `other` after this message's bytes. Chunks move, they are not
    /// copied; `other`'s head bytes are copied into this head when both are
    /// head-only and fit, else into one new chunk. The total is clamped to
    /// [`MAX_LEN`].
    pub fn append(&mut self, mut other: Message) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let room = MAX_LEN.saturating_sub(self.len());
        if other.len() > room {
            other.truncate(room);
        }
        let oh = other.head_len();
        if oh > 0 {
            if self.rope.is_empty() && self.head_len() + oh <= HEAD_ROOM {
                let s = self.start as usize;
                self.head.copy_within(s.., s - oh);
                self.head[HEAD_ROOM - oh..].copy_from_slice(other.head());
                self.start = (s - oh) as u8;
            } else {
                self.push_chunk(Chunk::Bytes(Bytes::copy_from_slice(other.head())));
            }
        }
        for c in mem::take(&mut other.rope) {
            self.push_chunk(c);
        }
    }

    /// Appends a non-empty chunk, merging adjacent virtual zero runs.
    fn push_chunk(&mut self, c: Chunk) {
        if let (Some(Chunk::Zeros(last)), Chunk::Zeros(n)) = (self.rope.last_mut(), &c) {
            *last += n;
        } else if c.len() > 0 {
            self.rope.push(c);
        }
    }

    /// Appends virtual zero bytes until the message is `len` long (clamped
    /// to [`MAX_LEN`]); does nothing if it already is. No memory is
    /// allocated for the zeros.
    ///
    /// When the padded message fits in the head (an Ethernet frame padded to
    /// 60 bytes), its bytes are instead gathered into the head and the
    /// padding written as real zeros: copying at most [`HEAD_ROOM`] bytes is
    /// cheaper than the allocation a second rope chunk would cost, and the
    /// frame then clones and pops without touching the heap.
    pub fn pad_to(&mut self, len: usize) {
        let cur = self.len();
        let len = len.min(MAX_LEN);
        if len <= cur {
            return;
        }
        if len <= HEAD_ROOM {
            if cur > self.head_len() {
                self.make_contiguous(cur, false);
            }
            let s = self.start as usize;
            let ns = HEAD_ROOM - len;
            self.head.copy_within(s.., ns);
            self.head[ns + cur..].fill(0);
            self.start = ns as u8;
        } else {
            self.push_chunk(Chunk::Zeros(len - cur));
        }
    }

    /// Iterates over the pieces of the message in order: the head (if not
    /// empty), then each rope chunk. No piece is empty. Concatenated, with
    /// [`ChunkRef::Zeros`] read as zero bytes, they are the message.
    #[inline]
    pub fn chunks(&self) -> impl Iterator<Item = ChunkRef<'_>> {
        let head = self.head();
        (!head.is_empty())
            .then_some(ChunkRef::Bytes(head))
            .into_iter()
            .chain(self.rope.iter().map(Chunk::as_ref))
    }

    /// Calls `f` on each piece of the message in order, as
    /// [`Message::chunks`] yields them. The same pieces, in a plain loop:
    /// checksums over whole messages run this on every datagram, and the
    /// compiler makes tighter code of it than of the chained iterator.
    #[inline(always)]
    pub fn for_each_chunk<'a>(&'a self, mut f: impl FnMut(ChunkRef<'a>)) {
        let head = self.head();
        if !head.is_empty() {
            f(ChunkRef::Bytes(head));
        }
        for c in &self.rope {
            f(c.as_ref());
        }
    }

    /// Appends the message's bytes to `out`, writing virtual zeros out.
    pub fn copy_to_vec(&self, out: &mut Vec<u8>) {
        out.reserve(self.len());
        for c in self.chunks() {
            match c {
                ChunkRef::Bytes(b) => out.extend_from_slice(b),
                ChunkRef::Zeros(n) => out.resize(out.len() + n, 0),
            }
        }
    }

    /// Returns the message's bytes as a `Vec`, virtual zeros written out.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.copy_to_vec(&mut v);
        v
    }

    /// Returns the message's bytes as one `Bytes`: shared (no copy) when the
    /// message is exactly one real chunk, else a copy.
    pub fn to_bytes(&self) -> Bytes {
        if self.head_len() == 0 && self.rope.len() == 1 {
            if let Chunk::Bytes(b) = &self.rope[0] {
                return b.clone();
            }
        }
        if self.is_empty() {
            return Bytes::new();
        }
        Bytes::from(self.to_vec())
    }

    /// Copies `out.len()` bytes starting at `offset` into `out`.
    ///
    /// # Errors
    ///
    /// [`Truncated`] if the message has fewer than `offset + out.len()`
    /// bytes; `out` is then left unchanged.
    pub fn copy_to_slice(&self, offset: usize, out: &mut [u8]) -> Result<(), Truncated> {
        let end = offset.checked_add(out.len()).ok_or(Truncated)?;
        if end > self.len() {
            return Err(Truncated);
        }
        let mut skip = offset;
        let mut filled = 0;
        for c in self.chunks() {
            if filled == out.len() {
                break;
            }
            if skip >= c.len() {
                skip -= c.len();
                continue;
            }
            let c = c.skip(skip);
            skip = 0;
            let n = c.len().min(out.len() - filled);
            match c {
                ChunkRef::Bytes(b) => out[filled..filled + n].copy_from_slice(&b[..n]),
                ChunkRef::Zeros(_) => out[filled..filled + n].fill(0),
            }
            filled += n;
        }
        Ok(())
    }

    /// Returns the byte at index `i`, or `None` if `i >= len`.
    pub fn byte_at(&self, i: usize) -> Option<u8> {
        let mut b = [0u8];
        self.copy_to_slice(i, &mut b).ok().map(|()| b[0])
    }

    /// Flips one bit. `bit_index / 8` selects the byte and `bit_index % 8`
    /// the bit within it, most significant first (bit 0 is `0x80` of byte
    /// 0, as in RFC header diagrams). Does nothing if the bit is beyond the
    /// end.
    ///
    /// Head bytes are flipped in place. A shared chunk is never written
    /// through: it is modified in place only if this message is its sole
    /// owner; a short one is otherwise copied, a long one split so that only
    /// the flipped byte is new (a static one-byte slice: no allocation). A
    /// virtual zero run is split around the flipped byte, never
    /// materialized.
    pub fn flip_bit(&mut self, bit_index: usize) {
        let byte = bit_index / 8;
        let mask = 0x80u8 >> (bit_index % 8);
        let h = self.head_len();
        if byte < h {
            self.head[self.start as usize + byte] ^= mask;
            return;
        }
        let Some((i, off)) = rope_locate(&self.rope, byte - h) else {
            return;
        };
        let flipped = match &mut self.rope[i] {
            Chunk::Owned(o) => {
                o[off] ^= mask;
                return;
            }
            Chunk::Bytes(b) => match mem::take(b).try_into_mut() {
                Ok(mut unique) => {
                    unique[off] ^= mask;
                    *b = unique.freeze();
                    return;
                }
                Err(shared) if shared.len() <= FLIP_COPY_MAX => {
                    let mut v = shared.to_vec();
                    v[off] ^= mask;
                    *b = Bytes::from(v);
                    return;
                }
                Err(shared) => {
                    let v = shared[off] ^ mask;
                    *b = shared;
                    v
                }
            },
            Chunk::Zeros(_) => mask,
        };
        // Replace chunk i by [..off] ++ [flipped] ++ [off + 1..], sharing
        // the outer parts.
        let c = &self.rope[i];
        let len = c.len();
        let mut parts: SmallVec<[Chunk; 3]> = SmallVec::new();
        if off > 0 {
            parts.push(c.slice(0..off));
        }
        let v = flipped as usize;
        parts.push(Chunk::Bytes(Bytes::from_static(&ALL_BYTES[v..v + 1])));
        if off + 1 < len {
            parts.push(c.slice(off + 1..len));
        }
        let mut parts = parts.into_iter();
        self.rope[i] = parts.next().expect("at least the flipped byte");
        self.rope.insert_many(i + 1, parts);
    }
}

/// Returns the chunk index and offset within it of byte `off` of the rope,
/// or `None` if `off` is beyond the end.
fn rope_locate(rope: &Rope, mut off: usize) -> Option<(usize, usize)> {
    for (i, c) in rope.iter().enumerate() {
        if off < c.len() {
            return Some((i, off));
        }
        off -= c.len();
    }
    None
}

/// Drops the first `n` bytes of the rope (`n <= rope length`).
fn rope_advance(rope: &mut Rope, n: usize) {
    let mut rem = n;
    let mut whole = 0;
    while rem > 0 && rope[whole].len() <= rem {
        rem -= rope[whole].len();
        whole += 1;
    }
    rope.drain(..whole);
    if rem > 0 {
        rope[0].advance(rem);
    }
}

/// Fills `out` with the first `out.len()` bytes of the rope (which has at
/// least that many).
fn rope_copy_prefix(rope: &Rope, out: &mut [u8]) {
    let mut filled = 0;
    for c in rope {
        if filled == out.len() {
            break;
        }
        let n = c.len().min(out.len() - filled);
        match c.as_ref() {
            ChunkRef::Bytes(b) => out[filled..filled + n].copy_from_slice(&b[..n]),
            ChunkRef::Zeros(_) => out[filled..filled + n].fill(0),
        }
        filled += n;
    }
}

/// Compares two piece sequences of equal total length by content.
fn pieces_eq<'a, 'b>(
    a: impl Iterator<Item = ChunkRef<'a>>,
    b: impl Iterator<Item = ChunkRef<'b>>,
) -> bool {
    let mut a = a.filter(|c| !c.is_empty());
    let mut b = b.filter(|c| !c.is_empty());
    let (mut x, mut y) = (a.next(), b.next());
    loop {
        match (x, y) {
            (None, None) => return true,
            (Some(p), Some(q)) => {
                let n = p.len().min(q.len());
                if !p.prefix_eq(q, n) {
                    return false;
                }
                x = if n == p.len() {
                    a.next()
                } else {
                    Some(p.skip(n))
                };
                y = if n == q.len() {
                    b.next()
                } else {
                    Some(q.skip(n))
                };
            }
            _ => return false,
        }
    }
}

impl PartialEq for Message {
    /// Compares content: virtual zeros equal real zero bytes, and how the
    /// bytes are split into chunks does not matter.
    fn eq(&self, other: &Message) -> bool {
        self.len() == other.len() && pieces_eq(self.chunks(), other.chunks())
    }
}

impl Eq for Message {}

impl PartialEq<[u8]> for Message {
    fn eq(&self, other: &[u8]) -> bool {
        self.len() == other.len()
            && pieces_eq(self.chunks(), std::iter::once(ChunkRef::Bytes(other)))
    }
}

impl PartialEq<&[u8]> for Message {
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

impl PartialEq<Vec<u8>> for Message {
    fn eq(&self, other: &Vec<u8>) -> bool {
        *self == other[..]
    }
}

impl fmt::Debug for Message {
    /// Prints the length, the number of pieces and up to 16 leading bytes in
    /// hex, e.g. `Message(len=46, chunks=2, 00 11 22 ..)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        let len = self.len();
        write!(f, "Message(len={len}, chunks={}", self.chunk_count())?;
        let mut buf = [0u8; SHOWN];
        let n = len.min(SHOWN);
        if self.copy_to_slice(0, &mut buf[..n]).is_ok() {
            for (i, b) in buf[..n].iter().enumerate() {
                f.write_str(if i == 0 { ", " } else { " " })?;
                write!(f, "{b:02x}")?;
            }
        }
        if len > SHOWN {
            f.write_str(" ..")?;
        }
        f.write_str(")")
    }
}

impl From<Bytes> for Message {
    fn from(b: Bytes) -> Message {
        Message::from_bytes(b)
    }
}

impl From<Vec<u8>> for Message {
    fn from(v: Vec<u8>) -> Message {
        Message::from_vec(v)
    }
}

impl From<&'static [u8]> for Message {
    fn from(s: &'static [u8]) -> Message {
        Message::from_static(s)
    }
}

#[cfg(test)]
mod tests;
