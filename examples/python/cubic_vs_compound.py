"""CUBIC against Compound TCP over a bottleneck, swept over its queue size.

    apache (cubic)    ─┐
    iis (compound)    ─┤ lan: 100 Mbit/s switch, 5 ms; the browser's
    browser           ─┘ switch port (QUEUE packets) is the bottleneck

For each queue size, both servers send to the browser at once for a few
simulated seconds; the table gives each algorithm's share of the bytes
acknowledged (the report's `tcp_shares`). With matplotlib installed,
`--plot FILE` draws the shares against the queue size.

    python examples/python/cubic_vs_compound.py [--seconds 5] [--plot shares.png]
"""

import argparse

import elvis

NDL = """\
[Simulation seed='4']
[Template name='host']
\t[Networks]
\t\t[Network id='lan']
\t[Protocols]
\t\t[Protocol name='IPv4']
\t\t[Protocol name='TCP']
[Networks]
\t[Network id='lan' bandwidth='100Mbps' latency='5ms' queue='{queue}']
\t\t[IP range='10.0.0.1-10']
[Machines]
\t[Machine name='apache' template='host']
\t\t[Protocols]
\t\t\t[Protocol name='TCP' congestion='cubic']
\t\t[Applications]
\t\t\t[Application name='bulk_send' to='browser' port='8001' bytes='1GB']
\t[Machine name='iis' template='host']
\t\t[Protocols]
\t\t\t[Protocol name='TCP' congestion='compound']
\t\t[Applications]
\t\t\t[Application name='bulk_send' to='browser' port='8002' bytes='1GB']
\t[Machine name='browser' template='host']
\t\t[Applications]
\t\t\t[Application name='bulk_receive' port='8001' bytes='1GB']
\t\t\t[Application name='bulk_receive' port='8002' bytes='1GB']
"""


def shares(queue, seconds):
    """Returns {algorithm: share of the bytes acknowledged}."""
    r = elvis.run(NDL.format(queue=queue), until=seconds, frames=False)
    return {s["congestion"]: s["share"] for s in r["tcp_shares"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--queues", default="10,40,84,200")
    ap.add_argument("--plot", help="draw the shares into this file (needs matplotlib)")
    args = ap.parse_args()
    queues = [int(q) for q in args.queues.split(",")]
    rows = [(q, shares(q, args.seconds)) for q in queues]
    print("%8s %8s %8s" % ("queue", "cubic", "compound"))
    for q, s in rows:
        print("%8d %8.3f %8.3f" % (q, s.get("cubic", 0.0), s.get("compound", 0.0)))
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: the table above is the result")
            return
        for algo in ("cubic", "compound"):
            plt.plot(queues, [s.get(algo, 0.0) for _, s in rows], marker="o", label=algo)
        plt.xlabel("bottleneck queue (packets)")
        plt.ylabel("share of bytes acknowledged")
        plt.legend()
        plt.savefig(args.plot)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
