//! AODV in a scenario: `[Protocol name='AODV' hello='yes' gratuitous='no']`
//! on a machine (`elvis_stack::aodv`). Its options:
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `hello` | `yes`, `no` | `yes` | HELLO messages find lost neighbours (RFC 3561 §6.9); with `no`, only the link layer (or ARP) reports a broken link |
//! | `gratuitous` | `yes`, `no` | `no` | RREQs carry the G flag: an intermediate node that answers also tells the destination (§6.6.3) |
//! | `rrep_ack` | `yes`, `no` | `no` | every unicast RREP asks for a RREP-ACK; a neighbour that does not send one is blacklisted and its RREQs ignored for BLACKLIST_TIMEOUT, 5.6 s (§6.8, unidirectional links) |
//! | `local_repair` | `yes`, `no` | `no` | a node whose link to the next hop of a transit route breaks looks for the destination itself (one RREQ, TTL = last hop count + 2) before reporting the break; a longer repaired route is announced by a RERR with the N flag (§6.12) |

use crate::{err, BuildError};
use elvis_scenario::{MachineGroup, Param};
use elvis_sim::stack::aodv::Config;
use elvis_sim::Simulation;

fn yes_no(p: &Param) -> Result<bool, BuildError> {
    match p.value.trim().to_ascii_lowercase().as_str() {
        "yes" | "on" | "true" | "1" => Ok(true),
        "no" | "off" | "false" | "0" => Ok(false),
        _ => Err(err(
            p.loc,
            format!("{} '{}' is neither yes nor no", p.key, p.value),
        )
        .with_hint("yes or no: hello='no', gratuitous='yes'")),
    }
}

/// Refuses AODV on a group a generated topology places (not supported).
///
/// # Errors
/// The group runs AODV; located at the protocol.
pub(crate) fn not_in_topology(g: &MachineGroup) -> Result<(), BuildError> {
    match g
        .protocols
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("aodv"))
    {
        Some(spec) => Err(err(
            spec.loc,
            format!("machine '{}' runs AODV inside a generated topology", g.name),
        )
        .with_hint("AODV runs on machines with their own [Networks]")),
        None => Ok(()),
    }
}

/// Starts AODV on the machines of group `g` (the first is `first`).
///
/// # Errors
/// An unknown option or a value other than yes/no; a machine without a
/// network, or whose first interface has no address when the run starts
/// (a DHCP client), each located at the protocol.
pub(crate) fn group(sim: &mut Simulation, g: &MachineGroup, first: u32) -> Result<(), BuildError> {
    let Some(spec) = g
        .protocols
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("aodv"))
    else {
        return Ok(());
    };
    let mut cfg = Config::default();
    for p in spec.params.iter() {
        match p.key.as_str() {
            "name" => {}
            "hello" => cfg.hello = yes_no(p)?,
            "gratuitous" => cfg.gratuitous = yes_no(p)?,
            "rrep_ack" => cfg.rrep_ack = yes_no(p)?,
            "local_repair" => cfg.local_repair = yes_no(p)?,
            other => {
                return Err(
                    err(p.loc, format!("protocol AODV has no option '{other}'")).with_hint(
                        "its options are hello, gratuitous, rrep_ack and local_repair (yes or no)",
                    ),
                )
            }
        }
    }
    if g.networks.is_empty() {
        return Err(err(
            spec.loc,
            format!("machine '{}' runs AODV but has no network", g.name),
        )
        .with_hint("AODV sends its messages on the machine's networks: add a [Network]"));
    }
    if g.protocols
        .iter()
        .any(|p| p.name.eq_ignore_ascii_case("dhcp"))
    {
        return Err(
            err(spec.loc, format!("machine '{}' runs AODV and DHCP", g.name))
                .with_hint("AODV needs the machine's address from the start: give it an ip"),
        );
    }
    for m in first..first + g.instances() {
        sim.enable_aodv(m, cfg)
            .map_err(|e| err(spec.loc, e.to_string()))?;
    }
    Ok(())
}
