//! DNS settings of machines: `resolver='10.1.0.2'` (the stub resolver's
//! servers), and the hierarchy `[Simulation dns='auto']` builds.

use crate::{err, BuildError};
use elvis_dns::proto::rr::rdata::{A, NS, SOA};
use elvis_dns::proto::rr::{Name, RData, Record};
use elvis_dns::{resolver, server, Zone};
use elvis_scenario::{MachineGroup, NetworkKind, Scenario};
use elvis_sim::stack::machine::ResolverConf;
use elvis_sim::{Host, MachineId, Protocols, Simulation};
use std::net::Ipv4Addr;
use std::rc::Rc;

/// Sets the resolver configuration of machines `first..first + len` (the
/// group `g`) from its `resolver=` list of addresses or machine names.
///
/// # Errors
/// A name in the list that is no machine.
pub(crate) fn resolver_conf(
    sim: &mut Simulation,
    g: &MachineGroup,
    first: u32,
    len: u32,
    resolve: &dyn Fn(&str) -> Option<Ipv4Addr>,
) -> Result<(), BuildError> {
    let Some(p) = &g.resolver else {
        return Ok(());
    };
    let mut servers = Vec::new();
    for name in p.value.split(',').map(str::trim) {
        let ip = resolve(name).ok_or_else(|| {
            let mut e = err(p.loc, format!("unknown machine '{name}' in resolver"));
            e.hint = Some("resolver='10.1.0.2' or resolver='dns-resolver,10.2.0.2'".into());
            e
        })?;
        servers.push(ip);
    }
    let conf = ResolverConf {
        servers,
        domain: None,
    };
    for m in first..first + len {
        sim.set_resolver(m, Some(conf.clone()))
            .map_err(|e| err(p.loc, e.to_string()))?;
    }
    Ok(())
}

/// The machines of a hierarchy built by `[Simulation dns='auto']`: a root
/// server, a server of the top-level domain, one of the domain itself
/// when it has two labels or more (`example.com`; for a one-label domain
/// such as `elvis` the top-level server holds the names), and a caching
/// resolver every machine asks.
pub(crate) struct AutoServers {
    domain: Name,
    tld: Name,
    root: (MachineId, Ipv4Addr),
    tld_server: (MachineId, Ipv4Addr),
    auth: Option<(MachineId, Ipv4Addr)>,
    resolver: (MachineId, Ipv4Addr),
}

/// Adds the hierarchy's machines (`dns-root`, `dns-tld`, `dns-auth`,
/// `dns-resolver`) on the scenario's first switched network, with
/// addresses from its pool, and lists them in `groups`.
///
/// # Errors
/// No switched network, or a machine of one of those names exists.
pub(crate) fn attach_servers(
    sim: &mut Simulation,
    scenario: &Scenario,
    pools: &mut [crate::Pool],
    skip: &rustc_hash::FxHashSet<u32>,
    groups: &mut Vec<(String, u32, u32)>,
) -> Result<Option<AutoServers>, BuildError> {
    let Some(auto) = &scenario.sim.dns else {
        return Ok(None);
    };
    let Some(k) = scenario
        .networks
        .iter()
        .position(|n| n.kind == NetworkKind::Switch)
    else {
        let mut e = err(
            auto.loc,
            "dns='auto' needs a switched network for its servers",
        );
        e.hint = Some("declare a [Network] that is not type='link'".into());
        return Err(e);
    };
    let bad = |e: String| err(auto.loc, e);
    let mut domain = Name::from_ascii(&auto.domain).map_err(|e| bad(e.to_string()))?;
    domain.set_fqdn(true);
    let tld = domain.trim_to(1);
    let mut add = |name: &str| -> Result<(MachineId, Ipv4Addr), BuildError> {
        let m = sim
            .add_group(name, None, Protocols::UDP_TCP)
            .map_err(|e| bad(format!("dns='auto' adds the machine {name}: {e}")))?;
        let ip = pools[k].next(skip);
        sim.attach(m, k as u32, ip)
            .map_err(|e| bad(e.to_string()))?;
        groups.push((name.to_string(), m, 1));
        Ok((m, ip))
    };
    let root = add("dns-root")?;
    let tld_server = add("dns-tld")?;
    let auth = if domain.num_labels() > 1 {
        Some(add("dns-auth")?)
    } else {
        None
    };
    let resolver = add("dns-resolver")?;
    Ok(Some(AutoServers {
        domain,
        tld,
        root,
        tld_server,
        auth,
        resolver,
    }))
}

fn record(owner: Name, ttl: u32, data: RData) -> Record {
    Record::from_rdata(owner, ttl, data)
}

fn zone_of(origin: &Name, ns: &Name, records: Vec<Record>) -> Result<Zone, String> {
    let soa = SOA::new(
        ns.clone(),
        Name::from_ascii("hostmaster")
            .and_then(|h| h.append_domain(origin))
            .map_err(|e| e.to_string())?,
        1,
        3600,
        600,
        86_400,
        300,
    );
    let mut all = vec![
        record(origin.clone(), 3600, RData::SOA(soa)),
        record(origin.clone(), 86_400, RData::NS(NS(ns.clone()))),
    ];
    all.extend(records);
    Zone::new(origin.clone(), all)
}

/// Fills the hierarchy's zones with every machine in `names` (instance
/// name and id; names that are no DNS label are left out), starts its
/// servers and resolver, and points every machine at the resolver with
/// the domain as its search domain.
///
/// # Errors
/// A zone that does not build (never for the names given).
pub(crate) fn start_auto(
    sim: &mut Simulation,
    auto: &AutoServers,
    names: impl Iterator<Item = (String, u32)>,
    addresses: &[Option<Ipv4Addr>],
) -> Result<(), String> {
    let server_name = |label: &str| {
        Name::from_ascii(label)
            .and_then(|n| n.append_domain(&auto.domain))
            .map_err(|e| e.to_string())
    };
    let mut hosts = Vec::new();
    for (label, id) in names {
        let Some(ip) = addresses.get(id as usize).copied().flatten() else {
            continue;
        };
        let Ok(owner) = Name::from_ascii(&label).and_then(|n| n.append_domain(&auto.domain)) else {
            continue;
        };
        if !label.contains('.') {
            hosts.push(record(owner, 3600, RData::A(A(ip))));
        }
    }
    let tld_ns = server_name("dns-tld")?;
    let root_zone = zone_of(
        &Name::root(),
        &server_name("dns-root")?,
        vec![
            record(auto.tld.clone(), 86_400, RData::NS(NS(tld_ns.clone()))),
            record(tld_ns.clone(), 86_400, RData::A(A(auto.tld_server.1))),
        ],
    )?;
    let (tld_zone, auth_zone) = match auto.auth {
        None => (zone_of(&auto.tld, &tld_ns, hosts)?, None),
        Some((_, ip)) => {
            let auth_ns = server_name("dns-auth")?;
            let delegation = vec![
                record(auto.domain.clone(), 86_400, RData::NS(NS(auth_ns.clone()))),
                record(auth_ns.clone(), 86_400, RData::A(A(ip))),
            ];
            let tld_zone = zone_of(&auto.tld, &tld_ns, delegation)?;
            (tld_zone, Some(zone_of(&auto.domain, &auth_ns, hosts)?))
        }
    };
    let serve = |sim: &mut Simulation, m: MachineId, zone: Zone| {
        let cfg = Rc::new(server::Config::new(vec![zone]));
        sim.spawn_daemon(m, "dns_server", move |h: Host| server::run(h, cfg));
    };
    serve(sim, auto.root.0, root_zone);
    serve(sim, auto.tld_server.0, tld_zone);
    if let (Some((m, _)), Some(z)) = (auto.auth, auth_zone) {
        serve(sim, m, z);
    }
    let rcfg = Rc::new(resolver::Config::new(vec![auto.root.1]));
    sim.spawn_daemon(auto.resolver.0, "dns_resolver", move |h: Host| {
        resolver::run(h, rcfg)
    });
    let domain = auto.domain.to_ascii();
    let conf = ResolverConf {
        servers: vec![auto.resolver.1],
        domain: Some(domain.trim_end_matches('.').to_string()),
    };
    for m in 0..sim.machine_count() as u32 {
        sim.set_resolver(m, Some(conf.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    fn run(domain: &str) -> elvis_sim::Report {
        let text = format!(
            "[Simulation dns='auto' domain='{domain}']
[Networks]
	[Network id='lan' latency='1ms']
		[IP subnet='10.0.0.0/24']
[Machines]
	[Machine name='sender' count='3']
		[Networks]
			[Network id='lan']
		[Protocols]
			[Protocol name='UDP']
		[Applications]
			[Application name='send_message' to='capturer' port='9']
	[Machine name='capturer']
		[Networks]
			[Network id='lan']
		[Protocols]
			[Protocol name='UDP']
		[Applications]
			[Application name='capture' port='9' message_count='3']
"
        );
        let sc = elvis_ndl::parse(&text, "auto.ndl").expect("the NDL parses");
        let mut built = crate::build(&sc, None).expect("it builds");
        built.sim.run()
    }

    fn metric(r: &elvis_sim::Report, machine: &str, name: &str) -> f64 {
        r.metrics
            .iter()
            .filter(|m| m.machine == machine && m.name == name)
            .map(|m| m.value)
            .sum()
    }

    #[test]
    fn dns_auto_names_every_machine_and_senders_look_their_peer_up() {
        let r = run("elvis");
        assert!(r.success(), "{}", r.deterministic_json());
        // Three lookups of capturer.elvis, each answered; a cold one
        // walks the root and the elvis. server.
        assert_eq!(metric(&r, "dns-resolver", "queries"), 3.0);
        assert_eq!(
            metric(&r, "dns-root", "responses"),
            metric(&r, "dns-resolver", "upstream_queries") - metric(&r, "dns-tld", "responses")
        );
        assert!(metric(&r, "dns-tld", "responses") >= 1.0);
    }

    #[test]
    fn a_two_label_domain_gets_a_server_of_its_own() {
        let r = run("sim.example");
        assert!(r.success(), "{}", r.deterministic_json());
        assert!(metric(&r, "dns-auth", "responses") >= 1.0);
        assert_eq!(metric(&r, "dns-resolver", "servfail"), 0.0);
    }
}
