#!/usr/bin/env python3
"""Plots benchmark sweeps like the Elvis paper's Figs. 4-10.

Reads the JSON lines written by `elvis-bench sweep ... --out FILE` and writes,
per scenario, two PNGs: whole-process wall time vs machine count and peak
memory per machine vs machine count (log-log), with the reference numbers
measured for the public Elvis on the same kind of machine where known.

    python3 bench/plot.py bench/results/sweep.jsonl bench/results/
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Public Elvis, measured on this kind of machine (quoted in the issue).
REFERENCE = {
    "low-bandwidth": {"wall_s": {1_000_000: 19.8}, "rss_bytes": {1_000_000: 5.5e9}},
    "high-bandwidth": {"rss_bytes": {10_000: 9.4e9}},
}


def main(src: str, out: str) -> None:
    rows = defaultdict(list)
    for line in Path(src).read_text().splitlines():
        if line.strip():
            m = json.loads(line)
            rows[m["scenario"]].append(m)
    Path(out).mkdir(parents=True, exist_ok=True)
    for scenario, ms in rows.items():
        ms.sort(key=lambda m: m["n"])
        n = [m["n"] for m in ms]
        ref = REFERENCE.get(scenario, {})
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.loglog(n, [m["wall_s"] for m in ms], "o-", label="elvis (this repo)")
        if "wall_s" in ref:
            ax.loglog(list(ref["wall_s"]), list(ref["wall_s"].values()), "rs", label="public Elvis")
        ax.set_xlabel("machines")
        ax.set_ylabel("whole-process wall time (s)")
        ax.set_title(f"{scenario}: time")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(Path(out) / f"{scenario}-time.png", dpi=120)
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(6, 4))
        ax.semilogx(n, [m["peak_rss_bytes"] / m["n"] for m in ms], "o-", label="elvis (this repo)")
        if "rss_bytes" in ref:
            ax.semilogx(list(ref["rss_bytes"]), [v / k for k, v in ref["rss_bytes"].items()], "rs", label="public Elvis")
        ax.set_yscale("log")
        ax.set_xlabel("machines")
        ax.set_ylabel("peak RSS per machine (bytes)")
        ax.set_title(f"{scenario}: memory per machine")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(Path(out) / f"{scenario}-memory.png", dpi=120)
        plt.close(fig)
        print(f"wrote {out}/{scenario}-time.png and {scenario}-memory.png")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
