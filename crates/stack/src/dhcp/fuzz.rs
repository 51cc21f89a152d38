//! The body of the `dhcp` fuzz target (`fuzz/fuzz_targets/dhcp.rs`), also
//! run by `cargo test` over its corpus and as a property test.

use super::{build, Fields, Parsed};
use dhcproto::{Decodable, Decoder};

/// Reads `data` as a DHCP message: the reader must never panic; what it
/// accepts, `dhcproto` (an independent decoder) reads with the same
/// header fields, and writing the fields read back with [`build`] gives a
/// message that reads the same.
pub fn dhcp(data: &[u8]) {
    let Ok(p) = Parsed::parse(data) else {
        return;
    };
    if let Ok(m) = dhcproto::v4::Message::decode(&mut Decoder::new(data)) {
        assert_eq!(
            (m.xid(), m.secs(), m.ciaddr(), m.yiaddr(), m.giaddr()),
            (p.xid, p.secs, p.ciaddr, p.yiaddr, p.giaddr)
        );
        assert_eq!(&m.chaddr()[..6], &p.chaddr);
        assert_eq!(m.flags().broadcast(), p.broadcast);
    }
    let f = Fields {
        op: p.op,
        xid: p.xid,
        secs: p.secs,
        broadcast: p.broadcast,
        ciaddr: p.ciaddr,
        yiaddr: p.yiaddr,
        giaddr: p.giaddr,
        chaddr: p.chaddr,
        kind: p.kind,
        server_id: p.server_id,
        requested: p.requested,
        lease_s: p.lease_s,
        t1_s: p.t1_s,
        t2_s: p.t2_s,
        mask: p.mask,
        router: p.router,
        dns: &p.dns,
        domain: p.domain.as_deref(),
        ..Fields::default()
    };
    let again = Parsed::parse(&build(&f)).expect("what build writes reads back");
    let mut want = p.clone();
    want.hops = 0;
    // `build` keeps at most 255 bytes of a value (one option's worth).
    if let Some(d) = want.domain.as_mut() {
        if d.len() > 255 {
            *d = String::from_utf8_lossy(&d.as_bytes()[..255]).into_owned();
        }
    }
    if want.dns.len() > 63 {
        want.dns.truncate(63);
    }
    assert_eq!(again, want);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_reader(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            super::dhcp(&data);
        }

        /// Valid messages with random options, then a byte flipped.
        #[test]
        fn flipped_bytes_in_real_messages_never_panic_the_reader(xid in any::<u32>(), at in 0usize..300, bit in 0u8..8) {
            let dns = [std::net::Ipv4Addr::new(10, 0, 0, 53)];
            let mut m = super::build(&super::Fields {
                op: 2,
                xid,
                kind: Some(super::super::Kind::Ack),
                lease_s: Some(600),
                dns: &dns,
                domain: Some("example.com"),
                ..super::Fields::default()
            });
            super::dhcp(&m);
            m[at] ^= 1 << bit;
            super::dhcp(&m);
        }
    }
}
