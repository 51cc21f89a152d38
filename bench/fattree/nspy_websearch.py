#!/usr/bin/env python3
"""The datacenter experiment of `elvis-bench datacenter` as near as ns.py
can express it, for a side-by-side speed comparison.

    nspy_websearch.py K LOAD DURATION_US [--drain-us D] [--seed S]

FatTree(K) (ns.topos.fattree), every node a SimplePacketSwitch whose ports
are FIFO drop-tail queues of 150 packets at 10 Gbit/s, each port followed
by a Wire of 1 us; every host starts flows as a Poisson process at LOAD of
its link with sizes from the DCTCP paper's web-search CDF (the points of
elvis' `flowgen`, linearly interpolated) to a uniformly drawn other host,
each flow on one random shortest path (ns.py's per-flow FIB,
ns.topos.utils.generate_fib with tcp=True), sent by ns.py's
TCPPacketGenerator with TCPCubic (MSS 1460 bytes, initial window 10
segments) to a TCPSink. Flows arrive for DURATION_US; the run stops
DRAIN_US later. Prints one JSON line: flows, finished, packets carried
and dropped, wall time of the build and the run (and the run's CPU
time), peak RSS.

What ns.py cannot express, and so differs from elvis' scenario:
- no ECN and no DCTCP: its ports drop (RED drops, never marks), its
  congestion controls are Reno, CUBIC and BBR; the elvis side to compare
  with is `--cc cubic` on drop-tail ports;
- packets carry no headers (a segment is its payload), there is no
  handshake, no delayed ACK, and a segment's timer has a 1 s floor;
- TCPPacketGenerator sends full segments only, so sizes are rounded up
  to whole segments;
- ACKs take flow id + 10000, so at most 10000 flows fit in one run.
"""

import argparse
import bisect
import json
import random
import resource
import sys
import time

import networkx as nx
import simpy
from ns.flow.cubic import TCPCubic
from ns.flow.flow import Flow
from ns.packet.tcp_generator import TCPPacketGenerator
from ns.packet.tcp_sink import TCPSink
from ns.port.wire import Wire
from ns.switch.switch import SimplePacketSwitch
from ns.topos.fattree import build as build_fattree
from ns.topos.utils import generate_fib

RATE_BPS = 10e9
LATENCY_S = 1e-6
QLIMIT = 150
MSS = 1460
IW = 10
# The web-search CDF (bytes, P(size <= bytes)) of elvis' flowgen
# (crates/apps/src/flowgen/cdf.rs), from the DCTCP paper's Fig. 4.
WEBSEARCH = [(0, 0.0), (10e3, 0.15), (20e3, 0.2), (30e3, 0.3), (50e3, 0.4),
             (80e3, 0.53), (200e3, 0.6), (1e6, 0.7), (2e6, 0.8), (5e6, 0.9),
             (10e6, 0.97), (30e6, 1.0)]


def mean_size():
    return sum((b[1] - a[1]) * (a[0] + b[0]) / 2 for a, b in zip(WEBSEARCH, WEBSEARCH[1:]))


def draw_size(u):
    ps = [p for _, p in WEBSEARCH]
    i = max(1, bisect.bisect_left(ps, u))
    (xa, pa), (xb, pb) = WEBSEARCH[i - 1], WEBSEARCH[i]
    x = xa + (u - pa) / (pb - pa) * (xb - xa) if pb > pa else xb
    return max(16, int(round(x)))


def flows_of(ft, hosts, load, duration_s):
    rate = load * RATE_BPS / (8 * mean_size())
    flows = {}
    for h in hosts:
        t = random.expovariate(rate)
        while t < duration_s:
            dst = random.choice([x for x in hosts if x != h])
            size = draw_size(random.random())
            fid = len(flows)
            f = Flow(fid, h, dst, size=-(-size // MSS) * MSS, start_time=t,
                     finish_time=float("inf"))
            f.path = random.choice(list(nx.all_shortest_paths(ft, h, dst)))
            flows[fid] = f
            t += random.expovariate(rate)
    return flows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("k", type=int)
    p.add_argument("load", type=float)
    p.add_argument("duration_us", type=int)
    p.add_argument("--drain-us", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    random.seed(a.seed)
    t0 = time.perf_counter()
    env = simpy.Environment()
    ft = build_fattree(a.k)
    hosts = sorted(n for n in ft.nodes() if ft.nodes[n]["type"] == "host")
    flows = flows_of(ft, hosts, a.load, a.duration_us / 1e6)
    if len(flows) >= 10000:
        sys.exit(f"{len(flows)} flows: ns.py's ACK flow ids (id + 10000) allow fewer than 10000")
    ft = generate_fib(ft, flows, tcp=True)
    for n in ft.nodes():
        node = ft.nodes[n]
        node["device"] = SimplePacketSwitch(env, len(node["port_to_nexthop"]), RATE_BPS, QLIMIT)
        node["device"].demux.fib = node["flow_to_port"]
    for n in ft.nodes():
        node = ft.nodes[n]
        for port, nexthop in node["port_to_nexthop"].items():
            wire = Wire(env, lambda: LATENCY_S)
            node["device"].ports[port].out = wire
            wire.out = ft.nodes[nexthop]["device"]
    done = {}
    for fid, f in flows.items():
        gen = TCPPacketGenerator(env, f, TCPCubic(mss=MSS, cwnd=IW * MSS), element_id=fid)
        gen.mss = MSS
        sink = TCPSink(env, rec_arrivals=False, rec_waits=False, rec_flow_ids=False)

        def put(pkt, sink=sink, f=f, base=sink.put):
            base(pkt)
            if fid_done(sink, f):
                done.setdefault(f.fid, env.now - f.start_time)

        sink.put = put
        gen.out = ft.nodes[f.src]["device"]
        sink.out = ft.nodes[f.dst]["device"]
        ft.nodes[f.dst]["device"].demux.ends[fid] = sink
        ft.nodes[f.src]["device"].demux.ends[fid + 10000] = gen
    t1, c1 = time.perf_counter(), time.process_time()
    env.run(until=(a.duration_us + a.drain_us) / 1e6)
    t2, c2 = time.perf_counter(), time.process_time()
    ports = [p for n in ft.nodes() for p in ft.nodes[n]["device"].ports]
    dropped = sum(p.packets_dropped for p in ports)
    carried = sum(p.packets_received for p in ports) - dropped
    print(json.dumps({
        "simulator": "ns.py", "k": a.k, "load": a.load, "duration_us": a.duration_us,
        "drain_us": a.drain_us, "flows": len(flows), "finished": len(done),
        "port_transmissions": carried, "dropped": dropped, "sim_time_s": env.now,
        "build_s": t1 - t0, "run_s": t2 - t1, "run_cpu_s": c2 - c1,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }))
    return 0


def fid_done(sink, f):
    return sink.next_seq_expected >= f.size


if __name__ == "__main__":
    sys.exit(main())
