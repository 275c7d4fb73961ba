#!/usr/bin/env python3
"""Writes docs/distributed.md's measured scaling table and its model on paper from the files of
bench/distributed.sh.

usage: scripts/distributed_doc.py OUT_DIR      (after: bench/distributed.sh OUT_DIR)
Reads OUT_DIR/meta.txt (start, load, machine, qkt version), scaling1.txt ... (bench/mpi_scaling.sh,
one per round) and t1.txt (`qkt bench --threads 1` of tiny, small and medium), and replaces the
"mpi-measured" section (the rounds side by side, and `--replicas N` against `mpirun -np N` per
round) and the "mpi-model" section (bench/mpi_model.py run with the measured one-core step times
and medium's one-core GFLOP/s). Nothing is typed: every figure is one of those files'.
"""
import glob
import os
import re
import subprocess
import sys

from doc_section import ROOT, usage, write_section


def read(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        sys.exit("distributed_doc.py: %s missing (run bench/distributed.sh %s)" % (p, d))
    return open(p).read()


def scaling(text):
    """mpi_scaling.sh's output: its header line and {(config, N, how): (tokens/s, sum, wait, MB)}."""
    head, rows = "", {}
    for l in text.splitlines():
        if l.startswith("# ") and " cores, load " in l:
            head = l[2:]
        if not l or l.startswith("#") or l.startswith("config"):
            continue
        m = re.match(r"(\S+)\s+(\d+)\s+(.+?)\s{2,}(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", l)
        if not m:
            sys.exit("distributed_doc.py: a line mpi_scaling.sh did not write: %r" % l)
        rows[(m.group(1), int(m.group(2)), m.group(3).strip())] = m.group(4, 5, 6, 7)
    return head, rows


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    d = sys.argv[1]
    meta = dict(l.split(": ", 1) for l in read(d, "meta.txt").splitlines() if ": " in l)
    files = sorted(glob.glob(os.path.join(d, "scaling*.txt")))
    if not files:
        sys.exit("distributed_doc.py: no scaling*.txt in %s (run bench/distributed.sh %s)" % (d, d))
    runs = [scaling(open(f).read()) for f in files]
    keys = list(runs[0][1])
    for h, r in runs[1:]:
        if list(r) != keys:
            sys.exit("distributed_doc.py: the rounds ran different configurations")
    n = len(runs)
    loads = [re.search(r"load ([0-9. ]+),", h).group(1).split()[0] if re.search(r"load ([0-9. ]+),", h) else "?" for h, _ in runs]
    txt = ("Measured by `bench/distributed.sh` (%d rounds of `bench/mpi_scaling.sh`, started %s) and written by "
           "`scripts/distributed_doc.py`: %s; load average %s before the start (1-minute load before each round: %s); `%s`.\n\n"
           % (n, meta["started"], meta["machine"], meta["load"], ", ".join(loads), meta["qkt version"]))
    txt += ("| config | N | how | tokens/s (rounds %s) | gradient sum ms/step | wait ms/step | gradient MB |\n"
            "|---|---|---|---|---|---|---|\n" % ", ".join(str(i + 1) for i in range(n)))
    for k in keys:
        vals = [r[k] for _, r in runs]
        txt += "| %s | %d | %s | %s | %s | %s | %s |\n" % (k[0], k[1], k[2], ", ".join(v[0] for v in vals),
                                                          ", ".join(v[1] for v in vals), ", ".join(v[2] for v in vals), vals[0][3])
    txt += "\nTokens/s of `--replicas N` in one process over `mpirun -np N` (the same computation and bits), per round:\n\n"
    txt += "| config | N | rounds %s |\n|---|---|---|\n" % ", ".join(str(i + 1) for i in range(n))
    for k in keys:
        if not k[2].startswith("--replicas"):
            continue
        m = next((j for j in keys if j[:2] == k[:2] and j[2].startswith("mpirun")), None)
        if m is None:
            continue
        rat = []
        for _, r in runs:
            a, b = r[k][0], r[m][0]
            rat.append("%.2f" % (float(a) / float(b)) if a != "-" and b != "-" and float(b) > 0 else "-")
        txt += "| %s | %d | %s |\n" % (k[0], k[1], ", ".join(rat))
    write_section("docs/distributed.md", "mpi-measured", "distributed_doc.py", txt)

    t1, core = {}, None
    text = read(d, "t1.txt")
    for m in re.finditer(r"qkt (tiny|small|medium) threads=1 ms_per_step=([0-9.]+)", text):
        t1[m.group(1)] = float(m.group(2))
    g = re.findall(r"V=\d+ T=256 B=8 C=384 L=6 NH=6, replicas 1, ([0-9.]+) GFLOP per step", text)
    if len(t1) != 3 or not g:
        sys.exit("distributed_doc.py: t1.txt lacks a qkt bench line of tiny, small or medium")
    core = float(g[0]) / (t1["medium"] / 1e3)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "mpi_model.py"), "%.3f" % t1["tiny"], "%.3f" % t1["small"],
                          "%.3f" % t1["medium"], "%.1f" % core], capture_output=True, text=True, check=True).stdout
    model = ("The one-core step times t1 (`qkt bench --config X --threads 1`, measured by `bench/distributed.sh` above): tiny "
             "%.1f ms, small %.1f ms, medium %.0f ms; medium's step on one core ran at %.0f GFLOP/s. `bench/mpi_model.py "
             "%.3f %.3f %.3f %.1f` prints:\n\n%s"
             % (t1["tiny"], t1["small"], t1["medium"], core, t1["tiny"], t1["small"], t1["medium"], core, out))
    write_section("docs/distributed.md", "mpi-model", "distributed_doc.py", model)
    print(txt + "\n" + model, end="")


if __name__ == "__main__":
    main()
