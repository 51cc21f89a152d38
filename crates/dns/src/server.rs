//! `dns_server`: an authoritative name server (RFC 1034 §4.3.2) on UDP and
//! TCP port 53.
//!
//! It answers from its zones only (no recursion: RA is never set), with
//! AA set on authoritative data, referrals (NS and glue) for delegated
//! names, and the zone's SOA in the authority section of NXDOMAIN and
//! NODATA answers (RFC 2308 §3). A UDP response larger than the client
//! accepts (512 bytes, or its EDNS size) goes out truncated with TC set,
//! and the client asks again over TCP, which this server also serves,
//! several connections at once.
//!
//! It publishes `queries`, `responses` (over UDP and TCP), `responses_tcp`,
//! `truncated` and `malformed` (queries it could not decode) in the run
//! report, kept current as it runs.

use crate::key::Key;
use crate::message::{self, PORT};
use crate::transport::{bytes_of, framed, read_framed};
use crate::zone::{Lookup, Zone};
use elvis_api::{AppResult, Host, LiveMetric, Message as Payload};
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::Name;
use rustc_hash::FxHashMap as HashMap;
use std::cell::Cell;
use std::rc::Rc;

/// Options of `dns_server`: the zones it serves, indexed by origin.
#[derive(Clone, Debug)]
pub struct Config {
    zones: Vec<Zone>,
    /// Zone indexes by `Key::new(origin, None)`.
    by_origin: HashMap<Box<[u8]>, usize>,
}

impl Config {
    /// Returns the configuration serving `zones` (a later zone with the
    /// origin of an earlier one replaces it).
    pub fn new(zones: Vec<Zone>) -> Config {
        let by_origin = zones
            .iter()
            .enumerate()
            .map(|(i, z)| (Key::new(z.origin(), None).as_bytes().into(), i))
            .collect();
        Config { zones, by_origin }
    }

    /// Returns the zone whose origin is the longest suffix of `name`.
    fn zone_for(&self, name: &Name) -> Option<&Zone> {
        let key = Key::new(name, None);
        (0..=key.labels())
            .find_map(|skip| self.by_origin.get(key.suffix(skip)))
            .map(|&i| &self.zones[i])
    }
}

/// Builds the response to query `q` from the zones of `cfg`.
pub fn respond(cfg: &Config, q: &Message) -> Message {
    if q.metadata.op_code != OpCode::Query {
        return message::response_to(q, ResponseCode::NotImp);
    }
    if q.queries.len() != 1 {
        return message::response_to(q, ResponseCode::FormErr);
    }
    let question = &q.queries[0];
    let qname = question.name();
    let Some(zone) = cfg.zone_for(qname) else {
        return message::response_to(q, ResponseCode::Refused);
    };
    let mut r = message::response_to(q, ResponseCode::NoError);
    r.metadata.authoritative = true;
    match zone.lookup(qname, question.query_type()) {
        Lookup::Answer {
            answers,
            additionals,
        } => {
            r.insert_answers(answers);
            r.insert_additionals(additionals);
        }
        Lookup::Referral { ns, glue } => {
            r.metadata.authoritative = false;
            r.insert_authorities(ns);
            r.insert_additionals(glue);
        }
        Lookup::NoData { answers, soa } => {
            r.insert_answers(answers);
            r.add_authority(soa);
        }
        Lookup::NxDomain { answers, soa } => {
            r.metadata.response_code = ResponseCode::NXDomain;
            r.insert_answers(answers);
            r.add_authority(soa);
        }
    }
    r
}

/// The server's running totals, published live.
struct Stats {
    queries: Counter,
    responses: Counter,
    responses_tcp: Counter,
    truncated: Counter,
    malformed: Counter,
}

/// One published count.
pub(crate) struct Counter {
    n: Cell<u64>,
    metric: LiveMetric,
}

impl Counter {
    pub(crate) fn new(host: &Host, name: &str) -> Counter {
        Counter {
            n: Cell::new(0),
            metric: host.publish_live(name, 0.0),
        }
    }

    pub(crate) fn add(&self, k: u64) {
        self.n.set(self.n.get() + k);
        self.metric.set(self.n.get() as f64);
    }
}

/// Serves the zones until the run ends.
///
/// # Errors
/// Port 53 already bound on the machine (UDP or TCP).
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let udp = host.udp_bind(PORT)?;
    // A machine without TCP serves UDP only (truncated answers then stay
    // truncated).
    let tcp = crate::transport::listen(&host)?;
    let stats = Rc::new(Stats {
        queries: Counter::new(&host, "queries"),
        responses: Counter::new(&host, "responses"),
        responses_tcp: Counter::new(&host, "responses_tcp"),
        truncated: Counter::new(&host, "truncated"),
        malformed: Counter::new(&host, "malformed"),
    });
    loop {
        let event = crate::transport::next_arrival(&udp, tcp.as_ref()).await;
        match event {
            Ok(datagram) => {
                let (mut m, from) = datagram?;
                let Some(q) = query_of(bytes_of(&mut m), &stats) else {
                    continue;
                };
                let r = respond(&cfg, &q);
                let (bytes, tc) = message::encode_udp(&r, message::udp_limit(&q));
                udp.send_to(Payload::from_vec(bytes), from).await?;
                stats.responses.add(1);
                stats.truncated.add(u64::from(tc));
            }
            Err(conn) => {
                let (s, _) = conn?;
                host.spawn(serve_tcp(s, cfg.clone(), stats.clone()))?;
            }
        }
    }
}

/// Decodes a query, counting it (or counting it malformed); responses and
/// undecodable bytes give `None`.
fn query_of(bytes: &[u8], stats: &Stats) -> Option<Message> {
    match message::decode(bytes) {
        Ok(q) if q.metadata.message_type == MessageType::Query => {
            stats.queries.add(1);
            Some(q)
        }
        Ok(_) => None,
        Err(_) => {
            stats.malformed.add(1);
            None
        }
    }
}

/// Answers the queries of one TCP connection (RFC 7766) until the client
/// closes it.
async fn serve_tcp(s: elvis_api::TcpStream, cfg: Rc<Config>, stats: Rc<Stats>) {
    let _ = s.set_nodelay(true);
    while let Ok(bytes) = read_framed(&s).await {
        let Some(q) = query_of(&bytes, &stats) else {
            return;
        };
        let r = respond(&cfg, &q);
        if s.write_all(Payload::from_vec(framed(&message::encode(&r))))
            .await
            .is_err()
        {
            return;
        }
        stats.responses.add(1);
        stats.responses_tcp.add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::RecordType;

    #[test]
    fn answers_are_authoritative_and_negatives_carry_the_soa() {
        let zones = Config::new(vec![crate::zone::sample()]);
        let q = message::query(
            1,
            Name::from_ascii("www.example.com.").unwrap(),
            RecordType::A,
            false,
        );
        let r = respond(&zones, &q);
        assert!(r.metadata.authoritative);
        assert_eq!(r.answers.len(), 1);
        let q = message::query(
            2,
            Name::from_ascii("no.example.com.").unwrap(),
            RecordType::A,
            false,
        );
        let r = respond(&zones, &q);
        assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
        assert_eq!(r.authorities[0].record_type(), RecordType::SOA);
        let q = message::query(
            3,
            Name::from_ascii("www.example.org.").unwrap(),
            RecordType::A,
            false,
        );
        assert_eq!(
            respond(&zones, &q).metadata.response_code,
            ResponseCode::Refused
        );
        let q = message::query(
            4,
            Name::from_ascii("h.sub.example.com.").unwrap(),
            RecordType::A,
            false,
        );
        let r = respond(&zones, &q);
        assert!(!r.metadata.authoritative && r.answers.is_empty());
        assert_eq!((r.authorities.len(), r.additionals.len()), (1, 1));
    }
}
