#!/usr/bin/python3
"""Measures what docs/ablate.md states of the study's main task and of its init std, and writes two
sections there: "main-task" (steps to 90 % on the quick preset's training cells, per variant, d_k
and seed, by qkt and by a PyTorch model of the same shape; mqar measured the same way) and
"init-std" (validation accuracy on mqar with init std 0.02 and 0.08, W_q/W_k drawn by either rule).

usage: /usr/bin/python3 scripts/main_task_doc.py BUILD_DIR        (e.g. build; about 10 minutes on 2 cores)
main-task: scripts/task_learnability.py's --study runs (the commands are written into the section).
init-std: `qkt ablate` on mqar (the quick preset's model and optimizer, d_k 16, 600 steps, one seed)
with --init-std 0.02 and 0.08 and --qk-init gpt2 and unit, the cells' validation accuracy at steps
100, 200 and 600.
Needs PyTorch (python3-torch) for the PyTorch line.
"""
import os
import re
import sys
import tempfile

import doc_section
from doc_section import ROOT, cell_metric, qkt_binary, usage, write_section

LEARN = os.path.join(ROOT, "scripts", "task_learnability.py")
MAIN = "--study --variants sqrt_dk,none,dk,qk_layernorm --d-k 8,16,64 --seeds 10 induction"
MQAR = "--study --d-k 16,64 --seeds 3 mqar"
TORCH = "--study --torch-only --d-k 16,64 --seeds 3 induction"
INIT = ("--preset quick --task mqar --variants sqrt_dk,none --d-k 16 --seeds 1 --steps 600 --eval-every 100 --task2 none "
        "--lr-variants sqrt_dk --lr-grid 0.003 --lr-steps 5 --lr-seeds 1 --start-d-k 0 --init-d-k 16 --growth-d-k 16")
LINE = re.compile(r"^\s+(qkt|torch)\s+(\S+) d_k\s+(\d+): (\d+)/(\d+) reach 90 %; steps ([-\d ]+?)(?: \(median \d+\))?; "
                  r"final acc ([\d.]+)\.\.([\d.]+)$")


def run(cmd, what):
    return doc_section.run(cmd, "main_task_doc.py", what)


def study(qkt, flags):
    """{(who, variant, d_k): (reached, n, [steps or None], lo, hi)} from task_learnability.py's --study lines."""
    res = {}
    for line in run(["/usr/bin/python3", LEARN, qkt] + flags.split(), "task_learnability.py " + flags).splitlines():
        m = LINE.match(line)
        if m:
            steps = [None if s == "-" else int(s) for s in m.group(6).split()]
            res[(m.group(1), m.group(2), int(m.group(3)))] = (int(m.group(4)), int(m.group(5)), steps, float(m.group(7)),
                                                              float(m.group(8)))
    if not res:
        sys.exit("main_task_doc.py: task_learnability.py %s printed no result lines" % flags)
    return res


def cell(r):
    reached, n, steps, lo, hi = r
    if reached == 0:
        return "0/%d (final acc %.3f-%.3f)" % (n, lo, hi)
    if len(set(steps)) == 1:
        text = "%d/%d: %d x %d" % (reached, n, steps[0], n)
    else:
        text = "%d/%d: %s" % (reached, n, " ".join("-" if s is None else str(s) for s in steps))
    return text + ("" if lo == 1.0 else " (final %.3f-%.3f)" % (lo, hi))


def main_task(qkt):
    res = study(qkt, MAIN)
    variants = ["sqrt_dk", "none", "dk", "qk_layernorm"]
    dks = sorted({d for _, _, d in res})
    text = ("Measured with `scripts/task_learnability.py build/qkt %s` (`qkt ablate` restricted to the training cells of "
            "the quick preset: batch 16, 200 steps, evaluations every 20 steps; final accuracy on the 1024 fixed validation "
            "sequences): the first evaluation step with validation accuracy >= 0.9, per seed (`-`: not within 200 steps):\n\n" % MAIN)
    text += "| variant | " + " | ".join("d_k %d" % d for d in dks) + " |\n|---|" + "---|" * len(dks) + "\n"
    for v in variants:
        text += "| `%s` | %s |\n" % (v, " | ".join(cell(res[("qkt", v, d)]) for d in dks))
    mq = study(qkt, MQAR)
    text += "\n`mqar` measured the same way (`... %s`): " % MQAR
    text += "; ".join("`%s` at d_k %d %s" % (v, d, cell(r)) for (_, v, d), r in sorted(mq.items(), key=lambda kv: (kv[0][2], kv[0][1] != "sqrt_dk")))
    th = study(qkt, TORCH)
    text += (".\n\nThe PyTorch model of the same shape (`... %s`: 2 layers, 2 heads of width d_k, the preset's optimizer and "
             "schedule, PyTorch's default init, the same sequences): " % TORCH)
    text += "; ".join("`%s` at d_k %d %s" % (v, d, cell(r)) for (_, v, d), r in sorted(th.items(), key=lambda kv: (-kv[0][2], kv[0][1] != "sqrt_dk")))
    return text + ".\n"


def init_std(qkt, tmp):
    acc = {}
    for qk in ("gpt2", "unit"):
        for std in ("0.02", "0.08"):
            name = "std%s_%s" % (std, qk)
            run([qkt, "ablate"] + INIT.split() + ["--init-std", std, "--qk-init", qk, "--name", name, "--out", tmp],
                "qkt ablate --init-std %s --qk-init %s" % (std, qk))
            for v in ("sqrt_dk", "none"):
                got = cell_metric(os.path.join(tmp, name, "cells", "train_%s_dk16_s0.csv" % v), "val_acc")
                acc.update({(qk, std, v, step): a for step, a in got.items()})
    text = ("`qkt ablate %s --init-std S --qk-init Q` (mqar, T = 32, d_k = 16, 2 heads, lr 3e-3, 600 steps, one seed), "
            "the cells' validation accuracy; written by `scripts/main_task_doc.py`:\n\n" % INIT)
    text += ("| init std | W_q, W_k (`--qk-init`) | sqrt_dk: val accuracy at step 100 / 200 / 600 | none: at step 100 / 200 / 600 |\n"
             "|---|---|---|---|\n")
    for qk, what in (("gpt2", "`gpt2`: N(0, init std^2)"), ("unit", "`unit`: N(0, 1/d_model)")):
        for std, label in (("0.02", "0.02 (GPT-2)"), ("0.08", "0.08")):
            text += "| %s | %s | %s |\n" % (label, what, " | ".join(
                " / ".join("%.2f" % acc[(qk, std, v, s)] for s in (100, 200, 600)) for v in ("sqrt_dk", "none")))
    return text


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    qkt = qkt_binary(sys.argv[1], "main_task_doc.py")
    with tempfile.TemporaryDirectory() as tmp:
        std = init_std(qkt, tmp)
    main = main_task(qkt)
    version = run([qkt, "version"], "qkt version").strip()
    main += "\nWritten by `scripts/main_task_doc.py` (`%s`).\n" % version
    write_section("docs/ablate.md", "main-task", "main_task_doc.py", main)
    write_section("docs/ablate.md", "init-std", "main_task_doc.py", std)
    print(main + "\n" + std, end="")


if __name__ == "__main__":
    main()
