#!/usr/bin/python3
"""Measures what docs/data.md states of the tasks' learnability and writes its two sections:
"recall-curve" (the recall task's validation loss during training) and "learnability" (steps until
each task is learnt, by qkt's GPT and by the PyTorch reference of scripts/task_learnability.py).

usage: /usr/bin/python3 scripts/data_doc.py BUILD_DIR        (e.g. build; about 15 minutes on one core)
recall-curve: one `qkt ablate` run (the quick preset's model on `recall`, d_k 8 and 64, sqrt_dk and
none, one seed, 300 steps), its cells' validation loss every 20 steps.
learnability: per task, `qkt train` (2 layers, 4 heads, width 64, batch 32, 600 steps, lr 3e-3, seed 1)
and scripts/task_learnability.py (the same shape in PyTorch, lr 1e-3, seeds 1, 2, 3); the steps until
validation accuracy first reached 90 % (evaluated every 50 steps), for bigram the validation loss at
step 600. Then the mqar plateau: the reference with GPT-2's init (800 steps) and the reference on mqar
with 8 pairs, vocab 64 and 8 queries (3,000 steps). Needs PyTorch (python3-torch).
"""
import csv
import os
import re
import sys
import tempfile

import doc_section
from doc_section import ROOT, cell_metric, qkt_binary, usage, write_section

TASKS = ["mqar", "induction", "sort", "reverse", "copy", "bigram"]
SEEDS = [1, 2, 3]
STEPS, EVERY = 600, 50
TRAIN = "--n-layer 2 --n-head 4 --n-embd 64 --batch-size 32 --steps %d --lr 3e-3 --warmup-steps 20 --eval-every %d --seed 1" % (STEPS, EVERY)
RECALL = ("--preset quick --name recall --task recall --variants sqrt_dk,none --d-k 8,64 --seeds 1 --steps 300 --eval-every 20 "
          "--task2 none --lr-variants sqrt_dk --lr-grid 0.003 --lr-steps 5 --lr-seeds 1 --start-d-k 0 --init-d-k 8 --growth-d-k 8")
OLD_MQAR = "mqar:n_pairs=8,vocab=64,n_queries=8"
LEARN = os.path.join(ROOT, "scripts", "task_learnability.py")


def run(cmd, what):
    return doc_section.run(cmd, "data_doc.py", what)


def recall_curve(qkt, tmp):
    run([qkt, "ablate"] + RECALL.split() + ["--out", tmp], "qkt ablate")
    curves = {}
    for name in sorted(os.listdir(os.path.join(tmp, "recall", "cells"))):
        m = re.fullmatch(r"train_(\w+?)_dk(\d+)_s0\.csv", name)
        if not m:
            continue
        loss = cell_metric(os.path.join(tmp, "recall", "cells", name), "val_loss")
        curves[(m.group(1), int(m.group(2)))] = [loss[s] for s in sorted(loss)]
    text = ("`qkt ablate %s`: validation loss at steps 0, 20, 40, .., 300 (the quick preset's model: 2 layers, 2 heads, "
            "T 32, batch 16, AdamW 3e-3 with warmup 20 and cosine, `qk_init unit`, init std 0.08; one seed); the evaluations "
            "read 64 fixed validation sequences, the last, at step 300, the 1024 of the final evaluation:\n\n" % RECALL)
    text += "| d_k | variant | validation loss |\n|---|---|---|\n"
    for (v, d), c in sorted(curves.items(), key=lambda kv: (-kv[0][1], kv[0][0] != "sqrt_dk")):
        text += "| %d | `%s` | %s |\n" % (d, v, ", ".join("%.2f" % x for x in c))
    return text


def first90(accs):
    """The first evaluated step with accuracy >= 0.9, or None; accs: [(step, acc)]."""
    return next((s for s, a in accs if a >= 0.9), None)


def qkt_train(qkt, spec, tmp):
    out = os.path.join(tmp, "train_" + spec.split(":")[0])
    run([qkt, "train", "--data", spec] + TRAIN.split() + ["--threads", "1", "--out", out], "qkt train " + spec)
    accs, loss = [], None
    for r in csv.DictReader(open(os.path.join(out, "log.csv"))):
        if r["val_acc"]:
            accs.append((int(r["step"]), float(r["val_acc"])))
            loss = float(r["val_loss"])
    return first90(accs), loss, accs[-1][1]


def reference(qkt, spec, seed, extra):
    """scripts/task_learnability.py on one task: (steps to 90 %, final val loss, final acc)."""
    text = run(["/usr/bin/python3", LEARN, qkt, spec, "--lr", "1e-3", "--seed", str(seed)] + extra, "task_learnability.py " + spec)
    m = re.search(r"final val loss ([\d.]+) acc ([\d.]+); first eval with acc>=0.9: (\w+)", text)
    if not m:
        sys.exit("data_doc.py: task_learnability.py printed no result line for %s: %s" % (spec, text[-300:]))
    return (None if m.group(3) == "None" else int(m.group(3))), float(m.group(1)), float(m.group(2))


def steps_text(s, acc):
    return str(s) if s is not None else "not within %d steps (accuracy %.2f)" % (STEPS, acc)


def learnability(qkt, tmp):
    best = re.search(r"best: loss ([\d.]+)", run([qkt, "data", "--show", "bigram"], "qkt data")).group(1)
    rows = []
    for spec in TASKS:
        s, loss, acc = qkt_train(qkt, spec, tmp)
        refs = [reference(qkt, spec, seed, []) for seed in SEEDS]
        if spec == "bigram":
            rows.append("| bigram (best %s) | %.3f | %s |" % (best, loss, ", ".join("%.3f" % r[1] for r in refs)))
        else:
            rows.append("| %s | %s | %s |" % (spec, steps_text(s, acc), ", ".join(steps_text(r[0], r[2]) for r in refs)))
    g2 = reference(qkt, "mqar", 1, ["--gpt2-init", "--steps", "800"])
    old = reference(qkt, OLD_MQAR, 1, ["--steps", "3000", "--every", "100"])
    version = run([qkt, "version"], "qkt version").strip()
    text = ("Two models on the exact sequences qkt produces: qkt's own GPT (`qkt train --data TASK %s`: GPT-2 init "
            "N(0, 0.02), AdamW with 20 warmup steps, cosine to 3e-4, weight decay 0.1, beta2 0.95, grad clip 1), and a "
            "PyTorch reference (`scripts/task_learnability.py QKT TASK --lr 1e-3 --seed S`: pre-LN GPT-2 blocks with "
            "PyTorch's default init, AdamW lr 1e-3, 50 warmup steps then constant, no weight decay; seeds %s, fed by "
            "`qkt data --dump`). Steps until validation accuracy first reached 90 %% (evaluated every %d steps; bigram: "
            "validation loss at step %d against its best). Written by `scripts/data_doc.py` (`%s`):\n\n"
            % (TRAIN, ", ".join(map(str, SEEDS)), EVERY, STEPS, version))
    text += "| task | qkt GPT (seed 1) | PyTorch reference (seeds %s) |\n|---|---|---|\n" % ", ".join(map(str, SEEDS))
    text += "\n".join(rows) + "\n\n"
    text += ("The mqar plateau, measured by the same script: the reference with GPT-2's N(0, 0.02) init "
             "(`--gpt2-init --steps 800`, seed 1) ends at accuracy %.2f after 800 steps (90 %%: %s); the reference on "
             "`%s` (`--steps 3000 --every 100`, seed 1) ends at accuracy %.2f after 3,000 steps (90 %%: %s).\n"
             % (g2[2], g2[0] if g2[0] is not None else "never", OLD_MQAR, old[2], old[0] if old[0] is not None else "never"))
    return text


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    qkt = qkt_binary(sys.argv[1], "data_doc.py")
    with tempfile.TemporaryDirectory() as tmp:
        curve = recall_curve(qkt, tmp)
        learn = learnability(qkt, tmp)
    write_section("docs/data.md", "recall-curve", "data_doc.py", curve)
    write_section("docs/data.md", "learnability", "data_doc.py", learn)
    print(curve + "\n" + learn, end="")


if __name__ == "__main__":
    main()
