//! `dns_resolver`: a recursive, caching resolver (RFC 1034 §5.3.3) on UDP
//! and TCP port 53.
//!
//! For each question it starts from the closest zone whose name servers it
//! has cached (else the root hints), asks those servers without recursion
//! and follows their referrals down the tree, caching NS records and glue
//! on the way, until an authoritative answer, NXDOMAIN or NODATA comes
//! back. CNAMEs are chased (at most 8), across zones if need be. Answers
//! and negative answers (RFC 2308) are cached for their TTLs. Each server
//! gets `timeout` to answer before the next one is asked, and the whole
//! list is tried `attempts` times before the resolver gives up with
//! SERVFAIL. Truncated answers are asked again over TCP.
//!
//! A question the cache answers is answered at once; the others are
//! resolved concurrently, each in a task of its own (`Host::spawn`), each upstream
//! query from its own ephemeral port with a random id (RFC 5452).
//!
//! It publishes `queries`, `responses`, `responses_tcp`, `cache_hits`,
//! `upstream_queries`, `upstream_tcp`, `upstream_timeouts` and
//! `servfail`, kept current as it runs.
//!
//! # Gaps
//! - Questions for the same name in flight at once are resolved
//!   separately (no coalescing).
//! - No DNSSEC validation, no QNAME minimisation (RFC 9156).

use crate::cache::{Cache, Hit};
use crate::message::{self, PORT};
use crate::server::Counter;
use crate::transport::{self, framed, read_framed, Failure};
use elvis_api::{AppResult, Host, Message as Payload, UdpSocket};
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::Duration;

/// CNAMEs followed for one question at most.
const MAX_CNAMES: usize = 8;
/// Referrals followed for one name at most.
const MAX_REFERRALS: usize = 16;
/// Nesting of lookups of name servers' addresses (glue-less delegations).
const MAX_DEPTH: u8 = 3;

/// Options of `dns_resolver`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The root servers' addresses (root hints).
    pub roots: Vec<Ipv4Addr>,
    /// How long one upstream query waits before the next server is asked.
    pub timeout: Duration,
    /// How many times the list of servers is gone through.
    pub attempts: u8,
    /// The most cache entries.
    pub cache_size: usize,
}

impl Config {
    /// Returns the defaults for `roots`: 800 ms, 2 attempts, 100,000
    /// entries.
    pub fn new(roots: Vec<Ipv4Addr>) -> Config {
        Config {
            roots,
            timeout: Duration::from_millis(800),
            attempts: 2,
            cache_size: 100_000,
        }
    }
}

/// What a resolution ends with.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    pub rcode: ResponseCode,
    /// The CNAME chain, then the records asked for.
    pub answers: Vec<Record>,
    /// The SOA of a negative answer.
    pub soa: Option<Record>,
}

impl Resolution {
    fn new(rcode: ResponseCode, answers: Vec<Record>, soa: Option<Record>) -> Self {
        Resolution {
            rcode,
            answers,
            soa,
        }
    }
}

struct Stats {
    queries: Counter,
    responses: Counter,
    responses_tcp: Counter,
    cache_hits: Counter,
    upstream_queries: Counter,
    upstream_tcp: Counter,
    upstream_timeouts: Counter,
    servfail: Counter,
}

/// The resolver's state, shared by its tasks.
struct State {
    host: Host,
    cfg: Rc<Config>,
    cache: RefCell<Cache>,
    stats: Stats,
}

/// Resolves for clients until the run ends.
///
/// # Errors
/// Port 53 already bound on the machine.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let udp = Rc::new(host.udp_bind(PORT)?);
    // A machine without TCP serves UDP only (truncated answers then stay
    // truncated).
    let tcp = crate::transport::listen(&host)?;
    let c = |n: &str| Counter::new(&host, n);
    let st = Rc::new(State {
        host,
        cache: RefCell::new(Cache::new(cfg.cache_size)),
        cfg,
        stats: Stats {
            queries: c("queries"),
            responses: c("responses"),
            responses_tcp: c("responses_tcp"),
            cache_hits: c("cache_hits"),
            upstream_queries: c("upstream_queries"),
            upstream_tcp: c("upstream_tcp"),
            upstream_timeouts: c("upstream_timeouts"),
            servfail: c("servfail"),
        },
    });
    let host = st.host;
    loop {
        let event = crate::transport::next_arrival(&udp, tcp.as_ref()).await;
        match event {
            Ok(datagram) => {
                let (mut m, from) = datagram?;
                let Some(q) = query_of(crate::transport::bytes_of(&mut m), &st) else {
                    continue;
                };
                // A cached answer goes out at once; only a question that
                // needs the network gets a task of its own.
                match cached_answer(&st, &q) {
                    Some(r) => {
                        let (bytes, _) = message::encode_udp(&r, message::udp_limit(&q));
                        if udp.send_to(Payload::from_vec(bytes), from).await.is_ok() {
                            st.stats.responses.add(1);
                        }
                    }
                    None => host.spawn(answer_udp(st.clone(), udp.clone(), q, from))?,
                }
            }
            Err(conn) => {
                let (s, _) = conn?;
                host.spawn(serve_tcp(st.clone(), s))?;
            }
        }
    }
}

fn query_of(bytes: &[u8], st: &State) -> Option<Message> {
    let q = message::decode(bytes).ok()?;
    if q.metadata.message_type != MessageType::Query {
        return None;
    }
    st.stats.queries.add(1);
    Some(q)
}

async fn answer_udp(st: Rc<State>, udp: Rc<UdpSocket>, q: Message, from: SocketAddrV4) {
    let r = answer(&st, &q).await;
    let (bytes, _) = message::encode_udp(&r, message::udp_limit(&q));
    if udp.send_to(Payload::from_vec(bytes), from).await.is_ok() {
        st.stats.responses.add(1);
    }
}

async fn serve_tcp(st: Rc<State>, s: elvis_api::TcpStream) {
    let _ = s.set_nodelay(true);
    while let Ok(bytes) = read_framed(&s).await {
        let Some(q) = query_of(&bytes, &st) else {
            return;
        };
        let r = answer(&st, &q).await;
        let out = Payload::from_vec(framed(&message::encode(&r)));
        if s.write_all(out).await.is_err() {
            return;
        }
        st.stats.responses.add(1);
        st.stats.responses_tcp.add(1);
    }
}

/// Returns the response to a client's query when the cache holds the
/// answer itself (no CNAME to follow), counting the hit.
fn cached_answer(st: &State, q: &Message) -> Option<Message> {
    if q.metadata.op_code != OpCode::Query || q.queries.len() != 1 {
        return None;
    }
    let question = &q.queries[0];
    let res = match st.cached(question.name(), question.query_type())? {
        Hit::Records(r) => Resolution::new(ResponseCode::NoError, r, None),
        Hit::NxDomain(soa) => Resolution::new(ResponseCode::NXDomain, Vec::new(), Some(*soa)),
        Hit::NoData(soa) => Resolution::new(ResponseCode::NoError, Vec::new(), Some(*soa)),
    };
    st.stats.cache_hits.add(1);
    Some(response(st, q, res))
}

/// Builds the response to a client's query.
async fn answer(st: &State, q: &Message) -> Message {
    if q.metadata.op_code != OpCode::Query {
        return message::response_to(q, ResponseCode::NotImp);
    }
    if q.queries.len() != 1 {
        return message::response_to(q, ResponseCode::FormErr);
    }
    let question = &q.queries[0];
    let res = resolve(st, question.name().clone(), question.query_type(), 0).await;
    response(st, q, res)
}

/// Returns the response to `q` that `res` gives.
fn response(st: &State, q: &Message, res: Resolution) -> Message {
    if res.rcode == ResponseCode::ServFail {
        st.stats.servfail.add(1);
    }
    let mut r = message::response_to(q, res.rcode);
    r.metadata.recursion_available = true;
    r.insert_answers(res.answers);
    if let Some(soa) = res.soa {
        r.add_authority(soa);
    }
    r
}

/// Resolves `qname`/`qtype` from the cache or by iteration.
///
/// Long because it is RFC 1034 §5.3.3's algorithm in one loop: the cache,
/// the closest known servers, and the four kinds of upstream answer.
async fn resolve(st: &State, qname: Name, qtype: RecordType, depth: u8) -> Resolution {
    let mut chain: Vec<Record> = Vec::new();
    let mut name = qname;
    let mut cached = true;
    for _ in 0..MAX_CNAMES {
        match st.cached(&name, qtype) {
            Some(Hit::Records(r)) => {
                chain.extend(r);
                st.hit(cached);
                return Resolution::new(ResponseCode::NoError, chain, None);
            }
            Some(Hit::NxDomain(soa)) => {
                st.hit(cached);
                return Resolution::new(ResponseCode::NXDomain, chain, Some(*soa));
            }
            Some(Hit::NoData(soa)) => {
                st.hit(cached);
                return Resolution::new(ResponseCode::NoError, chain, Some(*soa));
            }
            None => {}
        }
        if qtype != RecordType::CNAME {
            if let Some(Hit::Records(c)) = st.cached(&name, RecordType::CNAME) {
                name = cname_target(&c[0]).unwrap_or(name);
                chain.extend(c);
                continue;
            }
        }
        cached = false;
        let (mut zone, mut servers) = st.closest_servers(&name);
        let mut next = None;
        for _ in 0..MAX_REFERRALS {
            let Some(r) = st.ask(&servers, &name, qtype).await else {
                return Resolution::new(ResponseCode::ServFail, chain, None);
            };
            let (cnames, set, last) = follow(&r.answers, &name, qtype);
            for c in &cnames {
                st.store(vec![c.clone()]);
            }
            chain.extend(cnames);
            if let Some(set) = set {
                st.store(set.clone());
                chain.extend(set);
                return Resolution::new(ResponseCode::NoError, chain, None);
            }
            let soa = r
                .authorities
                .iter()
                .find(|a| a.record_type() == RecordType::SOA)
                .cloned();
            if r.metadata.response_code == ResponseCode::NXDomain {
                if let Some(soa) = &soa {
                    st.store_negative(&last, None, soa.clone());
                }
                return Resolution::new(ResponseCode::NXDomain, chain, soa);
            }
            if last != name {
                // A CNAME out of this server's data: start again from it.
                next = Some(last);
                break;
            }
            if let Some(soa) = soa {
                st.store_negative(&name, Some(qtype), soa.clone());
                return Resolution::new(ResponseCode::NoError, chain, Some(soa));
            }
            match st.referral(&r, &name, &zone, depth).await {
                Some((z, s)) => (zone, servers) = (z, s),
                None => return Resolution::new(ResponseCode::ServFail, chain, None),
            }
        }
        match next {
            Some(n) => name = n,
            None => return Resolution::new(ResponseCode::ServFail, chain, None),
        }
    }
    Resolution::new(ResponseCode::ServFail, chain, None)
}

/// Follows `answers` from `name`: the CNAMEs met, the RRset of `qtype` at
/// the end of the chain if present, and the last name reached.
fn follow(
    answers: &[Record],
    name: &Name,
    qtype: RecordType,
) -> (Vec<Record>, Option<Vec<Record>>, Name) {
    let mut cur = name.clone();
    let mut chain = Vec::new();
    for _ in 0..MAX_CNAMES {
        let set: Vec<Record> = answers
            .iter()
            .filter(|r| r.name == cur && r.record_type() == qtype)
            .cloned()
            .collect();
        if !set.is_empty() {
            return (chain, Some(set), cur);
        }
        let Some(c) = answers
            .iter()
            .find(|r| r.name == cur && r.record_type() == RecordType::CNAME)
        else {
            break;
        };
        chain.push(c.clone());
        match cname_target(c) {
            Some(t) => cur = t,
            None => break,
        }
    }
    (chain, None, cur)
}

fn cname_target(r: &Record) -> Option<Name> {
    match &r.data {
        RData::CNAME(c) => Some(c.0.clone()),
        _ => None,
    }
}

impl State {
    fn cached(&self, name: &Name, t: RecordType) -> Option<Hit> {
        self.cache.borrow_mut().get(self.host.now(), name, t)
    }

    fn hit(&self, from_cache_only: bool) {
        if from_cache_only {
            self.stats.cache_hits.add(1);
        }
    }

    fn store(&self, set: Vec<Record>) {
        self.cache.borrow_mut().put(self.host.now(), set);
    }

    fn store_negative(&self, name: &Name, t: Option<RecordType>, soa: Record) {
        self.cache
            .borrow_mut()
            .put_negative(self.host.now(), name, t, soa);
    }

    /// Returns the deepest zone enclosing `name` whose servers' addresses
    /// are cached, and those addresses; else the root and its hints.
    fn closest_servers(&self, name: &Name) -> (Name, Vec<Ipv4Addr>) {
        let now = self.host.now();
        let cache = self.cache.borrow();
        let found = cache.closest(now, name, |ns| {
            let ips = addresses(&cache, now, ns);
            (!ips.is_empty()).then_some(ips)
        });
        match found {
            Some((labels, ips)) => (name.trim_to(labels), ips),
            None => (Name::root(), self.cfg.roots.clone()),
        }
    }

    /// Returns the cached addresses of the NS targets in `ns`.
    fn addresses(&self, ns: &[Record]) -> Vec<Ipv4Addr> {
        addresses(&self.cache.borrow(), self.host.now(), ns)
    }

    /// Takes a referral in `r` for `name` from servers of `zone`: caches
    /// its NS records and the glue within the zone's authority (the
    /// bailiwick rule), and returns the child zone and its servers'
    /// addresses (looked up when there was no glue). `None` for a lame
    /// or upward referral.
    async fn referral(
        &self,
        r: &Message,
        name: &Name,
        zone: &Name,
        depth: u8,
    ) -> Option<(Name, Vec<Ipv4Addr>)> {
        let ns: Vec<Record> = r
            .authorities
            .iter()
            .filter(|a| a.record_type() == RecordType::NS)
            .cloned()
            .collect();
        let child = ns.first()?.name.clone();
        let downward = child.num_labels() > zone.num_labels() && zone.zone_of(&child);
        if !downward || !child.zone_of(name) || ns.iter().any(|a| a.name != child) {
            return None;
        }
        for set in rrsets(&r.additionals) {
            let glue_for_ns = ns
                .iter()
                .any(|n| matches!(&n.data, RData::NS(t) if t.0 == set[0].name));
            if set[0].record_type() == RecordType::A && glue_for_ns && zone.zone_of(&set[0].name) {
                self.store(set);
            }
        }
        self.store(ns.clone());
        let mut ips = self.addresses(&ns);
        if ips.is_empty() && depth < MAX_DEPTH {
            for n in ns.iter().filter_map(|r| match &r.data {
                RData::NS(t) => Some(t.0.clone()),
                _ => None,
            }) {
                let res = Box::pin(resolve(self, n, RecordType::A, depth + 1)).await;
                ips.extend(res.answers.iter().filter_map(|r| match r.data {
                    RData::A(a) => Some(a.0),
                    _ => None,
                }));
                if !ips.is_empty() {
                    break;
                }
            }
        }
        (!ips.is_empty()).then_some((child, ips))
    }

    /// Asks `servers` for `name`/`qtype` without recursion, each in turn
    /// (starting at a random one) until one gives an answer that is not
    /// SERVFAIL, REFUSED or the like; the list is tried `attempts` times.
    async fn ask(&self, servers: &[Ipv4Addr], name: &Name, qtype: RecordType) -> Option<Message> {
        if servers.is_empty() {
            return None;
        }
        let start = (self.host.random_u64() % servers.len() as u64) as usize;
        for i in 0..servers.len() * usize::from(self.cfg.attempts.max(1)) {
            let server = servers[(start + i) % servers.len()];
            let id = self.host.random_u64() as u16;
            let q = message::query(id, name.clone(), qtype, false);
            self.stats.upstream_queries.add(1);
            match transport::exchange(&self.host, server, &q, self.cfg.timeout).await {
                Ok((r, tcp)) => {
                    if tcp {
                        self.stats.upstream_tcp.add(1);
                    }
                    if matches!(
                        r.metadata.response_code,
                        ResponseCode::NoError | ResponseCode::NXDomain
                    ) {
                        return Some(r);
                    }
                }
                Err(Failure::Timeout) => self.stats.upstream_timeouts.add(1),
                Err(_) => {}
            }
        }
        None
    }
}

/// Returns the addresses `cache` holds for the NS targets in `ns`.
fn addresses(cache: &Cache, now: elvis_api::Time, ns: &[Record]) -> Vec<Ipv4Addr> {
    let mut ips = Vec::new();
    for r in ns {
        let RData::NS(target) = &r.data else {
            continue;
        };
        if let Some(a) = cache.peek(now, &target.0, RecordType::A) {
            ips.extend(a.iter().filter_map(|r| match r.data {
                RData::A(a) => Some(a.0),
                _ => None,
            }));
        }
    }
    ips
}

/// Groups records into RRsets (same name and type), in order of first
/// appearance.
fn rrsets(records: &[Record]) -> Vec<Vec<Record>> {
    let mut out: Vec<Vec<Record>> = Vec::new();
    for r in records {
        match out
            .iter_mut()
            .find(|s| s[0].name == r.name && s[0].record_type() == r.record_type())
        {
            Some(s) => s.push(r.clone()),
            None => out.push(vec![r.clone()]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::{A, CNAME};

    fn n(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    #[test]
    fn follow_walks_a_cname_chain_to_the_records() {
        let answers = vec![
            Record::from_rdata(n("a.x."), 60, RData::CNAME(CNAME(n("b.y.")))),
            Record::from_rdata(n("b.y."), 60, RData::CNAME(CNAME(n("c.z.")))),
            Record::from_rdata(n("c.z."), 60, RData::A(A::new(10, 0, 0, 1))),
        ];
        let (chain, set, last) = follow(&answers, &n("A.X."), RecordType::A);
        assert_eq!(chain.len(), 2);
        assert_eq!(set.unwrap().len(), 1);
        assert_eq!(last, n("c.z."));
        let (chain, set, last) = follow(&answers[..2], &n("a.x."), RecordType::A);
        assert_eq!((chain.len(), set, last), (2, None, n("c.z.")));
    }
}
