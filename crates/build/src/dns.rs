//! DNS settings of machines: `resolver='10.1.0.2'` (the stub resolver's
//! servers).

use crate::{err, BuildError};
use elvis_scenario::MachineGroup;
use elvis_sim::stack::machine::ResolverConf;
use elvis_sim::Simulation;
use std::net::Ipv4Addr;

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
