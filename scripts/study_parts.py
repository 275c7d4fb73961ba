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
made back to back: the machine's speed moves between them. A record that fails its seal or
holds a value out of range is named on stderr and left out, as `qkt ablate` leaves it out.
"""
import glob
import math
import os
import re
import signal
import sys


def crc32c(data):
    """CRC-32C (Castagnoli), as qkt_crc32c(0, data, n)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def record(path):
    """A one-line record's line (cells/<id>.cost, sgemm_peak.txt) as qkt ablate reads it: the
    line and its seal ("#end rows=1 crc32c=X"), or the line alone (an older qkt); None, with a
    warning, if the file fails its seal or is not one line."""
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    ok = len(lines) == 2 and lines[1] == b""
    if len(lines) == 3 and lines[2] == b"":
        m = re.fullmatch(rb"#end rows=1 crc32c=([0-9a-f]{8})", lines[1])
        ok = bool(m) and int(m.group(1), 16) == crc32c(lines[0] + b"\n")
    if not ok:
        print("study_parts.py: %s fails its seal or is not one line; not counted" % path, file=sys.stderr)
        return None
    return lines[0].decode("ascii", "replace")


def load(run):
    """({(part, d_k): [cells, cpu_s, flops]}, peak GFLOP/s or None)."""
    parts = {}
    for f in sorted(glob.glob(os.path.join(run, "cells", "*.cost"))):
        name = os.path.basename(f)[: -len(".cost")]
        line = record(f)
        if line is None:
            continue
        kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
        try:
            fl, ev, cpu = (float(kv[k]) for k in ("train_flops", "eval_flops", "cpu_s"))
        except (KeyError, ValueError):
            fl = ev = cpu = math.nan
        if not (fl >= 0 and ev >= 0 and cpu > 0 and math.isfinite(fl + ev + cpu)):  # as qkt ablate: NaN fails
            print("study_parts.py: %s is not 'train_flops=F eval_flops=E cpu_s=S' with F, E >= 0 and S > 0; not counted" % f,
                  file=sys.stderr)
            continue
        m = re.search(r"_dk(\d+)", name)
        key = (name.split("_", 1)[0], int(m.group(1)) if m else 0)
        p = parts.setdefault(key, [0, 0.0, 0.0])
        p[0] += 1
        p[1] += cpu
        p[2] += fl + ev
    peak = None
    try:
        peak = float(re.match(r"gflops=([0-9.eE+-]+)", record(os.path.join(run, "sgemm_peak.txt"))).group(1))
    except (OSError, AttributeError, TypeError):
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
