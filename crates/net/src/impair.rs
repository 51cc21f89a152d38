//! Impairments: loss, corruption, duplication and reordering, drawn once
//! per traversal of a network (see "Impairments").

use crate::{DropReason, Network};
use elvis_message::Message;
use rand::Rng as _;

/// What the impairment draws decided for a frame that is not lost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fate {
    /// Extra propagation delay (a reorder hold-back), ns.
    pub extra_ns: u64,
    /// Deliver an exact copy right after the frame.
    pub duplicate: bool,
}

/// Applies loss, corruption, duplication and reordering as a frame leaves
/// the sender, in that order (see "Impairments"). A network without
/// impairments draws nothing (its random stream is untouched either way:
/// every draw below is guarded by a non-zero probability).
#[inline]
pub(crate) fn draw_fate(n: &mut Network, frame: &mut Message) -> Result<Fate, DropReason> {
    if !n.impaired {
        return Ok(Fate::default());
    }
    draw_impairments(n, frame)
}

/// [`draw_fate`] on a network with at least one impairment.
fn draw_impairments(n: &mut Network, frame: &mut Message) -> Result<Fate, DropReason> {
    let mut fate = Fate::default();
    if n.cfg.loss > 0.0 && n.rng.random::<f64>() < n.cfg.loss {
        n.stats.lost += 1;
        return Err(DropReason::Loss);
    }
    if n.cfg.corruption > 0.0 && n.rng.random::<f64>() < n.cfg.corruption {
        n.stats.corrupted += 1;
        let bits = frame.len() * 8;
        if bits > 0 {
            let bit = n.rng.random_range(0..bits);
            frame.flip_bit(bit);
        }
    }
    if n.cfg.duplicate > 0.0 && n.rng.random::<f64>() < n.cfg.duplicate {
        n.stats.duplicated += 1;
        fate.duplicate = true;
    }
    if n.cfg.reorder > 0.0 && n.rng.random::<f64>() < n.cfg.reorder {
        n.stats.reordered += 1;
        fate.extra_ns = n.cfg.reorder_delay_ns;
    }
    Ok(fate)
}
