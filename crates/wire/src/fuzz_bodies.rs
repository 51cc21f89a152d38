//! Bodies of the cargo-fuzz targets in `fuzz/`, shared with a plain test
//! that runs them over the seed corpus so CI exercises the same code path.
//!
//! Each body parses arbitrary bytes (and formats them for a trace, which must
//! not panic either); when parsing succeeds it emits the `Repr` again,
//! re-parses the result and asserts that nothing changed.

use crate::{arp, ethernet, icmpv4, ipv4, pfc, tcp, udp, Checksum, Checksums};
use std::net::Ipv4Addr;

/// Addresses the UDP and TCP targets put around their messages.
const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Fuzzes Ethernet II frames.
pub fn ethernet(data: &[u8]) {
    let frame = ethernet::Frame::new_unchecked(data);
    let _ = frame.to_string();
    let Ok(repr) = ethernet::Repr::parse(&frame) else {
        return;
    };
    let mut buf = data.to_vec();
    repr.emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
    assert_eq!(buf, data, "an Ethernet header is all Repr");
    assert_eq!(
        ethernet::Repr::parse(&ethernet::Frame::new_unchecked(&buf[..])),
        Ok(repr)
    );
}

/// Fuzzes ARP packets.
pub fn arp(data: &[u8]) {
    let packet = arp::Packet::new_unchecked(data);
    let _ = packet.to_string();
    let Ok(repr) = arp::Repr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut arp::Packet::new_unchecked(&mut buf[..]));
    assert_eq!(buf, data[..repr.buffer_len()]);
    assert_eq!(
        arp::Repr::parse(&arp::Packet::new_unchecked(&buf[..])),
        Ok(repr)
    );
}

/// Fuzzes IPv4 packets, whole and header-only.
pub fn ipv4(data: &[u8]) {
    let packet = ipv4::Packet::new_unchecked(data);
    let _ = packet.to_string();
    let _ = ipv4::Repr::parse_header(&packet, Checksums::Verify);
    let Ok(repr) = ipv4::Repr::parse(&packet, Checksums::Verify) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let mut out = ipv4::Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut out);
    out.payload_mut().copy_from_slice(packet.payload());
    let again = ipv4::Packet::new_checked(&buf[..]).expect("emitted packet fits");
    assert_eq!(ipv4::Repr::parse(&again, Checksums::Verify), Ok(repr));
    assert_eq!(again.payload(), packet.payload());
}

/// Fuzzes ICMPv4 messages, also checking the piecewise checksum.
pub fn icmpv4(data: &[u8]) {
    let packet = icmpv4::Packet::new_unchecked(data);
    let _ = packet.to_string();
    let _ = icmpv4::parse_quote(data, Checksums::Ignore);
    let Ok(repr) = icmpv4::Repr::parse(&packet, Checksums::Verify) else {
        return;
    };
    let mut sum = Checksum::new();
    // An odd first piece, to exercise the byte-swapped append.
    let (a, b) = repr.data().split_at(repr.data().len().min(3));
    sum.add(a);
    sum.add(b);
    assert!(packet.verify_checksum_with(sum));
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut icmpv4::Packet::new_unchecked(&mut buf[..]));
    let again = icmpv4::Packet::new_unchecked(&buf[..]);
    assert_eq!(icmpv4::Repr::parse(&again, Checksums::Verify), Ok(repr));
}

/// Fuzzes UDP datagrams between two fixed addresses.
pub fn udp(data: &[u8]) {
    let packet = udp::Packet::new_unchecked(data);
    let _ = packet.to_string();
    let Ok(repr) = udp::Repr::parse(&packet, SRC, DST, Checksums::Verify) else {
        return;
    };
    let payload = packet.payload();
    let mut sum = Checksum::new();
    sum.add(payload);
    assert!(udp::verify_checksum_with(SRC, DST, data, sum));
    let mut buf = vec![0u8; repr.buffer_len(payload.len())];
    let mut out = udp::Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut out, SRC, DST, payload.len(), |p| {
        p.copy_from_slice(payload)
    });
    let again = udp::Packet::new_checked(&buf[..]).expect("emitted datagram fits");
    assert_eq!(
        udp::Repr::parse(&again, SRC, DST, Checksums::Verify),
        Ok(repr)
    );
    assert_eq!(again.payload(), payload);
}

/// Fuzzes TCP segments between two fixed addresses. The checksum is
/// ignored on the first parse, so that random bytes reach the option
/// parser, but the piecewise check must agree with the contiguous one.
pub fn tcp(data: &[u8]) {
    let packet = tcp::Packet::new_unchecked(data);
    let _ = packet.to_string();
    let Ok(repr) = tcp::Repr::parse(&packet, SRC, DST, Checksums::Ignore) else {
        return;
    };
    let _ = repr.to_string();
    let payload = packet.payload();
    let header = &data[..data.len() - payload.len()];
    let mut sum = Checksum::new();
    // An odd first piece, to exercise the byte-swapped append.
    let (a, b) = payload.split_at(payload.len().min(3));
    sum.add(a);
    sum.add(b);
    assert_eq!(
        tcp::verify_checksum_with(SRC, DST, header, payload.len(), sum),
        packet.verify_checksum(SRC, DST)
    );
    let mut buf = vec![0u8; repr.buffer_len()];
    let mut out = tcp::Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut out, SRC, DST, |p| p.copy_from_slice(payload));
    let again = tcp::Packet::new_checked(&buf[..]).expect("emitted segment fits");
    assert_eq!(
        tcp::Repr::parse(&again, SRC, DST, Checksums::Verify),
        Ok(repr)
    );
    assert_eq!(again.payload(), payload);
    let mut head = vec![0u8; repr.header_len()];
    let mut out = tcp::Packet::new_unchecked(&mut head[..]);
    repr.emit_header(&mut out, SRC, DST, payload.len(), sum);
    assert_eq!(head, buf[..repr.header_len()]);
}

/// Fuzzes IEEE 802.1Qbb PFC frames.
pub fn pfc(data: &[u8]) {
    let packet = pfc::Packet::new_unchecked(data);
    let Ok(repr) = pfc::Repr::parse(&packet) else {
        return;
    };
    let buf = repr.to_bytes();
    // The source, EtherType, opcode, enable vector and times are all
    // Repr; the destination is the MAC Control address and the rest
    // padding.
    assert_eq!(buf[6..34], data[6..34]);
    assert_eq!(
        pfc::Repr::parse(&pfc::Packet::new_unchecked(&buf[..])),
        Ok(repr)
    );
}

#[cfg(test)]
mod test {
    use std::path::PathBuf;

    /// Runs a target over every file of its seed corpus in `fuzz/corpus/`.
    fn run_corpus(target: &str, body: fn(&[u8])) {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "empty corpus {}", dir.display());
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            body(&bytes);
            // Every prefix too: cheap, and it walks the truncation paths.
            for n in 0..bytes.len() {
                body(&bytes[..n]);
            }
        }
    }

    #[test]
    fn ethernet_corpus_passes_its_fuzz_body() {
        run_corpus("ethernet", super::ethernet);
    }

    #[test]
    fn arp_corpus_passes_its_fuzz_body() {
        run_corpus("arp", super::arp);
    }

    #[test]
    fn ipv4_corpus_passes_its_fuzz_body() {
        run_corpus("ipv4", super::ipv4);
    }

    #[test]
    fn icmpv4_corpus_passes_its_fuzz_body() {
        run_corpus("icmpv4", super::icmpv4);
    }

    #[test]
    fn udp_corpus_passes_its_fuzz_body() {
        run_corpus("udp", super::udp);
    }

    #[test]
    fn pfc_corpus_passes_its_fuzz_body() {
        run_corpus("pfc", super::pfc);
    }

    #[test]
    fn tcp_corpus_passes_its_fuzz_body() {
        run_corpus("tcp", super::tcp);
    }
}
