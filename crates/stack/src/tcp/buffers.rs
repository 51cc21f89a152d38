//! TCP's byte buffers: the send rope, the receive queue with out-of-order
//! reassembly, and the sender's SACK scoreboard.
//!
//! The receive queue also reports what a segment duplicated
//! ([`RecvBuffer::insert_reporting`] fills a [`Duplicate`]), the range a
//! DSACK block names (RFC 2883); the in-order path it keeps cheap can
//! hold no duplicate, so it pays nothing for this.
//!
//! All three hold [`Message`]s and slice or append them, so payload bytes
//! are never copied (and a virtual payload stays virtual end to end).
//!
//! Each costs one pointer while empty: the queues are allocated when the
//! first bytes arrive and freed when the last leave (acknowledged, or
//! SACK state forgotten; a drained receive queue when the TCB sees the
//! sender pause, [`RecvBuffer::release_if_empty`]), so an idle connection
//! holds no buffer memory beyond its three words (an empty `VecDeque`
//! keeps its capacity, which for `Message`s is 608 bytes after the first
//! use).

use elvis_message::{ChunkRef, Message};
use elvis_wire::tcp::SeqNumber;
use std::collections::VecDeque;

/// Bytes written by the application and not yet acknowledged, from
/// `snd_una` on.
///
/// Bulk senders write many pieces, so the buffer can hold thousands of
/// chunks; [`SendBuffer::slice`] starts from a cursor left by the previous
/// call (sends move forward through the buffer) instead of walking from
/// the front, which keeps it O(1) per segment.
#[derive(Default)]
pub struct SendBuffer {
    /// The queue while it holds bytes.
    q: Option<Box<SendQueue>>,
}

impl SendBuffer {
    /// Returns the bytes held.
    #[inline]
    pub fn len(&self) -> usize {
        self.q.as_ref().map_or(0, |q| q.len)
    }

    /// Returns true when no byte is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `m`.
    #[inline]
    pub fn push(&mut self, m: Message) {
        if !m.is_empty() {
            self.q.get_or_insert_with(Default::default).push(m);
        }
    }

    /// Returns `len` bytes starting `offset` bytes after the front (shared,
    /// not copied). Short if the buffer ends first.
    #[inline]
    pub fn slice(&mut self, offset: usize, len: usize) -> Message {
        match self.q.as_deref_mut() {
            Some(q) => q.slice(offset, len),
            None => Message::new(),
        }
    }

    /// Drops `n` acknowledged bytes from the front; frees the queue once
    /// empty.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        if let Some(q) = self.q.as_deref_mut() {
            q.consume(n);
            if q.len == 0 {
                self.q = None;
            }
        }
    }
}

/// The chunks of a non-empty [`SendBuffer`].
#[derive(Default)]
struct SendQueue {
    chunks: VecDeque<Message>,
    len: usize,
    /// (index of a chunk, bytes before it): where the last slice started.
    cursor: (usize, usize),
}

impl SendQueue {
    /// Appends `m` (not empty).
    fn push(&mut self, m: Message) {
        self.len += m.len();
        // Virtual zeros after virtual zeros: one longer run, so that a bulk
        // sender's many writes stay one chunk and segments never straddle
        // two (which would cost the segment a second rope chunk).
        if let Some(back) = self.chunks.back_mut() {
            if is_virtual(back) && is_virtual(&m) {
                back.append(m);
                return;
            }
        }
        self.chunks.push_back(m);
    }

    fn slice(&mut self, offset: usize, len: usize) -> Message {
        let (mut idx, mut before) = self.cursor;
        if before > offset || idx >= self.chunks.len() {
            (idx, before) = (0, 0);
        }
        // Move to the chunk holding `offset`.
        while let Some(c) = self.chunks.get(idx) {
            if before + c.len() > offset {
                break;
            }
            before += c.len();
            idx += 1;
        }
        self.cursor = (idx, before);
        let mut skip = offset - before;
        // The common case: the whole slice lies in one chunk.
        if let Some(c) = self.chunks.get(idx) {
            if skip + len <= c.len() {
                return c.slice(skip..skip + len);
            }
        }
        let mut out = Message::new();
        let mut want = len;
        for c in self.chunks.range(idx..) {
            if want == 0 {
                break;
            }
            let take = (c.len() - skip).min(want);
            if skip == 0 && take == c.len() {
                out.append(c.clone());
            } else {
                out.append(c.slice(skip..skip + take));
            }
            want -= take;
            skip = 0;
        }
        out
    }

    fn consume(&mut self, mut n: usize) {
        n = n.min(self.len);
        self.len -= n;
        let (mut idx, mut before) = self.cursor;
        while n > 0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            if front.len() <= n {
                n -= front.len();
                if idx > 0 {
                    idx -= 1;
                    before -= front.len();
                }
                self.chunks.pop_front();
            } else {
                let _ = front.pop_front(n);
                if idx > 0 {
                    before -= n;
                }
                n = 0;
            }
        }
        self.cursor = (idx, before);
    }
}

/// Returns true if `m` is one run of virtual zeros.
fn is_virtual(m: &Message) -> bool {
    let mut pieces = m.chunks();
    matches!(
        (pieces.next(), pieces.next()),
        (Some(ChunkRef::Zeros(_)), None)
    )
}

/// Data received in order (for the application) and out of order (waiting
/// for a hole to fill).
#[derive(Default)]
pub struct RecvBuffer {
    /// The queues while they hold bytes.
    q: Option<Box<RecvQueue>>,
}

impl RecvBuffer {
    /// Returns the in-order bytes waiting for the application.
    #[inline]
    pub fn ready_len(&self) -> usize {
        self.q.as_ref().map_or(0, |q| q.ready_len)
    }

    /// Returns all bytes held (in order and out of order).
    #[inline]
    pub fn held(&self) -> usize {
        self.q.as_ref().map_or(0, |q| q.held())
    }

    /// Takes up to `max` in-order bytes. A drained queue is kept (a
    /// reader that keeps up drains it after every segment; freeing it
    /// there would cost two allocations per segment):
    /// [`RecvBuffer::release_if_empty`] frees it when the sender pauses.
    #[inline]
    pub fn take(&mut self, max: usize) -> Message {
        match self.q.as_deref_mut() {
            Some(q) => q.take(max),
            None => Message::new(),
        }
    }

    /// Frees the queues if they hold nothing.
    #[inline]
    pub fn release_if_empty(&mut self) {
        self.tidy();
    }

    /// Returns true while the queues are allocated.
    #[cfg(test)]
    #[inline]
    pub fn is_allocated(&self) -> bool {
        self.q.is_some()
    }

    /// Adds a segment's data starting at `seq`; `rcv_nxt` is the next
    /// expected sequence number. Returns the new `rcv_nxt`.
    #[inline]
    pub fn insert(&mut self, rcv_nxt: SeqNumber, seq: SeqNumber, data: Message) -> SeqNumber {
        self.insert_reporting(rcv_nxt, seq, data, &mut Duplicate::default())
    }

    /// [`RecvBuffer::insert`], noting in `dup` the bytes of the segment
    /// that were already here (below `rcv_nxt` or held out of order),
    /// lowest first ([`Duplicate::note`]).
    #[inline]
    pub fn insert_reporting(
        &mut self,
        rcv_nxt: SeqNumber,
        seq: SeqNumber,
        data: Message,
        dup: &mut Duplicate,
    ) -> SeqNumber {
        if data.is_empty() {
            return rcv_nxt;
        }
        let q = self.q.get_or_insert_with(Default::default);
        if seq == rcv_nxt && q.ooo.is_none() {
            // The common case, here so that the payload moves once (and
            // nothing here can be a duplicate).
            let next = rcv_nxt + data.len();
            q.push_ready(data);
            return next;
        }
        let next = q.insert(rcv_nxt, seq, data, dup);
        self.tidy();
        next
    }

    /// Notes that the segment at `seq` arrived out of order (it leads the
    /// next SACK blocks).
    #[inline]
    pub fn note_out_of_order(&mut self, seq: SeqNumber) {
        if let Some(q) = self.q.as_deref_mut() {
            q.note_out_of_order(seq);
        }
    }

    /// Returns true while data is held out of order (there are SACK
    /// blocks to send).
    #[inline]
    pub fn has_out_of_order(&self) -> bool {
        self.q.as_ref().is_some_and(|q| q.ooo.is_some())
    }

    /// Returns up to `n` (at most 4) out-of-order ranges for SACK blocks
    /// (`RecvQueue::sack_blocks`).
    #[inline]
    pub fn sack_blocks(&self, n: usize) -> SackBlocks {
        match self.q.as_deref() {
            Some(q) => q.sack_blocks(n),
            None => [None; 4], // the common case: nothing to report
        }
    }

    /// Frees the queues once they hold nothing.
    fn tidy(&mut self) {
        if self
            .q
            .as_ref()
            .is_some_and(|q| q.ready.is_empty() && q.ooo.is_none())
        {
            self.q = None;
        }
    }
}

/// Up to four SACK blocks (as many as 40 bytes of TCP options hold, RFC
/// 2018 §3), in the order sent, `None` after the last: a value, so that
/// building an ACK allocates nothing.
pub type SackBlocks = [Option<(SeqNumber, SeqNumber)>; 4];

/// The duplicate range a DSACK block reports (RFC 2883 §4): the first
/// (lowest) run of already-received bytes a segment carried, grown by
/// later runs that overlap or touch it and not by others: "each duplicate
/// contiguous sequence of data received is reported in at most one D-SACK
/// block", and of several non-contiguous ones only the first is reported
/// (§4.2.2, §4.2.3). This is Linux's `tcp_dsack_set` followed by
/// `tcp_dsack_extend` / `tcp_sack_extend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Duplicate(Option<(SeqNumber, SeqNumber)>);

impl Duplicate {
    /// Nothing duplicated.
    pub const NONE: Duplicate = Duplicate(None);

    /// Notes that `[start, end)` was already received (nothing if empty).
    pub fn note(&mut self, start: SeqNumber, end: SeqNumber) {
        if end <= start {
            return;
        }
        match &mut self.0 {
            None => self.0 = Some((start, end)),
            // Linux's `tcp_sack_extend`: overlapping or adjacent.
            Some((s, e)) if start <= *e && *s <= end => {
                *s = (*s).min(start);
                *e = (*e).max(end);
            }
            Some(_) => {}
        }
    }

    /// Returns the range noted, if any.
    pub fn range(self) -> Option<(SeqNumber, SeqNumber)> {
        self.0
    }
}

/// The queues of a non-empty [`RecvBuffer`].
#[derive(Default)]
struct RecvQueue {
    ready: VecDeque<Message>,
    ready_len: usize,
    /// Out-of-order segments, allocated while there are some (most
    /// connections never reorder: they pay one pointer).
    ooo: Option<Box<Reassembly>>,
}

/// Out-of-order segments: (first sequence number, data), sorted, not
/// overlapping, and their total length.
#[derive(Default)]
struct Reassembly {
    segs: Vec<(SeqNumber, Message)>,
    len: usize,
    /// The latest out-of-order segments, most recent first (the order of
    /// SACK blocks, RFC 2018 §4); forgotten with the segments.
    recent: [Option<SeqNumber>; 4],
}

impl RecvQueue {
    /// Returns all bytes held (in order and out of order).
    fn held(&self) -> usize {
        self.ready_len + self.ooo.as_ref().map_or(0, |o| o.len)
    }

    /// Takes up to `max` in-order bytes.
    #[inline]
    fn take(&mut self, max: usize) -> Message {
        // The common case: the reader takes all that is ready, one piece.
        if self.ready.len() == 1 && self.ready_len <= max {
            self.ready_len = 0;
            return self.ready.pop_front().unwrap_or_default();
        }
        let mut out = Message::new();
        let mut want = max;
        while want > 0 {
            let Some(mut front) = self.ready.pop_front() else {
                break;
            };
            if front.len() > want {
                let rest = front.split_off(want);
                self.ready.push_front(rest);
            }
            want -= front.len();
            self.ready_len -= front.len();
            if out.is_empty() {
                out = front;
            } else {
                out.append(front);
            }
        }
        out
    }

    /// Adds a segment's data starting at `seq`; `rcv_nxt` is the next
    /// expected sequence number. Returns the new `rcv_nxt`.
    /// Notes in `dup` the bytes that were already here.
    fn insert(
        &mut self,
        rcv_nxt: SeqNumber,
        seq: SeqNumber,
        mut data: Message,
        dup: &mut Duplicate,
    ) -> SeqNumber {
        // Trim what was already received.
        if seq < rcv_nxt {
            let old = ((rcv_nxt - seq) as usize).min(data.len());
            dup.note(seq, seq + old);
            if old == data.len() {
                return rcv_nxt;
            }
            let _ = data.pop_front(old);
            return self.insert(rcv_nxt, rcv_nxt, data, dup);
        }
        if seq == rcv_nxt {
            let mut next = rcv_nxt + data.len();
            self.push_ready(data);
            if self.ooo.is_some() {
                next = self.pull_contiguous(next, dup);
            }
            return next;
        }
        self.insert_ooo(seq, data, dup);
        rcv_nxt
    }

    /// Moves the out-of-order segments that `next` reaches to the ready
    /// queue (noting in `dup` the part of them `next` already covered);
    /// frees the reassembly state once empty. Returns the new `rcv_nxt`.
    fn pull_contiguous(&mut self, mut next: SeqNumber, dup: &mut Duplicate) -> SeqNumber {
        let Some(ooo) = self.ooo.as_deref_mut() else {
            return next;
        };
        while let Some((s, _)) = ooo.segs.first() {
            if *s > next {
                break;
            }
            let (s, mut d) = ooo.segs.remove(0);
            ooo.len -= d.len();
            let old = ((next - s) as usize).min(d.len());
            dup.note(s, s + old);
            if old < d.len() {
                let _ = d.pop_front(old);
                next += d.len();
                self.ready_len += d.len();
                self.ready.push_back(d);
            }
        }
        if ooo.segs.is_empty() {
            self.ooo = None;
        }
        next
    }

    #[inline]
    fn push_ready(&mut self, d: Message) {
        if !d.is_empty() {
            self.ready_len += d.len();
            self.ready.push_back(d);
        }
    }

    /// Stores an out-of-order segment, keeping only bytes not held yet
    /// (and noting those in `dup`).
    fn insert_ooo(&mut self, mut seq: SeqNumber, mut data: Message, dup: &mut Duplicate) {
        let ooo = self.ooo.get_or_insert_with(Default::default);
        let mut i = 0;
        while i < ooo.segs.len() && !data.is_empty() {
            let (s, ref d) = ooo.segs[i];
            let e = s + d.len();
            if e <= seq {
                i += 1;
                continue;
            }
            if seq + data.len() <= s {
                break;
            }
            if seq < s {
                // Keep the part before this segment, continue with the rest.
                let head_len = (s - seq) as usize;
                let rest = data.split_off(head_len);
                ooo.len += data.len();
                ooo.segs.insert(i, (seq, data));
                i += 2;
                data = rest;
                seq = s;
            }
            // Drop the overlap with [s, e).
            let overlap = ((e - seq) as usize).min(data.len());
            dup.note(seq, seq + overlap);
            let _ = data.pop_front(overlap);
            seq += overlap;
        }
        if !data.is_empty() {
            let pos = ooo.segs.partition_point(|(s, _)| *s < seq);
            ooo.len += data.len();
            ooo.segs.insert(pos, (seq, data));
        }
        if ooo.segs.is_empty() {
            self.ooo = None;
        }
    }

    fn note_out_of_order(&mut self, seq: SeqNumber) {
        if let Some(o) = self.ooo.as_deref_mut() {
            o.recent.rotate_right(1);
            o.recent[0] = Some(seq);
        }
    }

    /// Returns up to `n` out-of-order ranges (for SACK blocks): first the
    /// ones holding the most recent out-of-order segments (most recent first, so
    /// the block of the segment that triggered this ACK leads), then the
    /// rest in sequence order. RFC 2018 §4: "The first SACK block ... MUST
    /// specify the contiguous block of data containing the segment which
    /// triggered this ACK"; the others SHOULD repeat "the most recently
    /// reported SACK blocks".
    fn sack_blocks(&self, n: usize) -> SackBlocks {
        let mut out: SackBlocks = [None; 4];
        let Some(ooo) = self.ooo.as_deref() else {
            return out;
        };
        // One pass over the runs: the run holding each recent segment, and
        // the first four runs holding none.
        let mut holding: SackBlocks = [None; 4];
        let mut rest: SackBlocks = [None; 4];
        let mut n_rest = 0;
        let mut unresolved = ooo.recent.iter().flatten().count();
        for (s, e) in ooo.ranges() {
            // `f` lies in [s, e) iff its distance from `s` is below the
            // run's length (modulo 2^32, so across the wrap too).
            let width = e.0.wrapping_sub(s.0);
            let mut recent = false;
            for (j, f) in ooo.recent.iter().enumerate() {
                if let Some(f) = f {
                    if f.0.wrapping_sub(s.0) < width {
                        holding[j] = Some((s, e));
                        recent = true;
                        unresolved -= 1;
                    }
                }
            }
            if !recent && n_rest < rest.len() {
                rest[n_rest] = Some((s, e));
                n_rest += 1;
            }
            if n_rest == rest.len() && unresolved == 0 {
                break;
            }
        }
        let n = n.min(out.len());
        let mut k = 0;
        for r in holding.into_iter().chain(rest).flatten() {
            if k == n {
                break;
            }
            if !out[..k].contains(&Some(r)) {
                out[k] = Some(r);
                k += 1;
            }
        }
        out
    }
}

impl Reassembly {
    /// Returns the runs of contiguous segments (the SACK ranges), in
    /// sequence order.
    fn ranges(&self) -> impl Iterator<Item = (SeqNumber, SeqNumber)> + '_ {
        let mut i = 0;
        std::iter::from_fn(move || {
            let start = self.segs.get(i)?.0;
            let mut end = start;
            while let Some((s, d)) = self.segs.get(i) {
                if *s != end {
                    break;
                }
                end = *s + d.len();
                i += 1;
            }
            Some((start, end))
        })
    }
}

/// The sender's record of what the receiver reported with SACK
/// (RFC 2018, RFC 6675 §3), as merged ranges above `snd_una`; allocated
/// while there are some (one pointer for a connection without loss).
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    // A boxed Vec on purpose: one word in every TCB, not three.
    #[allow(clippy::box_collection)]
    ranges: Option<Box<Vec<(SeqNumber, SeqNumber)>>>,
}

impl Scoreboard {
    /// No SACK information.
    pub const EMPTY: Scoreboard = Scoreboard { ranges: None };

    /// Returns true when nothing is SACKed.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_none()
    }

    fn ranges(&self) -> &[(SeqNumber, SeqNumber)] {
        self.ranges.as_deref().map_or(&[], |r| &r[..])
    }

    /// Adds a SACK block, ignoring anything at or below `snd_una` or beyond
    /// `snd_nxt` (a bogus block).
    pub fn add(&mut self, una: SeqNumber, nxt: SeqNumber, mut s: SeqNumber, mut e: SeqNumber) {
        if s < una {
            s = una;
        }
        if e > nxt {
            e = nxt;
        }
        if e <= s {
            return;
        }
        let ranges = self.ranges.get_or_insert_with(Default::default);
        ranges.push((s, e));
        ranges.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        let mut merged: Vec<(SeqNumber, SeqNumber)> = Vec::with_capacity(ranges.len());
        for &(s, e) in ranges.iter() {
            match merged.last_mut() {
                Some(last) if s <= last.1 => {
                    if e > last.1 {
                        last.1 = e;
                    }
                }
                _ => merged.push((s, e)),
            }
        }
        **ranges = merged;
    }

    /// Forgets everything below `una`.
    pub fn advance(&mut self, una: SeqNumber) {
        let Some(ranges) = self.ranges.as_deref_mut() else {
            return;
        };
        ranges.retain(|r| r.1 > una);
        for r in ranges.iter_mut() {
            if r.0 < una {
                r.0 = una;
            }
        }
        if ranges.is_empty() {
            // Recovery is over: an idle connection holds no heap.
            self.ranges = None;
        }
    }

    /// Forgets everything (after a timeout, RFC 6675 §5.1 allows it).
    pub fn clear(&mut self) {
        self.ranges = None;
    }

    /// Returns the bytes SACKed.
    pub fn sacked_bytes(&self) -> usize {
        self.ranges().iter().map(|(s, e)| (*e - *s) as usize).sum()
    }

    /// Returns the highest SACKed sequence number, if any.
    pub fn highest(&self) -> Option<SeqNumber> {
        self.ranges().last().map(|r| r.1)
    }

    /// Returns the SACKed bytes in `[from, to)`.
    pub fn sacked_between(&self, from: SeqNumber, to: SeqNumber) -> usize {
        self.ranges()
            .iter()
            .map(|&(s, e)| {
                let (s, e) = (if s < from { from } else { s }, if e > to { to } else { e });
                (e - s).max(0) as usize
            })
            .sum()
    }

    /// Returns the first sequence number at or after `at` that is not
    /// SACKed, and the start of the SACKed range after it (`None`: none
    /// above).
    pub fn skip_sacked(&self, at: SeqNumber) -> (SeqNumber, Option<SeqNumber>) {
        let mut at = at;
        for &(s, e) in self.ranges() {
            if e <= at {
                continue;
            }
            if s > at {
                return (at, Some(s));
            }
            at = e;
        }
        (at, None)
    }

    /// Returns the first un-SACKed hole at or after `from` and below the
    /// highest SACKed byte, as (start, length).
    pub fn next_hole(&self, from: SeqNumber) -> Option<(SeqNumber, usize)> {
        let mut at = from;
        for (s, e) in self.ranges() {
            if *e <= at {
                continue;
            }
            if *s > at {
                return Some((at, (*s - at) as usize));
            }
            at = *e;
        }
        None
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn m(bytes: &[u8]) -> Message {
        Message::from_vec(bytes.to_vec())
    }

    #[test]
    fn buffers_hold_no_queue_once_emptied() {
        assert_eq!(std::mem::size_of::<SendBuffer>(), 8);
        assert_eq!(std::mem::size_of::<RecvBuffer>(), 8);
        let mut snd = SendBuffer::default();
        snd.push(m(b"hello"));
        snd.push(m(b" world"));
        assert!(snd.q.is_some());
        assert_eq!(snd.slice(3, 5).to_vec(), b"lo wo");
        snd.consume(4);
        assert!(snd.q.is_some(), "7 bytes still queued");
        snd.consume(7);
        assert!(snd.q.is_none() && snd.is_empty());
        assert!(snd.slice(0, 4).is_empty());
        let mut rcv = RecvBuffer::default();
        let s = SeqNumber(100);
        // Out of order first, then the hole: both queues, then none.
        assert_eq!(rcv.insert(s, s + 3, m(b"def")), s);
        assert!(rcv.q.is_some() && rcv.ready_len() == 0 && rcv.held() == 3);
        assert_eq!(rcv.insert(s, s, m(b"abc")), s + 6);
        assert_eq!(rcv.take(4).to_vec(), b"abcd");
        assert!(rcv.q.is_some());
        assert_eq!(rcv.take(10).to_vec(), b"ef");
        assert!(rcv.q.is_some() && rcv.held() == 0, "kept while data flows");
        rcv.release_if_empty();
        assert!(rcv.q.is_none());
        // A duplicate allocates nothing that stays.
        assert_eq!(rcv.insert(s + 6, s, m(b"abc")), s + 6);
        assert!(rcv.q.is_none());
    }

    #[test]
    fn send_buffer_slices_across_chunks_and_consumes_acked_bytes() {
        let mut b = SendBuffer::default();
        b.push(m(b"hello "));
        b.push(m(b"world"));
        assert_eq!(b.slice(3, 6).to_vec(), b"lo wor");
        b.consume(4);
        assert_eq!(b.len(), 7);
        assert_eq!(b.slice(0, 100).to_vec(), b"o world");
    }

    #[test]
    fn send_buffer_slices_match_a_flat_copy_under_pushes_slices_and_consumes() {
        // A plain byte vector is the reference model; the cursor must never
        // change what a slice returns, whatever the order of calls.
        let mut b = SendBuffer::default();
        let mut model: Vec<u8> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut byte = 0u8;
        for _ in 0..2000 {
            match next() % 4 {
                0 => {
                    let n = (next() % 40) as usize;
                    let piece: Vec<u8> = (0..n)
                        .map(|_| {
                            byte = byte.wrapping_add(1);
                            byte
                        })
                        .collect();
                    model.extend_from_slice(&piece);
                    b.push(m(&piece));
                }
                1 => {
                    let n = (next() % 30) as usize;
                    b.consume(n);
                    model.drain(..n.min(model.len()));
                }
                _ => {
                    let off = (next() % (model.len() as u64 + 5)) as usize;
                    let len = (next() % 50) as usize;
                    let end = (off + len).min(model.len());
                    let want = if off < end { &model[off..end] } else { &[][..] };
                    assert_eq!(b.slice(off, len).to_vec(), want);
                }
            }
            assert_eq!(b.len(), model.len());
        }
    }

    #[test]
    fn out_of_order_segments_are_reassembled_when_the_hole_fills() {
        let mut r = RecvBuffer::default();
        let base = SeqNumber(u32::MAX - 3); // across the wrap
        let mut nxt = base;
        nxt = r.insert(nxt, base + 6, m(b"ghi"));
        nxt = r.insert(nxt, base + 3, m(b"def"));
        assert_eq!(nxt, base);
        assert_eq!(
            r.sack_blocks(4),
            [Some((base + 3, base + 9)), None, None, None]
        );
        nxt = r.insert(nxt, base, m(b"abc"));
        assert_eq!(nxt, base + 9);
        assert_eq!(r.take(100).to_vec(), b"abcdefghi");
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn overlapping_and_duplicate_segments_keep_each_byte_once() {
        let mut r = RecvBuffer::default();
        let base = SeqNumber(1000);
        let mut nxt = base;
        nxt = r.insert(nxt, base + 4, m(b"efgh"));
        nxt = r.insert(nxt, base + 2, m(b"cdefghij"));
        nxt = r.insert(nxt, base + 4, m(b"efgh"));
        nxt = r.insert(nxt, base, m(b"abcd"));
        nxt = r.insert(nxt, base, m(b"abcd"));
        assert_eq!(nxt, base + 10);
        assert_eq!(r.take(100).to_vec(), b"abcdefghij");
    }

    #[test]
    fn a_duplicate_range_grows_over_adjacent_runs_but_not_over_disjoint_ones() {
        let s = |n: u32| SeqNumber(u32::MAX - 100) + n as usize;
        let mut d = Duplicate::default();
        d.note(s(50), s(50));
        assert_eq!(d.range(), None, "an empty run is no duplicate");
        d.note(s(100), s(200));
        d.note(s(200), s(250)); // adjacent (across the wrap)
        d.note(s(90), s(120)); // overlapping
        d.note(s(300), s(400)); // disjoint: not reported (RFC 2883 §4.2.2)
        assert_eq!(d.range(), Some((s(90), s(250))));
    }

    #[test]
    fn the_receive_queue_reports_what_a_segment_duplicated() {
        let base = SeqNumber(5000);
        let mut r = RecvBuffer::default();
        let mut nxt = r.insert(base, base, m(b"0123"));
        // Out of order [8, 12) and [14, 16).
        nxt = r.insert(nxt, base + 8, m(b"89ab"));
        nxt = r.insert(nxt, base + 14, m(b"ef"));
        let mut d = Duplicate::default();
        // [2, 16): old [2, 4), new [4, 8), held [8, 12), new [12, 14),
        // held [14, 16): the first run is the one reported.
        nxt = r.insert_reporting(nxt, base + 2, m(b"23456789abcdef"), &mut d);
        assert_eq!(nxt, base + 16);
        assert_eq!(d.range(), Some((base + 2, base + 4)));
        assert_eq!(r.take(100).to_vec(), b"0123456789abcdef");
        // Entirely held out of order.
        let mut d = Duplicate::default();
        nxt = r.insert(nxt, base + 20, m(b"klmn"));
        let _ = r.insert_reporting(nxt, base + 21, m(b"lm"), &mut d);
        assert_eq!(d.range(), Some((base + 21, base + 23)));
        // New data only: nothing.
        let mut d = Duplicate::default();
        let _ = r.insert_reporting(nxt, base + 16, m(b"ghij"), &mut d);
        assert_eq!(d.range(), None);
    }

    /// The SACK blocks as first written (with vectors): merge the
    /// segments into ranges, take the ones holding the recent segments,
    /// then the rest in order.
    fn reference_sack_blocks(q: &RecvQueue, n: usize) -> Vec<(SeqNumber, SeqNumber)> {
        let Some(ooo) = q.ooo.as_deref() else {
            return Vec::new();
        };
        let mut ranges: Vec<(SeqNumber, SeqNumber)> = Vec::new();
        for (s, d) in &ooo.segs {
            let e = *s + d.len();
            match ranges.last_mut() {
                Some(last) if last.1 == *s => last.1 = e,
                _ => ranges.push((*s, e)),
            }
        }
        let mut out = Vec::new();
        for f in ooo.recent.iter().flatten() {
            if let Some(i) = ranges.iter().position(|(s, e)| *s <= *f && *f < *e) {
                out.push(ranges.remove(i));
            }
        }
        out.extend(ranges);
        out.truncate(n);
        out
    }

    #[test]
    fn sack_blocks_match_the_reference_under_random_arrivals() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let base = SeqNumber(u32::MAX - 500); // across the wrap
            let mut r = RecvBuffer::default();
            let mut nxt = base;
            for _ in 0..40 {
                let seq = nxt + next(60) as usize * 10 + 10 * usize::from(next(4) == 0);
                let len = 1 + next(30) as usize;
                let in_order = seq <= nxt;
                nxt = r.insert(nxt, seq, Message::zeros(len as u64));
                if !in_order {
                    r.note_out_of_order(seq);
                }
                let Some(q) = r.q.as_deref() else { continue };
                for n in 1..=4 {
                    let want = reference_sack_blocks(q, n);
                    let got: Vec<_> = r.sack_blocks(n).into_iter().flatten().collect();
                    assert_eq!(got, want, "n = {n}");
                }
            }
        }
    }

    #[test]
    fn scoreboard_merges_blocks_and_finds_holes() {
        let mut s = Scoreboard::default();
        let una = SeqNumber(100);
        let nxt = SeqNumber(1000);
        s.add(una, nxt, SeqNumber(300), SeqNumber(400));
        s.add(una, nxt, SeqNumber(400), SeqNumber(500));
        s.add(una, nxt, SeqNumber(700), SeqNumber(800));
        assert_eq!(s.sacked_bytes(), 300);
        assert_eq!(s.next_hole(una), Some((SeqNumber(100), 200)));
        assert_eq!(s.next_hole(SeqNumber(300)), Some((SeqNumber(500), 200)));
        assert_eq!(s.next_hole(SeqNumber(750)), None);
        assert_eq!(s.sacked_between(SeqNumber(350), SeqNumber(750)), 200);
        assert_eq!(s.skip_sacked(una), (una, Some(SeqNumber(300))));
        assert_eq!(
            s.skip_sacked(SeqNumber(300)),
            (SeqNumber(500), Some(SeqNumber(700)))
        );
        assert_eq!(s.skip_sacked(SeqNumber(750)), (SeqNumber(800), None));
        s.advance(SeqNumber(450));
        assert_eq!(s.sacked_bytes(), 150);
    }
}
