#!/usr/bin/env python3
"""Measures the pieces the docs time with `qkt bench` and writes those figures: the elementwise ops
(docs/autograd.md, "ops-times"), the residual add in the output projection's product (docs/autograd.md,
"residual-times"), AdamW (docs/optim.md, "adamw-times") and data-parallel replicas
within one process (docs/train.md, "replicas-times").

usage: scripts/bench_doc.py BUILD_DIR      (e.g. build: the default build)
Runs BUILD_DIR/qkt bench --ops --steps 31 --warmup 3 at 1 and 2 threads, keeping each line's best
round (a figure is a best of 31 repetitions already), and `qkt bench --config tiny|small` at
(threads, replicas) = (1, 1), (1, 2), (2, 1), (2, 2), keeping each one's median round; 3 rounds,
interleaved. Nothing is typed: every figure is one of the runs'.
"""
import re
import subprocess
import sys
import time

from doc_section import machine, qkt_binary, usage, write_section

ROUNDS = 3


def run(qkt, threads):
    out = subprocess.run([qkt, "bench", "--ops", "--steps", "31", "--warmup", "3", "--threads", str(threads)],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit("bench_doc.py: qkt bench --ops exited %d: %s" % (out.returncode, out.stderr.strip()))
    rows = {}
    for l in out.stdout.splitlines():
        f = l.split()
        kv = dict(x.split("=", 1) for x in f[2:] if "=" in x) if len(f) > 2 else {}
        if f[:2] == ["qkt", "op"]:
            rows[("op", f[2])] = kv
        elif f[:2] == ["qkt", "residual"]:
            rows[("residual", f[2], kv["width"])] = kv
        elif f[:2] == ["qkt", "adamw"]:
            rows[("adamw", kv["params"])] = kv
    return rows


def step_ms(qkt, config, threads, replicas):
    out = subprocess.run([qkt, "bench", "--config", config, "--threads", str(threads), "--replicas", str(replicas), "--steps", "20",
                          "--warmup", "3", "--peak", "100"], capture_output=True, text=True)
    m = re.search(r"ms_per_step=([0-9.]+)", out.stdout)
    if out.returncode or not m:
        sys.exit("bench_doc.py: qkt bench --config %s exited %d: %s" % (config, out.returncode, out.stderr.strip()))
    return float(m.group(1))


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    qkt = qkt_binary(sys.argv[1], "bench_doc.py")
    where = machine(qkt, "bench_doc.py")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    best = {1: {}, 2: {}}
    steps = {}
    for _ in range(ROUNDS):
        for t in (1, 2):
            for k, kv in run(qkt, t).items():
                if k not in best[t] or float(kv["ms"]) < float(best[t][k]["ms"]):
                    best[t][k] = kv
        for config in ("tiny", "small"):
            for t in (1, 2):
                for r in (1, 2):
                    steps.setdefault((config, t, r), []).append(step_ms(qkt, config, t, r))
    med = {k: sorted(v)[len(v) // 2] for k, v in steps.items()}
    how = ("Measured by `scripts/bench_doc.py` (`qkt bench --ops`: best of 31 repetitions, best of %d rounds; started %s) "
           "on %s."
           % (ROUNDS, started, where))

    def ms(t, name):
        return "%.2f ms" % float(best[t][("op", name)]["ms"])

    n = best[1][("op", "mul_same")]["elements"]
    ops = ("Forward plus backward on %s elements, one thread: same-shape mul %s, bias add %s (%s with the bias first; "
           "the fast path); `(B, T, C) * (B, T, 1)` %s and same-shape div %s (the general path). %s\n"
           % (n, ms(1, "mul_same"), ms(1, "add_bias"), ms(1, "add_bias_first"), ms(1, "mul_bt1"), ms(1, "div_same"), how))
    write_section("docs/autograd.md", "ops-times", "bench_doc.py", ops)

    def res(width, name):
        return float(best[1][("residual", name, width)]["ms"])

    rows = best[1][("residual", "affine_add", "32")]["rows"]
    resid = ("A residual add after an output projection, forward plus backward on %s rows, one thread (the projection's "
             "input and the residual computed, as in a block): width 32, `qkt_add(r, qkt_affine(h, W, b))` %.3f ms and "
             "`qkt_affine_add(h, W, b, r)` %.3f ms (%.2fx); width 128, %.3f ms and %.3f ms (%.2fx). %s\n"
             % (rows, res("32", "affine_then_add"), res("32", "affine_add"), res("32", "affine_then_add") / res("32", "affine_add"),
                res("128", "affine_then_add"), res("128", "affine_add"), res("128", "affine_then_add") / res("128", "affine_add"),
                how))
    write_section("docs/autograd.md", "residual-times", "bench_doc.py", resid)

    small, big = "1048576", "10485760"
    a1, a2 = best[1][("adamw", big)], best[2][("adamw", big)]
    adamw = ("One AdamW step (`qkt_optim_step`, half the parameters decayed) over 2^20 parameters: %.2f ns per parameter on "
             "one thread; over %s (about the `medium` configuration's size): %.1f ms on 1 thread, %.1f ms on 2 (%.2f and %.2f "
             "ns per parameter; it reads p, g, m, v and writes p, m, v, 28 bytes per parameter: %.0f and %.0f GB/s). %s\n"
             % (float(best[1][("adamw", small)]["ns_per_param"]), big, float(a1["ms"]), float(a2["ms"]), float(a1["ns_per_param"]),
                float(a2["ns_per_param"]), 28 / float(a1["ns_per_param"]), 28 / float(a2["ns_per_param"]), how))
    write_section("docs/optim.md", "adamw-times", "bench_doc.py", adamw)

    rep = ("`qkt bench` step time in ms, median of %d rounds (each the median of 20 steps), without and with `--replicas 2`:\n\n"
           "| config | threads | --replicas 1 | --replicas 2 | ratio |\n|---|---|---|---|---|\n" % ROUNDS)
    for config in ("tiny", "small"):
        for t in (1, 2):
            a, b = med[(config, t, 1)], med[(config, t, 2)]
            rep += "| %s | %d | %.2f | %.2f | %.2f |\n" % (config, t, a, b, b / a)
    rep += "\n" + how.replace("(`qkt bench --ops`: best of 31 repetitions, best of %d rounds; " % ROUNDS, "(") + "\n"
    write_section("docs/train.md", "replicas-times", "bench_doc.py", rep)
    print(ops + resid + adamw + rep, end="")


if __name__ == "__main__":
    main()
