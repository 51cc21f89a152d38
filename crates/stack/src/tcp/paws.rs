//! Protection Against Wrapped Sequences (RFC 7323 §5).
//!
//! On a fast connection the 32-bit sequence space wraps within a maximum
//! segment lifetime, so an old duplicate can fall inside the window and be
//! taken as new data. PAWS rejects it by its timestamp: RFC 7323 §5.3 R1,
//! "If there is a Timestamps option in the arriving segment, SEG.TSval <
//! TS.Recent, TS.Recent is valid (see later discussion), and the RST bit
//! is not set, then treat the arriving segment as not acceptable: Send an
//! acknowledgment in reply as specified in RFC 793, page 69 and drop the
//! segment." The check runs before the sequence-number check (R2) and
//! before TS.Recent is updated (R3).
//!
//! TS.Recent becomes invalid after a long idle time (§5.5): a peer's
//! timestamp clock may have wrapped meanwhile, so that its next TSval
//! looks older than TS.Recent. The RFC's 24 days are 2^31 ticks of a 1 ms
//! clock, the fastest it recommends. Our own clock ticks every
//! microsecond (`tcb.rs`, `ts_clock`), so two of our hosts wrap after 2^31
//! µs: [`IDLE_LIMIT`] is that, about 35.8 minutes. A shorter limit only
//! means PAWS is skipped for the first segment after such an idle time,
//! never that a good segment is dropped (Linux, whose clock ticks every
//! millisecond, uses 24 days: `TCP_PAWS_24DAYS`).
//!
//! # Gaps
//! Linux's exception for reordered pure ACKs (`tcp_disordered_ack`) is not
//! made: an old duplicate ACK is dropped, as R1 says. Segments without a
//! timestamp on a connection that negotiated them are accepted (RFC 7323
//! §3.2 allows dropping them; Linux accepts them too).

use elvis_kernel::Time;
use elvis_wire::tcp::{Control, Repr};
use std::time::Duration;

/// How long TS.Recent stays valid without being updated (§5.5): 2^31 ticks
/// of the fastest timestamp clock we expect, our own 1 µs one.
pub const IDLE_LIMIT: Duration = Duration::from_micros(1 << 31);

/// TS.Recent and when it was last updated.
#[derive(Clone, Copy, Debug, Default)]
pub struct TsRecent {
    pub value: u32,
    pub at: Time,
}

impl TsRecent {
    /// Returns true if `seg` must be dropped by PAWS (R1, with R5's
    /// validity of TS.Recent); timestamps must have been negotiated.
    pub fn rejects(&self, seg: &Repr, now: Time) -> bool {
        let Some((tsval, _)) = seg.timestamp else {
            return false;
        };
        let older = (tsval.wrapping_sub(self.value) as i32) < 0;
        let valid = now - self.at < IDLE_LIMIT;
        seg.control != Control::Rst && older && valid
    }
}
