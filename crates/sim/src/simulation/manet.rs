//! Mobile ad hoc network routing on machines: AODV
//! (`elvis_stack::aodv`).

use super::{SimError, Simulation};
use crate::machine::MachineId;
use crate::stack::aodv::Config;

impl Simulation {
    /// Runs AODV on machine `m` (which then forwards, and finds its
    /// unicast routes by RREQ and RREP instead of the routing tables).
    ///
    /// # Errors
    /// `NoSuchMachine` for a bad id; `BadRoute` when `m` has no
    /// interface with an address to send AODV messages from.
    pub fn enable_aodv(&mut self, m: MachineId, cfg: Config) -> Result<(), SimError> {
        let w = self.w();
        let machine = w
            .hosts
            .machines
            .get(m as usize)
            .ok_or(SimError::NoSuchMachine(m))?;
        if machine.ifaces.is_empty() || machine.ifaces[0].ip.is_unspecified() {
            return Err(SimError::BadRoute {
                machine: w.hosts.machine_name(m),
                message: "AODV needs an interface with an address".into(),
            });
        }
        crate::stack::aodv::enable(&mut w.hosts, m, cfg);
        Ok(())
    }
}
