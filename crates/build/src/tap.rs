//! TAP machines (`[Machine name='linux1' tap='tap0' netns='ns1']`): real
//! Linux hosts whose frames cross the simulated networks (`elvis-tap`).
//! The device is made when the machine is; its namespace is set up once
//! every machine is attached (it needs the machine's address); a scenario
//! with one runs in real time. With `[Protocol name='DHCP']` the machine
//! starts without an address: Linux's own DHCP client gets one (from an
//! elvis `dhcp_server`, say), and elvis sets only the device's MAC
//! address and brings it up.

use crate::{err, BuildError};
use elvis_scenario::{MachineGroup, Scenario, TapSpec};
use elvis_sim::{MachineId, Simulation};
use elvis_tap::{TapConfig, TapGuard, TapStats};
use std::net::Ipv4Addr;
use std::rc::Rc;

/// A TAP machine made, its kernel side not yet set up.
pub(crate) struct Pending {
    pub machine: MachineId,
    cfg: TapConfig,
    stats: Rc<TapStats>,
}

/// Makes the TAP machine of group `g` (one machine on one network, no
/// protocols or applications of elvis's own, apart from `DHCP`, which
/// says that Linux configures it).
///
/// # Errors
/// Such a machine with more, or a device that cannot be created.
pub(crate) fn add(
    sim: &mut Simulation,
    scenario: &Scenario,
    g: &MachineGroup,
    spec: &TapSpec,
) -> Result<Pending, BuildError> {
    if g.networks.len() != 1 {
        let mut e = err(spec.loc, "a TAP machine is on exactly one network");
        e.hint = Some("give it one [Network id='…'] line".into());
        return Err(e);
    }
    let by_dhcp = crate::dhcp::is_client(g);
    let own_protocol = (g.protocols.iter()).find(|p| !p.name.eq_ignore_ascii_case("dhcp"));
    if let Some(p) = own_protocol {
        let mut e = err(
            p.loc,
            format!("a TAP machine runs Linux's stack, not elvis's {}", p.name),
        );
        e.hint = Some("a TAP machine takes only [Protocol name='DHCP'] (Linux's client then asks for its address)".into());
        return Err(e);
    }
    if !g.applications.is_empty() || g.forward {
        let mut e = err(
            spec.loc,
            "a TAP machine runs Linux's stack and programs, not elvis's",
        );
        e.hint = Some("remove its [Applications] and forward".into());
        return Err(e);
    }
    let (stack, stats) =
        elvis_tap::tap_stack(&spec.device).map_err(|e| err(spec.loc, e.to_string()))?;
    let machine = sim
        .add_foreign_machine(&g.name, stack)
        .map_err(|e| err(g.loc, e.to_string()))?;
    let prefix = (scenario.networks.iter())
        .find(|n| n.id == g.networks[0].name)
        .and_then(|n| n.subnet)
        .map_or(24, |(_, len)| len);
    if let Some(r) = g.routes.iter().find(|_| by_dhcp) {
        let mut e = err(
            r.loc,
            "a TAP machine configured by DHCP takes its routes from the server",
        );
        e.hint = Some("give the dhcp_server's pool a router= instead".into());
        return Err(e);
    }
    let gateway = (g.routes.iter())
        .find(|r| r.len == 0)
        .and_then(|r| r.via.value.trim().parse::<Ipv4Addr>().ok());
    let cfg = TapConfig {
        device: spec.device.clone(),
        netns: spec.netns.clone(),
        prefix,
        gateway,
    };
    Ok(Pending {
        machine,
        cfg,
        stats,
    })
}

/// Sets up the kernel side of every TAP machine made (each attached by
/// now), and turns real-time pacing on when there is one.
///
/// # Errors
/// A step of a namespace's setup failed.
pub(crate) fn set_up(
    sim: &mut Simulation,
    pending: Vec<(Pending, elvis_scenario::Loc)>,
) -> Result<Vec<TapGuard>, BuildError> {
    let mut guards = Vec::with_capacity(pending.len());
    for (p, loc) in pending {
        let guard = elvis_tap::set_up(sim, p.machine, &p.cfg, p.stats)
            .map_err(|e| err(loc, e.to_string()))?;
        guards.push(guard);
    }
    Ok(guards)
}
