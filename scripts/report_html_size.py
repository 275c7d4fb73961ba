#!/usr/bin/python3
"""Size and load time of a study's report.html, and the full preset's estimated from them.

usage: scripts/report_html_size.py QKT_BINARY RUN_DIR   (a quick-preset run: runs/quick)

Measures the page's size and its time to interactive in headless Chromium (from navigation
start to the end of the page's script, window.qkt.readyMs; 5 loads, the median). The full
preset is too slow to run for this, so its page is estimated per chart from the quick run's
data: the bytes of a chart's series scale with the number of runs behind them (from the two
presets' settings, read from `qkt ablate --help`) and with the points per series (per-step
series are thinned to the same ~100 points in both presets; evaluation series scale with the
evaluations per run). The estimated page is also built (the quick run's series repeated to
the full count) and loaded, for its load time.
"""
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "html"))
import report_html_test as T  # noqa: E402  (the test's browser; exits 77 without one)


def presets(qkt):
    """{setting: (quick, full)} from the table `qkt ablate --help` prints."""
    out = subprocess.run([qkt, "ablate", "--help"], stdout=subprocess.PIPE, text=True).stdout
    table = {}
    for line in out.split("The presets")[1].split("\n\n")[0].splitlines()[1:]:
        m = re.match(r"\s+(\S+)\s+(\S+) \| (\S+)", line)
        if m:
            table[m.group(1)] = (m.group(2), m.group(3))
    return table


def n_list(v):
    return len(v.split(",")) if v else 0


def scale(p):
    """Per chart: (runs full / runs quick, evaluations per run full / quick)."""
    q, f = 0, 1
    runs = {}
    ev = {}
    for i in (q, f):
        g = lambda k: p[k][i]
        runs.setdefault("train", []).append(n_list(g("variants")) * (n_list(g("d-k")) + n_list(g("task2-d-k"))) * int(g("seeds")))
        ev.setdefault("train", []).append(int(g("steps")) // int(g("eval-every")) + 1)
        runs.setdefault("lr", []).append(n_list(g("lr-variants")) * n_list(g("lr-grid")))
        ev.setdefault("lr", []).append(int(g("lr-steps")) // int(g("lr-eval-every")) + 1)
        runs.setdefault("lr_sweep", []).append(n_list(g("lr-variants")) * n_list(g("lr-grid")))
        runs.setdefault("maps", []).append(n_list(g("variants")))
        runs.setdefault("growth", []).append(n_list(g("growth-d-k")))
        # part 1 measures the trained variants and sqrt_dmodel (the full preset trains it)
        runs.setdefault("iid", []).append(n_list(g("init-d-k")) * len(set(g("variants").split(",")) | {"sqrt_dmodel"}))
        runs.setdefault("init", []).append(n_list(g("init-d-k")) * len(set(g("variants").split(",")) | {"sqrt_dmodel"}))
    return {k: (v[1] / v[0], (ev[k][1] / ev[k][0]) if k in ev else 1.0) for k, v in runs.items()}


def estimate(data, sc):
    """The full preset's data: every chart's series repeated by the runs' ratio, evaluation
    series lengthened by the evaluations' ratio (their values repeated)."""
    full = json.loads(json.dumps(data))
    for c in full["charts"]:
        r_runs, r_ev = sc.get(c["id"], (1.0, 1.0))
        key = "maps" if c["type"] == "heat" else "series"
        items = c[key]
        longest = max((len(s.get("x", [])) for s in items), default=0)
        out = []
        for s in items:
            if key == "series" and len(s["x"]) < longest and r_ev > 1:  # an evaluation series
                n = int(round(len(s["x"]) * r_ev))
                s["x"] = [s["x"][i * len(s["x"]) // n] for i in range(n)]
                s["y"] = [s["y"][i * len(s["y"]) // n] for i in range(n)]
            out.append(s)
        whole, frac = int(r_runs), r_runs - int(r_runs)
        c[key] = out * whole + out[: int(round(frac * len(out)))]
    return full


def load_ms(b, page, n=5):
    t = []
    for _ in range(n):
        errors = b.load(page)
        if errors:
            raise SystemExit("%s: %s" % (page, errors))
        t.append(b.js("return window.qkt.readyMs"))
    return statistics.median(t)


def main():
    qkt, run = sys.argv[1], sys.argv[2]
    page = os.path.join(run, "report.html")
    text, m, data = T.page_data(page)
    sc = scale(presets(qkt))
    full = estimate(data, sc)
    tmp = tempfile.mkdtemp(prefix="qkt_html_size_")
    est = os.path.join(tmp, "full_estimate.html")
    with open(est, "w", encoding="utf-8") as f:
        f.write(text[:m.start(2)] + json.dumps(full, separators=(",", ":")).replace("<", "\\u003c") + text[m.end(2):])
    b = T.Browser()
    try:
        q_ms, f_ms = load_ms(b, page), load_ms(b, est)
    finally:
        b.d.quit()
    mb = lambda p: os.path.getsize(p) / 1e6
    print("chart       quick KB  runs x  evals x  full KB (est.)")
    for c in data["charts"]:
        fc = [x for x in full["charts"] if x["id"] == c["id"]][0]
        r = sc.get(c["id"], (1.0, 1.0))
        print("%-10s %9.0f %7.2f %8.2f %9.0f" % (c["id"], len(json.dumps(c, separators=(",", ":"))) / 1e3, r[0], r[1],
                                                  len(json.dumps(fc, separators=(",", ":"))) / 1e3))
    print("quick preset page: %.2f MB, interactive in %.0f ms (median of 5 loads, headless Chromium)" % (mb(page), q_ms))
    print("full preset page, estimated: %.2f MB, interactive in %.0f ms (the estimated page built and loaded)" % (mb(est), f_ms))
    ok = mb(est) <= 5 and f_ms <= 2000
    print("within 5 MB and 2 s: %s" % ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
