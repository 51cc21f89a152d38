//! The 802.11 frames a capture of a wireless network holds (9.3.1, 9.3.2):
//! data frames in an IBSS (To DS = From DS = 0: address 1 the
//! destination, 2 the source, 3 the BSSID) carrying the Ethernet payload
//! behind an LLC/SNAP header (RFC 1042), and the RTS, CTS and ACK control
//! frames. No FCS (pcap link type 105 has none).

use super::{Air, Kind};
use crate::{port_mac, NetId};
use elvis_message::Message;

/// The BSSID of every wireless network's IBSS: locally administered,
/// individual (9.4.1.4 draws a random one; a fixed one keeps captures
/// reproducible).
const BSSID: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];

/// Returns the Duration/ID field: the NAV in µs, rounded up (9.2.4.2).
fn duration(nav_ns: u64) -> [u8; 2] {
    (nav_ns.div_ceil(1_000).min(32_767) as u16).to_le_bytes()
}

/// Returns what a capture shows of `air` on `net` (`retry`: the data
/// frame's Retry bit).
pub(crate) fn capture(frames: &slab::Slab<Message>, net: NetId, air: &Air, retry: bool) -> Message {
    let ra = air.dst.map_or([0xff; 6], |d| port_mac(net, d).0);
    let ta = port_mac(net, air.sender).0;
    let mut out = Vec::with_capacity(64);
    let fc: u8 = match air.kind {
        Kind::Data => 0x08,
        Kind::Rts => 0xb4,
        Kind::Cts => 0xc4,
        Kind::Ack => 0xd4,
    };
    out.push(fc);
    out.push(if retry { 0x08 } else { 0 });
    out.extend_from_slice(&duration(air.nav));
    if air.kind != Kind::Data {
        out.extend_from_slice(&ra);
        if air.kind == Kind::Rts {
            out.extend_from_slice(&ta);
        }
        return Message::from_vec(out);
    }
    let eth = frames
        .get(air.frame as usize)
        .map(|m| m.to_vec())
        .unwrap_or_default();
    if eth.len() < 14 {
        return Message::from_vec(out);
    }
    out.extend_from_slice(&eth[0..6]);
    out.extend_from_slice(&eth[6..12]);
    out.extend_from_slice(&BSSID);
    out.extend_from_slice(&(air.seq << 4).to_le_bytes());
    out.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0]);
    out.extend_from_slice(&eth[12..]);
    Message::from_vec(out)
}
