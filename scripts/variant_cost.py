#!/usr/bin/env python3
"""CPU cost per training step of scale variants, from `qkt train` runs in interleaved rounds.

    scripts/variant_cost.py QKT [--variants sqrt_dk,sigma_reparam] [--n-embd 32,128] [--rounds 5] [--steps 300]

Each round runs every variant once per width, one after another (so a load change on a shared
machine hits all variants of the round alike), on the study's cell model (mqar, 2 layers, 2 heads,
T 32, batch 16, one thread, no evaluation but the first and last). The CPU time (user + system) of
each run is its process's own (os.wait4), divided by --steps: the set-up (data, init, the first and
last evaluation) is included, alike for every variant.
Prints per width and variant the median over rounds, and each variant's median ratio to the first's
(the ratio of the same round's runs, median over rounds)."""
import argparse
import os
import statistics
import subprocess
import tempfile

from doc_section import cli


def run_cpu(qkt, variant, n_embd, steps, out):
    args = [qkt, "train", "--data", "mqar", "--n-layer", "2", "--n-head", "2", "--n-embd", str(n_embd), "--block-size", "32",
            "--batch-size", "16", "--steps", str(steps), "--eval-every", "0", "--threads", "1", "--attn-scale", variant,
            "--out", out, "--log-every", str(steps), "--ckpt-every", "0"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit("%s exited with status %d" % (" ".join(args), status))
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("qkt")
    ap.add_argument("--variants", default="sqrt_dk,sigma_reparam")
    ap.add_argument("--n-embd", default="32,128")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    variants, widths = a.variants.split(","), [int(x) for x in a.n_embd.split(",")]
    cpu = {(v, c): [] for v in variants for c in widths}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for c in widths:
                for v in variants:
                    cpu[(v, c)].append(run_cpu(a.qkt, v, c, a.steps, os.path.join(tmp, "%s_%d_%d" % (v, c, r))))
    for c in widths:
        base = cpu[(variants[0], c)]
        for v in variants:
            ms = statistics.median(cpu[(v, c)]) / a.steps * 1e3
            ratio = statistics.median([x / b for x, b in zip(cpu[(v, c)], base)])
            print("n_embd %4d d_k %3d %-14s %.3f CPU-ms/step (median of %d), x%.3f of %s" % (c, c // 2, v, ms, a.rounds, ratio, variants[0]))


if __name__ == "__main__":
    cli(main)
