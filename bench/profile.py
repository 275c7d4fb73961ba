#!/usr/bin/python3
"""Where a `qkt bench` step's time goes, by kind of work, from `perf record` samples.

usage: bench/profile.py [--qkt build/qkt] [--steps N] [--freq HZ] [--top N] [-- BENCH FLAGS...]
   e.g. bench/profile.py -- --config cell32 --threads 1
        bench/profile.py -- --config tiny --threads 2 --replicas 2

Runs `perf record --call-graph dwarf` on `qkt bench --peak 1` plus the given flags (the
peak is not measured, so the samples are the steps), then puts each sample in one
category by its function. The tile product qkt__mk_r8w32 (and its other shapes) serves
both qkt's own gemm and the fused attention, so its samples go to the category of the
first caller that is not a tile product (gemm_block / own_gemm: products; attn_*:
attention). Prints the categories' shares of all samples, then the top functions.
Shares, not times: a loaded machine changes both the step time and the waits
(runtime: OpenMP barriers, the kernel), so compare shares between runs of one day.
Needs perf (linux-perf) and a build with symbols (the default build's -g).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

# (category, regex on the function name): the first match wins; the order matters.
CATEGORIES = [
    ("attention", r"^(attn_|strip_rows|copy_rows|copy_transposed|key_bias|add_bias|key_grads_transposed|row_dots|qkt_attn|qkt__attn|forward_task|backward_task)"),
    ("products", r"^(own_gemm|gemm_|qkt__gemm|qkt_gemm|gemm_run|gemm_serial|gemm_blas|cblas_|sgemm|dgemm)|_sgemm_|_dgemm_|^[sd]gemm_"),
    ("gelu", r"gelu"),
    ("layernorm", r"layernorm|^ln_|^rms_row|^l2_row"),
    ("column sums (bias, LN gain grads)", r"colsum"),
    ("elementwise (residual adds)", r"^binary_|^residual_epilogue"),
    ("cross-entropy", r"cross_entropy|^ce_|^__ieee754_log|^log(@|$)"),
    ("optimizer (AdamW, grad norms)", r"adam|sumsq|qkt_optim|qkt_adamw|clip"),
    ("embedding", r"embedding"),
    ("memcpy / memset", r"memmove|memcpy|memset"),
    ("allocation", r"malloc|free|_int_|calloc|qkt_arena|pool_alloc|realloc|mmap|munmap"),
    ("tape / op bookkeeping", r"^qkt_"),
]
TILE = re.compile(r"^qkt__mk_")


def categorize(sym, dso):
    for name, rx in CATEGORIES:
        if re.search(rx, sym):
            return name
    if "libgomp" in dso:
        return "OpenMP runtime"
    if dso.startswith("[kernel") or sym.startswith("[k]"):
        return "kernel (page faults, interrupts)"
    return "other"


def samples(script_out):
    """Yield each sample's call chain as [(sym, dso), ...], leaf first."""
    chain = []
    for line in script_out.splitlines():
        if not line.strip():
            if chain:
                yield chain
            chain = []
            continue
        if not line.startswith((" ", "\t")):
            continue  # the sample's header line
        m = re.match(r"\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            sym = re.sub(r"\+0x[0-9a-f]+$", "", m.group(1))
            chain.append((sym, os.path.basename(m.group(2))))
    if chain:
        yield chain


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qkt", default="build/qkt")
    ap.add_argument("--steps", type=int, default=500, help="timed steps of qkt bench (default 500)")
    ap.add_argument("--freq", type=int, default=997, help="samples per second (default 997)")
    ap.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    ap.add_argument("bench", nargs="*", help="qkt bench flags, after --")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        cmd = ["perf", "record", "-q", "-o", data, "-F", str(a.freq), "--call-graph", "dwarf,8192", "--",
               a.qkt, "bench", "--peak", "1", "--steps", str(a.steps)] + a.bench
        try:
            run = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError:
            sys.exit("profile.py: perf is not installed (Debian: linux-perf)")
        if run.returncode != 0:
            tail = run.stderr.strip().splitlines()
            sys.exit("profile.py: %s failed: %s" % (" ".join(cmd), tail[-1] if tail else "exit %d" % run.returncode))
        line = [l for l in run.stdout.splitlines() if l.startswith("qkt ")]
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,dso", "--no-inline"],
                                capture_output=True, text=True, check=True).stdout
    cats, funcs, other, n = Counter(), Counter(), Counter(), 0
    for chain in samples(script):
        sym, dso = chain[0]
        n += 1
        funcs[sym] += 1
        if TILE.match(sym):  # the tile product: charge it to its caller's kind
            caller = next((s for s, _ in chain[1:] if not TILE.match(s)), "")
            cats["attention" if caller.startswith(("attn_", "strip_rows", "key_grads_transposed")) else "products"] += 1
        else:
            cat = categorize(sym, dso)
            cats[cat] += 1
            if cat == "other":
                other[sym] += 1
    if n == 0:
        sys.exit("profile.py: perf recorded no samples")
    print("# " + " ".join(["qkt", "bench"] + a.bench) + (" | " + line[-1] if line else ""))
    print("# %d samples" % n)
    for name, c in cats.most_common():
        print("%-40s %5.1f %%" % (name, 100.0 * c / n))
    print("# other, largest: " + ", ".join("%s %.1f %%" % (s, 100.0 * c / n) for s, c in other.most_common(5)))
    print("# top functions")
    for sym, c in funcs.most_common(a.top):
        print("%-40s %5.1f %%" % (sym, 100.0 * c / n))


if __name__ == "__main__":
    main()
