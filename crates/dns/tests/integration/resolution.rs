//! Resolution through the hierarchy: upstream query counts of a cold and
//! a warm cache, expiry at the TTL, negative caching for the SOA minimum,
//! CNAME chains across zones, TCP after truncation, and failover.

use crate::*;
use elvis_dns::proto::rr::{RData, RecordType};
use elvis_dns::stub::{self, Options, ResolveError};
use elvis_sim::{Host, Time};
use std::time::Duration;

fn at(s: f64) -> Time {
    Time::from_nanos((s * 1e9) as u64)
}

#[test]
fn a_cold_lookup_walks_root_tld_and_zone_and_a_warm_one_asks_nobody() {
    let mut net = hierarchy(1, 1, false, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        assert_eq!(elvis_dns::resolve(&h, "www.example.com").await?, WWW);
        h.sleep_until(at(1.0)).await;
        // A short name takes the search domain.
        assert_eq!(elvis_dns::resolve(&h, "www").await?, WWW);
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    let res = |n| metric(&r, "resolver", "dns_resolver", n);
    assert_eq!(res("upstream_queries"), 3, "root, com., example.com.");
    assert_eq!(
        (res("queries"), res("responses"), res("cache_hits")),
        (2, 2, 1)
    );
}

#[test]
fn a_cached_answer_expires_at_its_ttl() {
    let mut net = hierarchy(2, 1, false, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        elvis_dns::resolve(&h, "www.example.com").await?;
        // www's TTL is 300 s, counted from the answer's arrival (ms
        // after 0).
        h.sleep_until(at(299.9)).await;
        elvis_dns::resolve(&h, "www.example.com").await?;
        h.sleep_until(at(300.5)).await;
        elvis_dns::resolve(&h, "www.example.com").await?;
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    // 3 cold, 0 warm, then 1: the zone's servers are still cached (NS TTL
    // 86,400 s), only www is asked again.
    assert_eq!(
        metric(&r, "resolver", "dns_resolver", "upstream_queries"),
        4
    );
    assert_eq!(metric(&r, "resolver", "dns_resolver", "cache_hits"), 1);
}

#[test]
fn nxdomain_is_cached_for_the_soa_minimum_and_nodata_too() {
    let mut net = hierarchy(3, 1, false, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        let nx = ResolveError::NotFound {
            name: "nope.example.com".into(),
        };
        assert_eq!(
            elvis_dns::resolve(&h, "nope.example.com").await,
            Err(nx.clone())
        );
        // example.com's SOA: TTL 3600, MINIMUM 60: cached for 60 s.
        h.sleep_until(at(59.9)).await;
        assert_eq!(
            elvis_dns::resolve(&h, "nope.example.com").await,
            Err(nx.clone())
        );
        h.sleep_until(at(60.5)).await;
        assert_eq!(elvis_dns::resolve(&h, "nope.example.com").await, Err(nx));
        // mail has an MX and no address: NODATA, cached as well.
        for _ in 0..2 {
            let e = elvis_dns::resolve(&h, "mail.example.com").await;
            assert!(matches!(e, Err(ResolveError::NoAddress { .. })), "{e:?}");
        }
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    // 3 cold, 0 within the minute, 1 after it, 1 for mail's NODATA.
    assert_eq!(
        metric(&r, "resolver", "dns_resolver", "upstream_queries"),
        5
    );
    assert_eq!(metric(&r, "resolver", "dns_resolver", "cache_hits"), 2);
}

#[test]
fn a_cname_chain_is_chased_across_zones() {
    let mut net = hierarchy(4, 1, false, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        let answers =
            stub::lookup(&h, "chain.example.com", RecordType::A, Options::default()).await?;
        let names: Vec<String> = answers.iter().map(|r| r.name.to_ascii()).collect();
        assert_eq!(
            names,
            [
                "chain.example.com.",
                "www.example.net.",
                "final.example.net."
            ]
        );
        assert!(
            matches!(answers[2].data, RData::A(a) if a.0 == std::net::Ipv4Addr::new(10, 1, 0, 4))
        );
        // In-zone chains come in one answer.
        assert_eq!(elvis_dns::resolve(&h, "web.example.com").await?, WWW);
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    // chain: root, com., example.com. (CNAME out), root, net., example.net.
    // (CNAME and A in one answer); web: example.com. only.
    assert_eq!(
        metric(&r, "resolver", "dns_resolver", "upstream_queries"),
        7
    );
}

#[test]
fn a_truncated_answer_is_asked_again_over_tcp() {
    let mut net = hierarchy(5, 1, false, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        let answers =
            stub::lookup(&h, "big.example.com", RecordType::A, Options::default()).await?;
        assert_eq!(answers.len(), 100);
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    let res = |n| metric(&r, "resolver", "dns_resolver", n);
    // 100 addresses are 1,600 bytes of answers: over the 1,232 of EDNS.
    assert_eq!(res("upstream_tcp"), 1);
    assert_eq!(res("responses_tcp"), 1);
    let truncated =
        metric(&r, "ns1", "dns_server", "truncated") + metric(&r, "ns2", "dns_server", "truncated");
    assert_eq!(truncated, 1);
}

#[test]
fn the_resolver_fails_over_to_the_next_name_server() {
    let mut net = hierarchy(6, 1, true, None);
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        for name in ["www", "web", "ns1", "ns2", "big"] {
            let ip = elvis_dns::resolve(&h, name).await?;
            assert!(ip.octets()[0] == 10, "{name} {ip}");
        }
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
    let res = |n| metric(&r, "resolver", "dns_resolver", n);
    assert!(
        res("upstream_timeouts") >= 1,
        "ns2 never asked: pick another seed"
    );
    assert_eq!(res("servfail"), 0);
}

#[test]
fn the_stub_fails_over_to_its_second_server() {
    // The first server listed (ns2, a black hole here) never answers.
    let mut net = hierarchy(7, 1, true, Some(vec![NS2, RESOLVER]));
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        assert_eq!(elvis_dns::resolve(&h, "www").await?, WWW);
        // One 2 s timeout, then the resolver: a few milliseconds, plus
        // one 800 ms timeout of its own if it asked the dead ns2 first.
        let t = h.now().as_nanos();
        assert!((2_000_000_000..2_900_000_000).contains(&t), "{t}");
        Ok(())
    });
    let r = net.sim.run();
    assert_success(&r);
}

#[test]
fn no_resolver_configured_is_a_clear_error() {
    let mut net = hierarchy(8, 1, false, None);
    net.sim.set_resolver(net.client, None).unwrap();
    net.sim.spawn(net.client, "lookups", |h: Host| async move {
        assert_eq!(
            elvis_dns::resolve(&h, "www").await,
            Err(ResolveError::NoResolver)
        );
        assert_eq!(
            elvis_dns::resolve(&h, "10.9.8.7").await,
            Ok("10.9.8.7".parse().unwrap())
        );
        Ok(())
    });
    assert_success(&net.sim.run());
    let _ = Duration::ZERO;
}
