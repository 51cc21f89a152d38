//! The 802.11 physical layers a wireless network runs: their rates,
//! their interframe spaces and how long a frame takes on the air.
//!
//! Clause numbers are IEEE Std 802.11-2016's: clause 15 is DSSS
//! (1 and 2 Mbit/s), clause 16 HR/DSSS (5.5 and 11 Mbit/s), clause 17
//! OFDM (802.11a, 6 to 54 Mbit/s). 802.11g's ERP-OFDM (clause 18) is
//! run with the OFDM timing of clause 17 (short slot, no DSSS stations
//! in the network).

/// An 802.11 physical layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Standard {
    /// 802.11b: DSSS and HR/DSSS, 1, 2, 5.5 and 11 Mbit/s, long preamble.
    B,
    /// 802.11a: OFDM at 5 GHz, 6 to 54 Mbit/s.
    A,
    /// 802.11g: ERP-OFDM at 2.4 GHz, 6 to 54 Mbit/s, short slot.
    G,
}

/// 802.11b rates, bit/s (Table 16-? of clause 15 and 16).
const DSSS_RATES: [u64; 4] = [1_000_000, 2_000_000, 5_500_000, 11_000_000];
/// OFDM rates, bit/s (clause 17.3.2.2, Table 17-4).
const OFDM_RATES: [u64; 8] = [
    6_000_000, 9_000_000, 12_000_000, 18_000_000, 24_000_000, 36_000_000, 48_000_000, 54_000_000,
];

impl Standard {
    /// Parses `802.11b`, `802.11a`, `802.11g` (or `b`, `a`, `g`).
    pub fn parse(s: &str) -> Option<Standard> {
        match s.trim().to_ascii_lowercase().trim_start_matches("802.11") {
            "b" => Some(Standard::B),
            "a" => Some(Standard::A),
            "g" => Some(Standard::G),
            _ => None,
        }
    }

    /// Returns the standard's name (`802.11b`).
    pub fn name(self) -> &'static str {
        match self {
            Standard::B => "802.11b",
            Standard::A => "802.11a",
            Standard::G => "802.11g",
        }
    }

    fn ofdm(self) -> bool {
        self != Standard::B
    }

    /// Returns the data rates of the standard, bit/s, slowest first.
    pub fn rates(self) -> &'static [u64] {
        if self.ofdm() {
            &OFDM_RATES
        } else {
            &DSSS_RATES
        }
    }

    /// Returns the lowest (basic) rate, at which control frames go by
    /// default: 1 Mbit/s for DSSS, 6 Mbit/s for OFDM.
    pub fn basic_rate(self) -> u64 {
        self.rates()[0]
    }

    /// Returns the carrier frequency, Hz: channel 1 at 2.4 GHz (b, g),
    /// channel 36 at 5 GHz (a).
    pub fn frequency_hz(self) -> f64 {
        match self {
            Standard::A => 5.18e9,
            _ => 2.412e9,
        }
    }

    /// Returns aSlotTime, ns: 20 µs DSSS (15.4.5 Table 15-5), 9 µs OFDM
    /// (17.4.4 Table 17-21).
    pub fn slot_ns(self) -> u64 {
        if self.ofdm() {
            9_000
        } else {
            20_000
        }
    }

    /// Returns aSIFSTime, ns: 10 µs DSSS, 16 µs OFDM.
    pub fn sifs_ns(self) -> u64 {
        if self.ofdm() {
            16_000
        } else {
            10_000
        }
    }

    /// Returns aCCATime, ns: how long a signal must have been on the air
    /// before a station's clear-channel assessment reports it (at most
    /// 15 µs DSSS, 4 µs OFDM). A station whose back-off ends sooner after
    /// another's transmission started sends too: the two collide.
    pub fn cca_ns(self) -> u64 {
        if self.ofdm() {
            4_000
        } else {
            15_000
        }
    }

    /// Returns aCWmin: 31 DSSS, 15 OFDM.
    pub fn cw_min(self) -> u32 {
        if self.ofdm() {
            15
        } else {
            31
        }
    }

    /// Returns aCWmax: 1023.
    pub fn cw_max(self) -> u32 {
        1023
    }

    /// Returns DIFS = SIFS + 2 × slot (10.3.2.3.7).
    pub fn difs_ns(self) -> u64 {
        self.sifs_ns() + 2 * self.slot_ns()
    }

    /// Returns how long a PSDU of `bytes` takes on the air at `rate`
    /// bit/s, preamble and PLCP header included, ns.
    ///
    /// DSSS (16.3.4, TXTIME): 144 µs preamble + 48 µs PLCP header (long
    /// preamble) + ⌈8 × bytes / rate⌉ µs. OFDM (17.4.3, TXTIME): 16 µs
    /// preamble + 4 µs SIGNAL + 4 µs × ⌈(16 + 8 × bytes + 6) / N_DBPS⌉,
    /// N_DBPS = 4 µs × rate.
    pub fn tx_ns(self, bytes: usize, rate: u64) -> u64 {
        let bits = 8 * bytes as u64;
        if self.ofdm() {
            let ndbps = rate * 4 / 1_000_000;
            20_000 + 4_000 * (16 + bits + 6).div_ceil(ndbps.max(1))
        } else {
            192_000 + 1_000 * (bits * 1_000_000).div_ceil(rate.max(1))
        }
    }
}

/// Bytes of an ACK or a CTS MPDU (FCS included, 9.3.1.3, 9.3.1.4).
pub const ACK_BYTES: usize = 14;
/// Bytes of an RTS MPDU (9.3.1.2).
pub const RTS_BYTES: usize = 20;
/// Bytes a data MPDU adds to the Ethernet frame it carries: a 24-byte
/// MAC header, an 8-byte LLC/SNAP header and a 4-byte FCS in, the 14-byte
/// Ethernet header out.
pub const DATA_OVERHEAD: usize = 24 + 8 + 4 - 14;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsss_times_follow_txtime() {
        // A 14-byte ACK at 1 Mbit/s: 192 + 112 µs.
        assert_eq!(Standard::B.tx_ns(14, 1_000_000), 304_000);
        // 1500 bytes at 11 Mbit/s: 192 + ⌈12000 / 11⌉ = 192 + 1091 µs.
        assert_eq!(Standard::B.tx_ns(1500, 11_000_000), 1_283_000);
        // 5.5 Mbit/s: ⌈8 × 100 / 5.5⌉ = 146 µs.
        assert_eq!(Standard::B.tx_ns(100, 5_500_000), 338_000);
        assert_eq!(Standard::B.difs_ns(), 50_000);
    }

    #[test]
    fn ofdm_times_follow_txtime() {
        // 17.4.3 example figures: an ACK at 24 Mbit/s is 28 µs
        // (⌈134 / 96⌉ = 2 symbols), 1500 bytes at 54 Mbit/s 248 µs.
        assert_eq!(Standard::A.tx_ns(14, 24_000_000), 28_000);
        assert_eq!(Standard::A.tx_ns(1500, 54_000_000), 20_000 + 4_000 * 56);
        assert_eq!(Standard::A.difs_ns(), 34_000);
    }

    #[test]
    fn standards_parse_with_or_without_the_prefix() {
        assert_eq!(Standard::parse("802.11b"), Some(Standard::B));
        assert_eq!(Standard::parse("G"), Some(Standard::G));
        assert_eq!(Standard::parse("802.11n"), None);
    }
}
