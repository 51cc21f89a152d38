//! DNS messages on the wire (RFC 1035 §4), through hickory-proto.
//!
//! hickory-proto decodes, and encodes what this crate's own encoder
//! (`emit.rs`, faster for the record types zones hold) does not; this
//! module adds what a server and a resolver need around it:
//! queries with an EDNS(0) OPT record (RFC 6891), the UDP size limit a
//! response must fit (512 bytes, or the client's EDNS payload size, up to
//! ours), truncation with the TC bit, and the two-byte length prefix of DNS
//! over TCP (RFC 1035 §4.2.2).
//!
//! Decoding never panics: a malformed message (a compression pointer that
//! loops or points past the end, a count larger than the records present)
//! is an error. The fuzz target `dns_message` and the corpus test hold
//! this to account.

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
use std::fmt;

/// The DNS port (RFC 1035 §4.2).
pub const PORT: u16 = 53;

/// The largest UDP response without EDNS (RFC 1035 §4.2.1).
pub const CLASSIC_UDP: u16 = 512;

/// The EDNS payload size we advertise and accept at most: 1232 bytes, the
/// size DNS Flag Day 2020 chose so that a response fits an IPv6 minimum
/// MTU without fragments.
pub const EDNS_UDP: u16 = 1232;

/// Why bytes are not a DNS message we can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// Decodes a DNS message.
///
/// # Errors
/// Any malformation (truncated header or record, bad compression
/// pointer, label too long, trailing garbage in a record).
pub fn decode(bytes: &[u8]) -> Result<Message, WireError> {
    if let Some(q) = decode_query(bytes) {
        return Ok(q);
    }
    Message::from_vec(bytes).map_err(|e| WireError(e.to_string()))
}

/// Decodes the common query without hickory's general decoder: one
/// question of class IN, and at most an EDNS(0)
/// OPT record without options; `None` for anything else (which
/// [`decode`] then leaves to hickory). It builds the message hickory
/// would build from the same bytes, field for field (the tests compare
/// the two over every query this crate sends and mutations of them), at
/// a third of the cost: a server and a resolver decode one for every
/// question they get.
fn decode_query(b: &[u8]) -> Option<Message> {
    let u16_at =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let (flags_hi, flags_lo) = (*b.get(2)?, *b.get(3)?);
    // A query (QR clear), opcode QUERY, the Z bit clear.
    if flags_hi & 0xf8 != 0 || flags_lo & 0x40 != 0 {
        return None;
    }
    let additional = u16_at(10)?;
    if u16_at(4)? != 1 || u16_at(6)? != 0 || u16_at(8)? != 0 || additional > 1 {
        return None;
    }
    // The question's name, read as hickory reads it.
    let mut d = BinDecoder::new(b);
    d.read_slice(12).ok()?;
    let name = Name::read(&mut d).ok()?;
    let mut at = d.index();
    let qtype = RecordType::from(u16_at(at)?);
    if u16_at(at + 2)? != 1 {
        return None;
    }
    at += 4;
    let edns = if additional == 1 {
        // The OPT record: root owner, type 41, payload size, TTL
        // (extended RCODE, version, DO bit and Z), no options.
        if *b.get(at)? != 0 || u16_at(at + 1)? != 41 {
            return None;
        }
        let payload = u16_at(at + 3)?;
        let (rcode_high, version) = (*b.get(at + 5)?, *b.get(at + 6)?);
        let flags = u16_at(at + 7)?;
        if payload < 512 || flags & 0x7fff != 0 || u16_at(at + 9)? != 0 {
            return None;
        }
        at += 11;
        let mut e = Edns::new();
        e.set_max_payload(payload)
            .set_rcode_high(rcode_high)
            .set_version(version)
            .set_dnssec_ok(flags & 0x8000 != 0);
        Some(e)
    } else {
        None
    };
    if at != b.len() {
        return None;
    }
    let mut m = Message::new(u16_at(0)?, MessageType::Query, OpCode::Query);
    let md = &mut m.metadata;
    md.authoritative = flags_hi & 0x04 != 0;
    md.truncation = flags_hi & 0x02 != 0;
    md.recursion_desired = flags_hi & 0x01 != 0;
    md.recursion_available = flags_lo & 0x80 != 0;
    md.authentic_data = flags_lo & 0x20 != 0;
    md.checking_disabled = flags_lo & 0x10 != 0;
    md.response_code =
        ResponseCode::from(edns.as_ref().map_or(0, Edns::rcode_high), flags_lo & 0x0f);
    m.add_query(Query::query(name, qtype));
    m.edns = edns;
    Some(m)
}

/// Encodes a message (names compressed): with this crate's encoder
/// (`emit.rs`) when it holds only what a zone holds, else with hickory.
///
/// # Panics
/// Never for messages this crate builds; hickory only fails on a name
/// over 255 bytes or more than 65,535 records, which no zone holds.
pub fn encode(msg: &Message) -> Vec<u8> {
    crate::emit::emit(msg)
        .unwrap_or_else(|| msg.to_vec().expect("a message this crate built encodes"))
}

/// Returns a query for `name`/`qtype` with id `id`, recursion desired or
/// not, and an EDNS(0) OPT record advertising [`EDNS_UDP`].
pub fn query(id: u16, name: Name, qtype: RecordType, recursion_desired: bool) -> Message {
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = recursion_desired;
    m.add_query(Query::query(name, qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_UDP);
    m.set_edns(edns);
    m
}

/// Returns an empty response to `q`: same id, opcode, question and RD
/// bit; an OPT record when `q` had one (RFC 6891 §6.1.1).
pub fn response_to(q: &Message, rcode: ResponseCode) -> Message {
    let mut r = Message::new(q.metadata.id, MessageType::Response, q.metadata.op_code);
    r.metadata.recursion_desired = q.metadata.recursion_desired;
    r.metadata.response_code = rcode;
    r.add_queries(q.queries.iter().cloned());
    if q.edns.is_some() {
        let mut edns = Edns::new();
        edns.set_max_payload(EDNS_UDP);
        r.set_edns(edns);
    }
    r
}

/// Returns the largest UDP response `q`'s sender accepts: its EDNS payload
/// size (at least 512, at most [`EDNS_UDP`]), or 512 without EDNS.
pub fn udp_limit(q: &Message) -> usize {
    match &q.edns {
        Some(e) => usize::from(e.max_payload().clamp(CLASSIC_UDP, EDNS_UDP)),
        None => usize::from(CLASSIC_UDP),
    }
}

/// Encodes `r` for UDP within `limit` bytes: whole if it fits, otherwise
/// the header and question only with TC set (RFC 1035 §4.1.1; RFC 2181
/// §9: a resolver retries over TCP). Returns the bytes and whether they
/// were truncated.
pub fn encode_udp(r: &Message, limit: usize) -> (Vec<u8>, bool) {
    let bytes = encode(r);
    if bytes.len() <= limit {
        return (bytes, false);
    }
    let mut t = Message::new(r.metadata.id, MessageType::Response, r.metadata.op_code);
    t.metadata = r.metadata;
    t.metadata.truncation = true;
    t.add_queries(r.queries.iter().cloned());
    t.edns = r.edns.clone();
    (encode(&t), true)
}

/// Returns whether `r` answers `q`: a response with the same id and the
/// same question (RFC 5452 §4.1's checks against spoofing).
pub fn answers(q: &Message, r: &Message) -> bool {
    r.metadata.message_type == MessageType::Response
        && r.metadata.id == q.metadata.id
        && r.queries.len() == 1
        && q.queries.len() == 1
        && r.queries[0].name() == q.queries[0].name()
        && r.queries[0].query_type() == q.queries[0].query_type()
}

/// Reads the first IPv4 address out of a response to the A query `q`
/// without building a message: what a stub resolver wants from nearly
/// every answer it gets. `Some` only for a response that hickory decodes
/// too, that [`answers`] `q`, is not truncated, has RCODE NOERROR (no
/// extended RCODE) and holds an A record among its answers; then the
/// address is the first A record's, as from the decoded message. `None`
/// for anything else (a CNAME-only answer, NXDOMAIN, records of other
/// types or classes, compression in the question), which the caller then
/// decodes in full: the tests hold the two paths to the same result over
/// the answers our servers send and every one-byte mutation of them.
pub fn first_address(q: &Message, b: &[u8]) -> Option<std::net::Ipv4Addr> {
    let u16_at =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let query = q.queries.first()?;
    if q.queries.len() != 1 || query.query_type() != RecordType::A {
        return None;
    }
    let (flags_hi, flags_lo) = (*b.get(2)?, *b.get(3)?);
    // A response (QR), opcode QUERY, not truncated; RCODE NOERROR.
    if u16_at(0)? != q.metadata.id || flags_hi & 0xfa != 0x80 || flags_lo & 0x0f != 0 {
        return None;
    }
    let (answers, additional) = (u16_at(6)?, u16_at(10)?);
    if u16_at(4)? != 1 || answers == 0 || u16_at(8)? != 0 || additional > 1 {
        return None;
    }
    // The question: the query's name (letters in any case), uncompressed,
    // type A, class IN.
    let want = crate::key::Key::new(query.name(), None);
    let want = want.as_bytes();
    let mut at = 12;
    let got = b.get(at..at + want.len())?;
    if !got
        .iter()
        .map(u8::to_ascii_lowercase)
        .eq(want.iter().copied())
        || u16_at(at + want.len())? != 1
        || u16_at(at + want.len() + 2)? != 1
    {
        return None;
    }
    at += want.len() + 4;
    let mut first = None;
    for _ in 0..answers {
        at = skip_name(b, at)?;
        let (rtype, class, len) = (u16_at(at)?, u16_at(at + 2)?, usize::from(u16_at(at + 8)?));
        let rdata = at + 10;
        let end = rdata + len;
        b.get(rdata..end)?;
        match rtype {
            1 if class == 1 && len == 4 => {
                first = first.or(Some(std::net::Ipv4Addr::new(
                    b[rdata],
                    b[rdata + 1],
                    b[rdata + 2],
                    b[rdata + 3],
                )));
            }
            // CNAME: one name, filling the data.
            5 if class == 1 && skip_name(b, rdata)? == end => {}
            _ => return None,
        }
        at = end;
    }
    if additional == 1 {
        // The OPT record: root owner, type 41, no extended RCODE, version
        // 0, the DO bit at most, no options.
        if *b.get(at)? != 0 || u16_at(at + 1)? != 41 || u16_at(at + 3)? < 512 {
            return None;
        }
        if u16_at(at + 5)? != 0 || u16_at(at + 7)? & 0x7fff != 0 || u16_at(at + 9)? != 0 {
            return None;
        }
        at += 11;
    }
    if at != b.len() {
        return None;
    }
    first
}

/// Returns the offset past the name at `start` in `b`, its labels
/// followed through compression pointers as hickory reads them: labels of
/// at most 63 bytes, pointers only to earlier bytes, and what they lead to
/// wholly before the name (no overlap), at most 255 bytes in all. `None`
/// for anything else, hickory's errors among it.
fn skip_name(b: &[u8], start: usize) -> Option<usize> {
    let (mut at, mut end, mut len) = (start, None, 0usize);
    // Each pointer goes strictly backwards, so at most one per byte.
    for _ in 0..=b.len() {
        let c = usize::from(*b.get(at)?);
        // Bytes reached through a pointer lie before the name.
        let limit = if end.is_some() { start } else { usize::MAX };
        match c {
            0 => {
                len += 1;
                return (len <= 255 && at < limit).then_some(end.unwrap_or(at + 1));
            }
            1..=63 => {
                len += 1 + c;
                if len > 255 || at + 1 + c > limit {
                    return None;
                }
                b.get(at + 1..at + 1 + c)?;
                at += 1 + c;
            }
            0xc0..=0xff => {
                let target = ((c & 0x3f) << 8) | usize::from(*b.get(at + 1)?);
                // A pointer into the name being read, or forward, is a
                // loop or worse: hickory refuses it; so do we.
                if target >= start.min(at) || target < 12 {
                    return None;
                }
                end.get_or_insert(at + 2);
                at = target;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::A;
    use hickory_proto::rr::{RData, Record};

    fn name(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    /// RFC 1035 §4.1.4's example: F.ISI.ARPA, FOO.F.ISI.ARPA and ARPA in
    /// one message; the later names are pointers into the first.
    #[test]
    fn names_are_compressed_as_rfc_1035_shows() {
        let mut m = query(0x1234, name("F.ISI.ARPA."), RecordType::A, false);
        m.edns = None;
        m.metadata.message_type = MessageType::Response;
        for owner in ["FOO.F.ISI.ARPA.", "ARPA."] {
            m.add_answer(Record::from_rdata(
                name(owner),
                60,
                RData::A(A::new(10, 0, 0, 1)),
            ));
        }
        let b = encode(&m);
        // Question: 12-byte header, then F.ISI.ARPA in full at offset 12.
        assert_eq!(&b[12..24], b"\x01F\x03ISI\x04ARPA\x00");
        // First answer's owner: "FOO" then a pointer to offset 12.
        let a1 = 12 + 12 + 4;
        assert_eq!(&b[a1..a1 + 6], b"\x03FOO\xc0\x0c");
        // Second answer's owner: a pointer to ARPA at offset 12 + 6 = 18.
        let a2 = a1 + 6 + 10 + 4;
        assert_eq!(&b[a2..a2 + 2], b"\xc0\x12");
        let back = decode(&b).unwrap();
        assert_eq!(back.answers[0].name, name("FOO.F.ISI.ARPA."));
        assert_eq!(back.answers[1].name, name("ARPA."));
    }

    fn header(qd: u16) -> Vec<u8> {
        let mut b = vec![0x12, 0x34, 0x01, 0x00];
        b.extend_from_slice(&qd.to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn a_compression_pointer_loop_is_rejected() {
        // The question's name is a pointer to itself (offset 12).
        let mut b = header(1);
        b.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        assert!(decode(&b).is_err());
        // Two pointers pointing at each other.
        let mut b = header(1);
        b.extend_from_slice(&[0x01, b'a', 0xc0, 0x10, 0xc0, 0x0c, 0, 1, 0, 1]);
        assert!(decode(&b).is_err());
    }

    #[test]
    fn an_out_of_bounds_pointer_is_rejected() {
        let mut b = header(1);
        b.extend_from_slice(&[0xc3, 0xff, 0, 1, 0, 1]);
        assert!(decode(&b).is_err());
        // A count promising more questions than present.
        let mut b = header(2);
        b.extend_from_slice(&[0x01, b'a', 0x00, 0, 1, 0, 1]);
        assert!(decode(&b).is_err());
        assert!(decode(&[0x12]).is_err());
    }

    #[test]
    fn a_large_response_is_truncated_to_the_question() {
        let q = query(7, name("big.example."), RecordType::TXT, true);
        let mut r = response_to(&q, ResponseCode::NoError);
        for i in 0..40u8 {
            r.add_answer(Record::from_rdata(
                name("big.example."),
                60,
                RData::A(A::new(10, 0, 0, i)),
            ));
        }
        let (b, tc) = encode_udp(&r, 512);
        assert!(tc && b.len() < 512);
        let back = decode(&b).unwrap();
        assert!(back.metadata.truncation && back.answers.is_empty());
        assert!(answers(&q, &back));
        assert_eq!(udp_limit(&q), 1232);
        let (_, tc) = encode_udp(&r, udp_limit(&q));
        assert!(!tc);
    }

    /// The query fast path builds what hickory builds from the same bytes:
    /// over the queries this crate sends (with and without EDNS, odd
    /// names, every flag) and every one-byte mutation of them. Wherever
    /// it answers, hickory's decoder agrees field for field.
    #[test]
    fn the_query_fast_path_agrees_with_hickory() {
        let hickory = |b: &[u8]| {
            Message::from_vec(b)
                .map(|m| format!("{m:?}"))
                .map_err(|e| e.to_string())
        };
        let mut fast_hits = 0;
        let mut bases = Vec::new();
        for n in [
            "www.example.com.",
            "A.B.",
            "x.",
            "n123.d45.com.",
            "WE\\.ird.x-y_z.",
        ] {
            for t in [RecordType::A, RecordType::MX, RecordType::ANY] {
                let mut q = query(0xbeef, name(n), t, true);
                bases.push(encode(&q));
                q.edns = None;
                q.metadata.checking_disabled = true;
                bases.push(encode(&q));
            }
        }
        for base in &bases {
            let fast = decode_query(base).expect("our own queries take the fast path");
            assert_eq!(Ok(format!("{fast:?}")), hickory(base));
            for i in 0..base.len() {
                for v in [0u8, 1, 0x0f, 0x29, 0x3f, 0x40, 0x80, 0xc0, 0xff] {
                    let mut b = base.clone();
                    b[i] = v;
                    if let Some(fast) = decode_query(&b) {
                        fast_hits += 1;
                        assert_eq!(Ok(format!("{fast:?}")), hickory(&b), "byte {i} = {v:#x}");
                    }
                }
                // Cut short, or one byte longer.
                assert!(decode_query(&base[..i]).is_none());
            }
            let mut longer = base.clone();
            longer.push(0);
            assert!(decode_query(&longer).is_none());
        }
        assert!(fast_hits > 1000, "{fast_hits} mutations decoded");
    }

    /// What a stub takes from a decoded response to `q`: the first A
    /// record's address, when the response answers `q` untruncated with
    /// NOERROR and holds an A record.
    fn first_address_decoded(q: &Message, b: &[u8]) -> Option<std::net::Ipv4Addr> {
        let r = decode(b).ok()?;
        let usable = answers(q, &r)
            && !r.metadata.truncation
            && r.metadata.response_code == ResponseCode::NoError;
        usable.then_some(())?;
        r.answers.iter().find_map(|a| match a.data {
            RData::A(x) => Some(x.0),
            _ => None,
        })
    }

    /// The stub's address fast path reads what the full decoder reads:
    /// over answers like our resolver's (CNAME chains, several
    /// addresses, with and without EDNS, compressed and not, the question
    /// in another case) and every one-byte mutation of them, and it
    /// leaves alone what it must (other RCODEs, other types, truncation).
    #[test]
    fn the_address_fast_path_agrees_with_the_decoder() {
        use hickory_proto::rr::rdata::{CNAME, SOA};
        use std::net::Ipv4Addr;
        let a = |owner: &str, ip: [u8; 4]| {
            Record::from_rdata(name(owner), 300, RData::A(A::from(Ipv4Addr::from(ip))))
        };
        let cname = |owner: &str, to: &str| {
            Record::from_rdata(name(owner), 300, RData::CNAME(CNAME(name(to))))
        };
        let q = query(0x4242, name("n17.d3.com."), RecordType::A, true);
        let mut bases = Vec::new();
        let mut expect = Vec::new();
        for edns in [true, false] {
            let mut q = q.clone();
            if !edns {
                q.edns = None;
            }
            let mut r = response_to(&q, ResponseCode::NoError);
            r.add_answer(a("n17.d3.com.", [10, 128, 0, 17]));
            bases.push(encode(&r));
            expect.push(Some(Ipv4Addr::new(10, 128, 0, 17)));
            let mut r = response_to(&q, ResponseCode::NoError);
            r.add_answer(cname("n17.d3.com.", "www.other.net."));
            r.add_answer(cname("www.other.net.", "x.d3.com."));
            r.add_answer(a("x.d3.com.", [10, 0, 0, 1]));
            r.add_answer(a("x.d3.com.", [10, 0, 0, 2]));
            bases.push(encode(&r));
            expect.push(Some(Ipv4Addr::new(10, 0, 0, 1)));
            // Uncompressed, by hickory's own encoder.
            bases.push(r.to_vec().unwrap());
            expect.push(Some(Ipv4Addr::new(10, 0, 0, 1)));
            // The question in capitals.
            let mut upper = response_to(&q, ResponseCode::NoError);
            upper.queries[0].set_name(name("N17.D3.Com."));
            upper.add_answer(a("N17.D3.Com.", [1, 2, 3, 4]));
            bases.push(encode(&upper));
            expect.push(Some(Ipv4Addr::new(1, 2, 3, 4)));
            // Left to the decoder: a CNAME alone, NXDOMAIN with an SOA.
            let mut r = response_to(&q, ResponseCode::NoError);
            r.add_answer(cname("n17.d3.com.", "elsewhere.org."));
            bases.push(encode(&r));
            expect.push(None);
            let mut r = response_to(&q, ResponseCode::NXDomain);
            let soa = SOA::new(name("d3.com."), name("h.d3.com."), 1, 2, 3, 4, 5);
            r.add_authority(Record::from_rdata(name("d3.com."), 5, RData::SOA(soa)));
            bases.push(encode(&r));
            expect.push(None);
        }
        let mut hits = 0;
        for (base, want) in bases.iter().zip(&expect) {
            assert_eq!(first_address(&q, base), *want, "{base:?}");
            if want.is_some() {
                assert_eq!(first_address_decoded(&q, base), *want);
            }
            for i in 0..base.len() {
                for v in [0u8, 1, 2, 0x05, 0x0c, 0x20, 0x3f, 0x40, 0x80, 0xc0, 0xff] {
                    let mut b = base.clone();
                    b[i] = v;
                    if let Some(ip) = first_address(&q, &b) {
                        hits += 1;
                        assert_eq!(Some(ip), first_address_decoded(&q, &b), "byte {i} = {v:#x}");
                    }
                }
                assert_eq!(first_address(&q, &base[..i]), None);
            }
            let mut longer = base.clone();
            longer.push(0);
            assert_eq!(first_address(&q, &longer), None);
        }
        assert!(hits > 500, "{hits} mutations read");
        // Another id, another question, truncation: not an answer here.
        let mut r = response_to(&q, ResponseCode::NoError);
        r.add_answer(a("n17.d3.com.", [10, 128, 0, 17]));
        let mut other = q.clone();
        other.metadata.id = 7;
        assert_eq!(first_address(&other, &encode(&r)), None);
        let other = query(0x4242, name("n18.d3.com."), RecordType::A, true);
        assert_eq!(first_address(&other, &encode(&r)), None);
        r.metadata.truncation = true;
        assert_eq!(first_address(&q, &encode(&r)), None);
    }

    /// Names of 255 bytes are the longest (RFC 1035 §3.1): the fast path
    /// reads one, refuses one byte more, as hickory does.
    #[test]
    fn the_address_fast_path_keeps_the_name_limit() {
        let label = "x".repeat(63);
        // 4 labels of 63 bytes: 4 × 64 + 1 = 257 bytes; trim to fit.
        let long = format!("{label}.{label}.{label}.{}.", &label[..61]);
        let q = query(1, name(&long), RecordType::A, false);
        let mut r = response_to(&q, ResponseCode::NoError);
        r.add_answer(Record::from_rdata(
            name(&long),
            1,
            RData::A(A::new(1, 1, 1, 1)),
        ));
        let b = encode(&r);
        assert_eq!(first_address(&q, &b), first_address_decoded(&q, &b));
        assert!(first_address(&q, &b).is_some());
    }
}
