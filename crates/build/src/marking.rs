//! The marking disciplines' NDL spec → `QdiscConfig`: ECN threshold
//! marking (`ecn_threshold`).

use super::BuildError;
use elvis_scenario::{QdiscKind, QdiscSpec, QueueLimit};
use elvis_sim::qdisc::{Limit, QdiscConfig, ThresholdConfig};

/// Returns `limit` as the simulator's [`Limit`].
fn to_limit(l: QueueLimit) -> Limit {
    match l {
        QueueLimit::Unbounded => Limit::Unbounded,
        QueueLimit::Packets(n) => Limit::Packets(n),
        QueueLimit::Bytes(n) => Limit::Bytes(n),
    }
}

/// Returns the configuration of a marking discipline (ranges are checked
/// by the caller's `QdiscConfig::build`).
///
/// # Errors
/// A discipline not built here, located at `qdisc`.
pub(crate) fn config(q: &QdiscSpec) -> Result<QdiscConfig, BuildError> {
    match q.kind {
        QdiscKind::EcnThreshold => {
            // The buffer defaults to 4·K, in K's unit (as RED's to 4·red_max).
            let k = q.ecn_k.map_or(Limit::Unbounded, to_limit);
            let buffer = match k {
                Limit::Packets(n) => Limit::Packets(n.saturating_mul(4)),
                Limit::Bytes(n) => Limit::Bytes(n.saturating_mul(4)),
                Limit::Unbounded => Limit::Unbounded,
            };
            Ok(QdiscConfig::EcnThreshold(ThresholdConfig {
                k,
                limit: q.limit.map_or(buffer, to_limit),
            }))
        }
        _ => Err(BuildError {
            message: format!("no marking discipline {:?}", q.kind),
            hint: None,
            loc: q.loc_of("qdisc"),
        }),
    }
}
