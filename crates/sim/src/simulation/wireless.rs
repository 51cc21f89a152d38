//! Wireless networks: making a network a radio medium and placing its
//! machines (`elvis_net::wireless`).

use super::{SimError, Simulation};
use crate::machine::MachineId;
use crate::net::wireless::{WirelessConfig, WirelessStats};
use crate::net::NetId;

impl Simulation {
    /// Makes network `net` wireless, with `cfg` (before its machines are
    /// placed).
    ///
    /// # Errors
    /// No such network.
    pub fn set_wireless(&mut self, net: NetId, cfg: WirelessConfig) -> Result<(), SimError> {
        let w = self.w();
        let n =
            (w.hosts.fabric.networks.get_mut(net as usize)).ok_or(SimError::NoSuchNetwork(net))?;
        n.set_wireless(cfg);
        Ok(())
    }

    /// Places machine `m` at (`x`, `y`) metres on wireless network `net`.
    ///
    /// # Errors
    /// No such network, a wired one, or `m` is not attached to it.
    pub fn set_position(
        &mut self,
        net: NetId,
        m: MachineId,
        x: f64,
        y: f64,
    ) -> Result<(), SimError> {
        let w = self.w();
        let n =
            (w.hosts.fabric.networks.get_mut(net as usize)).ok_or(SimError::NoSuchNetwork(net))?;
        let port = n.ports.iter().position(|p| p.machine == m);
        let (Some(port), Some(radio)) = (port, n.wireless.as_deref_mut()) else {
            return Err(SimError::NoSuchMachine(m));
        };
        radio.set_position(port as u32, x, y);
        Ok(())
    }

    /// Returns the MAC counters of wireless network `net`.
    pub fn wireless_stats(&mut self, net: NetId) -> Option<WirelessStats> {
        let n = self.w().hosts.fabric.networks.get(net as usize)?;
        n.wireless.as_deref().map(|r| r.stats.clone())
    }
}

impl Simulation {
    /// Returns the machine on each port of network `net`, in port order.
    pub fn network_machines(&mut self, net: NetId) -> Vec<MachineId> {
        let w = self.w();
        (w.hosts.fabric.networks.get(net as usize))
            .map(|n| n.ports.iter().map(|p| p.machine).collect())
            .unwrap_or_default()
    }

    /// Places the machine on `port` of wireless network `net` at (`x`,
    /// `y`) metres.
    ///
    /// # Errors
    /// No such network, or a wired one.
    pub fn set_port_position(
        &mut self,
        net: NetId,
        port: u32,
        x: f64,
        y: f64,
    ) -> Result<(), SimError> {
        let w = self.w();
        let n =
            (w.hosts.fabric.networks.get_mut(net as usize)).ok_or(SimError::NoSuchNetwork(net))?;
        let radio = n
            .wireless
            .as_deref_mut()
            .ok_or(SimError::NoSuchNetwork(net))?;
        radio.set_position(port, x, y);
        Ok(())
    }
}

impl Simulation {
    /// Moves the machines of wireless network `net` under `model` (from
    /// where they were placed), with the simulation's seed.
    ///
    /// # Errors
    /// No such network, or a wired one.
    pub fn set_mobility(
        &mut self,
        net: NetId,
        model: crate::net::wireless::mobility::Model,
    ) -> Result<(), SimError> {
        let w = self.w();
        let seed = w.hosts.config.seed;
        let n =
            (w.hosts.fabric.networks.get_mut(net as usize)).ok_or(SimError::NoSuchNetwork(net))?;
        let radio = n
            .wireless
            .as_deref_mut()
            .ok_or(SimError::NoSuchNetwork(net))?;
        radio.set_mobility(model, seed, net);
        Ok(())
    }

    /// Moves the machines of wireless network `net` along the legs of an
    /// ns-2 `setdest` trace (node i on the i-th machine attached).
    ///
    /// # Errors
    /// No such network, or a wired one.
    pub fn set_trace(
        &mut self,
        net: NetId,
        legs: Vec<Vec<crate::net::wireless::mobility::Leg>>,
    ) -> Result<(), SimError> {
        let w = self.w();
        let n =
            (w.hosts.fabric.networks.get_mut(net as usize)).ok_or(SimError::NoSuchNetwork(net))?;
        let radio = n
            .wireless
            .as_deref_mut()
            .ok_or(SimError::NoSuchNetwork(net))?;
        radio.set_trace(legs);
        Ok(())
    }
}
