//! AODV messages on the wire (RFC 3561 §5): RREQ, RREP (and the HELLO
//! that is an RREP), RERR and RREP-ACK, each the payload of a UDP datagram
//! to port 654. Fields are in network byte order.

use std::net::Ipv4Addr;

/// Message type numbers (RFC 3561 §5.1–§5.4).
pub const RREQ: u8 = 1;
pub const RREP: u8 = 2;
pub const RERR: u8 = 3;
pub const RREP_ACK: u8 = 4;

/// Route Request (§5.1, 24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rreq {
    /// J: join flag (multicast; always false here).
    pub join: bool,
    /// R: repair flag (multicast; always false here).
    pub repair: bool,
    /// G: gratuitous RREP flag.
    pub gratuitous: bool,
    /// D: destination only flag.
    pub dest_only: bool,
    /// U: unknown sequence number.
    pub unknown_seq: bool,
    pub hop_count: u8,
    pub id: u32,
    pub dst: Ipv4Addr,
    pub dst_seq: u32,
    pub orig: Ipv4Addr,
    pub orig_seq: u32,
}

/// Route Reply (§5.2, 20 bytes); a HELLO (§6.9) is one with hop count 0
/// and the sender as destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rrep {
    /// R: repair flag (multicast; always false here).
    pub repair: bool,
    /// A: acknowledgment required.
    pub ack_required: bool,
    /// Prefix Size (5 bits).
    pub prefix: u8,
    pub hop_count: u8,
    pub dst: Ipv4Addr,
    pub dst_seq: u32,
    pub orig: Ipv4Addr,
    /// Milliseconds.
    pub lifetime_ms: u32,
}

/// Route Error (§5.3): the unreachable destinations and their sequence
/// numbers (at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rerr {
    /// N: no delete flag (local repair under way).
    pub no_delete: bool,
    pub unreachable: Vec<(Ipv4Addr, u32)>,
}

/// One AODV message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    Rreq(Rreq),
    Rrep(Rrep),
    Rerr(Rerr),
    /// RREP-ACK (§5.4, 2 bytes).
    RrepAck,
}

/// Why bytes are not an AODV message (the drop counter's word).
pub type Error = &'static str;

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Msg {
    /// Encodes the message as RFC 3561 §5 lays it out.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Msg::Rreq(r) => {
                let mut b = vec![0u8; 24];
                b[0] = RREQ;
                b[1] = u8::from(r.join) << 7
                    | u8::from(r.repair) << 6
                    | u8::from(r.gratuitous) << 5
                    | u8::from(r.dest_only) << 4
                    | u8::from(r.unknown_seq) << 3;
                b[3] = r.hop_count;
                b[4..8].copy_from_slice(&r.id.to_be_bytes());
                b[8..12].copy_from_slice(&r.dst.octets());
                b[12..16].copy_from_slice(&r.dst_seq.to_be_bytes());
                b[16..20].copy_from_slice(&r.orig.octets());
                b[20..24].copy_from_slice(&r.orig_seq.to_be_bytes());
                b
            }
            Msg::Rrep(r) => {
                let mut b = vec![0u8; 20];
                b[0] = RREP;
                b[1] = u8::from(r.repair) << 7 | u8::from(r.ack_required) << 6;
                b[2] = r.prefix & 0x1f;
                b[3] = r.hop_count;
                b[4..8].copy_from_slice(&r.dst.octets());
                b[8..12].copy_from_slice(&r.dst_seq.to_be_bytes());
                b[12..16].copy_from_slice(&r.orig.octets());
                b[16..20].copy_from_slice(&r.lifetime_ms.to_be_bytes());
                b
            }
            Msg::Rerr(r) => {
                let mut b = Vec::with_capacity(4 + 8 * r.unreachable.len());
                b.push(RERR);
                b.push(u8::from(r.no_delete) << 7);
                b.push(0);
                b.push(r.unreachable.len().min(255) as u8);
                for (a, s) in r.unreachable.iter().take(255) {
                    b.extend_from_slice(&a.octets());
                    b.extend_from_slice(&s.to_be_bytes());
                }
                b
            }
            Msg::RrepAck => vec![RREP_ACK, 0],
        }
    }

    /// Decodes a message (the UDP payload). Bytes past the message (an
    /// extension, §5.1's "followed by extensions") are ignored.
    ///
    /// # Errors
    /// An unknown type, a message shorter than its type's layout, a RERR
    /// with no destination.
    pub fn decode(b: &[u8]) -> Result<Msg, Error> {
        let need = |n: usize| if b.len() < n { Err("short") } else { Ok(()) };
        match b.first().copied() {
            Some(RREQ) => {
                need(24)?;
                Ok(Msg::Rreq(Rreq {
                    join: b[1] & 0x80 != 0,
                    repair: b[1] & 0x40 != 0,
                    gratuitous: b[1] & 0x20 != 0,
                    dest_only: b[1] & 0x10 != 0,
                    unknown_seq: b[1] & 0x08 != 0,
                    hop_count: b[3],
                    id: u32_at(&b[4..]),
                    dst: ip(&b[8..]),
                    dst_seq: u32_at(&b[12..]),
                    orig: ip(&b[16..]),
                    orig_seq: u32_at(&b[20..]),
                }))
            }
            Some(RREP) => {
                need(20)?;
                Ok(Msg::Rrep(Rrep {
                    repair: b[1] & 0x80 != 0,
                    ack_required: b[1] & 0x40 != 0,
                    prefix: b[2] & 0x1f,
                    hop_count: b[3],
                    dst: ip(&b[4..]),
                    dst_seq: u32_at(&b[8..]),
                    orig: ip(&b[12..]),
                    lifetime_ms: u32_at(&b[16..]),
                }))
            }
            Some(RERR) => {
                need(4)?;
                let n = usize::from(b[3]);
                if n == 0 {
                    return Err("empty rerr");
                }
                need(4 + 8 * n)?;
                let unreachable = (0..n)
                    .map(|i| {
                        let at = 4 + 8 * i;
                        (ip(&b[at..]), u32_at(&b[at + 4..]))
                    })
                    .collect();
                Ok(Msg::Rerr(Rerr {
                    no_delete: b[1] & 0x80 != 0,
                    unreachable,
                }))
            }
            Some(RREP_ACK) => {
                need(2)?;
                Ok(Msg::RrepAck)
            }
            _ => Err("type"),
        }
    }

    /// The message's index in the report's per-type counters: RREQ, RREP,
    /// RERR, RREP-ACK, HELLO.
    pub fn kind(&self) -> usize {
        match self {
            Msg::Rreq(_) => 0,
            Msg::Rrep(r) if r.hop_count == 0 && r.dst == r.orig => 4,
            Msg::Rrep(_) => 1,
            Msg::Rerr(_) => 2,
            Msg::RrepAck => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds bytes field by field from RFC 3561's figures (bit 0 is the
    /// most significant bit of the first byte), independently of `encode`.
    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn rreq_has_the_layout_of_rfc_3561_figure_5_1() {
        let r = Rreq {
            join: false,
            repair: false,
            gratuitous: true,
            dest_only: true,
            unknown_seq: true,
            hop_count: 3,
            id: 0x0102_0304,
            dst: Ipv4Addr::new(10, 0, 0, 9),
            dst_seq: 77,
            orig: Ipv4Addr::new(10, 0, 0, 1),
            orig_seq: 0xfffffffe,
        };
        // Type 1 | J R G D U (bits 8..12, so G D U are the word's bits
        // 21, 20, 19) | reserved | hop count.
        let flags = (1 << 21) | (1 << 20) | (1 << 19);
        let expect = words(&[
            (1 << 24) | flags | 3,
            0x0102_0304,
            0x0a00_0009,
            77,
            0x0a00_0001,
            0xfffffffe,
        ]);
        assert_eq!(Msg::Rreq(r).encode(), expect);
        assert_eq!(Msg::decode(&expect), Ok(Msg::Rreq(r)));
        // J and R sit at bits 8 and 9.
        let mut jr = expect.clone();
        jr[1] = 0xc0;
        let Ok(Msg::Rreq(d)) = Msg::decode(&jr) else {
            panic!()
        };
        assert!(d.join && d.repair && !d.gratuitous && !d.dest_only && !d.unknown_seq);
    }

    #[test]
    fn rrep_has_the_layout_of_rfc_3561_figure_5_2() {
        let r = Rrep {
            repair: false,
            ack_required: true,
            prefix: 0,
            hop_count: 4,
            dst: Ipv4Addr::new(192, 168, 1, 5),
            dst_seq: 9,
            orig: Ipv4Addr::new(192, 168, 1, 1),
            lifetime_ms: 6000,
        };
        // Type 2 | R A (bits 8, 9) | reserved (9 bits) | prefix (5) | hops.
        let expect = words(&[(2 << 24) | (1 << 22) | 4, 0xc0a8_0105, 9, 0xc0a8_0101, 6000]);
        assert_eq!(Msg::Rrep(r).encode(), expect);
        assert_eq!(Msg::decode(&expect), Ok(Msg::Rrep(r)));
        // The prefix size is the low 5 bits of the third byte.
        let mut p = expect.clone();
        p[2] = 0x18;
        let Ok(Msg::Rrep(d)) = Msg::decode(&p) else {
            panic!()
        };
        assert_eq!(d.prefix, 24);
        assert_eq!(Msg::Rrep(r).kind(), 1);
    }

    #[test]
    fn rerr_has_the_layout_of_rfc_3561_figure_5_3() {
        let r = Rerr {
            no_delete: true,
            unreachable: vec![
                (Ipv4Addr::new(10, 0, 0, 4), 12),
                (Ipv4Addr::new(10, 0, 0, 5), 0x8000_0000),
            ],
        };
        let expect = words(&[
            (3 << 24) | (1 << 23) | 2,
            0x0a00_0004,
            12,
            0x0a00_0005,
            0x8000_0000,
        ]);
        assert_eq!(Msg::Rerr(r.clone()).encode(), expect);
        assert_eq!(Msg::decode(&expect), Ok(Msg::Rerr(r)));
    }

    #[test]
    fn rrep_ack_is_two_bytes() {
        assert_eq!(Msg::RrepAck.encode(), [4, 0]);
        assert_eq!(Msg::decode(&[4, 0]), Ok(Msg::RrepAck));
    }

    #[test]
    fn truncated_and_unknown_messages_are_refused() {
        let rreq = Msg::Rreq(Rreq {
            join: false,
            repair: false,
            gratuitous: false,
            dest_only: false,
            unknown_seq: false,
            hop_count: 0,
            id: 1,
            dst: Ipv4Addr::new(1, 2, 3, 4),
            dst_seq: 0,
            orig: Ipv4Addr::new(5, 6, 7, 8),
            orig_seq: 1,
        })
        .encode();
        for n in 0..24 {
            assert!(Msg::decode(&rreq[..n]).is_err(), "{n} bytes");
        }
        assert_eq!(Msg::decode(&[3, 0, 0, 0]), Err("empty rerr"));
        assert_eq!(
            Msg::decode(&[3, 0, 0, 2, 1, 2, 3, 4, 0, 0, 0, 1]),
            Err("short")
        );
        assert_eq!(Msg::decode(&[9, 0]), Err("type"));
        assert_eq!(Msg::decode(&[]), Err("type"));
    }
}
