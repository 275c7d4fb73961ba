#!/usr/bin/env python3
"""Writes docs/performance.md's "Where it stands" measurements from the files of bench/standing.sh.

usage: scripts/perf_standing.py OUT_DIR      (after: bench/standing.sh OUT_DIR)
Reads OUT_DIR/meta.txt (machine, load, qkt version), builds.txt (bench/compare_builds.sh, default
against -march=native), torch_t1.txt and torch_t2.txt (bench/compare.sh at 1 and 2 threads) and
cell_dk16.txt, cell_dk64.txt, cell_lr.txt (bench/compare_cell.sh), and replaces the text between
the "standing" markers of docs/performance.md with a table of the medians and the summary blocks
as the scripts printed them. Nothing is typed: every figure is one of those files'.
"""
import os
import re
import sys

from doc_section import usage, write_section



def read(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        sys.exit("perf_standing.py: %s missing (run bench/standing.sh %s)" % (p, d))
    return open(p).read()


def summary(text, first):
    """The summary table a compare script prints after its runs: {config: {column: value}}, and its lines."""
    lines = text.splitlines()
    i = next((k for k, l in enumerate(lines) if l.split()[:1] == [first]), None)
    if i is None:
        sys.exit("perf_standing.py: no summary table (header %r) in a compare script's output" % first)
    head = lines[i].split()
    rows, block = {}, [lines[i]]
    for l in lines[i + 1:]:
        if not l.strip():
            break
        block.append(l)
        f = l.split()
        rows[f[0]] = dict(zip(head, f))
    return rows, block


def num(s):
    return float(s.rstrip("x"))


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    d = sys.argv[1]
    meta = dict(l.split(": ", 1) for l in read(d, "meta.txt").splitlines() if ": " in l)
    builds, bblock = summary(read(d, "builds.txt"), "config")
    t1, t1block = summary(read(d, "torch_t1.txt"), "config")
    t2, t2block = summary(read(d, "torch_t2.txt"), "config")
    cells = {}
    for k in ("dk16", "dk64", "lr"):
        t = read(d, "cell_%s.txt" % k)
        m = re.search(r"qkt ([0-9.]+) s \(([0-9.]+) ms/step\), torch ([0-9.]+) s \(([0-9.]+) ms/step\), speedup ([0-9.]+)x", t)
        c = re.search(r"# cell: (.*)", t)
        if not m or not c:
            sys.exit("perf_standing.py: %s/cell_%s.txt has no summary line" % (d, k))
        cells[k] = (c.group(1), m)
    stamp = [l for l in read(d, "torch_t1.txt").splitlines() if l.startswith("# ")][0][2:].split(",")[0]  # its start, UTC

    def speed(rows, c):
        r = rows[c]
        return "%s (qkt %s ms, PyTorch %s ms)" % (r["speedup"], r["qkt_ms"], r["torch_ms"])

    rows = [
        ("default / native build, 1 thread", "native ms / default ms: " + ", ".join(
            "%s %s" % (c, builds[c]["B/A"]) for c in builds) + " (> 1: the default build is faster; `compare_builds.sh`)"),
    ]
    rows += [("1 thread, %s against PyTorch" % c, speed(t1, c)) for c in t1]
    rows += [("2 threads, %s against PyTorch" % c, speed(t2, c) + ", qkt `--replicas 2`") for c in t2]
    rows.append(("MFU against the measured sgemm peak", "1 thread: " + ", ".join("%s %s" % (c, t1[c]["qkt_mfu"]) for c in t1) +
                 "; 2 threads: " + ", ".join("%s %s" % (c, t2[c]["qkt_mfu"]) for c in t2)))
    label = {"dk16": "a quick-study training cell, d_k 16", "dk64": "a quick-study training cell, d_k 64",
             "lr": "a quick-study LR-sweep cell"}
    for k in ("dk16", "dk64", "lr"):
        desc, m = cells[k]
        rows.append(("1 thread, %s against PyTorch" % label[k], "%sx (qkt %s s, PyTorch %s s of training loop; %s)" % (
            m.group(5), m.group(1), m.group(3), desc)))
    text = ["Measured by `bench/standing.sh` (%s rounds per figure, the median of per-round ratios; started %s) and written "
            "by `scripts/perf_standing.py`: %s; load average %s before the start; `%s`." % (
                meta["rounds"], stamp, meta["machine"], meta["load average before"], meta["qkt version"]), "",
            "| what | measured |", "|---|---|"]
    text += ["| %s | %s |" % r for r in rows]
    text += ["", "`bench/compare.sh -t 1 cell32 cell128 tiny small` (PyTorch with one thread, its faster of PASSIVE and a "
             "short spin each round):", ""] + ["    " + l for l in t1block]
    text += ["", "`bench/compare.sh -t 2 tiny small medium`:", ""] + ["    " + l for l in t2block]
    text += ["", "`bench/compare_builds.sh -t 1 build/qkt build-native/qkt tiny small cell32 cell128` (A the default "
             "build, B the native one):", ""] + ["    " + l for l in bblock]
    write_section("docs/performance.md", "standing", "perf_standing.py", "\n".join(text) + "\n")
    print("perf_standing.py: docs/performance.md, %d rows" % len(rows))


if __name__ == "__main__":
    main()
