#!/usr/bin/env python3
"""Measures the attention logits at init of sqrt_dk, sigma_reparam and sigma_qk and writes docs/nn.md's
table ("Measured: the logits at init").

usage: scripts/sigma_init_doc.py BUILD_DIR      (e.g. build)
Runs the `qkt ablate` command the section names (a small study of the three variants at d_k 16 and 64,
3 seeds) in a temporary directory and writes column `init_logit_std` of its summary.csv (the std of the
scaled logits at step 0, mean over layers and heads) for the train cells, per variant, d_k and seed.
"""
import csv
import os
import sys
import tempfile

from doc_section import qkt_binary, run, usage, write_section

VARIANTS = ["sqrt_dk", "sigma_reparam", "sigma_qk"]
FLAGS = ("--preset quick --name sigma_init --task mqar --variants sqrt_dk,sigma_reparam,sigma_qk --d-k 16,64 --seeds 3 "
         "--steps 20 --eval-every 20 --task2 none --lr-variants sqrt_dk --lr-grid 0.003 --lr-steps 5 --lr-seeds 1 "
         "--start-d-k 0 --init-d-k 16 --growth-d-k 16")


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    qkt = qkt_binary(sys.argv[1], "sigma_init_doc.py")
    with tempfile.TemporaryDirectory() as tmp:
        run([qkt, "ablate"] + FLAGS.split() + ["--out", tmp], "sigma_init_doc.py", "qkt ablate")
        rows = list(csv.DictReader(open(os.path.join(tmp, "sigma_init", "summary.csv"))))
    version = run([qkt, "version"], "sigma_init_doc.py", "qkt version").strip()
    std = {}
    for r in rows:
        if r["experiment"] == "train":
            std.setdefault((r["variant"], int(r["d_k"])), []).append((int(r["seed"]), float(r["init_logit_std"])))
    seeds = sorted({s for v in std.values() for s, _ in v})
    text = ("`qkt ablate %s` (mqar on the study's model: 2 layers, 2 heads, `qk_init unit`, init std 0.08), column "
            "`init_logit_std` of its `summary.csv` (std of the scaled logits at step 0, mean over layers and heads), "
            "seeds %s; written by `scripts/sigma_init_doc.py` (`%s`):\n\n"
            % (FLAGS, ", ".join(str(s) for s in seeds), version))
    text += "| d_k | " + " | ".join("`%s`" % v for v in VARIANTS) + " |\n|---|" + "---|" * len(VARIANTS) + "\n"
    for dk in (16, 64):
        cells = []
        for v in VARIANTS:
            vals = sorted(std.get((v, dk), []))
            cells.append(", ".join("%.3f" % x for _, x in vals) if vals else "-")
        text += "| %d | %s |\n" % (dk, " | ".join(cells))
    write_section("docs/nn.md", "sigma-init", "sigma_init_doc.py", text)
    print(text, end="")


if __name__ == "__main__":
    main()
