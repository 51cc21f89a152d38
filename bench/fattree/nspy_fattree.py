#!/usr/bin/env python3
"""The FatTree baseline of the Days paper (Table III, Fig. 3) in ns.py.

Two commands:

  nspy_fattree.py gen K FILE [--seed S]
      Builds ns.py's FatTree(K) (ns.topos.fattree), draws K^3/8 flows
      between random host pairs, each on one random shortest path, with
      ns.py's own generate_flows (Python's `random`, seeded), and writes
      the topology (nodes, links), the flows and their paths to FILE as
      JSON. Both simulators run from this file, so they see the same
      scenario by construction.

  nspy_fattree.py run FILE
      Runs the scenario in ns.py: a DistPacketGenerator per flow (constant
      1 s inter-arrival, 1000-byte packets, 1500 packets, first one at
      t = 1 s), every node a SimplePacketSwitch whose ports are FIFO
      drop-tail queues of 100 packets at 320 kbit/s (the source host's
      port included), forwarding by a per-flow FIB (ns.topos.utils
      generate_fib), a PacketSink per flow at the destination. Runs until
      no event is left and prints one JSON line: packets delivered and
      dropped, port transmissions, the wall time of the run and peak RSS.

The scenario parameters are fixed here and written into the JSON so that
the other side reads them instead of assuming them.
"""

import argparse
import json
import random
import resource
import sys
import time

import simpy
from ns.packet.dist_generator import DistPacketGenerator
from ns.packet.sink import PacketSink
from ns.switch.switch import SimplePacketSwitch
from ns.topos.fattree import build as build_fattree
from ns.topos.utils import generate_fib, generate_flows

PACKETS_PER_FLOW = 1500
PACKET_BYTES = 1000
RATE_BPS = 320_000
QLIMIT = 100
START_S = 1
INTERVAL_S = 1


def hosts_of(ft):
    return sorted(n for n in ft.nodes() if ft.nodes[n]["type"] == "host")


def gen(k, path, seed):
    random.seed(seed)
    ft = build_fattree(k)
    flows = generate_flows(ft, set(hosts_of(ft)), k**3 // 8)
    doc = {
        "k": k,
        "seed": seed,
        "packets_per_flow": PACKETS_PER_FLOW,
        "packet_bytes": PACKET_BYTES,
        "rate_bps": RATE_BPS,
        "qlimit": QLIMIT,
        "start_s": START_S,
        "interval_s": INTERVAL_S,
        "nodes": [
            {"id": n, "type": ft.nodes[n]["type"], "layer": ft.nodes[n]["layer"]}
            for n in ft.nodes()
        ],
        "links": [[a, b] for a, b in ft.edges()],
        "flows": [
            {"id": f.fid, "src": f.src, "dst": f.dst, "path": list(f.path)}
            for f in flows.values()
        ],
    }
    with open(path, "w") as out:
        json.dump(doc, out)


def run(path):
    with open(path) as f:
        doc = json.load(f)
    k = doc["k"]
    t0 = time.perf_counter()
    env = simpy.Environment()
    ft = build_fattree(k)
    links = sorted(tuple(sorted(e)) for e in ft.edges())
    if links != sorted(tuple(sorted(e)) for e in doc["links"]):
        sys.exit("the flow file's topology is not ns.py's FatTree(k)")

    class Flows(dict):
        pass

    from ns.flow.flow import Flow

    all_flows = Flows()
    for f in doc["flows"]:
        flow = Flow(f["id"], f["src"], f["dst"])
        flow.path = f["path"]
        flow.pkt_gen = DistPacketGenerator(
            env,
            f"Flow_{flow.fid}",
            lambda: doc["interval_s"],
            lambda: doc["packet_bytes"],
            initial_delay=doc["start_s"] - doc["interval_s"],
            size=doc["packets_per_flow"] * doc["packet_bytes"],
            flow_id=flow.fid,
        )
        flow.pkt_sink = PacketSink(env)
        all_flows[flow.fid] = flow
    ft = generate_fib(ft, all_flows)
    for n in ft.nodes():
        node = ft.nodes[n]
        node["device"] = SimplePacketSwitch(env, k, doc["rate_bps"], doc["qlimit"])
        node["device"].demux.fib = node["flow_to_port"]
    for n in ft.nodes():
        node = ft.nodes[n]
        for port_number, next_hop in node["port_to_nexthop"].items():
            node["device"].ports[port_number].out = ft.nodes[next_hop]["device"]
    for fid, flow in all_flows.items():
        flow.pkt_gen.out = ft.nodes[flow.src]["device"]
        ft.nodes[flow.dst]["device"].demux.ends[fid] = flow.pkt_sink
    t1 = time.perf_counter()
    env.run()
    t2 = time.perf_counter()
    ports = [p for n in ft.nodes() for p in ft.nodes[n]["device"].ports]
    dropped = sum(p.packets_dropped for p in ports)
    transmissions = sum(p.packets_received for p in ports) - dropped
    delivered = sum(
        sum(flow.pkt_sink.packets_received.values()) for flow in all_flows.values()
    )
    expected = len(all_flows) * doc["packets_per_flow"]
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "simulator": "ns.py",
                "k": k,
                "flows": len(all_flows),
                "expected": expected,
                "delivered": delivered,
                "dropped": dropped,
                "port_transmissions": transmissions,
                "sim_time_s": env.now,
                "build_s": t1 - t0,
                "run_s": t2 - t1,
                "peak_rss_bytes": peak_kib * 1024,
                "ok": delivered == expected and dropped == 0,
            }
        )
    )
    return 0 if delivered == expected and dropped == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("k", type=int)
    g.add_argument("file")
    g.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("file")
    a = p.parse_args()
    if a.cmd == "gen":
        if a.k < 2 or a.k % 2:
            sys.exit("k must be an even integer >= 2")
        gen(a.k, a.file, a.seed)
        return 0
    return run(a.file)


if __name__ == "__main__":
    sys.exit(main())
