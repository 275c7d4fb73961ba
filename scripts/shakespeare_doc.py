#!/usr/bin/env python3
"""Rewrite docs/train.md's Tiny Shakespeare results and docs/runs/ from a run of the
command that section shows, so its numbers are the run's, not typed.

usage: scripts/shakespeare_doc.py RUN_DIR QKT_BINARY
  RUN_DIR     the --out of that `qkt train` command, finished
  QKT_BINARY  the qkt that made it: it samples the section's text from RUN_DIR's checkpoint
              and names its build (`qkt version`)
Writes docs/runs/shakespeare_{log.csv,train.json,sample.txt} and the table, the paragraph
after it and the sample in docs/train.md (run from the repository's root).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_table  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    run, qkt = sys.argv[1], sys.argv[2]
    rows = run_table.read_rows(os.path.join(run, "log.csv"))
    cfg = json.load(open(os.path.join(run, "train.json")))
    steps = int(cfg["steps"])
    version = subprocess.run([qkt, "version"], capture_output=True, text=True, check=True).stdout.strip()
    sample = subprocess.run([qkt, "sample", "--ckpt", os.path.join(run, "ckpt.safetensors"), "--prompt", "ROMEO:",
                             "--tokens", "400"], capture_output=True, text=True, check=True).stdout
    # docs/runs: the log, train.json with the data path as the command gave it, the sample
    shutil.copyfile(os.path.join(run, "log.csv"), "docs/runs/shakespeare_log.csv")
    cfg["data"] = re.sub(r"^text:.*?(data/corpora/)", r"text:\1", cfg["data"])
    with open("docs/runs/shakespeare_train.json", "w") as f:
        f.write(json.dumps(cfg, indent="\t").replace('": ', '":\t'))
    open("docs/runs/shakespeare_sample.txt", "w").write(sample)
    first, last = rows[0], rows[steps]
    wall = float(last["elapsed_s"])
    para = (f"From {float(first['val_loss']):.2f} (ln {cfg['vocab_size']} = {math.log(cfg['vocab_size']):.2f}) to "
            f"{float(rows[500]['val_loss']):.3f} at step 500 and {float(last['val_loss']):.3f} after {steps} steps; "
            f"train loss at the end {float(last['loss']):.2f}. {wall // 60:.0f} min {wall % 60:.0f} s of wall time on one "
            f"thread (`{version}`), on a 2-core machine shared with other jobs, so an idle core is faster.\n")
    md = open("docs/train.md").read()
    start = md.index("`scripts/run_table.py docs/runs/shakespeare_log.csv`):\n\n") + len(
        "`scripts/run_table.py docs/runs/shakespeare_log.csv`):\n\n")
    end = md.index("\nThreads: ", start)
    md = md[:start] + run_table.table(rows) + "\n" + para + md[end:]
    s = md.index("`docs/runs/shakespeare_sample.txt`):\n\n```\n") + len("`docs/runs/shakespeare_sample.txt`):\n\n```\n")
    e = md.index("```", s)
    md = md[:s] + sample.rstrip("\n") + "\n" + md[e:]
    open("docs/train.md", "w").write(md)


if __name__ == "__main__":
    main()
