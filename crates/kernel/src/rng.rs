//! Seeded random streams.
//!
//! Each consumer (a machine, a network, an application) draws from its own
//! stream, derived from the run's seed, a kind tag and an id by SplitMix64
//! mixing. Streams are independent of each other and of creation order.

use rand::SeedableRng;
pub use rand_xoshiro::Xoshiro256PlusPlus as Rng;

/// Kinds of stream, so that machine 3 and network 3 draw differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum StreamKind {
    Machine = 1,
    Network = 2,
    Application = 3,
    Builder = 4,
}

/// SplitMix64's finalizer: a bijective 64-bit mixer.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Returns the stream for `(seed, kind, id)`.
pub fn stream(seed: u64, kind: StreamKind, id: u64) -> Rng {
    let s = mix(mix(seed ^ mix(kind as u64)) ^ id);
    Rng::seed_from_u64(s)
}

#[cfg(test)]
mod test {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(stream(7, StreamKind::Machine, 3), |r, _| Some(r.random()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(stream(7, StreamKind::Machine, 3), |r, _| Some(r.random()))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn different_kinds_with_the_same_id_differ() {
        let a: u64 = stream(7, StreamKind::Machine, 3).random();
        let b: u64 = stream(7, StreamKind::Network, 3).random();
        assert_ne!(a, b);
    }
}
