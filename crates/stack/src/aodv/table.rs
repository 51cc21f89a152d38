//! The AODV route table (RFC 3561 §6.2) and the sequence number rules
//! (§6.1).
//!
//! Entries live in a hash map by destination (a lookup for every AODV
//! message a node hears); every walk whose order shows (the destinations
//! a broken link makes unreachable, §6.11) is sorted by address, so a run
//! does not depend on hashing.

use crate::machine::IfaceId;
use smallvec::SmallVec;
use std::net::Ipv4Addr;

/// True when sequence number `a` is newer than `b`: §6.1 compares them as
/// signed 32-bit integers of their difference, so that numbers wrap
/// around (`0` is newer than `0xffff_ffff`).
pub fn newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// One destination's entry (§2's "route table entry" fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Destination Sequence Number.
    pub seq: u32,
    /// Valid Destination Sequence Number flag.
    pub valid_seq: bool,
    /// Valid (active) or invalid (§6.11 broke it or it expired, kept for
    /// its sequence number until it is deleted).
    pub valid: bool,
    /// Network interface and next hop (the neighbour's address on it).
    pub iface: IfaceId,
    pub next_hop: Ipv4Addr,
    pub hops: u8,
    /// Lifetime: until when the route is active (valid) or kept (invalid),
    /// in ns of virtual time.
    pub expires: u64,
    /// Precursors: neighbours that forward to the destination through us.
    pub precursors: SmallVec<[Ipv4Addr; 2]>,
}

impl Route {
    /// Adds `p` to the precursor list (once).
    pub fn add_precursor(&mut self, p: Ipv4Addr) {
        if !self.precursors.contains(&p) {
            self.precursors.push(p);
        }
    }
}

/// What an AODV message says about a route to a destination.
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    /// The destination's sequence number, if the message carries a valid
    /// one.
    pub seq: Option<u32>,
    pub hops: u8,
    pub iface: IfaceId,
    pub next_hop: Ipv4Addr,
    /// The route's lifetime from now, in ns.
    pub lifetime: u64,
}

/// A machine's AODV routes, by destination.
#[derive(Clone, Debug, Default)]
pub struct Table {
    routes: rustc_hash::FxHashMap<u32, Route>,
}

impl Table {
    /// The entry for `dst`, valid or not.
    pub fn get(&self, dst: Ipv4Addr) -> Option<&Route> {
        self.routes.get(&u32::from(dst))
    }

    pub fn get_mut(&mut self, dst: Ipv4Addr) -> Option<&mut Route> {
        self.routes.get_mut(&u32::from(dst))
    }

    /// The entry for `dst` if it is an active route at `now`.
    pub fn active(&self, dst: Ipv4Addr, now: u64) -> Option<&Route> {
        self.get(dst).filter(|r| r.valid && r.expires > now)
    }

    /// Applies `o` following §6.2: the route is created or replaced when
    /// the table knows no valid sequence number, when `o`'s is newer, or
    /// when they are equal and the route is invalid or `o`'s hop count is
    /// smaller. An offer without a sequence number (from a neighbour,
    /// §6.5's first paragraph) replaces only a route without a valid one
    /// or an inactive route. Returns true when the entry was written; its
    /// lifetime is then at least `now + o.lifetime`.
    pub fn offer(&mut self, dst: Ipv4Addr, o: Offer, now: u64) -> bool {
        // One walk down the tree: the entry is rewritten in place.
        use std::collections::hash_map::Entry;
        let mut e = match self.routes.entry(u32::from(dst)) {
            Entry::Occupied(e) => e,
            Entry::Vacant(v) => {
                v.insert(Route {
                    seq: o.seq.unwrap_or(0),
                    valid_seq: o.seq.is_some(),
                    valid: true,
                    iface: o.iface,
                    next_hop: o.next_hop,
                    hops: o.hops,
                    expires: now + o.lifetime,
                    precursors: SmallVec::new(),
                });
                return true;
            }
        };
        let r = e.get_mut();
        let take = match o.seq {
            _ if !r.valid || r.expires <= now => {
                // An invalid route is replaced unless the offer's number
                // is older than the one the route keeps.
                match o.seq {
                    Some(s) => !r.valid_seq || !newer(r.seq, s),
                    None => true,
                }
            }
            Some(s) => !r.valid_seq || newer(s, r.seq) || (s == r.seq && o.hops < r.hops),
            None => !r.valid_seq && o.hops <= r.hops,
        };
        if !take {
            return false;
        }
        let active = r.valid && r.expires > now;
        let (seq, valid_seq) = match o.seq {
            Some(s) => (s, true),
            None => (r.seq, r.valid_seq && r.valid),
        };
        let keep = if active { r.expires } else { 0 };
        *r = Route {
            seq,
            valid_seq,
            valid: true,
            iface: o.iface,
            next_hop: o.next_hop,
            hops: o.hops,
            expires: keep.max(now + o.lifetime),
            precursors: std::mem::take(&mut r.precursors),
        };
        true
    }

    /// §6.5's reverse route to a RREQ's originator `dst`: its sequence
    /// number is taken when newer (or none was known), the next hop and
    /// hop count always, and it lives until at least `min_until`.
    #[allow(clippy::too_many_arguments)]
    pub fn set_reverse(
        &mut self,
        dst: Ipv4Addr,
        seq: u32,
        hops: u8,
        iface: IfaceId,
        next_hop: Ipv4Addr,
        now: u64,
        min_until: u64,
    ) {
        let r = self.routes.entry(u32::from(dst)).or_insert(Route {
            seq,
            valid_seq: true,
            valid: false,
            iface,
            next_hop,
            hops,
            expires: 0,
            precursors: SmallVec::new(),
        });
        if !r.valid_seq || newer(seq, r.seq) {
            r.seq = seq;
        }
        if !(r.valid && r.expires > now) {
            r.expires = 0;
        }
        r.valid_seq = true;
        r.valid = true;
        r.iface = iface;
        r.next_hop = next_hop;
        r.hops = hops;
        r.expires = r.expires.max(min_until);
    }

    /// Extends an active route's lifetime to at least `until` (§6.2: data
    /// forwarded along it).
    pub fn refresh(&mut self, dst: Ipv4Addr, now: u64, until: u64) {
        if let Some(r) = self.routes.get_mut(&u32::from(dst)) {
            if r.valid && r.expires > now {
                r.expires = r.expires.max(until);
            }
        }
    }

    /// §6.11: invalidates the route to `dst`, increments its sequence
    /// number (or takes `seq` from a RERR) and keeps the entry until
    /// `delete_at`. Returns the entry's precursors if it was active.
    pub fn invalidate(
        &mut self,
        dst: Ipv4Addr,
        seq: Option<u32>,
        now: u64,
        delete_at: u64,
    ) -> Option<(u32, SmallVec<[Ipv4Addr; 2]>)> {
        let r = self.routes.get_mut(&u32::from(dst))?;
        if !r.valid || r.expires <= now {
            return None;
        }
        r.valid = false;
        r.seq = match seq {
            Some(s) if newer(s, r.seq) || !r.valid_seq => s,
            _ => r.seq.wrapping_add(1),
        };
        r.expires = delete_at;
        Some((r.seq, std::mem::take(&mut r.precursors)))
    }

    /// The active destinations whose next hop is `next_hop` on `iface`,
    /// in address order.
    pub fn through(&self, iface: IfaceId, next_hop: Ipv4Addr, now: u64) -> Vec<Ipv4Addr> {
        let mut dead: Vec<u32> = (self.routes.iter())
            .filter(|(_, r)| {
                r.valid && r.expires > now && r.next_hop == next_hop && r.iface == iface
            })
            .map(|(&d, _)| d)
            .collect();
        dead.sort_unstable();
        dead.into_iter().map(Ipv4Addr::from).collect()
    }

    /// Ends routes whose lifetime ran out at `now`: an active one becomes
    /// invalid until `now + delete_period`, an invalid one is deleted.
    pub fn expire(&mut self, now: u64, delete_period: u64) {
        self.routes.retain(|_, r| {
            if r.expires > now {
                return true;
            }
            if r.valid {
                r.valid = false;
                r.expires = now + delete_period;
                return true;
            }
            false
        });
    }

    /// True when the node holds an active route at `now` (§6.9: only a
    /// node on an active route sends HELLOs). A route to a neighbour
    /// counts: a destination holds no route that data refreshes, and
    /// would fall silent while data still reaches it. So HELLOs, once
    /// heard, keep neighbours speaking, as in AODV-UU.
    pub fn any_active(&self, now: u64) -> bool {
        self.routes.values().any(|r| r.valid && r.expires > now)
    }

    /// Every entry, in destination order.
    pub fn iter(&self) -> impl Iterator<Item = (Ipv4Addr, &Route)> {
        let mut all: Vec<(&u32, &Route)> = self.routes.iter().collect();
        all.sort_unstable_by_key(|(&d, _)| d);
        all.into_iter().map(|(&d, r)| (Ipv4Addr::from(d), r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const D: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);
    const S: u64 = 1_000_000_000;

    fn offer(seq: Option<u32>, hops: u8, via: Ipv4Addr) -> Offer {
        Offer {
            seq,
            hops,
            iface: 0,
            next_hop: via,
            lifetime: 3 * S,
        }
    }

    #[test]
    fn sequence_numbers_compare_as_signed_differences_across_the_wrap() {
        // RFC 3561 §6.1: newer iff (int32)(a - b) > 0.
        assert!(newer(2, 1));
        assert!(!newer(1, 2));
        assert!(!newer(5, 5));
        assert!(newer(0, 0xffff_ffff));
        assert!(newer(3, 0xffff_fff0));
        assert!(!newer(0xffff_fff0, 3));
        assert!(newer(0x7fff_ffff, 0));
        // Half the circle away, the difference is negative as an i32.
        assert!(!newer(0x8000_0000, 0));
        assert!(newer(0, 0x8000_0001));
    }

    #[test]
    fn a_newer_sequence_number_replaces_and_an_older_one_does_not() {
        let mut t = Table::default();
        assert!(t.offer(D, offer(Some(10), 4, A), 0));
        assert!(
            !t.offer(D, offer(Some(9), 1, B), 0),
            "older, even if shorter"
        );
        assert!(
            t.offer(D, offer(Some(11), 6, B), 0),
            "newer, even if longer"
        );
        assert_eq!(t.get(D).unwrap().next_hop, B);
        // Across the wrap: 0 is newer than 0xffffffff.
        let mut t = Table::default();
        t.offer(D, offer(Some(0xffff_ffff), 2, A), 0);
        assert!(t.offer(D, offer(Some(0), 3, B), 0));
    }

    #[test]
    fn an_equal_sequence_number_replaces_only_with_fewer_hops() {
        let mut t = Table::default();
        t.offer(D, offer(Some(10), 4, A), 0);
        assert!(!t.offer(D, offer(Some(10), 4, B), 0));
        assert!(!t.offer(D, offer(Some(10), 5, B), 0));
        assert!(t.offer(D, offer(Some(10), 3, B), 0));
        assert_eq!(t.get(D).unwrap().hops, 3);
    }

    #[test]
    fn an_unknown_sequence_number_in_the_table_is_replaced_by_any_known_one() {
        let mut t = Table::default();
        assert!(t.offer(D, offer(None, 1, A), 0));
        assert!(!t.get(D).unwrap().valid_seq);
        assert!(t.offer(D, offer(Some(1), 5, B), 0));
        assert!(t.get(D).unwrap().valid_seq);
        // A neighbour's route without a number does not displace it.
        assert!(!t.offer(D, offer(None, 1, A), 0));
    }

    #[test]
    fn a_broken_route_increments_its_number_and_keeps_it_until_deleted() {
        let mut t = Table::default();
        t.offer(D, offer(Some(7), 2, A), 0);
        t.get_mut(D).unwrap().add_precursor(B);
        t.get_mut(D).unwrap().add_precursor(B);
        let (seq, pre) = t.invalidate(D, None, S, 16 * S).unwrap();
        assert_eq!(seq, 8, "§6.11: incremented");
        assert_eq!(pre.as_slice(), &[B]);
        assert!(t.active(D, S).is_none());
        assert!(
            t.invalidate(D, None, S, 16 * S).is_none(),
            "already invalid"
        );
        // The same number with an invalid route, or a newer one, revives it.
        assert!(
            !t.offer(D, offer(Some(7), 1, B), 2 * S),
            "older than the kept 8"
        );
        assert!(t.offer(D, offer(Some(8), 9, B), 2 * S));
        // Deleted only DELETE_PERIOD after it became invalid.
        t.invalidate(D, Some(20), 3 * S, 18 * S);
        assert_eq!(t.get(D).unwrap().seq, 20, "a RERR's newer number is taken");
        t.expire(17 * S, 15 * S);
        assert!(t.get(D).is_some());
        t.expire(18 * S, 15 * S);
        assert!(t.get(D).is_none());
    }

    #[test]
    fn a_reverse_route_takes_the_newer_number_and_the_latest_hop() {
        let mut t = Table::default();
        t.set_reverse(D, 5, 3, 0, A, 0, 2 * S);
        t.set_reverse(D, 4, 2, 1, B, S, S + 1);
        let r = t.get(D).unwrap();
        assert_eq!((r.seq, r.hops, r.iface, r.next_hop), (5, 2, 1, B));
        assert_eq!(r.expires, 2 * S, "never shortened");
        t.set_reverse(D, 6, 2, 1, B, S, 3 * S);
        assert_eq!(
            (t.get(D).unwrap().seq, t.get(D).unwrap().expires),
            (6, 3 * S)
        );
    }

    #[test]
    fn lifetimes_run_out_and_forwarded_data_extends_them() {
        let mut t = Table::default();
        t.offer(D, offer(Some(1), 2, A), 0);
        assert!(t.active(D, 3 * S - 1).is_some());
        assert!(t.active(D, 3 * S).is_none());
        t.refresh(D, 2 * S, 5 * S);
        assert!(t.active(D, 5 * S - 1).is_some());
        // A later, shorter offer does not shorten an active route.
        t.offer(D, offer(Some(2), 2, A), S);
        assert_eq!(t.get(D).unwrap().expires, 5 * S);
        t.expire(5 * S, 15 * S);
        assert!(!t.get(D).unwrap().valid);
        assert_eq!(t.through(0, A, 5 * S), Vec::<Ipv4Addr>::new());
    }
}
