#!/usr/bin/python3
"""Where each benchmark shape's step time goes; writes docs/performance.md's section "profile": first
the step split into its products and the rest (`qkt bench`, and `qkt bench --gemm-shapes` timing the
same products alone), then bench/profile.py's share of the step's samples per kind of work.

usage: /usr/bin/python3 scripts/profile_doc.py BUILD_DIR        (e.g. build; about 3 minutes, idle machine)
Shapes as docs/performance.md's MFU targets name them: cell32 and cell128 on one thread; tiny, small and
medium on two threads with --replicas 2. Needs perf (linux-perf).
"""
import os
import re
import sys

from doc_section import ROOT, machine, qkt_binary, run, usage, write_section

SHAPES = [("cell32", 1, 500), ("cell128", 1, 200), ("tiny", 2, 500), ("small", 2, 100), ("medium", 2, 20)]


def flags(config, threads):
    """The shape's qkt bench flags: two threads run --replicas 2."""
    return ["--config", config, "--threads", str(threads)] + (["--replicas", "2"] if threads == 2 else [])


def profile(qkt, config, threads, steps):
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench", "profile.py"), "--qkt", qkt, "--steps", str(steps), "--top", "0", "--"]
    shares, ms = {}, None
    for line in run(cmd + flags(config, threads), "profile_doc.py", "bench/profile.py").splitlines():
        m = re.search(r"ms_per_step=([\d.]+)", line)
        if m:
            ms = float(m.group(1))
        m = re.fullmatch(r"(\S.*?)\s+([\d.]+) %", line)
        if m and not line.startswith("#"):
            shares[m.group(1)] = float(m.group(2))
        if line.startswith("# top functions"):
            break
    return ms, shares


def bench(qkt, config, threads, steps):
    """(step ms, MFU, products ms, products GFLOP/s) of one shape. With --replicas 2 each shard's
    products run on one thread at half the batch, side by side: timed as such."""
    text = run([qkt, "bench", "--steps", str(steps)] + flags(config, threads), "profile_doc.py", "qkt bench", stderr=True)
    ms, mfu = float(re.search(r"ms_per_step=([\d.]+)", text).group(1)), float(re.search(r"mfu=([\d.]+)", text).group(1))
    batch = int(re.search(r" B=(\d+)", text).group(1))
    g = ["bench", "--config", config, "--threads", "1", "--steps", str(steps), "--gemm-shapes", "--batch", str(batch // threads)]
    m = re.search(r"gemm step threads=1 ms=([\d.]+) gflops=([\d.]+)", run([qkt] + g, "profile_doc.py", "qkt bench --gemm-shapes", stderr=True))
    if not m:
        sys.exit("profile_doc.py: qkt %s printed no 'gemm step' line" % " ".join(g))
    return ms, mfu, float(m.group(1)), float(m.group(2))


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    qkt = qkt_binary(sys.argv[1], "profile_doc.py")
    where = machine(qkt, "profile_doc.py")
    out = run([qkt, "bench", "--sgemm-peak", "--threads", "1"], "profile_doc.py", "qkt bench --sgemm-peak")
    one = float(re.search(r"gflops=([\d.]+)", out).group(1))  # the products run on one thread each
    times = [bench(qkt, c, t, max(10, s // 10)) for c, t, s in SHAPES]
    runs = [profile(qkt, c, t, s) for c, t, s in SHAPES]
    cats = sorted({k for _, sh in runs for k in sh}, key=lambda k: -sum(sh.get(k, 0) for _, sh in runs))
    text = ("Written by `scripts/profile_doc.py`: %s; one core's sgemm peak %.1f GFLOP/s "
            "(`qkt bench --sgemm-peak --threads 1`).\n\n" % (where, one))
    text += ("| shape | step ms | MFU | products alone: ms (GFLOP/s, of one core's peak) | outside the products: ms (share) |\n"
             "|---|---:|---:|---:|---:|\n")
    for (c, t, _), (ms, mfu, pms, pg) in zip(SHAPES, times):
        text += "| %s, %d thr.%s | %.2f | %.3f | %.2f (%.0f, %.2f) | %.2f (%.2f) |\n" % (
            c, t, ", --replicas 2" if t == 2 else "", ms, mfu, pms, pg, pg / one, ms - pms, (ms - pms) / ms)
    text += ("\n`qkt bench --config SHAPE` gives the step and its MFU (against the sgemm peak it measures on its threads); "
             "`qkt bench --gemm-shapes` times the step's products alone on one thread (with --replicas 2: one shard's, "
             "at half the batch, as each thread runs them). The difference is the time outside the products: "
             "attention, LayerNorm, GELU, the sums, the optimizer, and for two threads the waits. "
             "`bench/profile.py -- FLAGS` splits the whole step by kind of work: the share of its samples (%); the step "
             "time is that of the profiled run (perf's sampling slows it a little):\n\n")
    text += "| kind of work | " + " | ".join("%s, %d thr." % (c, t) for c, t, _ in SHAPES) + " |\n"
    text += "|---|" + "---:|" * len(SHAPES) + "\n"
    text += "| ms per step | " + " | ".join("%.2f" % ms if ms else "-" for ms, _ in runs) + " |\n"
    for k in cats:
        text += "| %s | %s |\n" % (k, " | ".join("%.1f" % sh[k] if k in sh else "-" for _, sh in runs))
    write_section("docs/performance.md", "profile", "profile_doc.py", text)
    print(text, end="")


if __name__ == "__main__":
    main()
