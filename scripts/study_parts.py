#!/usr/bin/env python3
"""The CPU-seconds of `qkt ablate` runs by part and key width, side by side.

usage: scripts/study_parts.py RUN_DIR [RUN_DIR ...]
  e.g. scripts/study_parts.py runs/old/quick runs/new/quick

Reads each run's cells/*.cost (train_flops, eval_flops, cpu_s: docs/ablate.md, "The study's own
efficiency") and sgemm_peak.txt, and prints a markdown table: per part and d_k (a cell id is
<part>_<variant>_dk<d_k>...), the cells, their CPU-seconds in each run with the part's efficiency
in parentheses (its FLOPs / its CPU-s / the run's peak), and the first run's "floor": the
CPU-seconds the part's FLOPs would take at the peak (efficiency 1); then each run's total and
its efficiency as `qkt ablate` prints it, (sum of FLOPs) / (sum of CPU-s) / peak. No part can
go below its floor on the machine whose peak was measured. Compare runs of the same preset
made back to back: the machine's speed moves between them.
"""
import glob
import os
import re
import signal
import sys


def load(run):
    """({(part, d_k): [cells, cpu_s, flops]}, peak GFLOP/s or None)."""
    parts = {}
    for f in sorted(glob.glob(os.path.join(run, "cells", "*.cost"))):
        name = os.path.basename(f)[: -len(".cost")]
        kv = dict(x.split("=", 1) for x in open(f).readline().split())  # the record; its seal follows
        m = re.search(r"_dk(\d+)", name)
        key = (name.split("_", 1)[0], int(m.group(1)) if m else 0)
        p = parts.setdefault(key, [0, 0.0, 0.0])
        p[0] += 1
        p[1] += float(kv["cpu_s"])
        p[2] += float(kv["train_flops"]) + float(kv["eval_flops"])
    peak = None
    try:
        peak = float(re.search(r"gflops=([0-9.eE+-]+)", open(os.path.join(run, "sgemm_peak.txt")).read()).group(1))
    except (OSError, AttributeError):
        pass
    return parts, peak


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    runs = [load(r) for r in argv[1:]]
    for r, (parts, _) in zip(argv[1:], runs):
        if not parts:
            print("study_parts.py: %s has no cells/*.cost" % r, file=sys.stderr)
            return 1
    keys = sorted({k for parts, _ in runs for k in parts}, key=lambda k: -runs[0][0].get(k, [0, 0.0])[1])
    peak0 = runs[0][1]

    def cell(p, peak, fmt):
        """A part's CPU-s in one run, with its efficiency where the run's peak is known."""
        if p is None:
            return "-"
        cpu, flops = p[1], p[2]
        return (fmt % cpu) + (" (%.2f)" % (flops / cpu / (peak * 1e9)) if peak and cpu > 0 else "")

    def floor(flops):
        return "%.2f" % (flops / (peak0 * 1e9)) if peak0 else "-"

    print("| part | d_k | cells | " + " | ".join("CPU-s (efficiency), run %d" % (i + 1) for i in range(len(runs))) +
          " | floor at the peak, run 1 |")
    print("|---|---:|---:|" + "---:|" * (len(runs) + 1))
    for k in keys:
        cells = max(parts.get(k, [0])[0] for parts, _ in runs)
        f0 = runs[0][0].get(k, [0, 0.0, 0.0])[2]
        print("| %s | %d | %d | " % (k[0], k[1], cells) +
              " | ".join(cell(parts.get(k), peak, "%.2f") for parts, peak in runs) + " | %s |" % floor(f0))
    tot = [[0, sum(p[1] for p in parts.values()), sum(p[2] for p in parts.values())] for parts, _ in runs]
    print("| all | | | " + " | ".join(cell(t, peak, "%.1f") for t, (_, peak) in zip(tot, runs)) + " | %s |" % floor(tot[0][2]))
    eff = []
    for (_, peak), (_, cpu, flops) in zip(runs, tot):
        eff.append("%.3f (peak %.1f)" % (flops / cpu / (peak * 1e9), peak) if peak else "unknown (no sgemm_peak.txt)")
    print("| efficiency | | | " + " | ".join(eff) + " | %s |" % ("1" if peak0 else "-"))
    for i, r in enumerate(argv[1:]):
        print("\nrun %d: %s" % (i + 1, r))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a pager or head closing the pipe ends it quietly
    sys.exit(main(sys.argv))
