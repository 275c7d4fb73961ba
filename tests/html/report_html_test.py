#!/usr/bin/env python3
"""report.html in a real browser (headless Chromium through Selenium).

Makes a tiny study (qkt ablate, a few seconds) and two tiny qkt train runs, writes their
pages (qkt ablate, qkt plot) and loads them from file:// to check, against metrics.csv and
log.csv: no console error; the charts and the series are those the CSV files hold; hovering
a point shows its CSV value; clicking a legend entry hides exactly that series; the d_k
control changes the training chart. Then plants a fault (one series dropped from a copy of
each page's embedded data) and requires the same checks to fail on it.

usage: report_html_test.py QKT_BINARY WORK_DIR [--screenshots DIR] [--study RUN_DIR]
  --screenshots DIR  also save report_html_study.png and report_html_train.png there
  --study RUN_DIR    check (and photograph) this study's report.html instead of a tiny one
Exit 0 pass, 1 fail, 77 skipped (no chromium, chromedriver or selenium).
"""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(why):
    print("SKIP: " + why + ", so the browser test of report.html cannot run (apt-get install chromium chromium-driver python3-selenium)")
    sys.exit(SKIP)


try:
    from selenium import webdriver
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.chrome.service import Service
except ImportError:
    skip("python3-selenium is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not CHROMIUM or not DRIVER:
    skip("chromium or chromedriver is not installed")

TINY_STUDY = ["--name", "tiny", "--d-k", "8,16", "--seeds", "2", "--steps", "10", "--eval-every", "5", "--lr-grid", "0.003,1",
              "--lr-steps", "10", "--lr-eval-every", "5", "--init-d-k", "4,8", "--growth-d-k", "8,16", "--task2", "recall",
              "--task2-d-k", "4", "--variants", "sqrt_dk,none", "--lr-variants", "sqrt_dk,none", "--batch-size", "8",
              "--eval-batches", "1"]
TINY_TRAIN = ["--data", "mqar", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "8",
              "--eval-every", "10", "--eval-batches", "1"]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print("FAIL: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:]))
        sys.exit(1)
    return p.stdout


def page_data(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r'(<script id="qkt-data" type="application/json">)(.*?)(</script>)', text, re.S)
    data = json.loads(m.group(2))
    for c in data.get("charts", []):  # a series' x may index the chart's shared arrays: resolved here
        for s in c.get("series", []):
            if isinstance(s.get("x"), int):
                s["x"] = c["xs"][s["x"]]
    return text, m, data


def plant_fault(page, out, chart):
    """A copy of the page with the first val_loss series of `chart` dropped from its embedded data."""
    text, m, data = page_data(page)
    c = [c for c in data["charts"] if c["id"] == chart][0]
    c["series"].remove([s for s in c["series"] if s["k"].get("metric") == "val_loss"][0])
    with open(out, "w", encoding="utf-8") as f:
        f.write(text[:m.start(2)] + json.dumps(data).replace("<", "\\u003c") + text[m.end(2):])
    return out


class Browser:
    def __init__(self, tmp):
        o = webdriver.ChromeOptions()
        o.binary_location = CHROMIUM
        for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # Chromium leaves an empty org.chromium.Chromium.* directory in its TMPDIR per start:
        # it goes to the test's own work directory, not /tmp
        os.makedirs(tmp, exist_ok=True)
        env = dict(os.environ, TMPDIR=tmp)
        self.d = webdriver.Chrome(service=Service(DRIVER, env=env), options=o)

    def load(self, path):
        self.d.get("file://" + os.path.abspath(path))
        errors = [e["message"] for e in self.d.get_log("browser") if e["level"] == "SEVERE"]
        ready = self.d.execute_script("return document.body.getAttribute('data-ready')")
        return errors + ([] if ready == "1" else ["the page's script did not finish"])

    def js(self, code, *args):
        return self.d.execute_script(code, *args)

    def hover(self, chart, group, seed, x):
        """Moves the mouse onto a drawn point; returns the tooltip's value (None: no such point)."""
        p = self.js("return window.qkt.point(arguments[0], arguments[1], arguments[2], arguments[3])", chart, group, seed, x)
        if p is None:
            return None
        self.js("arguments[0].scrollIntoView({block: 'center'})", self.d.find_element(By.ID, "c-" + chart))
        p = self.js("return window.qkt.point(arguments[0], arguments[1], arguments[2], arguments[3])", chart, group, seed, x)
        self.move(p["x"], p["y"])
        tip = self.d.find_element(By.ID, "qkt-tip")
        v = tip.find_elements(By.CSS_SELECTOR, ".v")
        return v[0].text if v and tip.is_displayed() else None

    def isolated(self, chart, runs, metric, n):
        """Up to n (run, step) of these runs whose drawn point has no other within 3 pixels (the pointer lands within 1)."""
        pts = self.js("return window.qkt.points(arguments[0])", chart)
        out = []
        for u in runs:
            for step in sorted(u["metrics"][metric], reverse=True):
                p = [q for q in pts if q["g"] == u["variant"] and q["seed"] == u["seed"] and q["x"] == step]
                if p and all((q is p[0]) or (q["px"] - p[0]["px"]) ** 2 + (q["py"] - p[0]["py"]) ** 2 > 9 for q in pts):
                    out.append((u, step))
                    break
            if len(out) == n:
                break
        return out

    def move(self, x, y):
        """The mouse to (x, y) in the window's client pixels."""
        a = ActionBuilder(self.d)
        a.pointer_action.move_to_location(int(round(x)), int(round(y)))
        a.perform()

    def lines(self, chart, group=None):
        sel = "#c-%s path.ln" % chart + ("[data-g='%s']" % group if group else "")
        return self.js("return [].map.call(document.querySelectorAll(arguments[0]), function (e) { return e.getAttribute('d'); })", sel)

    def select(self, chart, key, value):
        s = self.d.find_element(By.CSS_SELECTOR, "#c-%s select[data-key='%s']" % (chart, key))
        self.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'))", s, str(value))

    def legend(self, chart, group):
        e = self.d.find_element(By.CSS_SELECTOR, "#c-%s .lg span[data-g='%s']" % (chart, group))
        self.js("arguments[0].scrollIntoView({block: 'center'})", e)
        e.click()

    def size(self, width, height):
        """The page's viewport (the window of headless Chromium stops at its screen's height)."""
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                                      "mobile": False})

    def shot(self, path, hover=None, height=1800):
        """The top of the page, with the tooltip of a hovered point (hover: chart, group, seed, x)."""
        self.size(1460, height)
        self.js("window.scrollTo(0, 0)")
        if hover:
            p = self.js("return window.qkt.point(arguments[0], arguments[1], arguments[2], arguments[3])", *hover)
            if p and p["y"] > height - 250:  # the point below the viewport: a taller one holds it and its tooltip
                self.size(1460, int(p["y"]) + 350)
                self.js("window.scrollTo(0, 0)")
                p = self.js("return window.qkt.point(arguments[0], arguments[1], arguments[2], arguments[3])", *hover)
            if p:
                self.move(p["x"], p["y"])
        self.d.save_screenshot(path)
        self.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


class Fails(list):
    """The failures found; with early=True the check stops at the first (a planted fault only needs one)."""

    class Stop(Exception):
        pass

    def __init__(self, early=False):
        super().__init__()
        self.early = early

    def append(self, msg):
        super().append(msg)
        if self.early:
            raise Fails.Stop()


def checked(fn, *args, early=False):
    fails = Fails(early)
    try:
        fn(fails, *args)
    except Fails.Stop:
        pass
    return list(fails)


def close(a, b):
    return abs(a - b) <= 1e-5 * max(1.0, abs(b))


# ---------------------------------------------------------------- the study
def study_expect(run_dir):
    """What metrics.csv (and the maps files) hold: per chart id, its runs."""
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    runs = {}
    for r in rows:
        u = runs.setdefault(r["run"], {"exp": r["experiment"], "variant": r["variant"], "d_k": int(r["d_k"]), "seed": int(r["seed"]),
                                       "metrics": {}})
        if int(r["layer"]) < 0:
            u["metrics"].setdefault(r["metric"], {})[int(r["step"])] = float(r["value"])
        else:
            u["metrics"].setdefault(r["metric"], {})
    kinds = {u["exp"] for u in runs.values()}
    charts = set()
    for exp, ids in (("train", ["train"]), ("train2", ["train"]), ("iid", ["iid"]), ("init", ["init"]), ("lr", ["lr", "lr_sweep"]),
                     ("growth", ["growth"])):
        if exp in kinds:
            charts.update(ids)
    if any(f.endswith(".attn.safetensors") for f in os.listdir(os.path.join(run_dir, "cells"))):
        charts.add("maps")
    return runs, charts


def check_study(fails, b, page, run_dir):
    errors = b.load(page)
    if errors:
        fails.append("console errors: %s" % errors)
    runs, charts = study_expect(run_dir)
    shown = set(b.js("return [].map.call(document.querySelectorAll('.chart'), function (e) { return e.id.slice(2); })"))
    if shown != charts:
        fails.append("charts on the page %s, metrics.csv holds %s" % (sorted(shown), sorted(charts)))
    cfg = json.load(open(os.path.join(run_dir, "config.json")))
    tasks = {"train": cfg["task"], "train2": cfg.get("task2", "")}
    train = [u for u in runs.values() if u["exp"] in ("train", "train2")]
    variants = sorted({u["variant"] for u in train})
    legend = sorted(b.js("return [].map.call(document.querySelectorAll('#c-train .lg span'), function (e) { return e.dataset.g; })"))
    if legend != variants:
        fails.append("training chart legend %s, metrics.csv's variants %s" % (legend, variants))
    # every line chart opens on a choice that has data (the tasks' d_k differ: the smallest
    # d_k of all, the first in the select, belongs to the second task only)
    empty = b.js("var c = window.qkt.charts; return Object.keys(c).filter(function (k) { return c[k].type !== 'heat' && !c[k].drawn.length; })")
    if empty:
        fails.append("charts drawn empty on load: %s" % sorted(empty))
    b.d.find_element(By.CSS_SELECTOR, "#c-train input.seeds").click()
    b.select("train", "metric", "val_loss")
    before = None
    for exp in ("train", "train2"):
        if not any(u["exp"] == exp for u in train):
            continue
        b.select("train", "task", tasks[exp])
        if not b.lines("train"):  # a task whose d_k values differ: the d_k select moves to one it has
            fails.append("task %s chosen: no line drawn (d_k %s)" % (tasks[exp], b.js("return window.qkt.charts.train.st.sel.d_k")))
        for d in sorted({u["d_k"] for u in train if u["exp"] == exp}):
            b.select("train", "d_k", d)
            want = [u for u in train if u["exp"] == exp and u["d_k"] == d and "val_loss" in u["metrics"]]
            got = b.lines("train")
            if len(got) != len(want):
                fails.append("task %s, d_k %d: %d lines drawn, metrics.csv has %d runs" % (tasks[exp], d, len(got), len(want)))
            if exp == "train":
                if before is not None and got == before:
                    fails.append("the d_k control (-> %d) did not change the training chart" % d)
                before = got
            # the legend: hiding the other variants leaves exactly the lines of the first
            g = want[0]["variant"] if want else variants[0]
            others = [o for o in variants if o != g]
            n_g, n_all = len(b.lines("train", g)), len(got)
            for o in others:
                b.legend("train", o)
            if any(b.lines("train", o) for o in others) or len(b.lines("train")) != n_g:
                fails.append("hiding %s in the legend left %d lines, expected the %d of %s" % (others, len(b.lines("train")), n_g, g))
            # hover a point of g that no other drawn point is near
            picks = b.isolated("train", [u for u in want if u["variant"] == g], "val_loss", 1)
            if want and not picks:
                fails.append("task %s, d_k %d: no drawn point stands apart from the others to hover" % (tasks[exp], d))
            for u, step in picks:
                v = b.hover("train", u["variant"], u["seed"], step)
                if v is None or not close(float(v), u["metrics"]["val_loss"][step]):
                    fails.append("hover on %s seed %d d_k %d step %d shows %s, metrics.csv has %.9g" %
                                 (u["variant"], u["seed"], d, step, v, u["metrics"]["val_loss"][step]))
            for o in others:
                b.legend("train", o)
            if len(b.lines("train")) != n_all:
                fails.append("showing %s again: %d lines, expected %d" % (others, len(b.lines("train")), n_all))
    # the findings: one row per row of report.md's tables, each verdict linked to a chart on the page
    md = open(os.path.join(run_dir, "report.md")).read()
    n_md, header = 0, None
    for line in md.splitlines():  # the rows of the tables headed "| # | claim (or check) | measurement | verdict |"
        if not line.startswith("|"):
            header = None
        elif header is None:
            cells = [c.strip() for c in line.strip("|").split("|")]
            header = "#" in cells and "measurement" in cells and "verdict" in cells
        elif header and not line.startswith("|---"):
            n_md += 1
    links = b.js("return [].map.call(document.querySelectorAll('table.find td a'), function (a) { return a.getAttribute('href'); })")
    if len(links) != n_md:
        fails.append("findings table: %d verdicts, report.md has %d" % (len(links), n_md))
    missing = [h for h in links if not b.d.find_elements(By.ID, h[1:])]
    if missing:
        fails.append("verdict links to no chart: %s" % missing)
    if "maps" in charts:  # the weight under the cursor
        cv = b.d.find_element(By.CSS_SELECTOR, "#c-maps canvas")
        b.js("arguments[0].scrollIntoView({block: 'center'})", cv)
        r = b.js("return arguments[0].getBoundingClientRect()", cv)
        b.move(r["left"] + 3, r["top"] + 3)
        tip = b.d.find_element(By.ID, "qkt-tip").text
        if "query" not in tip or "weight" not in tip:
            fails.append("hover on the attention map: tooltip %r" % tip)


# ---------------------------------------------------------------- train runs
def read_log(run_dir):
    lines = open(os.path.join(run_dir, "log.csv")).read().split("\n")
    head = lines[0].split(",")
    rows = [l.split(",") for l in lines[1:-1]]  # the last: "" or a torn line
    return {c: {int(r[0]): float(r[i]) for r in rows if r[i] != ""} for i, c in enumerate(head) if c not in ("step", "elapsed_s")}


def check_train(fails, b, page, run_dirs):
    errors = b.load(page)
    if errors:
        fails.append("console errors: %s" % errors)
    logs = [read_log(d) for d in run_dirs]
    cols = [c for c in logs[0] if any(l[c] for l in logs)]
    shown = b.js("return [].map.call(document.querySelectorAll('.chart'), function (e) { return e.id.slice(2); })")
    if shown != cols:
        fails.append("charts on the page %s, log.csv's columns with values %s" % (shown, cols))
    for c in cols:
        want = [d for d, l in zip(run_dirs, logs) if l[c]]
        got = b.js("return [].map.call(document.querySelectorAll('#c-%s path.ln'), function (e) { return e.dataset.g; })" % c)
        if sorted(got) != sorted(want):
            fails.append("chart %s: lines %s, runs with values %s" % (c, got, want))
    for c in ("val_loss",):
        for d, l in zip(run_dirs, logs):
            step = max(l[c])
            v = b.hover(c, d, None, step)
            if v is None or not close(float(v), l[c][step]):
                fails.append("hover on %s of %s at step %d shows %s, log.csv has %.9g" % (c, d, step, v, l[c][step]))
    b.legend("loss", run_dirs[0])
    if b.lines("loss", run_dirs[0]) or len(b.lines("loss")) != len(run_dirs) - 1:
        fails.append("hiding %s in the legend: %d lines left" % (run_dirs[0], len(b.lines("loss"))))


def main():
    t0 = time.time()
    args = sys.argv[1:]
    shots = study = None
    if "--screenshots" in args:
        i = args.index("--screenshots")
        shots = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if "--study" in args:
        i = args.index("--study")
        study = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    qkt, work = os.path.abspath(args[0]), os.path.abspath(args[1])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chdir(work)
    if study is None:
        run([qkt, "ablate", "--out", work] + TINY_STUDY)
        study = os.path.join(work, "tiny")
    run([qkt, "train", "--out", "run_a", "--steps", "40"] + TINY_TRAIN)
    run([qkt, "train", "--out", "run_b", "--steps", "30", "--attn-scale", "none", "--lr", "3e-3"] + TINY_TRAIN)
    with open("run_b/log.csv", "a") as f:
        f.write("31,3.3")  # a row being written: the page leaves it out
    run([qkt, "plot", "run_a", "run_b", "--out", "train.html"])
    t1 = time.time()
    chromium_tmp = lambda: set(glob.glob(os.path.join(tempfile.gettempdir(), "org.chromium.*")))
    tmp_before = chromium_tmp()
    b = Browser(os.path.join(work, "browser-tmp"))
    print("pages written in %.1f s, browser started in %.1f s" % (t1 - t0, time.time() - t1))
    failed = False
    try:
        for name, fails in (("study", checked(check_study, b, os.path.join(study, "report.html"), study)),
                            ("train runs", checked(check_train, b, "train.html", ["run_a", "run_b"]))):
            for f in fails:
                print("FAIL (%s page): %s" % (name, f))
            failed |= bool(fails)
            print("%s page: %s" % (name, "FAIL" if fails else "ok"))
        if shots:
            os.makedirs(shots, exist_ok=True)
            b.load(os.path.join(study, "report.html"))
            c = b.js("return window.qkt.charts.train.drawn[0]")
            b.shot(os.path.join(shots, "report_html_study.png"), ("train", c["g"], "mean", c["x"][len(c["x"]) // 2]), 2000)
            b.load("train.html")
            b.shot(os.path.join(shots, "report_html_train.png"), ("val_loss", "run_b", None, 20), 1250)
        # the planted faults: a series dropped from each page must be caught
        bad = checked(check_study, b, plant_fault(os.path.join(study, "report.html"), "fault_study.html", "train"), study, early=True)
        print("planted fault, study page (a training series dropped): %s" % ("caught: " + bad[0] if bad else "NOT CAUGHT"))
        bad_t = checked(check_train, b, plant_fault("train.html", "fault_train.html", "val_loss"), ["run_a", "run_b"], early=True)
        print("planted fault, train page (a val_loss series dropped): %s" % ("caught: " + bad_t[0] if bad_t else "NOT CAUGHT"))
        failed |= not bad or not bad_t
    finally:
        b.d.quit()
    left = sorted(chromium_tmp() - tmp_before)  # Chromium's TMPDIR is the work directory's browser-tmp
    if left:
        print("FAIL: Chromium left %s in %s" % (", ".join(os.path.basename(x) for x in left), tempfile.gettempdir()))
        failed = True
    print("%s in %.1f s" % ("FAIL" if failed else "PASS", time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
