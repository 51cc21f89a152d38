//! The partitioner: which machines each thread of a parallel run owns.
//!
//! Only a cuttable network ([`elvis_net::Network::cuttable`]: a
//! point-to-point link with a positive latency, no impairment and no PFC,
//! neither of whose NICs coalesces interrupts) may join machines of
//! different partitions. The machines
//! that other networks join (a switched LAN, a zero-latency or captured
//! link, a wireless network) form *blocks* that stay whole. Blocks are
//! weighed by their interfaces plus one per machine (a rough count of
//! the events they make), and grouped into partitions of about equal
//! weight by greedy graph growing (the start of multilevel partitioners
//! such as METIS): a partition starts at the lowest-numbered block left
//! and takes, again and again, the block with the most links into it
//! (ties: the lowest number) until it holds its share. In a FatTree this
//! takes one pod after another; in a dumbbell, one side.
//!
//! The lookahead is the smallest latency among the links actually cut:
//! no frame sent in a window `[T, T + lookahead)` can reach another
//! partition before the window ends.

use crate::world::World;
use std::collections::BinaryHeap;

/// How a run is split, or why it is not.
pub enum Verdict {
    Parallel(Plan),
    /// The run goes on one thread, for this reason.
    Sequential(String),
}

/// The partitions of a parallel run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub parts: u16,
    /// The partition of each machine.
    pub machine_part: Vec<u16>,
    /// Per network: the partitions of its two ports when it is cut.
    pub cut: Vec<Option<[u16; 2]>>,
    /// Networks cut.
    pub cut_networks: u64,
    /// The smallest latency of a cut network, ns.
    pub lookahead_ns: u64,
    /// Machines per partition.
    pub machines: Vec<u64>,
}

impl Plan {
    /// Returns the partition that runs events of `net`'s port `port`.
    pub fn port_part(&self, w: &World, net: u32, port: u32) -> u16 {
        let n = &w.hosts.fabric.networks[net as usize];
        n.ports
            .get(port as usize)
            .or_else(|| n.ports.first())
            .map_or(0, |p| self.machine_part[p.machine as usize])
    }
}

/// Returns why `w` cannot be split at all, if it cannot.
fn unsupported(w: &World) -> Option<&'static str> {
    let h = &w.hosts;
    if (0..h.fabric.networks.len() as u32).any(|n| h.fabric.pcap.captures(n)) {
        return Some("packet captures are written by one thread");
    }
    if h.fabric.pfc.is_some() {
        return Some("priority flow control acts across links at once");
    }
    if h.obs.conns.trace.is_some() || h.fabric.config.trace_queues {
        return Some("TCP and queue traces are written by one thread");
    }
    if h.stack.dhcp_roles > 0 {
        return Some("DHCP changes address tables that machines share");
    }
    if h.stack.on_demand {
        return Some("AODV runs on wireless networks, which stay whole");
    }
    if h.machines.iter().any(|m| m.foreign) {
        return Some("a foreign stack (smoltcp or a TAP machine) runs in one thread");
    }
    // Applications that keep run-wide state: shared counters (`capture`'s
    // `counter=`) and the flow records of workloads (numbered in one
    // sequence).
    let shared = ["capture", "flowgen", "dcqcn_send", "dcqcn_recv"];
    if let Some(a) = w
        .tasks
        .app_names
        .iter()
        .find(|a| shared.contains(&a.as_str()))
    {
        return Some(match a.as_str() {
            "capture" => "the capture application may share counters across machines",
            _ => "workload flows are numbered in one run-wide sequence",
        });
    }
    None
}

/// Union-find over machines.
struct Blocks {
    parent: Vec<u32>,
}

impl Blocks {
    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }

    fn join(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            let (lo, hi) = (a.min(b), a.max(b));
            self.parent[hi as usize] = lo;
        }
    }
}

/// Returns each machine's block (machines joined by networks that cannot
/// be cut) and each block's weight (its machines and interfaces).
fn blocks(w: &World, cuttable: &[bool]) -> (Vec<u32>, Vec<u64>) {
    let h = &w.hosts;
    let n = h.machines.len();
    let mut blocks = Blocks {
        parent: (0..n as u32).collect(),
    };
    for (i, net) in h.fabric.networks.iter().enumerate() {
        if cuttable[i] {
            continue;
        }
        if let Some(first) = net.ports.first() {
            for p in &net.ports[1..] {
                blocks.join(first.machine, p.machine);
            }
        }
    }
    let mut block_of = vec![u32::MAX; n];
    let mut weight: Vec<u64> = Vec::new();
    for m in 0..n as u32 {
        let r = blocks.find(m) as usize;
        if block_of[r] == u32::MAX {
            block_of[r] = weight.len() as u32;
            weight.push(0);
        }
        let b = block_of[r];
        block_of[m as usize] = b;
        weight[b as usize] += 1 + h.machines[m as usize].ifaces.len() as u64;
    }
    (block_of, weight)
}

/// Splits `w` into at most `threads` partitions.
pub fn plan(w: &World, threads: usize) -> Verdict {
    if threads <= 1 {
        return Verdict::Sequential("one thread asked for".into());
    }
    if let Some(why) = unsupported(w) {
        return Verdict::Sequential(why.into());
    }
    let h = &w.hosts;
    let n = h.machines.len();
    if n < 2 {
        return Verdict::Sequential("fewer than two machines".into());
    }
    let nets = &h.fabric.networks;
    // A link to a NIC that coalesces interrupts is not cut either: that
    // NIC takes frames into its ring when they are queued at the far end.
    let coalescing = |m: u32| h.stack.nics.coalesces(h.machines[m as usize].offloads);
    let cuttable: Vec<bool> = nets
        .iter()
        .map(|net| net.cuttable() && !net.ports.iter().any(|p| coalescing(p.machine)))
        .collect();
    let (block_of, weight) = blocks(w, &cuttable);
    let nb = weight.len();
    if nb < 2 {
        return Verdict::Sequential(
            "no network can be cut (every path between machines crosses a switched, \
             zero-latency or impaired network, or a link to a NIC that coalesces \
             interrupts)"
                .into(),
        );
    }
    // Links between blocks.
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); nb];
    for (i, net) in nets.iter().enumerate() {
        if !cuttable[i] {
            continue;
        }
        let (a, b) = (
            block_of[net.ports[0].machine as usize],
            block_of[net.ports[1].machine as usize],
        );
        if a != b {
            adj[a as usize].push(b);
            adj[b as usize].push(a);
        }
    }
    let parts = threads.min(nb) as u16;
    let part_of_block = grow(&adj, &weight, parts);
    let machine_part: Vec<u16> = (0..n)
        .map(|m| part_of_block[block_of[m] as usize])
        .collect();
    let (cut, cut_networks, lookahead_ns) = cuts(nets, &cuttable, &machine_part);
    let mut machines = vec![0u64; parts as usize];
    for &p in &machine_part {
        machines[p as usize] += 1;
    }
    if cut_networks == 0 || machines.iter().any(|&c| c == 0) {
        return Verdict::Sequential("the machines could not be split".into());
    }
    Verdict::Parallel(Plan {
        parts,
        machine_part,
        cut,
        cut_networks,
        lookahead_ns,
        machines,
    })
}

/// Returns, per network, the partitions of a cut link's two ports; the
/// links cut; the smallest latency among them.
fn cuts(
    nets: &[elvis_net::Network],
    cuttable: &[bool],
    machine_part: &[u16],
) -> (Vec<Option<[u16; 2]>>, u64, u64) {
    let mut cut = vec![None; nets.len()];
    let mut count = 0;
    let mut lookahead_ns = u64::MAX;
    for (i, net) in nets.iter().enumerate() {
        if !cuttable[i] {
            continue;
        }
        let owners = [
            machine_part[net.ports[0].machine as usize],
            machine_part[net.ports[1].machine as usize],
        ];
        if owners[0] != owners[1] {
            cut[i] = Some(owners);
            count += 1;
            lookahead_ns = lookahead_ns.min(net.cfg.latency_ns);
        }
    }
    (cut, count, lookahead_ns)
}

/// Greedy graph growing: assigns each of the blocks (with links `adj`
/// and weights `weight`) to one of `parts` partitions.
fn grow(adj: &[Vec<u32>], weight: &[u64], parts: u16) -> Vec<u16> {
    let nb = adj.len();
    let total: u64 = weight.iter().sum();
    let mut part = vec![u16::MAX; nb];
    let mut gain = vec![0u32; nb];
    let mut assigned = 0u64;
    let mut next_seed = 0usize;
    for p in 0..parts {
        // What is left, shared by the partitions left.
        let share = (total - assigned).div_ceil(u64::from(parts - p));
        let mut have = 0u64;
        let mut heap: BinaryHeap<(u32, std::cmp::Reverse<u32>)> = BinaryHeap::new();
        gain.iter_mut().for_each(|g| *g = 0);
        while have < share || p == parts - 1 {
            let pick = loop {
                match heap.pop() {
                    Some((g, std::cmp::Reverse(b))) => {
                        if part[b as usize] == u16::MAX && gain[b as usize] == g {
                            break Some(b);
                        }
                    }
                    None => {
                        while next_seed < nb && part[next_seed] != u16::MAX {
                            next_seed += 1;
                        }
                        break (next_seed < nb).then_some(next_seed as u32);
                    }
                }
            };
            let Some(b) = pick else { break };
            part[b as usize] = p;
            have += weight[b as usize];
            for &o in &adj[b as usize] {
                if part[o as usize] == u16::MAX {
                    gain[o as usize] += 1;
                    heap.push((gain[o as usize], std::cmp::Reverse(o)));
                }
            }
        }
        assigned += have;
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_keeps_two_triangles_joined_by_one_edge_apart() {
        // Blocks 0-1-2 and 3-4-5 are triangles; 2-3 joins them.
        let edges = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)];
        let mut adj = vec![Vec::new(); 6];
        for (a, b) in edges {
            adj[a].push(b as u32);
            adj[b].push(a as u32);
        }
        let part = grow(&adj, &[1; 6], 2);
        assert_eq!(part, vec![0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn every_block_gets_a_partition_and_weights_are_balanced() {
        // A ring of 100 blocks into 3 partitions.
        let mut adj = vec![Vec::new(); 100];
        for i in 0..100u32 {
            let j = (i + 1) % 100;
            adj[i as usize].push(j);
            adj[j as usize].push(i);
        }
        let part = grow(&adj, &[1; 100], 3);
        let mut count = [0; 3];
        for p in part {
            count[p as usize] += 1;
        }
        assert_eq!(count, [34, 33, 33]);
    }
}
