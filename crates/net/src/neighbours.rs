//! A network's static neighbour table: IPv4 address → port.
//!
//! Most networks of a large scenario are point-to-point links with two
//! addresses. Their table lies inline in the [`crate::Network`] record
//! (two pairs, found by comparing both) and allocates nothing; a network
//! with a third address moves its table to a hash map. A hash map per link
//! would cost a million-link star 32 bytes inline and a 64-byte
//! allocation per link, and a hash and a probe per lookup.
//!
//! Lookups, inserts and removals behave as a map's. Iteration order is
//! unspecified (callers sort what they iterate), as a hash map's.

use rustc_hash::FxHashMap;

/// Up to this many entries lie inline.
const INLINE: usize = 2;

/// IPv4 address (as `u32`) → port.
#[derive(Clone, Debug)]
pub enum Neighbours {
    /// The first `len` pairs are the table.
    Inline {
        len: u8,
        pairs: [(u32, u32); INLINE],
    },
    /// More than `INLINE` entries.
    Map(Box<FxHashMap<u32, u32>>),
}

impl Default for Neighbours {
    fn default() -> Self {
        Neighbours::Inline {
            len: 0,
            pairs: [(0, 0); INLINE],
        }
    }
}

impl Neighbours {
    /// Returns the port of `ip`, if any.
    #[inline]
    pub fn get(&self, ip: &u32) -> Option<&u32> {
        match self {
            Neighbours::Inline { len, pairs } => (pairs[..*len as usize].iter())
                .find(|(k, _)| k == ip)
                .map(|(_, v)| v),
            Neighbours::Map(m) => m.get(ip),
        }
    }

    /// Returns true when `ip` has a port.
    #[inline]
    pub fn contains_key(&self, ip: &u32) -> bool {
        self.get(ip).is_some()
    }

    /// Sets the port of `ip`; returns its previous port.
    pub fn insert(&mut self, ip: u32, port: u32) -> Option<u32> {
        match self {
            Neighbours::Inline { len, pairs } => {
                let n = *len as usize;
                if let Some(slot) = pairs[..n].iter_mut().find(|(k, _)| *k == ip) {
                    return Some(std::mem::replace(&mut slot.1, port));
                }
                if n < INLINE {
                    pairs[n] = (ip, port);
                    *len += 1;
                    return None;
                }
                let mut m: FxHashMap<u32, u32> = pairs.iter().copied().collect();
                m.insert(ip, port);
                *self = Neighbours::Map(Box::new(m));
                None
            }
            Neighbours::Map(m) => m.insert(ip, port),
        }
    }

    /// Removes `ip`; returns its port.
    pub fn remove(&mut self, ip: &u32) -> Option<u32> {
        match self {
            Neighbours::Inline { len, pairs } => {
                let n = *len as usize;
                let i = pairs[..n].iter().position(|(k, _)| k == ip)?;
                let port = pairs[i].1;
                pairs.copy_within(i + 1..n, i);
                *len -= 1;
                Some(port)
            }
            Neighbours::Map(m) => m.remove(ip),
        }
    }

    /// Returns the number of entries.
    pub fn len(&self) -> usize {
        match self {
            Neighbours::Inline { len, .. } => *len as usize,
            Neighbours::Map(m) => m.len(),
        }
    }

    /// Returns true when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Iterates over (address, port) pairs in no particular order.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            Neighbours::Inline { len, pairs } => Iter::Inline(pairs[..*len as usize].iter()),
            Neighbours::Map(m) => Iter::Map(m.iter()),
        }
    }

    /// Iterates over the addresses in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &u32> + '_ {
        self.iter().map(|(k, _)| k)
    }
}

/// The (address, port) pairs of a [`Neighbours`] table.
pub enum Iter<'a> {
    Inline(std::slice::Iter<'a, (u32, u32)>),
    Map(std::collections::hash_map::Iter<'a, u32, u32>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a u32, &'a u32);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Inline(i) => i.next().map(|(k, v)| (k, v)),
            Iter::Map(i) => i.next(),
        }
    }
}

impl std::ops::Index<&u32> for Neighbours {
    type Output = u32;

    /// # Panics
    /// When `ip` has no port (as a map's index).
    fn index(&self, ip: &u32) -> &u32 {
        self.get(ip)
            .expect("no such address in the neighbour table")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_map_inline_and_after_moving_to_a_hash_map() {
        let mut t = Neighbours::default();
        let mut m = FxHashMap::default();
        // Inserts, replacements and removals across the inline limit.
        let ops: [(bool, u32, u32); 12] = [
            (true, 10, 0),
            (true, 11, 1),
            (true, 10, 5),
            (false, 10, 0),
            (true, 12, 2),
            (true, 13, 3),
            (true, 14, 4),
            (false, 11, 0),
            (false, 99, 0),
            (true, 11, 7),
            (false, 13, 0),
            (true, 13, 8),
        ];
        for (i, &(ins, k, v)) in ops.iter().enumerate() {
            if ins {
                assert_eq!(t.insert(k, v), m.insert(k, v), "step {i}");
            } else {
                assert_eq!(t.remove(&k), m.remove(&k), "step {i}");
            }
            assert_eq!(t.len(), m.len());
            for k in 9..16 {
                assert_eq!(t.get(&k), m.get(&k), "step {i} key {k}");
            }
            let mut a: Vec<_> = t.iter().map(|(k, v)| (*k, *v)).collect();
            let mut b: Vec<_> = m.iter().map(|(k, v)| (*k, *v)).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
        assert_eq!(t[&13], 8);
    }

    #[test]
    fn a_link_s_table_stays_inline() {
        let mut t = Neighbours::default();
        t.insert(1, 0);
        t.insert(2, 1);
        assert!(matches!(t, Neighbours::Inline { len: 2, .. }));
        assert_eq!(t.remove(&1), Some(0));
        assert_eq!(t.get(&2), Some(&1));
        assert!(t.get(&1).is_none());
        assert!(std::mem::size_of::<Neighbours>() <= 24);
    }
}
