#!/usr/bin/env python3
"""Regenerates README.md's "What `make demo` shows" section from a real quick-preset run.

usage: scripts/readme_demo.py RUN_DIR
  e.g. scripts/demo_timed.sh build runs  (then)  scripts/readme_demo.py runs/quick
Copies the findings table, the report's summary bullets, the paired and training tables and four
plots from RUN_DIR/report.md and RUN_DIR/*.png; the time, load, build and kernel path from
RUN_DIR/timing.txt (written by scripts/demo_timed.sh), the cell count from RUN_DIR/cells and the
CPU from /proc/cpuinfo, so the README's numbers are the run's, not typed; the sentence on the full preset
from the run scripts/full_study_doc.py published in docs/study/full.
"""
import glob
import json
import os
import re
import shutil
import sys
import tarfile

from doc_section import cli, usage


def block(lines, start):
    i = next(k for k, l in enumerate(lines) if l.startswith(start))
    j = i
    while j < len(lines) and lines[j].strip():
        j += 1
    return "\n".join(lines[i:j])


def timing(run):
    """(wall s, CPU s, load average before, qkt version line, machine) from RUN_DIR/timing.txt (scripts/demo_timed.sh);
    machine is None where the file does not name it."""
    t = open(os.path.join(run, "timing.txt")).read()
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([0-9:.]+)", t).group(1).split(":")
    wall = 0.0
    for part in clock:
        wall = wall * 60 + float(part)
    cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", t).group(1)) + float(re.search(r"System time \(seconds\): ([0-9.]+)", t).group(1))
    status = int(re.search(r"Exit status: ([0-9]+)", t).group(1))
    if status != 0:
        sys.exit("%s/timing.txt: the study exited with status %d" % (run, status))
    load = re.search(r"load average before: (.*)", t).group(1).strip()
    version = re.search(r"qkt version: (.*)", t).group(1).strip()
    machine = re.search(r"machine: (.*)", t)
    return round(wall), round(cpu), load, version, machine.group(1).strip() if machine else None


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def full_paragraph():
    """README's sentence on the full preset, from what scripts/full_study_doc.py published in docs/study/full."""
    d = os.path.join("docs", "study", "full")
    wall, _, load, version, machine = timing(d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    with tarfile.open(os.path.join(d, "cells.tar.xz")) as tar:
        cells = sum(1 for m in tar.getmembers() if m.name.endswith(".csv") and not m.name.endswith("init_iid.csv"))
    return (f"The full preset (`{cfg['command']}`: d_k {', '.join(map(str, cfg['d_k']))}, {len(cfg['variants'])} variants x "
            f"{cfg['seeds']} seeds of {cfg['steps']} steps at batch {cfg['batch_size']}, the second task `{cfg['task2']}`, the 2x2 of "
            f"form x start on both tasks, {len(cfg['lr_grid'])} learning rates x {cfg['lr_seeds']} seeds) from one run: {cells} cells in "
            f"**{wall // 60} min {wall % 60} s** of wall time ({machine}; load average {load} before the start; `{version}`): "
            f"[docs/study/full/report.md](docs/study/full/report.md), with its cells' files, from which `qkt plot` redraws it "
            f"byte for byte.")


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    run = sys.argv[1]
    wall, cpu, load, version, _ = timing(run)
    cells = len([f for f in glob.glob(os.path.join(run, "cells", "*.csv")) if not f.endswith("init_iid.csv")])  # part 1 is not a cell
    cfg = json.load(open(os.path.join(run, "config.json")))
    seeds, nv, nlv, nlr = cfg["seeds"], len(cfg["variants"]), len(cfg["lr_variants"]), len(cfg["lr_grid"])
    dks = " and ".join(str(d) for d in cfg["d_k"])
    start = (f"; the 2x2 of scale form x start at d_k = {cfg['start_d_k']} (`sqrt_dk` and `none` trained from each "
             f"other's starting logit scale, {seeds} seeds)") if cfg.get("start_d_k") else ""
    reruns = [f"seed {x}" for x in cfg.get("robust_seeds", [])] + ([f"kernel path {cfg['robust_isa']}"] if cfg.get("robust_isa") else [])
    robust = (f"; its \"holds under\" column compares each verdict with the same run's robustness reruns "
              f"({', '.join(reruns)}: the verdict-carrying cells again, added afterwards by `{cfg['command']}`, "
              f"which keeps the finished cells), and a verdict a rerun does not reach is marked fragile") if reruns else ""
    kernels = re.search(r"kernels (\w+)", version)
    kernels = kernels.group(1) if kernels else "?"
    rep = open(os.path.join(run, "report.md")).read().split("\n")
    i = rep.index("## What the numbers say") + 2
    bullets = []
    while rep[i].startswith("- "):
        bullets.append(rep[i])
        i += 1
    power = next(l for l in rep if l.startswith("**Power with"))
    plots = [("init_entropy", "normalised entropy at init"), ("loss_dk64", "train loss, d_k = 64"),
             ("task2_loss_dk64", "recall loss, d_k = 64"), ("logit_growth", "logit change under Adam")]
    for name, _ in plots:
        shutil.copy(os.path.join(run, name + ".png"), os.path.join("docs/img/demo", name + ".png"))
    section = f"""## What `make demo` shows

`make demo` runs `qkt ablate --preset quick`: {cells} cells (init measurements; {nv} variants x d_k {dks} x {seeds}
seeds of {cfg["steps"]} steps on `{cfg["task"]}` with T = {cfg["seq_len"]}, batch {cfg["batch_size"]}, W_q/W_k initialised `{cfg["qk_init"]}` so that unscaled logits at
init have std sqrt(d_k) (8 at d_k = 64); the same at d_k {" and ".join(str(d) for d in cfg.get("task2_d_k", []))} on the smoothly learnt second task `{cfg["task2"]}`{start}; a {nlv} x {nlr}
learning-rate sweep up to instability (with `sigma_reparam`); the logit-growth check), two side by side
with one thread each. It took **{wall // 60} min {wall % 60} s** ({wall} s wall, {cpu} CPU-seconds) on a 2-core
machine ({cpu_name()}; load average {load} before the start), default build (`{version}`; kernel
path `{kernels}`). On a CPU that takes another kernel path the numbers can differ in their
last digits (each path is deterministic; [docs/performance.md](docs/performance.md) measures by how much). Everything below is copied from that run's
`report.md` by `scripts/readme_demo.py` ([docs/ablate.md](docs/ablate.md) explains the study, the statistics and the files).

{full_paragraph()}

The findings table (verdicts computed by the report, not typed){robust}:

{block(rep, "| # | claim")}

Sanity checks (true by construction; they check the measurement code):

{block(rep, "| # | check")}

What the numbers say (the report's own summary):

{chr(10).join(bullets)}

Every variant against 1/sqrt(d_k) on `{cfg["task"]}`, paired by seed (mean difference [95 % percentile bootstrap
interval] (t: the Student t interval), exact sign-flip p; steps to 90 % censored; escaped/stuck counts
with Fisher's exact test):

{block(rep, "| variant vs sqrt_dk")}

{power}

The second task, `recall` (its loss falls smoothly, so the effects show in the loss curves):

{block(rep, "| variant | d_k | final val loss (mean +- sd) | mean val loss over the run")}

Training table on `{cfg["task"]}` (init logit std per cell):

{block(rep, "| variant | d_k | init logit std")}

""" + "\n".join(f"![{alt}](docs/img/demo/{name}.png)" for name, alt in plots) + "\n"
    s = open("README.md").read()
    a, b = s.index("## What `make demo` shows"), s.index("## The program")
    open("README.md", "w").write(s[:a] + section + "\n" + s[b:])


if __name__ == "__main__":
    cli(main)
