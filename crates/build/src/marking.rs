//! The marking disciplines' NDL spec → `QdiscConfig`: ECN threshold
//! marking (`ecn_threshold`) and the three-colour markers (`srtcm`,
//! `trtcm`).

use super::BuildError;
use elvis_scenario::{QdiscKind, QdiscSpec, QueueLimit};
use elvis_sim::qdisc::{Limit, MeterConfig, MeterKind, QdiscConfig, ThresholdConfig};

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
        QdiscKind::Srtcm | QdiscKind::Trtcm => {
            let (cir_bps, cbs) = (q.cir_bps.unwrap_or(0), q.cbs_bytes.unwrap_or(0));
            let kind = if q.kind == QdiscKind::Srtcm {
                MeterKind::Srtcm {
                    cir_bps,
                    cbs,
                    ebs: q.ebs_bytes.unwrap_or(0),
                }
            } else {
                MeterKind::Trtcm {
                    cir_bps,
                    cbs,
                    pir_bps: q.pir_bps.unwrap_or(0),
                    pbs: q.pbs_bytes.unwrap_or(0),
                }
            };
            Ok(QdiscConfig::Meter(MeterConfig {
                kind,
                color_aware: q.color_aware,
                dscp: q.remark.unwrap_or(MeterConfig::AF1X),
                drop_red: q.drop_red,
                limit: q.limit.map_or(Limit::Packets(1000), to_limit),
            }))
        }
        _ => Err(BuildError {
            message: format!("no marking discipline {:?}", q.kind),
            hint: None,
            loc: q.loc_of("qdisc"),
        }),
    }
}
