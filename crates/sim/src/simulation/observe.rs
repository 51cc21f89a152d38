//! What a [`Simulation`] records besides its report (queue occupancy
//! series, pcap captures, TCP time series), and the hidden switches and
//! counters with which tests compare the fast paths to the plain ones.

use super::reporting::queue_names;
use super::Simulation;
use crate::net::NetId;
use crate::pcap::PcapSet;
use crate::stack::tcp::trace::{self, Sampling, Series};
use std::path::Path;

impl Simulation {
    /// Records the occupancy of every egress queue over time (a point at
    /// each change, see [`crate::qdisc::stats::OccupancySample`]); read it
    /// with [`Simulation::queue_series`] or write it with
    /// [`Simulation::write_queue_series`]. Off by default, and free when
    /// off.
    pub fn trace_queues(&mut self) {
        self.w().hosts.fabric.config.trace_queues = true;
    }

    /// Runs every egress queue on the evented path (`true`): a frame's
    /// departure is an event, as for the non-default disciplines, instead
    /// of being computed when it is queued (see [`crate::net`],
    /// "Departure-time FIFO"). Timing is the same either way; this exists
    /// to test that it is.
    #[doc(hidden)]
    pub fn set_evented_queues(&mut self, on: bool) {
        self.w().hosts.fabric.config.evented_queues = on;
    }

    /// Returns the occupancy series recorded so far, by (network, port,
    /// direction) order, each with a file-friendly name
    /// (`NETWORK-MACHINE-nic` or `NETWORK-MACHINE-switch`).
    pub fn queue_series(&self) -> Vec<(String, Vec<crate::qdisc::stats::OccupancySample>)> {
        let Some(w) = self.world.as_ref() else {
            return Vec::new();
        };
        // Queues run event by event keep their series in the world; those
        // run on the departure-time path keep it themselves, departures
        // recorded lazily (see `crate::net`).
        let mut all = w.hosts.fabric.queue_series.clone();
        let end = w.hosts.now().as_nanos();
        for (net, n) in w.hosts.fabric.networks.iter().enumerate() {
            for (port, p) in n.ports.iter().enumerate() {
                let Some(q) = p.queues.as_deref() else {
                    continue;
                };
                for (dir, wq) in [(0, Some(&q.up)), (1, q.down.as_deref())] {
                    let Some(wq) = wq else { continue };
                    if let Some(t) = wq.trace_at(end).filter(|t| !t.is_empty()) {
                        all.insert((net as NetId, (port as u32) << 1 | dir), t);
                    }
                }
            }
        }
        (all.into_iter())
            .map(|((net, pd), v)| {
                let (network, machine, dir) = queue_names(w, net, pd);
                (format!("{network}-{machine}-{dir}"), v)
            })
            .collect()
    }

    /// Writes the occupancy series as one CSV per queue into `dir`
    /// (`time_ns,packets,bytes`, a row per change); returns the paths.
    ///
    /// # Errors
    /// If the directory or a file cannot be written.
    pub fn write_queue_series(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        use std::io::Write;
        std::fs::create_dir_all(dir)?;
        let mut paths = Vec::new();
        for (name, series) in self.queue_series() {
            let safe: String = (name.chars())
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = dir.join(format!("queue-{safe}.csv"));
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
            writeln!(f, "time_ns,packets,bytes")?;
            for s in series {
                writeln!(f, "{},{},{}", s.time_ns, s.packets, s.bytes)?;
            }
            f.flush()?;
            paths.push(path);
        }
        Ok(paths)
    }

    /// Turns off (`false`) or on (`true`, the default) taking frames for a
    /// host that coalesces receive interrupts into its ring when they are
    /// queued instead of with an arrival event each. Results do not
    /// depend on it: tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_rx_ring_ahead(&mut self, on: bool) {
        self.w().hosts.config.rx_ring_ahead = on;
    }

    /// Returns how many NIC receive states (`stack::offload`) were created
    /// so far, and how many machines hold one now.
    #[doc(hidden)]
    pub fn nic_states(&self) -> (u64, usize) {
        self.world.as_ref().map_or((0, 0), |w| {
            (
                w.hosts.stack.nics.created(),
                crate::stack::offload::holding(&w.hosts),
            )
        })
    }

    /// Keeps (`true`) a host's NIC receive state when its ring empties
    /// instead of giving it back (`false`, the default). Results do not
    /// depend on it: tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_nic_keep(&mut self, keep: bool) {
        self.w().hosts.stack.nics.keep = keep;
    }

    /// Returns how many frames GRO merged into an earlier frame's segment.
    #[doc(hidden)]
    pub fn gro_merged(&self) -> u64 {
        self.world
            .as_ref()
            .map_or(0, |w| w.hosts.obs.stats.gro_merged)
    }

    /// Turns the routers' fast path ([`crate::stack::forward`]) off
    /// (`false`) or on (`true`, the default). Results do not depend on it:
    /// tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_forward_fast_path(&mut self, on: bool) {
        self.w().hosts.config.fast_forward = on;
    }

    /// Turns TCP's one-pass send and receive paths
    /// (`stack::tcp::dst`) off (`false`) or on (`true`, the
    /// default). Results do not depend on it: tests compare runs with and
    /// without it.
    #[doc(hidden)]
    pub fn set_tcp_fast_path(&mut self, on: bool) {
        self.w().hosts.config.tcp_fast_path = on;
    }

    /// Turns the selective fan-out of DHCP broadcasts
    /// (`stack::dhcp::fanout`) off (`false`: a copy to every port) or on
    /// (`true`, the default). Results do not depend on it: tests compare
    /// runs with and without it.
    #[doc(hidden)]
    pub fn set_broadcast_select(&mut self, on: bool) {
        self.w().hosts.config.broadcast_select = on;
    }

    /// Returns how many TCP segments were sent and received on the
    /// one-pass paths.
    #[doc(hidden)]
    pub fn tcp_fast_segments(&self) -> (u64, u64) {
        self.world.as_ref().map_or((0, 0), |w| {
            (w.hosts.obs.tcp_fast_sent, w.hosts.obs.tcp_fast_received)
        })
    }

    /// Returns how many frames routers forwarded through their fast path.
    #[doc(hidden)]
    pub fn fast_forwarded(&self) -> u64 {
        self.world
            .as_ref()
            .map_or(0, |w| w.hosts.obs.fast_forwarded)
    }

    /// Returns the number of per-flow explicit routes of all machines.
    pub fn flow_route_count(&self) -> usize {
        self.world
            .as_ref()
            .map_or(0, |w| w.hosts.stack.routing.flows.len())
    }

    /// Writes one pcap per network into `dir` during the next run (the
    /// files are closed when that run returns).
    ///
    /// # Errors
    /// If the directory or a file cannot be created.
    pub fn capture_pcap(&mut self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        let w = self.w();
        let names: Vec<String> = w
            .hosts
            .fabric
            .networks
            .iter()
            .map(|n| n.cfg.name.clone())
            .collect();
        let links: Vec<crate::pcap::DataLink> = (w.hosts.fabric.networks.iter())
            .map(|n| match n.wireless {
                Some(_) => crate::pcap::DataLink::IEEE802_11,
                None => crate::pcap::DataLink::ETHERNET,
            })
            .collect();
        w.hosts.fabric.pcap = PcapSet::open_with_links(dir, &names, &links)?;
        Ok(w.hosts.fabric.pcap.files.clone())
    }

    /// Records a time series of every TCP connection opened from now on
    /// (cwnd, ssthresh, smoothed RTT, bytes acknowledged), sampled as
    /// `sampling` says; read it with [`Simulation::tcp_series`] or write it
    /// with [`Simulation::write_tcp_series`]. Off by default, and free
    /// when off.
    pub fn trace_tcp(&mut self, sampling: Sampling) {
        self.w().hosts.obs.conns.enable_trace(sampling);
    }

    /// Returns the TCP time series recorded so far (empty unless
    /// [`Simulation::trace_tcp`] was called), by connection id.
    pub fn tcp_series(&self) -> Vec<Series> {
        let Some(w) = self.world.as_ref() else {
            return Vec::new();
        };
        w.hosts
            .obs
            .conns
            .trace
            .as_ref()
            .map_or(Vec::new(), |t| t.series(|m| w.hosts.machine_name(m)))
    }

    /// Writes the TCP time series as one CSV per connection into `dir`
    /// (format: [`trace::write_csv`]); returns the paths.
    ///
    /// # Errors
    /// If the directory or a file cannot be written.
    pub fn write_tcp_series(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        trace::write_csv(dir, &self.tcp_series())
    }

    /// Returns the pcap write error of the run, if any.
    pub fn pcap_error(&self) -> Option<String> {
        self.world
            .as_ref()
            .and_then(|w| w.hosts.fabric.pcap.error.clone())
    }
}
