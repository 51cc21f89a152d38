//! An authoritative zone and the RFC 1034 §4.3.2 lookup in it.
//!
//! A [`Zone`] holds the records of one origin by owner name in a hash map
//! (keyed by [`Key`], so without regard to case), and the
//! names again in a `BTreeSet` in DNSSEC canonical order (RFC 4034 §6.1),
//! where the names below a node follow it: that is how an empty
//! non-terminal is told from a name that does not exist, and the order in
//! which [`Zone::records`] lists them. [`Zone::lookup`] answers one question
//! with an answer (CNAMEs chased inside the zone), a referral to a
//! delegated child, NODATA or NXDOMAIN.
//!
//! # Gaps
//! - No wildcards (RFC 4592), no DNSSEC, no zone transfers.

use crate::key::Key;
use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

/// The records of one zone.
#[derive(Clone, Debug)]
pub struct Zone {
    origin: Name,
    /// How many labels the origin has.
    origin_labels: usize,
    /// The records by owner, keyed by `Key::new(owner, None)`.
    nodes: HashMap<Box<[u8]>, Vec<Record>>,
    names: BTreeSet<Name>,
    soa: Record,
}

/// What a zone says about one question.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// Authoritative data: the answers (a CNAME chain first, if any) and
    /// the addresses of the names they point at, when in the zone.
    Answer {
        answers: Vec<Record>,
        additionals: Vec<Record>,
    },
    /// The name is below a delegation: its NS records and their glue.
    Referral { ns: Vec<Record>, glue: Vec<Record> },
    /// The name exists without records of that type (RFC 2308 §2.2); a
    /// CNAME chain that led there comes first.
    NoData { answers: Vec<Record>, soa: Record },
    /// The name does not exist (RFC 2308 §2.1).
    NxDomain { answers: Vec<Record>, soa: Record },
}

impl Zone {
    /// Builds the zone `origin` from `records`. A zone without an SOA
    /// record gets one: `ns.<origin>` (or its first NS target),
    /// `hostmaster.<origin>`, serial 1, refresh 3600, retry 600, expire
    /// 86400, minimum 300, TTL 3600.
    ///
    /// # Errors
    /// A record outside the zone, two SOA records, an SOA not at the
    /// origin, or a CNAME beside other data (RFC 1034 §3.6.2).
    pub fn new(origin: Name, records: Vec<Record>) -> Result<Zone, String> {
        let mut origin = origin.to_lowercase();
        origin.set_fqdn(true);
        let mut nodes: HashMap<Box<[u8]>, Vec<Record>> = HashMap::default();
        let mut soa = None;
        for r in records {
            if !origin.zone_of(&r.name) {
                return Err(format!("{} is outside the zone {origin}", r.name));
            }
            if r.record_type() == RecordType::SOA {
                if r.name != origin {
                    return Err(format!(
                        "the SOA record must be at {origin}, not {}",
                        r.name
                    ));
                }
                if soa.replace(r.clone()).is_some() {
                    return Err(format!("the zone {origin} has two SOA records"));
                }
                continue;
            }
            let node = nodes.entry(key(&r.name)).or_default();
            let cname = |x: &Record| x.record_type() == RecordType::CNAME;
            if node.iter().any(cname) || (cname(&r) && !node.is_empty()) {
                return Err(format!(
                    "{} has a CNAME and other data (RFC 1034 §3.6.2 allows only the CNAME)",
                    r.name
                ));
            }
            if !node.contains(&r) {
                node.push(r);
            }
        }
        let soa = soa.unwrap_or_else(|| default_soa(&origin, nodes.get(&key(&origin))));
        if origin_has_cname(&nodes, &origin) {
            return Err(format!("the zone apex {origin} cannot be a CNAME"));
        }
        // Every node holds a record: its first one's owner names it.
        // Sorted by canonical key first, the set builds from one sorted
        // run (names differ, as their keys do, so none is merged).
        let mut names: Vec<Name> = nodes.values().map(|n| n[0].name.clone()).collect();
        names.sort_by_cached_key(crate::key::canonical);
        let names = names.into_iter().collect();
        Ok(Zone {
            origin_labels: Key::new(&origin, None).labels(),
            origin,
            nodes,
            names,
            soa,
        })
    }

    /// Returns the zone's origin.
    pub fn origin(&self) -> &Name {
        &self.origin
    }

    /// Returns the zone's SOA record.
    pub fn soa(&self) -> &Record {
        &self.soa
    }

    /// Returns how many records the zone holds (the SOA included).
    pub fn len(&self) -> usize {
        1 + self.nodes.values().map(Vec::len).sum::<usize>()
    }

    /// Returns whether the zone holds only its SOA.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Returns every record, the SOA first, then in canonical name order.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        let nodes = self
            .names
            .iter()
            .flat_map(|n| &self.nodes[Key::new(n, None).as_bytes()]);
        std::iter::once(&self.soa).chain(nodes)
    }

    /// Answers `qname`/`qtype` (RFC 1034 §4.3.2 steps 3a–3c), following
    /// CNAMEs that stay in the zone (at most 16).
    pub fn lookup(&self, qname: &Name, qtype: RecordType) -> Lookup {
        let mut answers = Vec::new();
        let mut name = qname.clone();
        for _ in 0..16 {
            if let Some((ns, glue)) = self.delegation(&name) {
                if answers.is_empty() {
                    return Lookup::Referral { ns, glue };
                }
                // A CNAME into a delegated child: the resolver goes on.
                break;
            }
            let Some(node) = self.node(&name) else {
                if self.has_descendants(&name) {
                    return Lookup::NoData {
                        answers,
                        soa: self.negative_soa(),
                    };
                }
                return Lookup::NxDomain {
                    answers,
                    soa: self.negative_soa(),
                };
            };
            let mut matching: Vec<Record> = node
                .iter()
                .filter(|r| qtype == RecordType::ANY || r.record_type() == qtype)
                .cloned()
                .collect();
            if name == self.origin && matches!(qtype, RecordType::SOA | RecordType::ANY) {
                matching.insert(0, self.soa.clone());
            }
            if !matching.is_empty() {
                let additionals = self.additionals(&matching);
                answers.extend(matching);
                return Lookup::Answer {
                    answers,
                    additionals,
                };
            }
            match node.iter().find(|r| r.record_type() == RecordType::CNAME) {
                Some(c) => {
                    answers.push(c.clone());
                    let RData::CNAME(target) = &c.data else {
                        unreachable!("a CNAME record holds CNAME data")
                    };
                    if !self.origin.zone_of(&target.0) {
                        break;
                    }
                    name = target.0.clone();
                }
                None => {
                    return Lookup::NoData {
                        answers,
                        soa: self.negative_soa(),
                    }
                }
            }
        }
        Lookup::Answer {
            answers,
            additionals: Vec::new(),
        }
    }

    /// Returns the records at `name` (the origin exists even with only
    /// its SOA).
    fn node(&self, name: &Name) -> Option<&[Record]> {
        match self.nodes.get(Key::new(name, None).as_bytes()) {
            Some(v) => Some(v),
            None if *name == self.origin => Some(&[]),
            None => None,
        }
    }

    /// Returns the NS records and glue of the delegation at or above
    /// `name`, below the origin (RFC 1034 §4.3.2 step 3b).
    fn delegation(&self, name: &Name) -> Option<(Vec<Record>, Vec<Record>)> {
        let key = Key::new(name, None);
        let below = key.labels().checked_sub(self.origin_labels)?;
        // The topmost cut below the origin decides: the name less all but
        // one of its labels below the origin first.
        for skip in (0..below).rev() {
            let Some(node) = self.nodes.get(key.suffix(skip)) else {
                continue;
            };
            let ns: Vec<Record> = node
                .iter()
                .filter(|r| r.record_type() == RecordType::NS)
                .cloned()
                .collect();
            if !ns.is_empty() {
                let glue = self.addresses_of(ns.iter().filter_map(|r| match &r.data {
                    RData::NS(n) => Some(&n.0),
                    _ => None,
                }));
                return Some((ns, glue));
            }
        }
        None
    }

    /// Returns the A records of the NS and MX targets among `records`
    /// (RFC 1035 §3.3.9, §3.3.11 additional section processing).
    fn additionals(&self, records: &[Record]) -> Vec<Record> {
        self.addresses_of(records.iter().filter_map(|r| match &r.data {
            RData::NS(n) => Some(&n.0),
            RData::MX(mx) => Some(&mx.exchange),
            _ => None,
        }))
    }

    fn addresses_of<'a>(&self, names: impl Iterator<Item = &'a Name>) -> Vec<Record> {
        let mut out = Vec::new();
        for n in names {
            if let Some(node) = self.nodes.get(Key::new(n, None).as_bytes()) {
                out.extend(
                    node.iter()
                        .filter(|r| r.record_type() == RecordType::A)
                        .cloned(),
                );
            }
        }
        out
    }

    /// Returns whether some name below `name` exists (an empty
    /// non-terminal answers NODATA, not NXDOMAIN: RFC 8020).
    fn has_descendants(&self, name: &Name) -> bool {
        use std::ops::Bound::{Excluded, Unbounded};
        self.names
            .range((Excluded(name.clone()), Unbounded))
            .next()
            .is_some_and(|n| name.zone_of(n))
    }

    /// Returns the SOA for a negative answer, its TTL the smaller of its
    /// own and its MINIMUM field (RFC 2308 §3).
    fn negative_soa(&self) -> Record {
        let mut soa = self.soa.clone();
        if let RData::SOA(s) = &soa.data {
            soa.ttl = soa.ttl.min(s.minimum);
        }
        soa
    }
}

/// Returns the map key of `name`'s node.
fn key(name: &Name) -> Box<[u8]> {
    Key::new(name, None).as_bytes().into()
}

fn origin_has_cname(nodes: &HashMap<Box<[u8]>, Vec<Record>>, origin: &Name) -> bool {
    nodes
        .get(&key(origin))
        .is_some_and(|n| n.iter().any(|r| r.record_type() == RecordType::CNAME))
}

fn default_soa(origin: &Name, apex: Option<&Vec<Record>>) -> Record {
    let label = |l: &str| {
        Name::from_ascii(l)
            .and_then(|n| n.append_domain(origin))
            .unwrap_or_else(|_| origin.clone())
    };
    let mname = apex
        .and_then(|a| {
            a.iter().find_map(|r| match &r.data {
                RData::NS(n) => Some(n.0.clone()),
                _ => None,
            })
        })
        .unwrap_or_else(|| label("ns"));
    let soa = SOA::new(mname, label("hostmaster"), 1, 3600, 600, 86_400, 300);
    Record::from_rdata(origin.clone(), 3600, RData::SOA(soa))
}

/// Returns a small zone (`example.com.`): a CNAME chain, a delegation
/// with glue, an MX, an empty non-terminal. The fuzz bodies and the tests
/// query it.
pub fn sample() -> Zone {
    let origin = Name::from_ascii("example.com.").expect("a valid name");
    let text = "\
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 60
@ NS ns1
ns1 A 10.1.0.2
www A 10.1.0.3
web CNAME www
alias CNAME web
out CNAME www.example.org.
mail MX 10 ns1
sub NS ns.sub
ns.sub A 10.9.0.1
a.b.c A 10.1.0.9
";
    let records = crate::master::parse(text, &origin, "sample").expect("the sample parses");
    Zone::new(origin, records).expect("the sample is a zone")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master;

    fn n(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    #[test]
    fn a_cname_chain_is_followed_inside_the_zone() {
        let Lookup::Answer { answers, .. } =
            sample().lookup(&n("ALIAS.example.com."), RecordType::A)
        else {
            panic!()
        };
        let types: Vec<RecordType> = answers.iter().map(Record::record_type).collect();
        assert_eq!(types, [RecordType::CNAME, RecordType::CNAME, RecordType::A]);
    }

    #[test]
    fn a_cname_out_of_the_zone_is_answered_alone() {
        let Lookup::Answer { answers, .. } = sample().lookup(&n("out.example.com."), RecordType::A)
        else {
            panic!()
        };
        assert_eq!(answers.len(), 1);
    }

    #[test]
    fn names_below_a_cut_are_referred_with_glue() {
        let Lookup::Referral { ns, glue } =
            sample().lookup(&n("x.sub.example.com."), RecordType::A)
        else {
            panic!()
        };
        assert_eq!((ns.len(), glue.len()), (1, 1));
    }

    #[test]
    fn missing_names_and_types_are_negative_with_the_soa_minimum() {
        let z = sample();
        let Lookup::NxDomain { soa, .. } = z.lookup(&n("nope.example.com."), RecordType::A) else {
            panic!()
        };
        assert_eq!(soa.ttl, 60);
        assert!(matches!(
            z.lookup(&n("www.example.com."), RecordType::MX),
            Lookup::NoData { .. }
        ));
        // b.c.example.com is an empty non-terminal: NODATA (RFC 8020).
        assert!(matches!(
            z.lookup(&n("b.c.example.com."), RecordType::A),
            Lookup::NoData { .. }
        ));
    }

    #[test]
    fn mx_answers_carry_the_exchange_address() {
        let Lookup::Answer { additionals, .. } =
            sample().lookup(&n("mail.example.com."), RecordType::MX)
        else {
            panic!()
        };
        assert_eq!(additionals.len(), 1);
    }

    #[test]
    fn bad_zones_are_refused() {
        let o = n("example.com.");
        let recs = |t: &str| master::parse(t, &o, "t").unwrap();
        assert!(Zone::new(o.clone(), recs("a.example.org. 60 A 10.0.0.1\n")).is_err());
        assert!(Zone::new(o.clone(), recs("a 60 A 10.0.0.1\na 60 CNAME b\n")).is_err());
        let z = Zone::new(o.clone(), recs("www 60 A 10.0.0.1\n")).unwrap();
        assert_eq!(z.soa().name, o);
    }
}
