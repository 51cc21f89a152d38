//! The resolver's cache: RRsets by (name, type) until their TTL runs out,
//! and negative answers (RFC 2308): NXDOMAIN for a whole name, NODATA for
//! one type, each kept for the SOA's TTL capped by its MINIMUM field
//! (RFC 2308 §5) and served back with that SOA.
//!
//! Entries are looked up by hash (never iterated, so the order of the map
//! leaks into nothing). The key is the name in wire form with its letters
//! lower-cased, then the type ([`crate::key::Key`]): it hashes and compares as plain
//! bytes, without regard to case (RFC 4343), so `WWW.Example.` finds
//! `www.example.`, and the key of every enclosing zone is a suffix of a
//! name's key ([`Cache::closest`]). An expired entry is removed when it is
//! next looked up; a cache full at [`Cache::new`]'s limit drops expired entries, and
//! if none, refuses new ones until some expire.
//!
//! # Gaps
//! - No eviction of live entries (LRU); no prefetch; no serve-stale.

use crate::key::Key;
use elvis_api::Time;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use rustc_hash::FxHashMap as HashMap;

/// A cached answer, TTLs counting down to now.
#[derive(Clone, Debug, PartialEq)]
pub enum Hit {
    /// The RRset.
    Records(Vec<Record>),
    /// The name does not exist; the SOA to answer with. (Boxed, as in
    /// `NoData`: a `Record` is 272 bytes, and every entry of the map
    /// would otherwise be that large.)
    NxDomain(Box<Record>),
    /// The name has no records of that type; the SOA to answer with.
    NoData(Box<Record>),
}

#[derive(Clone, Debug)]
struct Entry {
    expires: Time,
    hit: Hit,
}

/// The cache.
#[derive(Debug)]
pub struct Cache {
    rrsets: HashMap<Box<[u8]>, Entry>,
    /// Keyed by the name in wire form, no type (NXDOMAIN holds for all).
    nxdomain: HashMap<Box<[u8]>, Entry>,
    limit: usize,
}

impl Cache {
    /// Returns an empty cache holding at most `limit` entries.
    pub fn new(limit: usize) -> Cache {
        Cache {
            rrsets: HashMap::default(),
            nxdomain: HashMap::default(),
            limit,
        }
    }

    /// Returns how many entries are held (expired ones not yet removed
    /// included).
    pub fn len(&self) -> usize {
        self.rrsets.len() + self.nxdomain.len()
    }

    /// Returns whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns what the cache knows of `name`/`rtype` at `now`, TTLs
    /// lowered to the seconds left.
    pub fn get(&mut self, now: Time, name: &Name, rtype: RecordType) -> Option<Hit> {
        if !self.nxdomain.is_empty() {
            let k = Key::new(name, None);
            if let Some(hit) = live(&mut self.nxdomain, k.as_bytes(), now) {
                return Some(hit);
            }
        }
        let k = Key::new(name, Some(rtype));
        live(&mut self.rrsets, k.as_bytes(), now)
    }

    /// Returns the records of a live positive entry for `name`/`rtype`,
    /// as stored (TTLs not lowered): for the resolver's own use (its
    /// servers' addresses), without copying them.
    pub fn peek(&self, now: Time, name: &Name, rtype: RecordType) -> Option<&[Record]> {
        self.peek_key(now, Key::new(name, Some(rtype)).as_bytes())
    }

    fn peek_key(&self, now: Time, key: &[u8]) -> Option<&[Record]> {
        let e = self.rrsets.get(key)?;
        match &e.hit {
            Hit::Records(r) if e.expires > now => Some(r),
            _ => None,
        }
    }

    /// Walks the zones enclosing `name`, deepest first (`name` itself,
    /// then less one label at a time, down to a top-level domain; not the
    /// root), and returns the first for which `servers` finds something
    /// (its servers' addresses) in its live NS records: how many labels
    /// that zone has, and what `servers` found.
    pub fn closest<T>(
        &self,
        now: Time,
        name: &Name,
        mut servers: impl FnMut(&[Record]) -> Option<T>,
    ) -> Option<(usize, T)> {
        let k = Key::new(name, Some(RecordType::NS));
        let n = k.labels();
        (0..n).find_map(|skip| {
            let ns = self.peek_key(now, k.suffix(skip))?;
            servers(ns).map(|t| (n - skip, t))
        })
    }

    /// Caches an RRset (all of `records` have the same name and type) for
    /// the smallest TTL among them (RFC 2181 §5.2).
    pub fn put(&mut self, now: Time, records: Vec<Record>) {
        let Some(first) = records.first() else {
            return;
        };
        let ttl = records.iter().map(|r| r.ttl).min().unwrap_or(0);
        if ttl == 0 || !self.room(now) {
            return;
        }
        // The name exists after all: an older NXDOMAIN is wrong now.
        if !self.nxdomain.is_empty() {
            self.nxdomain.remove(Key::new(&first.name, None).as_bytes());
        }
        let key = Key::new(&first.name, Some(first.record_type()));
        self.rrsets.insert(
            key.as_bytes().into(),
            Entry {
                expires: now + std::time::Duration::from_secs(u64::from(ttl)),
                hit: Hit::Records(records),
            },
        );
    }

    /// Caches a negative answer for `name`: NXDOMAIN (`rtype` `None`) or
    /// NODATA for `rtype`, for min(SOA TTL, SOA MINIMUM) (RFC 2308 §5).
    pub fn put_negative(&mut self, now: Time, name: &Name, rtype: Option<RecordType>, soa: Record) {
        let RData::SOA(s) = &soa.data else {
            return;
        };
        let ttl = soa.ttl.min(s.minimum);
        if ttl == 0 || !self.room(now) {
            return;
        }
        let mut soa = soa;
        soa.ttl = ttl;
        let expires = now + std::time::Duration::from_secs(u64::from(ttl));
        let key: Box<[u8]> = Key::new(name, rtype).as_bytes().into();
        match rtype {
            None => {
                self.nxdomain.insert(
                    key,
                    Entry {
                        expires,
                        hit: Hit::NxDomain(Box::new(soa)),
                    },
                );
            }
            Some(_) => {
                self.rrsets.insert(
                    key,
                    Entry {
                        expires,
                        hit: Hit::NoData(Box::new(soa)),
                    },
                );
            }
        }
    }

    /// Returns whether one more entry fits, dropping the entries expired
    /// at `now` first if the cache is full.
    fn room(&mut self, now: Time) -> bool {
        if self.len() >= self.limit {
            self.purge(now);
        }
        self.len() < self.limit
    }

    /// Drops every entry expired at `now`.
    pub fn purge(&mut self, now: Time) {
        self.rrsets.retain(|_, e| e.expires > now);
        self.nxdomain.retain(|_, e| e.expires > now);
    }
}

/// Returns the entry at `key` if it has not expired at `now` (removing it
/// if it has), its TTLs lowered to the whole seconds left.
fn live(map: &mut HashMap<Box<[u8]>, Entry>, key: &[u8], now: Time) -> Option<Hit> {
    let e = map.get(key)?;
    if e.expires <= now {
        map.remove(key);
        return None;
    }
    let left = ((e.expires.as_nanos() - now.as_nanos()) / 1_000_000_000) as u32;
    let mut hit = e.hit.clone();
    match &mut hit {
        Hit::Records(rs) => rs.iter_mut().for_each(|r| r.ttl = left),
        Hit::NxDomain(soa) | Hit::NoData(soa) => soa.ttl = left,
    }
    Some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::{A, SOA};

    fn a(name: &str, ttl: u32) -> Record {
        Record::from_rdata(
            Name::from_ascii(name).unwrap(),
            ttl,
            RData::A(A::new(10, 0, 0, 1)),
        )
    }

    fn soa(ttl: u32, minimum: u32) -> Record {
        let n = Name::from_ascii("example.").unwrap();
        Record::from_rdata(
            n.clone(),
            ttl,
            RData::SOA(SOA::new(n.clone(), n, 1, 1, 1, 1, minimum)),
        )
    }

    fn t(s: u64) -> Time {
        Time::from_secs(s)
    }

    #[test]
    fn records_expire_at_their_ttl() {
        let mut c = Cache::new(100);
        let n = Name::from_ascii("www.example.").unwrap();
        c.put(t(10), vec![a("WWW.example.", 300)]);
        let Some(Hit::Records(r)) = c.get(t(10), &n, RecordType::A) else {
            panic!()
        };
        assert_eq!(r[0].ttl, 300);
        let Some(Hit::Records(r)) = c.get(t(309), &n, RecordType::A) else {
            panic!()
        };
        assert_eq!(r[0].ttl, 1);
        assert_eq!(c.get(t(310), &n, RecordType::A), None);
        assert!(c.is_empty());
    }

    #[test]
    fn nxdomain_is_cached_for_the_soa_minimum() {
        let mut c = Cache::new(100);
        let n = Name::from_ascii("nope.example.").unwrap();
        c.put_negative(t(0), &n, None, soa(3600, 60));
        assert!(matches!(
            c.get(t(59), &n, RecordType::MX),
            Some(Hit::NxDomain(_))
        ));
        assert_eq!(c.get(t(60), &n, RecordType::A), None);
        // The SOA's own TTL caps it when smaller (RFC 2308 §5).
        c.put_negative(t(0), &n, Some(RecordType::A), soa(30, 60));
        assert!(matches!(
            c.get(t(29), &n, RecordType::A),
            Some(Hit::NoData(_))
        ));
        assert_eq!(c.get(t(29), &n, RecordType::MX), None);
        assert_eq!(c.get(t(30), &n, RecordType::A), None);
    }

    #[test]
    fn closest_finds_the_deepest_zone_with_servers() {
        let mut c = Cache::new(100);
        let ns = |zone: &str| {
            Record::from_rdata(
                Name::from_ascii(zone).unwrap(),
                60,
                RData::NS(hickory_proto::rr::rdata::NS(
                    Name::from_ascii("ns.x.").unwrap(),
                )),
            )
        };
        c.put(t(0), vec![ns("com.")]);
        c.put(t(0), vec![ns("Example.com.")]);
        let q = Name::from_ascii("a.b.example.COM.").unwrap();
        let found = c.closest(t(1), &q, |r| Some(r[0].name.to_string()));
        assert_eq!(found, Some((2, "Example.com.".to_string())));
        // A zone whose servers are unknown is passed over.
        let found = c.closest(t(1), &q, |r| (r[0].name.num_labels() == 1).then_some(()));
        assert_eq!(found, Some((1, ())));
        assert_eq!(c.closest(t(60), &q, |_| Some(())), None);
    }

    #[test]
    fn a_full_cache_refuses_until_entries_expire() {
        let mut c = Cache::new(1);
        c.put(t(0), vec![a("a.example.", 10)]);
        c.put(t(0), vec![a("b.example.", 10)]);
        assert_eq!(c.len(), 1);
        c.put(t(10), vec![a("b.example.", 10)]);
        assert_eq!(c.len(), 1);
    }
}
