#!/usr/bin/env python3
"""`qkt bench --ops` of two qkt builds side by side: A and B alternately (A first in odd
rounds, B first in even ones), so both see the same machine load; prints per timed line
(op, residual, layernorm, attention, adamw) the median of each build's times and the median of the
per-round ratios B / A (< 1: B is faster), with their min-max.

usage: bench/compare_ops.py [-r ROUNDS] [-t THREADS] [-s STEPS] [--only KIND] A_BIN B_BIN
  e.g. bench/compare_ops.py -r 5 --only attention /tmp/qkt-before build/qkt

Each `qkt bench --ops` line is the best of --steps repetitions (cli/cmd_bench.c); a line's
key is its words without the timings, so both builds must print the same lines.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

KINDS = ("op", "residual", "layernorm", "attention", "adamw")
TIME = re.compile(r"^(ms|forward_ms|forward_backward_ms|ns_per_param)=([0-9.eE+-]+)$")


def run(binary, threads, steps, only):
    """{line key: {timing name: value}} of one `qkt bench --ops` run."""
    cmd = [binary, "bench", "--ops", "--threads", str(threads), "--steps", str(steps)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        err = (done.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit("compare_ops.py: %s exited with %d: %s" % (" ".join(cmd), done.returncode, err))
    out = done.stdout
    lines = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) < 3 or words[0] != "qkt" or (only and words[1] != only):
            continue
        key = " ".join(w for w in words[1:] if not TIME.match(w) and not w.startswith("isa="))
        lines[key] = {m.group(1): float(m.group(2)) for m in map(TIME.match, words) if m}
    if not lines:
        sys.exit("compare_ops.py: %s printed no %s lines" % (" ".join(cmd), only or "timed"))
    return lines


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % n)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-r", "--rounds", type=positive, default=5, help="rounds of both builds (default 5)")
    ap.add_argument("-t", "--threads", type=positive, default=1, help="qkt bench --threads (default 1)")
    ap.add_argument("-s", "--steps", type=positive, default=50, help="qkt bench --steps: repetitions per line, the best kept (default 50)")
    ap.add_argument("--only", choices=KINDS, help="only lines of this kind")
    ap.add_argument("a", metavar="A_BIN", help="the first qkt binary (the ratios' denominator)")
    ap.add_argument("b", metavar="B_BIN", help="the second qkt binary")
    args = ap.parse_args()
    for b in (args.a, args.b):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            sys.exit("compare_ops.py: %s is not an executable file" % b)
    rounds = []
    for r in range(args.rounds):
        order = [args.a, args.b] if r % 2 == 0 else [args.b, args.a]
        got = {b: run(b, args.threads, args.steps, args.only) for b in order}
        rounds.append((got[args.a], got[args.b]))
    first_a, first_b = rounds[0]
    if set(first_a) != set(first_b):
        sys.exit("compare_ops.py: the two builds print different lines: %s" % sorted(set(first_a) ^ set(first_b)))
    print("# A = %s, B = %s; %d rounds, --threads %d --steps %d" % (args.a, args.b, args.rounds, args.threads, args.steps))
    print("%-72s %-20s %10s %10s %7s %s" % ("line", "timing", "A", "B", "B/A", "min-max"))
    for key in first_a:
        for name in first_a[key]:
            a = [ra[key][name] for ra, _ in rounds]
            b = [rb[key][name] for _, rb in rounds]
            ratio = [y / x for x, y in zip(a, b) if x > 0]
            print("%-72s %-20s %10.4f %10.4f %7.3f %.2f-%.2f" % (key, name, statistics.median(a), statistics.median(b),
                                                              statistics.median(ratio), min(ratio), max(ratio)))


if __name__ == "__main__":
    main()
