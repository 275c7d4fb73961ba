#!/usr/bin/env python3
"""Print the validation table of a qkt train run (docs/train.md's Tiny Shakespeare table)
from its log.csv, so the docs' numbers come from the run, not from typing.

usage: scripts/run_table.py LOG.csv [STEP ...]   (default steps: 0 100 200 300 400 500 700 1000 1500 2000)
"""
import csv
import sys

from doc_section import cli

STEPS = [0, 100, 200, 300, 400, 500, 700, 1000, 1500, 2000]


def read_rows(path):
    """log.csv's rows by step (every row, validation or not)."""
    return {int(r["step"]): r for r in csv.DictReader(open(path))}


def table(rows, steps=STEPS, path="log.csv"):
    """The Markdown table of the validation rows at `steps`."""
    val = {s: r for s, r in rows.items() if r["val_loss"]}
    missing = [s for s in steps if s not in val]
    if missing:
        sys.exit(f"{path}: no validation row at step {', '.join(map(str, missing))}")
    cells = lambda f: " | ".join(f(val[s]) for s in steps)
    return "\n".join([
        "| step | " + " | ".join(map(str, steps)) + " |",
        "|---" * (len(steps) + 1) + "|",
        "| val loss | " + cells(lambda r: f"{float(r['val_loss']):.3f}") + " |",
        "| val acc | " + cells(lambda r: f"{float(r['val_acc']):.3f}") + " |",
        "| elapsed | " + cells(lambda r: f"{float(r['elapsed_s']):.0f} s") + " |",
    ]) + "\n"


def main():
    path = sys.argv[1]
    steps = [int(s) for s in sys.argv[2:]] or STEPS
    print(table(read_rows(path), steps, path), end="")


if __name__ == "__main__":
    cli(main)
