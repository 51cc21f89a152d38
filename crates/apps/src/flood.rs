//! `udp_flood` / `syn_flood`: denial-of-service attackers, as `hping3
//! --flood` would be run from many machines.
//!
//! Both send `rate` packets per second, evenly spaced, to `to`:`port`,
//! until `count` packets or `duration` (or their `stop`), and publish
//! `sent` (and `dropped_at_nic` when their own NIC was full).
//!
//! - `udp_flood` sends `size`-byte datagrams of zeros. Without `spoof` it
//!   uses an ordinary UDP socket (and waits when its NIC is full, like any
//!   sender); with `spoof='10.9.0.0/16'` each datagram leaves through the
//!   raw IPv4 path (`Host::send_ip_from`) with a random source address in
//!   that prefix and a random source port, its UDP checksum computed over
//!   the spoofed address.
//! - `syn_flood` sends TCP SYN segments (MSS option 1460, a random
//!   sequence number and source port, window 64240, checksum correct for
//!   the source written in the header) that never complete the handshake.
//!   With `spoof` the sources are random addresses of the prefix, whose
//!   SYN-ACKs go nowhere (routers drop them as `no_route`, or the server
//!   finds no route); without it the source is the attacker's own address,
//!   whose stack answers each SYN-ACK with a RST (no socket), which frees
//!   the server's half-open connection at once.
//!
//! Sources, ports and sequence numbers come from the machine's seeded
//! stream, so a run is reproducible.

use crate::Host;
use elvis_api::{AppError, AppResult, Message, Time, UdpSocket};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

/// An IPv4 prefix spoofed sources are drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    pub base: Ipv4Addr,
    pub len: u8,
}

impl Prefix {
    /// Parses `a.b.c.d/n` (the host bits of `a.b.c.d` are cleared).
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(s: &str) -> Result<Prefix, String> {
        let (ip, len) = s.trim().split_once('/').unwrap_or((s.trim(), "32"));
        let ip: Ipv4Addr = ip
            .parse()
            .map_err(|_| format!("'{ip}' is not an IPv4 address"))?;
        let len: u8 = len
            .parse()
            .ok()
            .filter(|l| *l <= 32)
            .ok_or_else(|| format!("'/{len}' is not a prefix length (0 to 32)"))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        Ok(Prefix {
            base: Ipv4Addr::from(u32::from(ip) & mask),
            len,
        })
    }

    /// Returns a random address of the prefix from the 64 bits `r`,
    /// avoiding the all-zeros and all-ones host parts when the prefix has
    /// at least four addresses.
    pub fn pick(&self, r: u64) -> Ipv4Addr {
        let host_bits = 32 - u32::from(self.len);
        if host_bits == 0 {
            return self.base;
        }
        let size = 1u64 << host_bits;
        let host = if size >= 4 {
            1 + r % (size - 2)
        } else {
            r % size
        };
        Ipv4Addr::from(u32::from(self.base) | host as u32)
    }
}

/// Options of `udp_flood` and `syn_flood`.
#[derive(Clone, Debug)]
pub struct Config {
    pub to: SocketAddrV4,
    /// Packets per second.
    pub rate: f64,
    /// UDP payload bytes (`udp_flood` only).
    pub size: usize,
    pub spoof: Option<Prefix>,
    pub count: Option<u64>,
    /// ns after the start.
    pub duration: Option<u64>,
}

/// The Internet checksum of the pseudo-header and `seg` (RFC 768, RFC
/// 9293 §3.1).
pub fn checksum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, seg: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&[0, proto]);
    add(&(seg.len() as u16).to_be_bytes());
    add(seg);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Returns a TCP SYN from `src`:`sport` to `to` with sequence number
/// `seq` and an MSS option, checksummed.
pub fn syn(src: Ipv4Addr, sport: u16, to: SocketAddrV4, seq: u32) -> Vec<u8> {
    let mut h = vec![0u8; 24];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&to.port().to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[12] = 6 << 4; // 24-byte header
    h[13] = 0x02; // SYN
    h[14..16].copy_from_slice(&64_240u16.to_be_bytes());
    h[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]); // MSS 1460
    let c = checksum(src, *to.ip(), 6, &h);
    h[16..18].copy_from_slice(&c.to_be_bytes());
    h
}

/// Returns a UDP datagram from `src`:`sport` to `to` with `size` zero
/// bytes of payload, checksummed.
pub fn udp(src: Ipv4Addr, sport: u16, to: SocketAddrV4, size: usize) -> Vec<u8> {
    let mut d = vec![0u8; 8 + size];
    d[0..2].copy_from_slice(&sport.to_be_bytes());
    d[2..4].copy_from_slice(&to.port().to_be_bytes());
    d[4..6].copy_from_slice(&((8 + size) as u16).to_be_bytes());
    let c = match checksum(src, *to.ip(), 17, &d) {
        0 => 0xffff, // RFC 768: a computed zero is sent as all ones
        c => c,
    };
    d[6..8].copy_from_slice(&c.to_be_bytes());
    d
}

/// What a flood sends.
enum Kind {
    /// UDP from the machine's own socket, this payload.
    Udp(UdpSocket, Message),
    /// UDP through the raw path, from spoofed sources.
    SpoofedUdp(Prefix),
    /// TCP SYNs through the raw path, from this address or the prefix.
    Syn(Ipv4Addr),
}

/// Returns a source port in 1024–65535 from `r`.
fn port(r: u64) -> u16 {
    1024 + (r % (65_536 - 1024)) as u16
}

/// Sends one packet from the random bits `r`; returns false when the NIC
/// was full and it was dropped.
async fn send_one(host: &Host, cfg: &Config, kind: &Kind, r: u64) -> Result<bool, AppError> {
    let to = cfg.to;
    Ok(match kind {
        Kind::Udp(sock, payload) => {
            sock.send_to(payload.clone(), to).await?;
            true
        }
        Kind::SpoofedUdp(prefix) => {
            let src = prefix.pick(r);
            let d = udp(src, port(r >> 32), to, cfg.size);
            host.send_ip_from(src, *to.ip(), 17, Message::from_vec(d))?
        }
        Kind::Syn(own) => {
            let src = cfg.spoof.map_or(*own, |p| p.pick(r));
            let seg = syn(src, port(r >> 48), to, (r >> 16) as u32);
            host.send_ip_from(src, *to.ip(), 6, Message::from_vec(seg))?
        }
    })
}

/// Sends at `cfg.rate` from now until `count` or `duration`; publishes
/// `sent` and `dropped_at_nic`.
async fn paced(host: &Host, cfg: &Config, kind: Kind) -> AppResult {
    let start = host.now().as_nanos();
    let end = cfg.duration.map_or(u64::MAX, |d| start.saturating_add(d));
    let period = ((1e9 / cfg.rate).round() as u64).max(1);
    let sent = host.publish_live("sent", 0.0);
    let nic = host.publish_live("dropped_at_nic", 0.0);
    let (mut n, mut dropped) = (0u64, 0u64);
    let mut t = start;
    while t < end && cfg.count.is_none_or(|c| n + dropped < c) {
        host.sleep_until(Time::from_nanos(t)).await;
        if send_one(host, cfg, &kind, host.random_u64()).await? {
            n += 1;
            sent.set(n as f64);
        } else {
            dropped += 1;
            nic.set(dropped as f64);
        }
        t += period;
    }
    Ok(())
}

/// Floods `to` with UDP datagrams.
pub async fn udp_flood(host: Host, cfg: Rc<Config>) -> AppResult {
    let kind = match cfg.spoof {
        None => Kind::Udp(host.udp_bind(0)?, Message::zeros(cfg.size as u64)),
        Some(p) => Kind::SpoofedUdp(p),
    };
    paced(&host, &cfg, kind).await
}

/// Floods `to` with TCP SYNs.
pub async fn syn_flood(host: Host, cfg: Rc<Config>) -> AppResult {
    let own = host.ip().unwrap_or(Ipv4Addr::UNSPECIFIED);
    paced(&host, &cfg, Kind::Syn(own)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_parses_and_picks_inside_itself() {
        let p = Prefix::parse("10.9.7.7/16").unwrap();
        assert_eq!(p.base, Ipv4Addr::new(10, 9, 0, 0));
        for r in [0u64, 1, 65_533, u64::MAX] {
            let a = u32::from(p.pick(r));
            assert_eq!(a >> 16, 0x0a09);
            assert!(a & 0xffff != 0 && a & 0xffff != 0xffff);
        }
        assert!(Prefix::parse("10.9.0.0/33").is_err());
        assert!(Prefix::parse("10.9.0/16").is_err());
    }

    #[test]
    fn a_syn_checksums_to_zero_with_its_pseudo_header() {
        let (src, to) = (
            Ipv4Addr::new(10, 9, 1, 2),
            SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80),
        );
        let s = syn(src, 40_000, to, 12345);
        assert_eq!(checksum(src, *to.ip(), 6, &s), 0);
        let d = udp(src, 40_000, to, 33);
        assert_eq!(checksum(src, *to.ip(), 17, &d), 0);
    }
}
