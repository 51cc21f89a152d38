//! DCQCN flows for `flowgen` (`transport='dcqcn'`): each flow is a UDP
//! message paced by DCQCN's reaction point ([`crate::dcqcn::pace`]) from
//! the sender's line rate, to the sink's notification point on the same
//! port number as the TCP sink.
//!
//! A flow of S bytes is n = ⌈S / 1472⌉ packets carrying S bytes split as
//! evenly as they go (the first S mod n carry one byte more), so the
//! first packet is the largest. Every packet starts with a 25-byte
//! header: kind ([`crate::dcqcn::DATA`]), sequence number, flow id and
//! flow size (big-endian), so that the sink knows each flow's size
//! whichever packet arrives first; flows are at least 25 bytes.
//!
//! The sink counts each flow's bytes and finishes its record
//! ([`Host::flow_finished`]) when all have arrived. It answers a CE-marked
//! packet with a CNP to the sender, at most one per flow every
//! `cnp_interval` (the marks are counted per socket, as
//! [`crate::dcqcn::receive`] does: packets that arrive at the same
//! instant share them). Nothing is resent: DCQCN assumes a lossless
//! fabric (PFC), so a flow that loses a packet never finishes; the sink
//! records the first gap in a flow's sequence numbers
//! ([`Host::flow_lost`]), and the report counts those flows as `lost`.
//!
//! # Gaps
//! No go-back-N; a flow that loses only its last packets is unfinished
//! but not known lost; the sink keeps the state of every lost flow for
//! the rest of the run.

use crate::dcqcn::{pace, Params, Reaction, CNP, CNP_LEN, DATA};
use crate::Host;
use elvis_api::flows::DCQCN_PACKET;
use elvis_api::{AppResult, FlowTransport, Message};
use std::collections::BTreeMap;
use std::net::SocketAddrV4;

/// Bytes of the per-packet header: kind, sequence number, flow id, size.
pub const HEADER: u64 = 25;

/// The payload size of packet `i` of the `n` carrying `bytes`.
pub fn share(bytes: u64, n: u64, i: u64) -> u64 {
    bytes / n + u64::from(i < bytes % n)
}

/// One flow: records it, then sends it paced by DCQCN from `line_rate`
/// (bit/s).
pub async fn flow(host: Host, to: SocketAddrV4, bytes: u64, line_rate: f64) {
    let bytes = bytes.max(HEADER);
    let id = host.flow_started_over(*to.ip(), bytes, FlowTransport::Dcqcn);
    let _ = send(host, to, id, bytes, line_rate).await;
}

async fn send(host: Host, to: SocketAddrV4, id: u64, bytes: u64, line_rate: f64) -> AppResult {
    let sock = host.udp_bind(0)?;
    sock.set_tos(0b10)?; // ECT(0)
    let mut rp = Reaction::new(Params::paper(line_rate));
    let n = bytes.div_ceil(DCQCN_PACKET);
    let size_of = |seq: u64, _| (seq < n).then(|| share(bytes, n, seq) as usize);
    let packet = |size: usize, seq: u64| {
        let mut head = Vec::with_capacity(HEADER as usize);
        head.push(DATA);
        for v in [seq, id, bytes] {
            head.extend_from_slice(&v.to_be_bytes());
        }
        let mut m = Message::from_vec(head);
        m.append(Message::zeros((size as u64).saturating_sub(HEADER)));
        m
    };
    pace(host, &sock, to, &mut rp, size_of, packet, |_, _| {}).await
}

/// What the sink keeps of a flow until it finishes.
#[derive(Default)]
struct Rx {
    got: u64,
    next_seq: u64,
    last_cnp: Option<u64>,
    lost: bool,
}

/// The sink's notification point: receives DCQCN flows on `port`,
/// finishes each flow's record when all its bytes are in, answers marks
/// with CNPs at most every `cnp_interval` ns per flow.
pub async fn sink(host: Host, port: u16, cnp_interval: u64) {
    let _ = serve(host, port, cnp_interval).await;
}

async fn serve(host: Host, port: u16, cnp_interval: u64) -> AppResult {
    let sock = host.udp_bind(port)?;
    let mut flows: BTreeMap<u64, Rx> = BTreeMap::new();
    let mut ce_seen = sock.ce_received();
    loop {
        let (mut m, from) = sock.recv_from().await?;
        let now = host.now().as_nanos();
        let mut h = [0u8; HEADER as usize];
        match m.front(HEADER as usize) {
            Some(b) if b[0] == DATA => h.copy_from_slice(b),
            _ => continue,
        }
        let word = |i: usize| u64::from_be_bytes(h[i..i + 8].try_into().unwrap_or_default());
        let (seq, id, bytes) = (word(1), word(9), word(17));
        let f = flows.entry(id).or_default();
        if seq > f.next_seq && !f.lost {
            f.lost = true;
            host.flow_lost(id);
        }
        f.next_seq = f.next_seq.max(seq + 1);
        f.got += m.len() as u64;
        let ce = sock.ce_received();
        if ce > ce_seen {
            ce_seen = ce;
            if f.last_cnp.is_none_or(|t| now >= t + cnp_interval) {
                f.last_cnp = Some(now);
                let mut v = vec![0u8; CNP_LEN];
                v[0] = CNP;
                sock.send_to(Message::from_vec(v), from).await?;
            }
        }
        if f.got >= bytes {
            flows.remove(&id);
            host.flow_finished(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_splits_evenly_with_the_first_packets_largest() {
        let sizes = |s: u64| {
            let n = s.div_ceil(DCQCN_PACKET);
            (0..n).map(|i| share(s, n, i)).collect::<Vec<_>>()
        };
        assert_eq!(sizes(25), [25]);
        assert_eq!(sizes(1472), [1472]);
        assert_eq!(sizes(1473), [737, 736]);
        assert_eq!(sizes(3000), [1000, 1000, 1000]);
        let big = sizes(1_000_001);
        assert_eq!(big.iter().sum::<u64>(), 1_000_001);
        assert!(big.iter().all(|&b| b <= DCQCN_PACKET && b >= HEADER));
        assert!(big.windows(2).all(|w| w[0] >= w[1]));
    }
}
