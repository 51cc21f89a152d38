//! A DNS message encoder for the messages elvis sends (RFC 1035 §4.1,
//! names compressed as §4.1.4 describes; the EDNS(0) OPT record of RFC
//! 6891 §6.1.2).
//!
//! hickory-proto's encoder is general (it keeps every name suffix it has
//! written in a list of owned byte strings); it was a fifth of the cost of
//! a lookup in `elvis-bench dns-lookups` (callgrind: `Message::to_vec`,
//! 13,000 instructions per lookup). This one writes the seven record types
//! a zone holds and an OPT record without options, and returns `None` for
//! anything else, which [`crate::message::encode`] then leaves to
//! hickory. Its output decodes with hickory to the message it was given
//! (the tests check that, and byte for byte the compression of RFC 1035's
//! example).

use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::{Name, RData, Record};

/// Suffixes remembered for compression per message; later ones are
/// written out in full (still a valid message, a little longer).
const SUFFIXES: usize = 48;
/// Bytes of remembered suffixes per message.
const ARENA: usize = 1024;

/// Names written so far: where each suffix starts (for pointers, which
/// reach offsets below 0x4000 only), its labels kept in one arena. On the
/// stack: a message costs no allocation for its compression table.
struct Names {
    /// (offset in the message, start and end of the suffix in `arena`).
    written: [(u16, u16, u16); SUFFIXES],
    count: usize,
    /// The suffixes' labels in wire form, one after another.
    arena: [u8; ARENA],
    used: usize,
}

impl Names {
    /// Returns an empty table.
    fn new() -> Names {
        Names {
            written: [(0, 0, 0); SUFFIXES],
            count: 0,
            arena: [0; ARENA],
            used: 0,
        }
    }

    /// Writes `name` at the end of `out`, pointing at the longest suffix
    /// already written (compared byte for byte, so a decoded name keeps
    /// its case).
    fn emit(&mut self, out: &mut Vec<u8>, name: &Name) {
        // The name in wire form, and where its labels start.
        let mut wire = [0u8; 256];
        let mut len = 0;
        let mut starts = [0u8; 128];
        let mut labels = 0;
        for l in name.iter() {
            // hickory keeps a name within 255 bytes in wire form.
            starts[labels] = len as u8;
            labels += 1;
            wire[len] = l.len() as u8;
            wire[len + 1..len + 1 + l.len()].copy_from_slice(l);
            len += 1 + l.len();
        }
        // The first (longest) suffix already written, if any: its labels
        // up to it are written out, then a pointer.
        let mut cut = labels;
        let mut pointer = None;
        'search: for k in 0..labels {
            let suffix = &wire[usize::from(starts[k])..len];
            for &(at, a, b) in &self.written[..self.count] {
                if usize::from(b - a) == suffix.len()
                    && &self.arena[usize::from(a)..usize::from(b)] == suffix
                {
                    cut = k;
                    pointer = Some(at);
                    break 'search;
                }
            }
        }
        let head = if cut < labels {
            usize::from(starts[cut])
        } else {
            len
        };
        // The new suffixes (those before the cut) are remembered from one
        // copy of the whole name.
        let base = out.len();
        if cut > 0 && self.used + len <= ARENA {
            let a = self.used;
            self.arena[a..a + len].copy_from_slice(&wire[..len]);
            self.used += len;
            for &start in &starts[..cut] {
                let at = base + usize::from(start);
                if at >= 0x4000 || self.count == SUFFIXES {
                    break;
                }
                self.written[self.count] =
                    (at as u16, (a + usize::from(start)) as u16, (a + len) as u16);
                self.count += 1;
            }
        }
        out.extend_from_slice(&wire[..head]);
        match pointer {
            Some(at) => out.extend_from_slice(&(0xc000 | at).to_be_bytes()),
            None => out.push(0),
        }
    }
}

/// Encodes `m`, or returns `None` when it holds something this encoder
/// does not write (another record type, EDNS options, an extended
/// RCODE, a signature).
pub(crate) fn emit(m: &Message) -> Option<Vec<u8>> {
    if m.signature.is_some() || m.metadata.response_code.high() != 0 {
        return None;
    }
    if m.edns
        .as_ref()
        .is_some_and(|e| !e.options().options.is_empty())
    {
        return None;
    }
    let mut out = Vec::with_capacity(512);
    let md = &m.metadata;
    out.extend_from_slice(&md.id.to_be_bytes());
    let mut flags: u16 = 0;
    if md.message_type == MessageType::Response {
        flags |= 0x8000;
    }
    flags |= u16::from(u8::from(md.op_code) & 0x0f) << 11;
    for (on, bit) in [
        (md.authoritative, 0x0400),
        (md.truncation, 0x0200),
        (md.recursion_desired, 0x0100),
        (md.recursion_available, 0x0080),
        (md.authentic_data, 0x0020),
        (md.checking_disabled, 0x0010),
    ] {
        if on {
            flags |= bit;
        }
    }
    flags |= u16::from(md.response_code.low());
    out.extend_from_slice(&flags.to_be_bytes());
    let additional = m.additionals.len() + usize::from(m.edns.is_some());
    for n in [
        m.queries.len(),
        m.answers.len(),
        m.authorities.len(),
        additional,
    ] {
        out.extend_from_slice(&u16::try_from(n).ok()?.to_be_bytes());
    }
    let mut names = Names::new();
    for q in &m.queries {
        names.emit(&mut out, q.name());
        out.extend_from_slice(&u16::from(q.query_type()).to_be_bytes());
        out.extend_from_slice(&u16::from(q.query_class()).to_be_bytes());
    }
    for r in m.answers.iter().chain(&m.authorities).chain(&m.additionals) {
        record(&mut out, &mut names, r)?;
    }
    if let Some(e) = &m.edns {
        out.push(0);
        out.extend_from_slice(&41u16.to_be_bytes());
        out.extend_from_slice(&e.max_payload().max(512).to_be_bytes());
        let ttl = (u32::from(e.version()) << 16) | u32::from(u16::from(*e.flags()));
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
    }
    Some(out)
}

/// Writes one resource record; `None` for a type it does not know.
fn record(out: &mut Vec<u8>, names: &mut Names, r: &Record) -> Option<()> {
    names.emit(out, &r.name);
    out.extend_from_slice(&u16::from(r.record_type()).to_be_bytes());
    out.extend_from_slice(&u16::from(r.dns_class).to_be_bytes());
    out.extend_from_slice(&r.ttl.to_be_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0, 0]);
    match &r.data {
        RData::A(a) => out.extend_from_slice(&a.0.octets()),
        RData::NS(n) => names.emit(out, &n.0),
        RData::CNAME(n) => names.emit(out, &n.0),
        RData::PTR(n) => names.emit(out, &n.0),
        RData::MX(mx) => {
            out.extend_from_slice(&mx.preference.to_be_bytes());
            names.emit(out, &mx.exchange);
        }
        RData::SOA(s) => {
            names.emit(out, &s.mname);
            names.emit(out, &s.rname);
            for v in [
                s.serial,
                s.refresh as u32,
                s.retry as u32,
                s.expire as u32,
                s.minimum,
            ] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        RData::TXT(t) => {
            for s in t.txt_data.iter() {
                out.push(u8::try_from(s.len()).ok()?);
                out.extend_from_slice(s);
            }
        }
        _ => return None,
    }
    let len = u16::try_from(out.len() - len_at - 2).ok()?;
    out[len_at..len_at + 2].copy_from_slice(&len.to_be_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message;
    use crate::server;
    use hickory_proto::rr::RecordType;

    /// Every response the sample zone gives, to every type of question,
    /// decodes with hickory to the same message as hickory's own
    /// encoding of it.
    #[test]
    fn our_bytes_decode_with_hickory_to_what_hickory_encodes() {
        let cfg = server::Config::new(vec![crate::zone::sample()]);
        let names = [
            "example.com.",
            "www.example.com.",
            "ALIAS.example.com.",
            "out.example.com.",
            "x.sub.example.com.",
            "mail.example.com.",
            "nope.example.com.",
            "b.c.example.com.",
            "example.org.",
        ];
        let types = [
            RecordType::A,
            RecordType::NS,
            RecordType::SOA,
            RecordType::MX,
            RecordType::TXT,
            RecordType::ANY,
        ];
        let mut checked = 0;
        for n in names {
            for t in types {
                let mut q = message::query(7, Name::from_ascii(n).unwrap(), t, true);
                for edns in [true, false] {
                    if !edns {
                        q.edns = None;
                    }
                    for m in [q.clone(), server::respond(&cfg, &q)] {
                        let ours = emit(&m).expect("a message we write");
                        let theirs = m.to_vec().unwrap();
                        assert_eq!(
                            message::decode(&ours).unwrap(),
                            message::decode(&theirs).unwrap(),
                            "{n} {t}"
                        );
                        assert!(ours.len() <= theirs.len(), "{n} {t}: compression");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 9 * 6 * 4);
    }

    #[test]
    fn a_txt_record_round_trips() {
        let origin = Name::from_ascii("example.com.").unwrap();
        let r = crate::master::record_of("t 60 IN TXT \"a b\" c", &origin).unwrap();
        let mut m = Message::new(1, MessageType::Response, hickory_proto::op::OpCode::Query);
        m.add_answer(r);
        let back = message::decode(&emit(&m).unwrap()).unwrap();
        assert_eq!(back.answers, m.answers);
    }

    /// More names than the compression table holds: the rest are written
    /// in full, and the message still decodes to what it was.
    #[test]
    fn a_message_with_more_names_than_the_table_holds_decodes_whole() {
        use hickory_proto::rr::rdata::{A, NS};
        let mut m = Message::new(1, MessageType::Response, hickory_proto::op::OpCode::Query);
        for i in 0..40 {
            let owner = Name::from_ascii(format!("host-{i}.zone-{i}.example.")).unwrap();
            let target = Name::from_ascii(format!("ns.zone-{i}.example.")).unwrap();
            m.add_answer(Record::from_rdata(
                owner.clone(),
                60,
                RData::A(A::new(10, 0, 0, i)),
            ));
            m.add_answer(Record::from_rdata(owner, 60, RData::NS(NS(target))));
        }
        let ours = emit(&m).unwrap();
        let back = message::decode(&ours).unwrap();
        assert_eq!(back.answers, m.answers);
        assert!(ours.len() <= m.to_vec().unwrap().len() + 40 * 12);
    }
}
