#!/usr/bin/python3
"""Size and load time of a study's report.html, and the full preset's estimated from them.

usage: scripts/report_html_size.py QKT_BINARY RUN_DIR [FULL_RUN_DIR]   (runs/quick [runs/full])

Measures the page's size and its time to interactive in headless Chromium (from navigation
start to the end of the page's script, window.qkt.readyMs; 5 loads, the median). Given a
full-preset run, its page is measured too and docs/ablate.md's "Size and speed" item is
written from the two. Without one, the full preset's page is estimated per chart from the quick run's
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
from doc_section import usage, write_section  # noqa: E402


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
        every, dense, steps = int(g("lr-eval-every")), min(int(g("lr-eval-dense")), int(g("lr-steps"))), int(g("lr-steps"))
        ev.setdefault("lr", []).append(steps // every + 1 + dense - dense // every)  # and every step up to lr-eval-dense
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
    if len(sys.argv) not in (3, 4):
        sys.exit(usage(__doc__))
    qkt, run = sys.argv[1], sys.argv[2]
    full_run = sys.argv[3] if len(sys.argv) == 4 else None
    if not (os.path.isfile(qkt) and os.access(qkt, os.X_OK)):
        sys.exit("report_html_size.py: %s is not an executable file (build first: make build)" % qkt)
    for d in [run] + ([full_run] if full_run else []):
        if not os.path.isfile(os.path.join(d, "report.html")):
            sys.exit("report_html_size.py: %s has no report.html (a qkt ablate run directory, e.g. runs/quick)" % d)
    page = os.path.join(run, "report.html")
    text, m, data = T.page_data(page)
    raw = lambda path: json.loads(T.page_data(path)[1].group(2))  # the charts as written (shared x arrays unresolved)
    # the estimate page and Chromium's TMPDIR; removed at exit
    work = tempfile.TemporaryDirectory(prefix="qkt_html_size_")
    if full_run:  # a real full-preset run: its own page, no estimate
        fpage = os.path.join(full_run, "report.html")
        full = T.page_data(fpage)[2]
        full_raw = raw(fpage)
    else:
        full = estimate(data, scale(presets(qkt)))
        fpage = os.path.join(work.name, "full_estimate.html")
        with open(fpage, "w", encoding="utf-8") as f:
            f.write(text[:m.start(2)] + json.dumps(full, separators=(",", ":")).replace("<", "\\u003c") + text[m.end(2):])
    b = T.Browser(os.path.join(work.name, "browser-tmp"))
    try:
        q_ms, f_ms = load_ms(b, page), load_ms(b, fpage)
    finally:
        b.d.quit()
    mb = lambda p: os.path.getsize(p) / 1e6
    kb = lambda c: len(json.dumps(c, separators=(",", ":"))) / 1e3
    what = "full" if full_run else "full (est.)"
    print("chart       quick KB  %s KB" % what)
    per = []
    if not full_run:
        full_raw = full
    for c in raw(page)["charts"]:
        fc = [x for x in full_raw["charts"] if x["id"] == c["id"]]
        fkb = kb(fc[0]) if fc else 0.0
        print("%-10s %9.0f %9.0f" % (c["id"], kb(c), fkb))
        per.append((c["id"], kb(c), fkb))
    print("quick preset page: %.2f MB, interactive in %.0f ms (median of 5 loads, headless Chromium)" % (mb(page), q_ms))
    print("%s preset page: %.2f MB, interactive in %.0f ms" % (what, mb(fpage), f_ms))
    if full_run:
        big = [x for x in per if x[2] >= 10]
        load = open("/proc/loadavg").read().split()[0]
        para = ("- **Size and speed.** Per-step series are thinned to about 75 points (every value shown is one of "
                "`metrics.csv`); evaluation series are kept whole. Measured by `scripts/report_html_size.py` on a "
                "quick-preset run and on the full-preset run of [study/full](study/full/README.md) (load average %s): "
                "the quick page is %.2f MB and interactive (its script done) %.0f ms after navigation start in headless "
                "Chromium, the full page %.2f MB and %.0f ms (medians of 5 loads each). Per chart, quick and full: %s; "
                "the rest under 10 KB each. The screenshots above and in docs/train.md: `scripts/report_html_shots.sh`.\n"
                % (load, mb(page), q_ms, mb(fpage), f_ms,
                   ", ".join("%s %.0f and %.0f KB" % (n, q, f) for n, q, f in big)))
        write_section("docs/ablate.md", "html-size", "report_html_size.py", para)
        print("docs/ablate.md: size and speed written")
    ok = mb(fpage) <= 5 and f_ms <= 2000
    print("within 5 MB and 2 s: %s" % ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
