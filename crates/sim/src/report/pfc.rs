//! The report's `pfc` section (present when a network has priority flow
//! control, `elvis_net::pfc`): per queue, the PAUSE and XON frames it was
//! sent and received and how long each priority was paused; per ingress,
//! its Xoff, headroom and the most it held; and the deadlocks found at
//! the end of the run.

use crate::stack::hosts::Hosts;
use elvis_net::pfc::PRIORITIES;
use serde::Serialize;
use std::collections::BTreeMap;

/// PFC over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct PfcReport {
    /// PFC frames sent over all ports: PAUSE (a time above 0) and XON.
    pub pause_frames: u64,
    pub xon_frames: u64,
    /// Lossless frames refused beyond an ingress's headroom (0 when the
    /// headroom holds what can arrive after Xoff).
    pub headroom_drops: u64,
    /// Every queue that sent or received PFC frames, in (network, port,
    /// direction) order.
    pub ports: Vec<PfcPortReport>,
    /// PFC deadlocks at the end of the run: groups of queues paused for
    /// at least their network's `pfc_deadlock` that wait on a cycle.
    pub deadlocks: Vec<Vec<PfcQueueName>>,
}

/// A queue, by name.
#[derive(Clone, Debug, Serialize)]
pub struct PfcQueueName {
    pub network: String,
    /// Whose NIC (`nic`), or towards whom the switch port sends (`switch`).
    pub machine: String,
    pub direction: &'static str,
}

/// One queue's PFC counters, and those of the ingress it feeds (at the
/// machine at the other end of the link, or at `machine` for a switch
/// port).
#[derive(Clone, Debug, Serialize)]
pub struct PfcPortReport {
    #[serde(flatten)]
    pub queue: PfcQueueName,
    /// PAUSE and XON frames the ingress fed by this queue sent to it.
    pub pause_sent: u64,
    pub xon_sent: u64,
    /// PAUSE and XON frames this queue's NIC or switch port received.
    pub pause_received: u64,
    pub xon_received: u64,
    /// Time paused, ns, by priority (priorities never paused left out).
    pub paused_ns: BTreeMap<u8, u64>,
    /// How long the queue had been paused without a break when the run
    /// ended, ns (0: not paused then).
    pub paused_at_end_ns: u64,
    /// When the first PAUSE reached it, ns (`null`: never).
    pub first_pause_ns: Option<u64>,
    /// The ingress's most bytes held, by lossless priority that held any.
    pub ingress_max_bytes: BTreeMap<u8, u64>,
    /// The ingress's thresholds: Xoff and the headroom beyond it, bytes.
    pub xoff_bytes: u64,
    pub headroom_bytes: u64,
}

impl PfcReport {
    /// Returns the section, or `None` when no network has PFC.
    pub(crate) fn new(h: &Hosts) -> Option<PfcReport> {
        h.fabric.pfc.as_ref()?;
        let now = h.now().as_nanos();
        let name = |net: u32, port_dir: u32| {
            let n = &h.fabric.networks[net as usize];
            let machine = n.ports[(port_dir >> 1) as usize].machine;
            PfcQueueName {
                network: n.cfg.name.clone(),
                machine: h.machine_name(machine),
                direction: if port_dir & 1 == 0 { "nic" } else { "switch" },
            }
        };
        let by_prio = |v: &[u64; PRIORITIES]| -> BTreeMap<u8, u64> {
            (0..PRIORITIES as u8)
                .zip(v.iter().copied())
                .filter(|&(_, x)| x > 0)
                .collect()
        };
        let rows = elvis_net::pfc::ports(&h.fabric, now);
        let ports: Vec<PfcPortReport> = (rows.iter())
            .map(|r| PfcPortReport {
                queue: name(r.net, r.port_dir),
                pause_sent: r.pauses_sent,
                xon_sent: r.xons_sent,
                pause_received: r.pauses_received,
                xon_received: r.xons_received,
                paused_ns: by_prio(&r.paused_ns),
                paused_at_end_ns: r.paused_now_ns,
                first_pause_ns: r.first_pause_ns,
                ingress_max_bytes: by_prio(&r.ingress_max),
                xoff_bytes: r.xoff,
                headroom_bytes: r.headroom,
            })
            .collect();
        let deadlocks = elvis_net::pfc::deadlocks(&h.fabric, now)
            .into_iter()
            .map(|g| g.into_iter().map(|(n, pd)| name(n, pd)).collect())
            .collect();
        Some(PfcReport {
            pause_frames: rows.iter().map(|r| r.pauses_sent).sum(),
            xon_frames: rows.iter().map(|r| r.xons_sent).sum(),
            headroom_drops: rows.iter().map(|r| r.headroom_drops).sum(),
            ports,
            deadlocks,
        })
    }
}
