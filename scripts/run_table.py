#!/usr/bin/env python3
"""Print the validation table of a qkt train run (docs/train.md's Tiny Shakespeare table)
from its log.csv, so the docs' numbers come from the run, not from typing.

usage: scripts/run_table.py LOG.csv [STEP ...]   (default steps: 0 100 200 300 400 500 700 1000 1500 2000)
"""
import csv
import sys


def main():
    path = sys.argv[1]
    steps = [int(s) for s in sys.argv[2:]] or [0, 100, 200, 300, 400, 500, 700, 1000, 1500, 2000]
    rows = {int(r["step"]): r for r in csv.DictReader(open(path)) if r["val_loss"]}
    missing = [s for s in steps if s not in rows]
    if missing:
        sys.exit(f"{path}: no validation row at step {', '.join(map(str, missing))}")
    cells = lambda f: " | ".join(f(rows[s]) for s in steps)
    print("| step | " + " | ".join(map(str, steps)) + " |")
    print("|---" * (len(steps) + 1) + "|")
    print("| val loss | " + cells(lambda r: f"{float(r['val_loss']):.3f}") + " |")
    print("| val acc | " + cells(lambda r: f"{float(r['val_acc']):.3f}") + " |")
    print("| elapsed | " + cells(lambda r: f"{float(r['elapsed_s']):.0f} s") + " |")


if __name__ == "__main__":
    main()
