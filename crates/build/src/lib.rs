//! The builder: from a [`Scenario`] (plain data) to a [`Simulation`].
//!
//! # Addresses
//! A machine's address on a network is, in order of preference:
//! 1. its application's `ip=` option, when that address is listed for the
//!    network (or the machine has a single network);
//! 2. the next address listed for the network (`[IP ip=…]`, `[IP range=…]`)
//!    that no application claimed;
//! 3. when the list runs out, the next address counting up from the last
//!    listed one (or from the subnet's first host, or 10.0.0.1 when nothing
//!    is listed), skipping host octets 0 and 255 and every address already
//!    taken on that network. Elvis' benchmark files list one address and
//!    declare `count='1000000'` senders: they get 123.45.67.90, .91, … .
//!
//! # Start order
//! Every application starts at time zero. Applications that only react to
//! traffic (`capture`, `forward`, a `ping_pong` that is not the starter)
//! start first, then the others, each in declaration order; so a receiver
//! has bound its socket before the first datagram reaches it, even on an
//! ideal network where delivery takes no time.
//!
//! # Per-instance values
//! In a counted machine, option values may contain `{i}` (the instance
//! number) and `{name}` (the instance name); such applications are
//! configured per instance, all others once per group.
//!
//! # NIC offloads
//! A group's `offload=` / `rx_usecs=` (`MachineGroup::offloads`) go to
//! `Simulation::set_offloads` for every instance, also for a block that
//! names generated hosts; a block naming generated routers or switches
//! is refused at the key, since routers ignore offloads (declared routers
//! are refused by the NDL lowering already).
#![forbid(unsafe_code)]

use apps::registry::{self, BuildCtx, ParamError};
use elvis_kernel::Time;
use elvis_scenario::{
    AppSpec, Loc, MachineGroup, NetworkKind, OffloadSpec, Param, Params, RoutingMode, Scenario,
};
use elvis_sim::stack::route::Metric;
use elvis_sim::{NetworkConfig, Protocols, Simulation};
use std::borrow::Cow;
use std::net::Ipv4Addr;

mod aodv;
pub mod apps;
mod dhcp;
mod dns;
pub mod estimate;
mod marking;
mod tap;
mod tcp;
mod topology;
mod wireless;

/// Why a scenario could not be built; `loc` points into the NDL source
/// when the scenario came from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    pub message: String,
    pub hint: Option<String>,
    pub loc: Loc,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

impl From<ParamError> for BuildError {
    fn from(e: ParamError) -> Self {
        BuildError {
            message: e.message,
            hint: e.hint,
            loc: e.loc,
        }
    }
}

fn err(loc: Loc, message: impl Into<String>) -> BuildError {
    BuildError {
        message: message.into(),
        hint: None,
        loc,
    }
}

/// Turns a network's `qdisc=` spec into the simulator's config and checks
/// its ranges, locating an error at the offending key's value.
fn qdisc_config(
    q: &elvis_scenario::QdiscSpec,
    bandwidth_bps: Option<u64>,
) -> Result<elvis_sim::qdisc::QdiscConfig, BuildError> {
    use elvis_scenario::{ClassifySpec, QdiscKind, QueueLimit};
    use elvis_sim::qdisc::TokenBucketConfig;
    use elvis_sim::qdisc::{ClassParams, Classify, Limit, QdiscConfig, RedConfig};
    let limit = |default: Limit| match q.limit {
        None => default,
        Some(QueueLimit::Unbounded) => Limit::Unbounded,
        Some(QueueLimit::Packets(n)) => Limit::Packets(n),
        Some(QueueLimit::Bytes(n)) => Limit::Bytes(n),
    };
    let classes = || ClassParams {
        classify: match &q.classify {
            Some(ClassifySpec::Dscp(d)) => Classify::Dscp(d.clone()),
            Some(ClassifySpec::Flow) | None => Classify::Flow,
        },
        weights: q.weights.clone(),
        limit: limit(Limit::Packets(1000)),
    };
    let cfg = match q.kind {
        QdiscKind::DropTail => QdiscConfig::DropTail {
            limit: limit(Limit::Unbounded),
        },
        QdiscKind::Red => {
            let (min, min_bytes) = q.red_min.unwrap_or((0.0, false));
            let (max, max_bytes) = q.red_max.unwrap_or((0.0, false));
            if min_bytes != max_bytes {
                return Err(BuildError {
                    message: "red_min and red_max must both be packets or both be bytes".into(),
                    hint: Some(
                        "write e.g. red_min='5' red_max='15', or red_min='30kB' red_max='90kB'"
                            .into(),
                    ),
                    loc: q.loc_of("red_max"),
                });
            }
            let mut c = RedConfig::packets(min, max, q.red_max_p.unwrap_or(0.1));
            c.bytes = min_bytes;
            if c.bytes {
                c.limit = Limit::Bytes((4.0 * max).ceil() as u64);
            }
            c.limit = limit(c.limit);
            c.w_q = q.red_wq.unwrap_or(RedConfig::DEFAULT_W_Q);
            c.gentle = q.red_gentle;
            c.ecn = q.ecn;
            c.avpkt = q.red_avpkt.map_or(RedConfig::DEFAULT_AVPKT, |b| {
                b.min(u64::from(u32::MAX)) as u32
            });
            QdiscConfig::Red(c)
        }
        QdiscKind::TokenBucket => QdiscConfig::TokenBucket(TokenBucketConfig {
            rate_bps: q.rate_bps.unwrap_or(0),
            burst_bytes: q.burst_bytes.unwrap_or(0),
            limit: limit(TokenBucketConfig::DEFAULT_LIMIT),
        }),
        QdiscKind::Prio => QdiscConfig::Prio(classes()),
        QdiscKind::Drr => QdiscConfig::Drr(classes()),
        QdiscKind::Wrr => QdiscConfig::Wrr(classes()),
        QdiscKind::Wfq => QdiscConfig::Wfq(classes()),
        QdiscKind::VirtualClock => QdiscConfig::VirtualClock(classes()),
        QdiscKind::EcnThreshold | QdiscKind::Srtcm | QdiscKind::Trtcm => marking::config(q)?,
    };
    match cfg.build(bandwidth_bps) {
        Ok(_) => Ok(cfg),
        Err(e) => Err(BuildError {
            message: format!("bad qdisc parameter {e}"),
            hint: Some("see the qdisc table in docs/ndl.md for each parameter's range".into()),
            loc: q.loc_of(e.param),
        }),
    }
}

/// Turns on the priority flow control of a network's `pfc=` keys, if
/// any, locating an error at the offending key's value.
fn set_pfc(
    sim: &mut Simulation,
    net: elvis_sim::NetId,
    q: Option<&elvis_scenario::QdiscSpec>,
) -> Result<(), BuildError> {
    use elvis_sim::pfc::PfcConfig;
    let Some((q, spec)) = q.and_then(|q| q.pfc.as_ref().map(|p| (q, p))) else {
        return Ok(());
    };
    let Some(net_cfg) = sim.network_config(net) else {
        return Ok(());
    };
    let mut cfg = PfcConfig::new(spec.lossless, net_cfg.mtu);
    if let Some(x) = spec.xoff_bytes {
        cfg.xoff = x;
        cfg.xon = x / 2;
    }
    if let Some(x) = spec.xon_bytes {
        cfg.xon = x;
    }
    cfg.quanta = spec.quanta.unwrap_or(cfg.quanta);
    cfg.deadlock_ns = spec.deadlock_ns.unwrap_or(cfg.deadlock_ns);
    cfg.validate(net_cfg).map_err(|(key, message)| BuildError {
        message: format!("bad PFC parameter {key}: {message}"),
        hint: Some("see *PFC* in docs/datacenter.md".into()),
        loc: q.loc_of(key),
    })?;
    sim.set_pfc(net, cfg).map_err(|e| BuildError {
        message: e.to_string(),
        hint: None,
        loc: q.loc_of("pfc"),
    })
}

/// A built simulation and the settings it should run with.
pub struct Built {
    pub sim: Simulation,
    pub until: Option<Time>,
    /// Machine names in id order are `group` or `group-i`; this maps each
    /// group to its first id and size (for tools and tests).
    pub groups: Vec<(String, u32, u32)>,
    /// The kernel sides of the TAP machines: keep them until the run is
    /// over (dropping one removes the namespace elvis made for it).
    pub taps: Vec<elvis_tap::TapGuard>,
}

/// Builds `scenario` with its own seed (or `seed` when given).
///
/// # Errors
/// Unknown protocols or applications, bad options, unknown machine names,
/// address conflicts, a link that does not join exactly two machines.
pub fn build(scenario: &Scenario, seed: Option<u64>) -> Result<Built, BuildError> {
    let mut a = attach_all(scenario, seed)?;
    let machines: Cow<'_, [MachineGroup]> = if a.counted_groups.is_empty() {
        Cow::Borrowed(&scenario.machines)
    } else {
        let mut m = scenario.machines.clone();
        for &(k, len) in &a.counted_groups {
            m[k].count = Some(len);
        }
        Cow::Owned(m)
    };
    routes_and_offloads(&mut a, &machines, scenario)?;
    let counted: Vec<bool> = machines.iter().map(|g| g.count.is_some()).collect();
    let groups = machines.iter().map(Cow::Borrowed);
    let base_dir = scenario.base_dir.as_deref();
    spawn_and_finish(a, &counted, groups, scenario.sim.until, base_dir)
}

/// Builds `scenario` as [`build`] does, dropping its parts once they are
/// built: its networks once every machine is attached, each machine group
/// once its applications are configured. The simulation's own memory
/// reuses theirs, so a large scenario peaks lower (the million-host star
/// of the README by about a tenth).
///
/// # Errors
/// As [`build`].
pub fn build_owned(mut scenario: Scenario, seed: Option<u64>) -> Result<Built, BuildError> {
    let mut a = attach_all(&scenario, seed)?;
    scenario.networks = Vec::new();
    for &(k, len) in &a.counted_groups {
        scenario.machines[k].count = Some(len);
    }
    routes_and_offloads(&mut a, &scenario.machines, &scenario)?;
    let counted: Vec<bool> = (scenario.machines.iter())
        .map(|g| g.count.is_some())
        .collect();
    let until = scenario.sim.until;
    let base_dir = scenario.base_dir.take();
    let groups = std::mem::take(&mut scenario.machines);
    drop(scenario);
    let groups = groups.into_iter().map(Cow::Owned);
    spawn_and_finish(a, &counted, groups, until, base_dir.as_deref())
}

/// A simulation with every network made and every machine attached.
struct Attached {
    sim: Simulation,
    /// Per machine group: name, first id, machines.
    groups: Vec<(String, u32, u32)>,
    /// Generated groups: name, first id, machines.
    generated: Vec<(String, u32, u32)>,
    /// Blocks naming a whole generated group: (index, its size).
    counted_groups: Vec<(usize, u32)>,
    apps_from: AppsFrom,
    /// The machines of `dns='auto'`, if asked for.
    dns: Option<dns::AutoServers>,
    /// The kernel sides of the TAP machines.
    taps: Vec<elvis_tap::TapGuard>,
}

/// Sets routes and offloads (`machines` with the counts of
/// [`Attached::counted_groups`]).
fn routes_and_offloads(
    a: &mut Attached,
    machines: &[MachineGroup],
    scenario: &Scenario,
) -> Result<(), BuildError> {
    routes(&mut a.sim, machines, scenario.sim.routing, &a.groups)?;
    a.sim
        .set_per_packet_multipath(scenario.sim.per_packet_multipath);
    a.sim
        .set_random_multipath(match scenario.sim.random_multipath {
            elvis_scenario::RandomMultipath::Off => elvis_sim::stack::route::Random::Off,
            elvis_scenario::RandomMultipath::Demux => elvis_sim::stack::route::Random::Demux,
            elvis_scenario::RandomMultipath::Path => elvis_sim::stack::route::Random::Path,
        });
    let mut tcp = elvis_sim::TcpConfig::default();
    if let Some(ns) = scenario.sim.tcp_min_rto_ns {
        tcp.min_rto = std::time::Duration::from_nanos(ns);
    }
    if let Some(s) = &scenario.sim.tcp_slow_start {
        tcp.slow_start = s.parse().map_err(|e: String| {
            err(scenario.sim.loc, e).with_hint("slow_start='hystart', 'hystart++' or 'standard'")
        })?;
    }
    if tcp != elvis_sim::TcpConfig::default() {
        a.sim.set_tcp_config(tcp);
    }
    offloads(&mut a.sim, machines, &a.groups)?;
    if scenario.sim.routing == RoutingMode::Latency && needs_auto(scenario) {
        a.sim.set_auto_routes(Some(Metric::Latency));
    }
    Ok(())
}

/// Starts the applications of `machines` (whose `count`s are `counted`)
/// and returns the built simulation.
fn spawn_and_finish<'a>(
    mut a: Attached,
    counted: &[bool],
    machines: impl Iterator<Item = Cow<'a, MachineGroup>>,
    until: Option<u64>,
    base_dir: Option<&str>,
) -> Result<Built, BuildError> {
    spawn_apps(
        &mut a.sim,
        counted,
        machines,
        &a.groups,
        &a.generated,
        &a.apps_from,
        Extras {
            base_dir,
            dns: a.dns.as_ref(),
        },
    )?;
    a.groups.extend(a.generated);
    Ok(Built {
        sim: a.sim,
        until: until.map(Time::from_nanos),
        groups: a.groups,
        taps: a.taps,
    })
}

/// Makes the networks and machines of `scenario` and attaches every
/// machine to its networks.
fn attach_all(scenario: &Scenario, seed: Option<u64>) -> Result<Attached, BuildError> {
    let mut sim = Simulation::new(seed.unwrap_or(scenario.sim.seed));
    if let Some(ttl) = scenario.sim.ttl {
        sim.set_default_ttl(ttl);
    }
    sim.set_realtime(scenario.sim.realtime);
    icmp_limits(&mut sim, &scenario.sim);
    let (mut pools, net_ids) = add_networks(&mut sim, scenario)?;
    let skip = claimed_addresses(scenario)?;
    let generated = topology::build_all(&mut sim, scenario)?;
    let mut groups = Vec::new();
    // Blocks that add applications to generated machines run as groups
    // of those machines (counted when they name a whole generated group).
    // A block naming one generated machine replaces, on that machine, the
    // applications of a block naming its whole group.
    // Counts given to blocks that name a whole generated group (the
    // machines are copied only when there are any).
    let mut counted_groups: Vec<(usize, u32)> = Vec::new();
    let mut apps_from = AppsFrom::default();
    let mut taps = Vec::new();
    for (k, g) in scenario.machines.iter().enumerate() {
        if let Some(spec) = &g.tap {
            let pending = tap::add(&mut sim, scenario, g, spec)?;
            let m = pending.machine;
            groups.push((g.name.clone(), m, 1));
            attach_group(&mut sim, g, m, &net_ids, &mut pools, &skip)?;
            taps.push((pending, spec.loc));
            continue;
        }
        if let topology::Role::Attach {
            first,
            len,
            counted,
        } = topology::role(g, &generated)?
        {
            protocols(g)?;
            tcp::syn_defence(g)?;
            aodv::not_in_topology(g)?;
            if counted {
                counted_groups.push((k, len));
                apps_from.whole_groups.insert(k);
            } else {
                apps_from.own_block.insert(first);
            }
            groups.push((g.name.clone(), first, len));
            continue;
        }
        let protocols = protocols(g)?;
        let first = sim
            .add_group(&g.name, g.count, protocols)
            .map_err(|e| err(g.loc, e.to_string()))?;
        if let Some(d) = tcp::syn_defence(g)? {
            sim.set_syn_defence(first, d)
                .map_err(|e| err(g.loc, e.to_string()))?;
        }
        groups.push((g.name.clone(), first, g.instances()));
        attach_group(&mut sim, g, first, &net_ids, &mut pools, &skip)?;
        dhcp::group(&mut sim, g, first)?;
        aodv::group(&mut sim, g, first)?;
    }
    let dns = dns::attach_servers(&mut sim, scenario, &mut pools, &skip, &mut groups)?;
    check_links(scenario, &net_ids)?;
    let seed = seed.unwrap_or(scenario.sim.seed);
    wireless::place(&mut sim, scenario, &groups, &net_ids, seed)?;
    let taps = tap::set_up(&mut sim, taps)?;
    let generated = (generated.iter())
        .map(|x| (x.name.clone(), x.first, x.len))
        .collect();
    Ok(Attached {
        sim,
        groups,
        generated,
        counted_groups,
        apps_from,
        dns,
        taps,
    })
}

/// Adds the networks of `scenario` to `sim`; returns their address pools
/// and their ids by name.
fn add_networks<'s>(
    sim: &mut Simulation,
    scenario: &'s Scenario,
) -> Result<(Vec<Pool>, rustc_hash::FxHashMap<&'s str, u32>), BuildError> {
    let n = scenario.networks.len();
    sim.reserve_networks(n);
    let links = (scenario.networks.iter()).filter(|s| s.kind == NetworkKind::Link);
    sim.reserve_links(links.count());
    let mut pools: Vec<Pool> = Vec::with_capacity(n);
    let mut net_ids = rustc_hash::FxHashMap::<&str, u32>::default();
    net_ids.reserve(n);
    for spec in &scenario.networks {
        let cfg = NetworkConfig {
            name: spec.id.clone(),
            kind: match spec.kind {
                NetworkKind::Switch => elvis_sim::NetworkKind::Switch,
                NetworkKind::Link => elvis_sim::NetworkKind::Link,
                NetworkKind::Wireless => elvis_sim::NetworkKind::Switch,
            },
            bandwidth_bps: spec.bandwidth_bps,
            latency_ns: spec.latency_ns,
            loss: spec.loss,
            corruption: spec.corruption,
            duplicate: spec.duplicate,
            reorder: spec.reorder,
            reorder_delay_ns: spec
                .reorder_delay_ns
                .unwrap_or(NetworkConfig::DEFAULT_REORDER_DELAY_NS),
            mtu: spec.mtu,
            queue: spec.queue,
            txqueuelen: NetworkConfig::DEFAULT_TXQUEUELEN,
            qdisc: match &spec.qdisc {
                Some(q) => Some(Box::new(qdisc_config(q, spec.bandwidth_bps)?)),
                None => None,
            },
        };
        let id = sim.add_network(cfg);
        if let Some(w) = &spec.wireless {
            let radio = wireless::config(w, spec.loc)?;
            sim.set_wireless(id, radio)
                .map_err(|e| err(spec.loc, e.to_string()))?;
        }
        set_pfc(sim, id, spec.qdisc.as_deref())?;
        if let Some((prefix, len)) = spec.subnet {
            sim.set_network_subnet(id, prefix, len)
                .map_err(|e| err(spec.loc, e.to_string()))?;
        }
        net_ids.insert(spec.id.as_str(), id);
        pools.push(Pool::new(spec));
    }
    Ok((pools, net_ids))
}

/// Returns the addresses claimed by applications' `ip=` options and by
/// machines' pinned interface addresses, which the pools skip.
///
/// # Errors
/// An address claimed twice.
fn claimed_addresses(scenario: &Scenario) -> Result<rustc_hash::FxHashSet<u32>, BuildError> {
    // One set for every network: claimed addresses are skipped wherever
    // they would be handed out (a copy per network would cost networks ×
    // pins). Looked up, never iterated in order: a hash set (a million
    // pinned addresses cost a B-tree a million ordered inserts). It holds
    // the addresses alone; where an address was first claimed is looked
    // for again only when one is claimed twice.
    let mut claimed = rustc_hash::FxHashSet::<u32>::default();
    let pins = (scenario.machines.iter()).map(|g| g.pinned.len() * g.instances() as usize);
    claimed.reserve(pins.sum());
    let mut twice = None;
    each_claim(scenario, |ip, loc| {
        if claimed.insert(u32::from(ip)) {
            return true;
        }
        twice = Some((ip, loc));
        false
    })?;
    let Some((ip, loc)) = twice else {
        return Ok(claimed);
    };
    let mut first = None;
    each_claim(scenario, |x, l| {
        if x == ip {
            first = Some(l);
        }
        first.is_none()
    })?;
    let mut e = err(loc, format!("address {ip} is claimed twice"));
    if let Some(prev) = first {
        e.hint = Some(format!("also claimed at line {}", prev.line));
    }
    Err(e)
}

/// Calls `f` with each address claimed by an application's `ip=` and each
/// pinned interface address, with where it is written, in the order
/// [`claimed_addresses`] checks them, until `f` returns false.
fn each_claim(
    scenario: &Scenario,
    mut f: impl FnMut(Ipv4Addr, Loc) -> bool,
) -> Result<(), BuildError> {
    for g in &scenario.machines {
        for (_, (ip, loc)) in claimed_ips(g)? {
            if !f(ip, loc) {
                return Ok(());
            }
        }
    }
    for g in &scenario.machines {
        for (_, p) in &g.pinned {
            for i in 0..g.instances() {
                let ip = parse_ip(&instance_value(&p.value, g, i), p.loc)?;
                if !f(ip, p.loc) {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Attaches each machine of group `g` (the first is `first`) to its
/// networks, at its pinned address, its application's `ip=` or the next
/// free address of the network's pool (skipping `skip`).
fn attach_group(
    sim: &mut Simulation,
    g: &MachineGroup,
    first: elvis_sim::MachineId,
    net_ids: &rustc_hash::FxHashMap<&str, u32>,
    pools: &mut [Pool],
    skip: &rustc_hash::FxHashSet<u32>,
) -> Result<(), BuildError> {
    let own_ips = claimed_ips(g)?;
    // The pinned address of each interface, by interface index.
    let mut pinned_at: Vec<Option<&Param>> = vec![None; g.networks.len()];
    for (k, p) in &g.pinned {
        if let Some(slot) = pinned_at.get_mut(*k as usize) {
            slot.get_or_insert(p);
        }
    }
    // A DHCP client's first interface starts without an address.
    let by_dhcp = dhcp::is_client(g);
    for i in 0..g.instances() {
        let own = match own_ips.first() {
            Some((None, (ip, _))) => Some(*ip),
            Some(_) => own_ips.get(i as usize).map(|(_, (ip, _))| *ip),
            None => None,
        };
        for (k, r) in g.networks.iter().enumerate() {
            let Some(&net) = net_ids.get(r.name.as_str()) else {
                return Err(err(r.loc, format!("unknown network '{}'", r.name)));
            };
            let pinned = match pinned_at[k] {
                Some(p) => Some(parse_ip(&instance_value(&p.value, g, i), p.loc)?),
                None => None,
            };
            if k == 0 && pinned.is_none() && by_dhcp {
                sim.attach_unconfigured(first + i, net)
                    .map_err(|e| err(r.loc, format!("machine '{}': {e}", g.name)))?;
                continue;
            }
            let pool = &mut pools[net as usize];
            let ip = match (pinned, own) {
                (Some(ip), _) => ip,
                (None, Some(ip)) if pool.lists(ip) || g.networks.len() == 1 || k == 0 => ip,
                _ => pool.next(skip),
            };
            sim.attach(first + i, net, ip)
                .map_err(|e| err(r.loc, format!("machine '{}': {e}", g.name)))?;
        }
    }
    Ok(())
}

/// Checks that every link of `scenario` joins exactly two machines
/// (`net_ids`: the networks' ids by name, as [`add_networks`] made them).
fn check_links(
    scenario: &Scenario,
    net_ids: &rustc_hash::FxHashMap<&str, u32>,
) -> Result<(), BuildError> {
    let ends = interfaces_per_network(scenario, net_ids);
    for spec in &scenario.networks {
        if spec.kind == NetworkKind::Link {
            let id = net_ids.get(spec.id.as_str());
            let ports = id.and_then(|&i| ends.get(i as usize)).copied();
            let ports = ports.unwrap_or(0);
            if ports != 2 {
                return Err(err(
                    spec.loc,
                    format!(
                        "link '{}' joins {ports} machine(s); a link joins exactly 2",
                        spec.id
                    ),
                )
                .with_hint("use type='switch' for a LAN"));
            }
        }
    }
    Ok(())
}

/// Applies the `[Simulation]` ICMP rate limits given (Linux's defaults
/// for the others).
fn icmp_limits(sim: &mut Simulation, s: &elvis_scenario::SimSettings) {
    let mut limit = elvis_sim::IcmpRateLimit::default();
    if let Some(ns) = s.icmp_ratelimit_ns {
        limit.per_destination = std::time::Duration::from_nanos(ns);
    }
    limit.per_second = s.icmp_msgs_per_sec.unwrap_or(limit.per_second);
    limit.burst = s.icmp_msgs_burst.unwrap_or(limit.burst);
    sim.set_icmp_rate_limit(limit);
}

/// Makes routers forward, adds static routes (once every machine is
/// attached, so a gateway may be declared after the machine using it) and
/// turns on automatic routes when the scenario has routers.
fn routes(
    sim: &mut Simulation,
    machines: &[MachineGroup],
    routing: RoutingMode,
    groups: &[(String, u32, u32)],
) -> Result<(), BuildError> {
    let mut addrs = None;
    let mut routers = false;
    for (g, &(_, first, n)) in machines.iter().zip(groups) {
        for i in 0..n {
            let m = first + i;
            if g.forward {
                routers = true;
                sim.set_forwarding(m, true)
                    .map_err(|e| err(g.loc, e.to_string()))?;
                if g.keep_ttl {
                    sim.set_ttl_decrement(m, false)
                        .map_err(|e| err(g.loc, e.to_string()))?;
                }
            }
            for r in &g.routes {
                let v = instance_value(&r.via.value, g, i);
                let via = route_via(sim, &mut addrs, groups, &v, r)?;
                let added = match r.from {
                    Some(from) => sim.add_flow_route(m, from, r.prefix, r.port, via),
                    None => sim.add_route(m, r.prefix, r.len, via),
                };
                added.map_err(|e| {
                    let e = match e {
                        elvis_sim::SimError::BadRoute { machine, message } => {
                            format!("machine '{machine}': {message}")
                        }
                        other => other.to_string(),
                    };
                    err(r.via.loc, e).with_hint(
                        "a gateway is a neighbour: an address on one of the machine's [Networks]",
                    )
                })?;
            }
        }
    }
    let metric = match routing {
        RoutingMode::Shortest => Some(Metric::Hops),
        RoutingMode::Latency => Some(Metric::Latency),
        RoutingMode::Static => None,
    };
    if routers && metric.is_some() {
        sim.set_auto_routes(metric);
    }
    Ok(())
}

/// Returns the gateway of route `r` (`v`, its `via` for this instance):
/// an address, or, for ARP's `default=` (Elvis allows a machine name
/// there), the first address of the machine named `v`.
fn route_via(
    sim: &Simulation,
    addrs: &mut Option<Vec<Option<Ipv4Addr>>>,
    groups: &[(String, u32, u32)],
    v: &str,
    r: &elvis_scenario::RouteSpec,
) -> Result<Ipv4Addr, BuildError> {
    if r.via.key != "default" || elvis_scenario::parse_ipv4(elvis_scenario::units::trim(v)).is_ok()
    {
        return parse_ip(v, r.via.loc);
    }
    let name = v.trim();
    let id = groups.iter().find_map(|(n, first, len)| {
        if n == name && *len == 1 {
            return Some(*first);
        }
        let (base, idx) = name.rsplit_once('-')?;
        let idx: u32 = idx.parse().ok()?;
        (n == base && idx < *len).then(|| first + idx)
    });
    // Made once, when the first name is looked up.
    let addrs = addrs.get_or_insert_with(|| sim.primary_addresses());
    let addr = id.and_then(|id| addrs.get(id as usize).copied().flatten());
    addr.filter(|ip| !ip.is_unspecified()).ok_or_else(|| {
        err(
            r.via.loc,
            format!("ARP default '{name}' is neither an address nor a machine with one"),
        )
        .with_hint("default='10.0.0.1' or the name of a machine on one of this machine's networks")
    })
}

/// Sets the NIC offloads (`offload=`, `rx_usecs=`) of every instance of
/// the groups that ask for them.
fn offloads(
    sim: &mut Simulation,
    machines: &[MachineGroup],
    groups: &[(String, u32, u32)],
) -> Result<(), BuildError> {
    for (g, &(_, first, n)) in machines.iter().zip(groups) {
        let Some(o) = g.offloads else { continue };
        let cfg = sim_offloads(&o);
        if cfg == elvis_sim::Offloads::default() {
            // `offload='none'`: the simulator's default, which costs no
            // per-machine state.
            continue;
        }
        for m in first..first + n {
            sim.set_offloads(m, cfg)
                .map_err(|e| err(o.loc, format!("machine '{}': {e}", g.name)))?;
        }
    }
    Ok(())
}

/// Returns the simulator's offloads for an `offload=` / `rx_usecs=` spec.
fn sim_offloads(o: &OffloadSpec) -> elvis_sim::Offloads {
    elvis_sim::Offloads {
        tso: o.tso,
        gro: o.gro,
        rx_usecs: o.rx_usecs,
    }
}

/// Returns true when a `[Topology]` relies on automatic routes.
fn needs_auto(sc: &Scenario) -> bool {
    sc.topologies.iter().any(|t| {
        matches!(
            t.kind,
            elvis_scenario::TopologyKind::Chain { .. }
                | elvis_scenario::TopologyKind::Tree { .. }
                | elvis_scenario::TopologyKind::Torus { .. }
                | elvis_scenario::TopologyKind::Graph { .. }
        )
    })
}

impl BuildError {
    pub(crate) fn with_hint(mut self, h: &str) -> Self {
        self.hint = Some(h.to_string());
        self
    }
}

/// Returns how many machine interfaces each network has (declared
/// machines only), by network id, in one pass over the machines.
fn interfaces_per_network(
    scenario: &Scenario,
    net_ids: &rustc_hash::FxHashMap<&str, u32>,
) -> Vec<u64> {
    let mut ends = vec![0u64; net_ids.values().max().map_or(0, |&m| m as usize + 1)];
    for g in &scenario.machines {
        for r in &g.networks {
            if let Some(&id) = net_ids.get(r.name.as_str()) {
                ends[id as usize] += u64::from(g.instances());
            }
        }
    }
    ends
}

/// Returns the protocols a group asks for.
fn protocols(g: &MachineGroup) -> Result<Protocols, BuildError> {
    let mut p = Protocols {
        udp: false,
        arp: false,
        tcp: false,
    };
    for spec in &g.protocols {
        match spec.name.to_ascii_lowercase().as_str() {
            "ipv4" | "icmp" | "ethernet" => {}
            "udp" => p.udp = true,
            "arp" => p.arp = true,
            "tcp" => p.tcp = true,
            // Configures the first interface (see `dhcp::group`); DHCP
            // runs over UDP.
            "dhcp" => p.udp = true,
            // Routes on demand (see `aodv::group`); AODV runs over UDP.
            "aodv" => p.udp = true,
            other => {
                return Err(err(spec.loc, format!("unknown protocol '{other}'"))
                    .with_hint("known: IPv4, UDP, TCP, ARP, ICMP, DHCP, AODV"))
            }
        }
    }
    Ok(p)
}

/// Returns the `ip=` options of a group's applications: `(Some(i), ip)`
/// for per-instance values, `(None, ip)` for the whole group.
#[allow(clippy::type_complexity)]
fn claimed_ips(g: &MachineGroup) -> Result<Vec<(Option<u32>, (Ipv4Addr, Loc))>, BuildError> {
    let mut out = Vec::new();
    for app in &g.applications {
        let Some(p) = app.params.get("ip") else {
            continue;
        };
        if p.value.contains('{') {
            for i in 0..g.instances() {
                let v = interpolate(&p.value, i, &instance_name(g, i));
                out.push((Some(i), (parse_ip(&v, p.loc)?, p.loc)));
            }
        } else {
            if g.instances() > 1 {
                return Err(err(p.loc, format!("{} machines named '{}' cannot all have address {}", g.instances(), g.name, p.value))
                    .with_hint("use a per-instance value such as ip='10.0.{i}.1', or drop ip= to number them automatically"));
            }
            out.push((None, (parse_ip(&p.value, p.loc)?, p.loc)));
        }
        break;
    }
    Ok(out)
}

fn parse_ip(v: &str, loc: Loc) -> Result<Ipv4Addr, BuildError> {
    elvis_scenario::parse_ipv4(elvis_scenario::units::trim(v)).map_err(|_| {
        err(loc, format!("'{v}' is not an IPv4 address")).with_hint("write it as a.b.c.d")
    })
}

fn instance_name(g: &MachineGroup, i: u32) -> String {
    if g.count.is_some() {
        format!("{}-{i}", g.name)
    } else {
        g.name.clone()
    }
}

/// Parses the instance number of `name-N`: plain decimal digits, no sign,
/// no leading zero (so `sender-05` names nothing, as it was never a name).
fn parse_index(s: &str) -> Option<u32> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    if canonical {
        s.parse().ok()
    } else {
        None
    }
}

/// Replaces `{i}` and `{name}` in `v`.
pub fn interpolate(v: &str, i: u32, name: &str) -> String {
    v.replace("{i}", &i.to_string()).replace("{name}", name)
}

/// Returns `v` for instance `i` of `g`: borrowed when it has no
/// placeholder (most values; a star's hosts each have a gateway).
fn instance_value<'v>(v: &'v str, g: &MachineGroup, i: u32) -> Cow<'v, str> {
    if v.contains('{') {
        Cow::Owned(interpolate(v, i, &instance_name(g, i)))
    } else {
        Cow::Borrowed(v)
    }
}

/// The addresses of one network still to hand out.
struct Pool {
    listed: Vec<(u32, u32)>,
    range: usize,
    cursor: u64,
    auto: u32,
}

impl Pool {
    fn new(spec: &elvis_scenario::NetworkSpec) -> Self {
        let listed: Vec<(u32, u32)> = spec
            .addresses
            .iter()
            .map(|a| (u32::from(a.first), u32::from(a.last)))
            .collect();
        let auto = match (listed.iter().map(|r| r.1).max(), spec.subnet) {
            (Some(last), _) => last,
            (None, Some((base, _))) => u32::from(base),
            (None, None) => u32::from(Ipv4Addr::new(10, 0, 0, 0)),
        };
        Pool {
            listed,
            range: 0,
            cursor: 0,
            auto,
        }
    }

    fn lists(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        self.listed.iter().any(|&(a, b)| a <= ip && ip <= b)
    }

    /// Returns the next free address (listed first, then automatic),
    /// passing over the addresses in `skip` (claimed by `ip=` options).
    fn next(&mut self, skip: &rustc_hash::FxHashSet<u32>) -> Ipv4Addr {
        while self.range < self.listed.len() {
            let (a, b) = self.listed[self.range];
            let ip = u64::from(a) + self.cursor;
            if ip > u64::from(b) {
                self.range += 1;
                self.cursor = 0;
                continue;
            }
            self.cursor += 1;
            let ip = ip as u32;
            if !skip.contains(&ip) {
                return Ipv4Addr::from(ip);
            }
        }
        loop {
            self.auto = self.auto.wrapping_add(1);
            let last = self.auto & 0xff;
            if last == 0
                || last == 255
                || skip.contains(&self.auto)
                || self.lists(Ipv4Addr::from(self.auto))
            {
                continue;
            }
            return Ipv4Addr::from(self.auto);
        }
    }
}

/// Checks every application and spawns it on its machines.
/// Which declared blocks add applications to generated machines.
#[derive(Default)]
struct AppsFrom {
    /// Indexes (into the scenario's machines) of blocks naming a whole
    /// generated group.
    whole_groups: rustc_hash::FxHashSet<usize>,
    /// Generated machines named by a block of their own.
    own_block: rustc_hash::FxHashSet<u32>,
}

fn spawn_apps<'a>(
    sim: &mut Simulation,
    counted: &[bool],
    machines: impl Iterator<Item = Cow<'a, MachineGroup>>,
    groups: &[(String, u32, u32)],
    generated: &[(String, u32, u32)],
    apps_from: &AppsFrom,
    extras: Extras<'_>,
) -> Result<(), BuildError> {
    let Extras { base_dir, dns } = extras;
    let names = name_table(counted, groups, generated);
    let addresses = sim.primary_addresses();
    if let Some(auto) = dns {
        let names = instance_names(counted, groups, generated);
        dns::start_auto(sim, auto, names, &addresses)
            .map_err(|e| err(Loc::default(), format!("dns='auto': {e}")))?;
    }
    let resolve = |name: &str| -> Option<Ipv4Addr> {
        if let Ok(ip) = elvis_scenario::parse_ipv4(elvis_scenario::units::trim(name)) {
            return Some(ip);
        }
        let id = match names.get(name) {
            Some(&(first, _, false)) => first,
            _ => {
                let (base, idx) = name.rsplit_once('-')?;
                let &(first, len, counted) = names.get(base)?;
                let idx = parse_index(idx)?;
                if !counted || idx >= len {
                    return None;
                }
                first + idx
            }
        };
        // A machine configured by DHCP has no address before the run.
        (addresses.get(id as usize).copied().flatten()).filter(|ip| !ip.is_unspecified())
    };
    // Receivers start before senders at the same instant (see crate docs).
    let mut spawns: Vec<(apps::AppFactory, u32, u32)> = Vec::new();
    // An owned group is dropped once its applications are configured.
    for (k, (g, (_, first, len))) in machines.zip(groups).enumerate() {
        dns::resolver_conf(sim, &g, *first, *len, &resolve)?;
        // The machines of this group that take its applications.
        let runs = if apps_from.whole_groups.contains(&k) {
            runs(*first, *len, |m| apps_from.own_block.contains(&m))
        } else {
            vec![(*first, *len)]
        };
        for app in &g.applications {
            let app = &*tcp::with_congestion(&g, app);
            let per_instance = app.params.iter().any(|p| p.value.contains('{'));
            let ctx = BuildCtx {
                resolve: &resolve,
                loc: app.loc,
                children: &app.children,
                base_dir,
                dns: g.resolver.is_some() || dns.is_some() || dhcp::is_client(&g),
            };
            if per_instance {
                for i in runs.iter().flat_map(|&(a, n)| a - first..a - first + n) {
                    let params = instance_params(app, i, &instance_name(&g, i));
                    spawns.push((registry::build(&app.name, &params, &ctx)?, first + i, 1));
                }
            } else {
                let factory = registry::build(&app.name, &app.params, &ctx)?;
                for &(a, n) in &runs {
                    spawns.push((factory.clone(), a, n));
                }
            }
        }
    }
    for passive in [true, false] {
        for (f, first, len) in spawns.iter().filter(|s| s.0.passive == passive) {
            for m in *first..first + len {
                f.spawn(sim, m);
            }
        }
    }
    Ok(())
}

/// Returns the table of machine names (group name → first id, size,
/// counted) that `to=` options are resolved in, once, at build time;
/// generated groups are counted, and so are groups past `counted` (the
/// DNS machines) not.
fn name_table<'a>(
    counted: &[bool],
    groups: &'a [(String, u32, u32)],
    generated: &'a [(String, u32, u32)],
) -> rustc_hash::FxHashMap<&'a str, (u32, u32, bool)> {
    let mut names = rustc_hash::FxHashMap::<&str, (u32, u32, bool)>::default();
    names.reserve(generated.len() + groups.len());
    for (n, first, len) in generated {
        names.insert(n, (*first, *len, true));
    }
    for (k, (n, first, len)) in groups.iter().enumerate() {
        let counted = counted.get(k).copied().unwrap_or(false);
        names.entry(n).or_insert((*first, *len, counted));
    }
    names
}

/// What [`spawn_apps`] needs besides the machines: the NDL file's folder
/// and the `dns='auto'` hierarchy.
struct Extras<'a> {
    base_dir: Option<&'a str>,
    dns: Option<&'a dns::AutoServers>,
}

/// Returns every machine's instance name and id: `name` for a machine of
/// its own, `name-i` in a counted or generated group, then the groups
/// past `counted` (the DNS machines, by their names).
fn instance_names<'a>(
    counted: &'a [bool],
    groups: &'a [(String, u32, u32)],
    generated: &'a [(String, u32, u32)],
) -> impl Iterator<Item = (String, u32)> + 'a {
    let declared = groups
        .iter()
        .enumerate()
        .map(move |(k, g)| (g, counted.get(k).copied().unwrap_or(false)));
    let generated = generated.iter().map(|g| (g, true));
    declared
        .chain(generated)
        .flat_map(|((name, first, len), counted)| {
            (0..*len).map(move |i| {
                let n = if counted {
                    format!("{name}-{i}")
                } else {
                    name.clone()
                };
                (n, first + i)
            })
        })
}

/// Splits machines `first..first + len` into runs `(start, len)` of the
/// machines `skip` leaves.
fn runs(first: u32, len: u32, skip: impl Fn(u32) -> bool) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for m in first..first + len {
        if skip(m) {
            continue;
        }
        match out.last_mut() {
            Some((a, n)) if *a + *n == m => *n += 1,
            _ => out.push((m, 1)),
        }
    }
    out
}

fn instance_params(app: &AppSpec, i: u32, name: &str) -> Params {
    Params(
        app.params
            .iter()
            .map(|p| Param {
                key: p.key.clone(),
                value: interpolate(&p.value, i, name),
                loc: p.loc,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_specs_map_to_the_simulators_offloads() {
        assert_eq!(
            sim_offloads(&OffloadSpec::LINUX),
            elvis_sim::Offloads::LINUX
        );
        let tso = OffloadSpec {
            tso: true,
            ..OffloadSpec::default()
        };
        let want = elvis_sim::Offloads {
            tso: true,
            ..elvis_sim::Offloads::default()
        };
        assert_eq!(sim_offloads(&tso), want);
        let gro = OffloadSpec {
            gro: true,
            rx_usecs: 20,
            ..OffloadSpec::default()
        };
        let want = elvis_sim::Offloads {
            gro: true,
            rx_usecs: 20,
            ..elvis_sim::Offloads::default()
        };
        assert_eq!(sim_offloads(&gro), want);
    }
}
