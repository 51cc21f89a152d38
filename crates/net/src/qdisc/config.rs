//! [`QdiscConfig`]: which discipline an egress queue runs, with its
//! parameters, as plain data (what NDL and the Rust API hand the network),
//! and the checks that reject a parameter out of range before anything
//! runs.
//!
//! A config is validated once ([`QdiscConfig::validate`]) and then built
//! into a fresh [`Qdisc`] for every queue it applies to
//! ([`QdiscConfig::build`]); building a valid config cannot fail. Errors
//! name the parameter by its NDL key (`red_min`, `rate`, `weights`, …) so
//! that a front end can point at the offending text.

use super::droptail::{DropTail, Limit};
use super::meter::{Meter, MeterConfig, MeterKind};
use super::red::{Red, RedConfig};
use super::tbf::{TokenBucket, TokenBucketConfig};
use super::threshold::{Threshold, ThresholdConfig};
use super::{ClassParams, Classify, Drr, Prio, Qdisc, VirtualClock, Wfq, Wrr};
use serde::Serialize;

/// A queue discipline and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "discipline")]
pub enum QdiscConfig {
    /// First in, first out; drops arrivals beyond `limit`.
    DropTail { limit: Limit },
    /// Random Early Detection (Floyd & Jacobson 1993), optionally marking
    /// ECN-capable frames instead of dropping them (RFC 3168).
    Red(RedConfig),
    /// A token-bucket shaper in front of a drop-tail FIFO.
    TokenBucket(TokenBucketConfig),
    /// Strict priority between classes (class 0 first).
    Prio(ClassParams),
    /// Deficit round robin (quantum per class in bytes).
    Drr(ClassParams),
    /// Weighted round robin (frames per round per class).
    Wrr(ClassParams),
    /// Weighted fair queueing (weight per class).
    Wfq(ClassParams),
    /// Virtual clock (reserved rate per class, bit/s).
    VirtualClock(ClassParams),
    /// ECN marking at a threshold K of the instantaneous queue (DCTCP).
    EcnThreshold(ThresholdConfig),
    /// A three-colour marker (srTCM or trTCM) in front of a FIFO.
    Meter(MeterConfig),
}

/// Why a [`QdiscConfig`] was rejected: the parameter (by its NDL key) and
/// what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{param}: {message}")]
pub struct QdiscError {
    /// The NDL key of the bad parameter (`red_min`, `rate`, `weights`…).
    pub param: &'static str,
    pub message: String,
}

impl QdiscError {
    pub(crate) fn new(param: &'static str, message: impl Into<String>) -> Self {
        QdiscError {
            param,
            message: message.into(),
        }
    }
}

impl QdiscConfig {
    /// Returns the discipline's name as NDL writes it (`qdisc='red'`).
    pub fn name(&self) -> &'static str {
        match self {
            QdiscConfig::DropTail { .. } => "droptail",
            QdiscConfig::Red(_) => "red",
            QdiscConfig::TokenBucket(_) => "tbf",
            QdiscConfig::Prio(_) => "prio",
            QdiscConfig::Drr(_) => "drr",
            QdiscConfig::Wrr(_) => "wrr",
            QdiscConfig::Wfq(_) => "wfq",
            QdiscConfig::VirtualClock(_) => "vclock",
            QdiscConfig::EcnThreshold(_) => "ecn_threshold",
            QdiscConfig::Meter(c) => match c.kind {
                MeterKind::Srtcm { .. } => "srtcm",
                MeterKind::Trtcm { .. } => "trtcm",
            },
        }
    }

    /// Checks every parameter; `bandwidth_bps` is the network's (`None`:
    /// an ideal network, which has no queues at all).
    ///
    /// # Errors
    /// The first parameter out of range, named by its NDL key.
    pub fn validate(&self, bandwidth_bps: Option<u64>) -> Result<(), QdiscError> {
        if bandwidth_bps.is_none() {
            return Err(QdiscError::new(
                "qdisc",
                "a network without a bandwidth has no queues; give it a bandwidth",
            ));
        }
        match self {
            QdiscConfig::DropTail { limit } => check_limit(limit),
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::TokenBucket(c) => c.validate(),
            QdiscConfig::Prio(p) => check_classes(p, false),
            QdiscConfig::Drr(p)
            | QdiscConfig::Wrr(p)
            | QdiscConfig::Wfq(p)
            | QdiscConfig::VirtualClock(p) => check_classes(p, true),
            QdiscConfig::EcnThreshold(c) => c.validate(),
            QdiscConfig::Meter(c) => c.validate(),
        }
    }

    /// Returns a fresh, empty queue running this discipline on a network
    /// of `bandwidth_bps`.
    ///
    /// # Errors
    /// As [`QdiscConfig::validate`].
    pub fn build(&self, bandwidth_bps: Option<u64>) -> Result<Qdisc, QdiscError> {
        self.validate(bandwidth_bps)?;
        let bps = bandwidth_bps.unwrap_or(0);
        Ok(match self {
            QdiscConfig::DropTail { limit } => Qdisc::DropTail(DropTail::new(*limit)),
            QdiscConfig::Red(c) => Qdisc::Red(Box::new(Red::new(c.clone(), bps))),
            QdiscConfig::TokenBucket(c) => Qdisc::TokenBucket(Box::new(TokenBucket::new(c))),
            QdiscConfig::Prio(p) => Qdisc::Prio(Box::new(Prio::new(p).map_err(class_error)?)),
            QdiscConfig::Drr(p) => Qdisc::Drr(Box::new(Drr::new(p).map_err(class_error)?)),
            QdiscConfig::Wrr(p) => Qdisc::Wrr(Box::new(Wrr::new(p).map_err(class_error)?)),
            // Weighted fair queueing proper: PGPS, with the GPS virtual
            // time of this network's wire.
            QdiscConfig::Wfq(p) => {
                Qdisc::Wfq(Box::new(Wfq::new_with_rate(p, bps).map_err(class_error)?))
            }
            QdiscConfig::VirtualClock(p) => {
                Qdisc::VirtualClock(Box::new(VirtualClock::new(p).map_err(class_error)?))
            }
            QdiscConfig::EcnThreshold(c) => Qdisc::Threshold(Box::new(Threshold::new(c))),
            QdiscConfig::Meter(c) => Qdisc::Meter(Box::new(Meter::new(c))),
        })
    }
}

/// A class-based scheduler refused its parameters (they concern the
/// classes and their weights).
fn class_error(message: String) -> QdiscError {
    QdiscError::new("weights", message)
}

/// A limit of zero packets or bytes would drop everything.
pub(crate) fn check_limit(limit: &Limit) -> Result<(), QdiscError> {
    match limit {
        Limit::Packets(0) | Limit::Bytes(0) => Err(QdiscError::new(
            "limit",
            "a queue holds at least 1 packet (or byte); write limit='inf' for no limit",
        )),
        _ => Ok(()),
    }
}

/// Classes need weights (positive where `weighted`), and a DSCP list no
/// longer than the classes.
fn check_classes(p: &ClassParams, weighted: bool) -> Result<(), QdiscError> {
    check_limit(&p.limit)?;
    if p.weights.is_empty() {
        return Err(QdiscError::new(
            "weights",
            "give one weight per class, e.g. weights='1500,3000'",
        ));
    }
    if p.weights.len() > 64 {
        return Err(QdiscError::new("weights", "at most 64 classes"));
    }
    if weighted {
        if let Some(i) = p.weights.iter().position(|&w| w == 0) {
            return Err(QdiscError::new(
                "weights",
                format!("class {i} has weight 0; every weight must be positive"),
            ));
        }
    }
    if let Classify::Dscp(d) = &p.classify {
        if d.len() > p.weights.len() {
            return Err(QdiscError::new(
                "classify",
                format!(
                    "{} DSCP values for {} classes; give at most one per class",
                    d.len(),
                    p.weights.len()
                ),
            ));
        }
        if let Some(&v) = d.iter().find(|&&v| v > 63) {
            return Err(QdiscError::new(
                "classify",
                format!("DSCP {v} is outside 0 to 63"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BPS: Option<u64> = Some(10_000_000);

    #[test]
    fn a_zero_limit_is_rejected_by_name() {
        let c = QdiscConfig::DropTail {
            limit: Limit::Packets(0),
        };
        assert_eq!(c.validate(BPS).unwrap_err().param, "limit");
    }

    #[test]
    fn a_qdisc_on_an_ideal_network_is_rejected() {
        let c = QdiscConfig::DropTail {
            limit: Limit::Packets(10),
        };
        assert_eq!(c.validate(None).unwrap_err().param, "qdisc");
        assert!(c.validate(BPS).is_ok());
    }

    #[test]
    fn zero_weights_and_too_many_dscps_are_rejected() {
        let p = ClassParams {
            classify: Classify::Flow,
            weights: vec![1500, 0],
            limit: Limit::Packets(10),
        };
        assert_eq!(
            QdiscConfig::Drr(p.clone()).validate(BPS).unwrap_err().param,
            "weights"
        );
        // Strict priority ignores the values.
        assert!(QdiscConfig::Prio(p).validate(BPS).is_ok());
        let p = ClassParams {
            classify: Classify::Dscp(vec![46, 0, 10]),
            weights: vec![1, 1],
            limit: Limit::Unbounded,
        };
        assert_eq!(
            QdiscConfig::Wrr(p).validate(BPS).unwrap_err().param,
            "classify"
        );
    }
}
