#!/usr/bin/env python3
"""Helpers of bench/vs-ns3: writes the elvis NDL of each scenario, runs a
command measuring its whole-process wall time and peak RSS, and prints the
side-by-side comparison. Standard library only.

  harness.py gen chain HOPS FILE
  harness.py gen dumbbell FLOWS CC SECONDS QUEUE FILE     (QUEUE 'nic': no qdisc, the 32-frame NIC)
  harness.py gen star N FILE
  harness.py measure OUT.json -- CMD ARGS...
  harness.py compare SCENARIO NS3.json ELVIS.json ELVIS_REPORT.json
"""
import json
import os
import resource
import subprocess
import sys
import time


def ip(n):
    return f"{n >> 24 & 255}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def gen_chain(hops, path):
    # As examples/ndl/router-chain-tcp.ndl (hops = 32): 100 Mbit/s, 10 us
    # links, 20 MB with a 512 KiB receive window, automatic routes.
    w = ["# bench/vs-ns3: router-chain TCP transfer (generated)",
         "[Simulation seed='2' ttl='255']", "", "[Networks]"]
    for i in range(hops + 1):
        w.append(f"\t[Network id='l{i}' type='link' bandwidth='100Mbps' latency='10us']")
        w.append(f"\t\t[IP subnet='10.{1 + i // 256}.{i % 256}.0/30']")
    w += ["", "[Machines]"]
    for r in range(1, hops + 1):
        a, b = r - 1, r
        w += [f"\t[Machine name='r{r}' forward='yes']", "\t\t[Networks]",
              f"\t\t\t[Network id='l{a}' ip='10.{1 + a // 256}.{a % 256}.2']",
              f"\t\t\t[Network id='l{b}' ip='10.{1 + b // 256}.{b % 256}.1']"]
    h = hops
    w += ["\t[Machine name='client']", "\t\t[Networks]",
          "\t\t\t[Network id='l0' ip='10.1.0.1']",
          "\t\t[Protocols]", "\t\t\t[Protocol name='TCP']", "\t\t[Applications]",
          "\t\t\t[Application name='bulk_send' to='server' port='5001' bytes='20MB' sndbuf='2MiB']",
          "\t[Machine name='server']", "\t\t[Networks]",
          f"\t\t\t[Network id='l{h}' ip='10.{1 + h // 256}.{h % 256}.2']",
          "\t\t[Protocols]", "\t\t\t[Protocol name='TCP']", "\t\t[Applications]",
          "\t\t\t[Application name='bulk_receive' port='5001' bytes='20MB' rcvbuf='512KiB']"]
    open(path, "w").write("\n".join(w) + "\n")


def gen_dumbbell(flows, cc, seconds, queue, path):
    # Left host i -> right host i, one bulk transfer each, all from t = 0.
    # 100 Mbit/s, 1 ms access links; 10 Mbit/s, 20 ms bottleneck whose
    # routers' ports are drop-tail queues of QUEUE frames waiting (the
    # frame on the wire not counted, as ns-3's device queue).
    q = "" if queue == "nic" else f" qdisc='droptail' limit='{queue}'"
    w = ["# bench/vs-ns3: dumbbell (generated)",
         f"[Simulation seed='3' until='{seconds}s']", "", "[Networks]",
         f"\t[Network id='bottleneck' type='link' bandwidth='10Mbps' latency='20ms'{q}]",
         "\t\t[IP subnet='10.0.0.0/30']"]
    for side, net in (("la", 1), ("ra", 2)):
        for i in range(flows):
            w.append(f"\t[Network id='{side}{i}' type='link' bandwidth='100Mbps' latency='1ms']")
            w.append(f"\t\t[IP subnet='10.{net}.{i}.0/30']")
    w += ["", "[Machines]"]
    for r, side, net, addr in ((0, "la", 1, "10.0.0.1"), (1, "ra", 2, "10.0.0.2")):
        w += [f"\t[Machine name='router-{r}' forward='yes']", "\t\t[Networks]",
              f"\t\t\t[Network id='bottleneck' ip='{addr}']"]
        w += [f"\t\t\t[Network id='{side}{i}' ip='10.{net}.{i}.2']" for i in range(flows)]
    for i in range(flows):
        w += [f"\t[Machine name='left-{i}']", "\t\t[Networks]",
              f"\t\t\t[Network id='la{i}' ip='10.1.{i}.1']",
              "\t\t[Protocols]", "\t\t\t[Protocol name='TCP']", "\t\t[Applications]",
              f"\t\t\t[Application name='bulk_send' to='right-{i}' port='5001' bytes='1TB' congestion='{cc}']",
              f"\t[Machine name='right-{i}']", "\t\t[Networks]",
              f"\t\t\t[Network id='ra{i}' ip='10.2.{i}.1']",
              "\t\t[Protocols]", "\t\t\t[Protocol name='TCP']", "\t\t[Applications]",
              "\t\t\t[Application name='bulk_receive' port='5001' bytes='1TB']"]
    open(path, "w").write("\n".join(w) + "\n")


def gen_star(n, path):
    # One router; host i on its own /30 (10.0.0.0 + 4i: router .1, host
    # .2), gateway = the router; a sink behind the router on
    # 192.168.0.0/30 whose router port holds every datagram.
    with open(path, "w") as f:
        f.write(f"# bench/vs-ns3: star of {n} hosts (generated)\n"
                "[Simulation seed='1' routing='static']\n\n[Networks]\n"
                "\t[Network id='sink-link' type='link' bandwidth='1Gbps' latency='10us'"
                " qdisc='droptail' limit='inf']\n\t\t[IP subnet='192.168.0.0/30']\n")
        base = 10 << 24
        for i in range(n):
            f.write(f"\t[Network id='s{i}' type='link' bandwidth='1Gbps' latency='10us']\n"
                    f"\t\t[IP subnet='{ip(base + 4 * i)}/30']\n")
        f.write("\n[Machines]\n\t[Machine name='router' forward='yes']\n\t\t[Networks]\n"
                "\t\t\t[Network id='sink-link' ip='192.168.0.1']\n")
        for i in range(n):
            f.write(f"\t\t\t[Network id='s{i}' ip='{ip(base + 4 * i + 1)}']\n")
        f.write("\t[Machine name='sink' gateway='192.168.0.1']\n\t\t[Networks]\n"
                "\t\t\t[Network id='sink-link' ip='192.168.0.2']\n"
                "\t\t[Protocols]\n\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n"
                f"\t\t\t[Application name='capture' port='9' message_count='{n}']\n")
        for i in range(n):
            f.write(f"\t[Machine name='h{i}' gateway='{ip(base + 4 * i + 1)}']\n\t\t[Networks]\n"
                    f"\t\t\t[Network id='s{i}' ip='{ip(base + 4 * i + 2)}']\n"
                    "\t\t[Protocols]\n\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n"
                    "\t\t\t[Application name='send_message' to='192.168.0.2' port='9' size='64']\n")


def measure(out, cmd):
    # The peak RSS comes from /usr/bin/time where there is one: a child
    # that Python forks inherits its peak (about 14.6 MiB: RUSAGE_CHILDREN
    # reports that for /bin/true), which would hide a smaller program's.
    rss_file = out + ".rss"
    timed = ["/usr/bin/time", "-f", "%M", "-o", rss_file] if os.path.exists("/usr/bin/time") else []
    t0 = time.perf_counter()
    p = subprocess.run(timed + cmd, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = ru.ru_maxrss * 1024
    if timed:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1]) * 1024
        os.remove(rss_file)
    lines = [l for l in p.stdout.strip().splitlines() if l.startswith("{")]
    doc = json.loads(lines[-1]) if lines else {}
    doc.update(process_wall_s=wall, process_cpu_s=ru.ru_utime + ru.ru_stime,
               process_peak_rss_bytes=rss, exit_status=p.returncode)
    json.dump(doc, open(out, "w"))


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def elvis_results(scenario, rep):
    r = {}
    pk = rep.get("packets", {})
    r["drops"] = pk.get("dropped_total")
    r["drops_by"] = {k: v for k, v in pk.get("dropped", {}).items() if v}
    conns = rep.get("tcp_connections", [])
    senders = [c for c in conns if c.get("bytes_sent", 0) > 0]
    for k in ("retransmitted_segments", "fast_recoveries", "timeouts", "tlp_probes",
              "tlp_recoveries", "undos"):
        r[k] = sum(c.get(k, 0) for c in senders)
    metrics = {(m["machine"], m["name"]): m["value"] for m in rep.get("metrics", [])}
    if scenario == "chain":
        r["steady_goodput_bps"] = metrics.get(("server", "steady_goodput_bps"))
        r["transfer_s"] = (metrics.get(("server", "transfer_ns")) or 0) / 1e9
    elif scenario == "dumbbell":
        rx = {c["machine"]: c.get("bytes_received", 0) for c in conns
              if c["machine"].startswith("right-")}
        r["flow_bytes"] = [rx[k] for k in sorted(rx, key=lambda m: int(m.split("-")[1]))]
    elif scenario == "star":
        r["delivered"] = pk.get("udp_delivered")
    r["sim_time_s"] = rep.get("sim_time_ns", 0) / 1e9
    r["events"] = rep.get("events")
    return r


def compare(scenario, ns3_path, elvis_path, report_path, label):
    a = json.load(open(ns3_path))
    b = json.load(open(elvis_path))
    try:
        rep = json.load(open(report_path))
    except (OSError, ValueError):
        rep = {}
    e = elvis_results(scenario, rep)
    rows = []
    if scenario == "chain":
        rows += [("steady goodput (Mbit/s)", (a.get("steady_goodput_bps") or 0) / 1e6,
                  (e.get("steady_goodput_bps") or 0) / 1e6),
                 ("transfer (s)", a.get("transfer_s"), e.get("transfer_s"))]
    elif scenario == "dumbbell":
        fa, fb = a.get("flow_bytes", []), e.get("flow_bytes", [])
        secs = a.get("seconds", 20)
        rows += [("goodput (Mbit/s)", sum(fa) * 8 / secs / 1e6, sum(fb) * 8 / secs / 1e6),
                 ("Jain index", jain(fa), jain(fb)),
                 ("min/max flow (MB)", f"{min(fa) / 1e6:.2f}/{max(fa) / 1e6:.2f}" if fa else "-",
                  f"{min(fb) / 1e6:.2f}/{max(fb) / 1e6:.2f}" if fb else "-")]
    elif scenario == "star":
        rows += [("sent", a.get("sent"), a.get("sent")),
                 ("delivered", a.get("delivered"), e.get("delivered"))]
    rows.append(("drops", a.get("drops"), e.get("drops")))
    if scenario != "star":
        for k in ("retransmitted_segments", "fast_recoveries", "timeouts"):
            rows.append((k.replace("_", " "), a.get(k), e.get(k)))
        rows.append(("tail loss probes", "-", e.get("tlp_probes")))
    rows += [("wall (s)", a["process_wall_s"], b["process_wall_s"]),
             ("cpu (s)", a["process_cpu_s"], b["process_cpu_s"]),
             ("peak RSS (MiB)", a["process_peak_rss_bytes"] / 2**20,
              b["process_peak_rss_bytes"] / 2**20),
             ("exit status", a["exit_status"], b["exit_status"])]
    print(f"== {label}")
    print(f"  {'':26}{'ns-3':>16}{'elvis':>16}")
    for k, x, y in rows:
        f = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
        print(f"  {k:26}{f(x):>16}{f(y):>16}")
    if e.get("drops_by"):
        print(f"  elvis drops by reason: {e['drops_by']}")
    wr = a["process_wall_s"] / max(b["process_wall_s"], 1e-9)
    mr = a["process_peak_rss_bytes"] / max(b["process_peak_rss_bytes"], 1)
    cr = a["process_cpu_s"] / max(b["process_cpu_s"], 1e-9)
    problems = []
    if a["exit_status"] != 0:
        problems.append(f"ns-3 exited {a['exit_status']}")
    # elvis exits 3 when a time limit stops applications still running
    # (the dumbbell's endless transfers).
    if b["exit_status"] not in ((0, 3) if scenario == "dumbbell" else (0,)):
        problems.append(f"elvis exited {b['exit_status']}")
    if scenario == "star" and not (a.get("delivered") == e.get("delivered") == a.get("sent")):
        problems.append("the star did not deliver every datagram on both sides")
    if scenario == "dumbbell":
        res = f"goodput={rows[0][1]:.2f}/{rows[0][2]:.2f}Mbps jain={rows[1][1]:.3f}/{rows[1][2]:.3f} drops={a.get('drops')}/{e.get('drops')}"
    elif scenario == "chain":
        res = f"goodput={rows[0][1]:.2f}/{rows[0][2]:.2f}Mbps drops={a.get('drops')}/{e.get('drops')}"
    else:
        res = f"delivered={a.get('delivered')}/{e.get('delivered')}"
    print(f"{label}: {res} (ns-3/elvis) | wall ns3={a['process_wall_s']:.3f}s elvis={b['process_wall_s']:.3f}s "
          f"ratio={wr:.1f}x | cpu ratio={cr:.1f}x | rss ns3={a['process_peak_rss_bytes'] / 2**20:.1f}MiB "
          f"elvis={b['process_peak_rss_bytes'] / 2**20:.1f}MiB ratio={mr:.1f}x"
          + (" | " + "; ".join(problems) if problems else ""))
    return 1 if problems else 0


def main(argv):
    if argv[0] == "gen":
        kind = argv[1]
        if kind == "chain":
            gen_chain(int(argv[2]), argv[3])
        elif kind == "dumbbell":
            gen_dumbbell(int(argv[2]), argv[3], argv[4], argv[5], argv[6])
        elif kind == "star":
            gen_star(int(argv[2]), argv[3])
        return 0
    if argv[0] == "measure":
        assert argv[2] == "--"
        measure(argv[1], argv[3:])
        return 0
    if argv[0] == "compare":
        return compare(*argv[1:6])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
