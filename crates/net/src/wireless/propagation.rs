//! Propagation: the power a receiver gets from a transmitter at a
//! distance, and whether it hears (senses) and can decode the frame.
//!
//! - **Unit disk**: a frame is received, and sensed, within `range`
//!   metres, and nowhere else; two frames overlapping at a receiver both
//!   fail (no capture).
//! - **Two-ray ground** (Rappaport, *Wireless Communications*, §4.6;
//!   ns-2's `TwoRayGround`): Friis free space up to the crossover
//!   distance d_c = 4π h_t h_r / λ, `P_t G_t G_r h_t² h_r² / d⁴` beyond.
//! - **Log-distance** (Rappaport §4.9.1): `PL(d) = PL(d₀) + 10 n
//!   log₁₀(d / d₀)`, d₀ = 1 m, `PL(d₀)` the free-space loss at 1 m.
//!
//! Under the two path-loss models a frame is decoded when its power is at
//! least the reception threshold (the power at `range`) and its SINR
//! against the frames overlapping it plus thermal noise stays at least
//! `sinr` for all of it (capture); it is sensed (the medium is busy)
//! when its power is at least the carrier-sense threshold (the power at
//! `cs_range`).

/// Which model computes received power.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Model {
    UnitDisk,
    TwoRay,
    /// Path-loss exponent.
    LogDistance(f64),
}

/// Speed of light, m/s.
const C: f64 = 299_792_458.0;
/// Antenna heights of the two-ray model, m (ns-2's default).
const HEIGHT_M: f64 = 1.5;
/// Thermal noise over a 22 MHz (DSSS) or 20 MHz (OFDM) channel: −174
/// dBm/Hz + 10 log₁₀(B), about −101 dBm, as mW.
const NOISE_MW: f64 = 7.9e-11;

/// A propagation model with its thresholds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Propagation {
    pub model: Model,
    /// Reception range, m.
    pub range_m: f64,
    /// Carrier-sense range, m (≥ range).
    pub cs_range_m: f64,
    /// Transmit power, mW.
    pub tx_mw: f64,
    /// Carrier frequency, Hz.
    pub freq_hz: f64,
    /// Capture threshold, as a power ratio.
    pub sinr: f64,
}

impl Propagation {
    /// Returns the power received at `d` metres, mW (for the unit disk:
    /// 1 within `cs_range`, else 0).
    pub fn power_mw(&self, d: f64) -> f64 {
        let d = d.max(0.01);
        let lambda = C / self.freq_hz;
        let four_pi = 4.0 * std::f64::consts::PI;
        match self.model {
            Model::UnitDisk => {
                if d <= self.cs_range_m {
                    1.0
                } else {
                    0.0
                }
            }
            Model::TwoRay => {
                let crossover = four_pi * HEIGHT_M * HEIGHT_M / lambda;
                if d < crossover {
                    self.tx_mw * lambda * lambda / ((four_pi * d) * (four_pi * d))
                } else {
                    self.tx_mw * HEIGHT_M.powi(2) * HEIGHT_M.powi(2) / d.powi(4)
                }
            }
            Model::LogDistance(n) => {
                let pl0 = (four_pi / lambda) * (four_pi / lambda);
                self.tx_mw / pl0 / d.powf(n)
            }
        }
    }

    /// Returns the reception threshold: the power at `range`.
    pub fn rx_threshold(&self) -> f64 {
        match self.model {
            Model::UnitDisk => 1.0,
            _ => self.power_mw(self.range_m),
        }
    }

    /// Returns the carrier-sense threshold: the power at `cs_range`.
    pub fn cs_threshold(&self) -> f64 {
        match self.model {
            Model::UnitDisk => 1.0,
            _ => self.power_mw(self.cs_range_m),
        }
    }

    /// Returns whether a frame of power `signal` survives `interference`
    /// (the sum of the other frames' powers at the receiver).
    pub fn survives(&self, signal: f64, interference: f64) -> bool {
        match self.model {
            Model::UnitDisk => interference == 0.0,
            _ => signal >= self.sinr * (interference + NOISE_MW),
        }
    }

    /// Returns whether a receiver at `d` metres decodes a frame when
    /// nothing else is on the air (unit disk: within `range`).
    pub fn decodes_at(&self, d: f64) -> bool {
        match self.model {
            Model::UnitDisk => d <= self.range_m,
            _ => self.power_mw(d) >= self.rx_threshold(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(model: Model) -> Propagation {
        Propagation {
            model,
            range_m: 250.0,
            cs_range_m: 550.0,
            tx_mw: 281.8,
            freq_hz: 914e6,
            sinr: 10.0,
        }
    }

    #[test]
    fn two_ray_matches_ns2_thresholds() {
        // ns-2's WaveLAN defaults (Pt = 0.2818 W, 914 MHz, 1.5 m antennas)
        // give RXThresh 3.652e-10 W at 250 m and CSThresh 1.559e-11 W at
        // 550 m (its threshold tool, two-ray ground).
        let p = model(Model::TwoRay);
        let rx_w = p.rx_threshold() / 1e3;
        let cs_w = p.cs_threshold() / 1e3;
        assert!((rx_w / 3.652e-10 - 1.0).abs() < 1e-3, "{rx_w}");
        assert!((cs_w / 1.559e-11 - 1.0).abs() < 1e-3, "{cs_w}");
    }

    #[test]
    fn log_distance_falls_ten_n_db_per_decade() {
        let p = model(Model::LogDistance(3.0));
        let ratio = p.power_mw(10.0) / p.power_mw(100.0);
        assert!((10.0 * ratio.log10() - 30.0).abs() < 1e-9);
        assert!(p.decodes_at(250.0) && !p.decodes_at(251.0));
    }

    #[test]
    fn the_unit_disk_decodes_within_range_only() {
        let p = model(Model::UnitDisk);
        assert!(p.decodes_at(250.0) && !p.decodes_at(250.1));
        assert!(!p.survives(1.0, 1.0) && p.survives(1.0, 0.0));
    }
}
