"""The part of a doc a script writes: the lines between "<!-- NAME: written by scripts/SCRIPT -->"
and "<!-- NAME end -->" (scripts/full_study_doc.py, perf_standing.py, report_html_size.py, bench_doc.py, distributed_doc.py,
sigma_init_doc.py, data_doc.py, main_task_doc.py, profile_doc.py)."""
import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(main):
    """Runs a script's main(): a file it cannot read or a program it cannot start ends it with one
    line naming the file and exit 1, not a traceback. Returns what main returns."""
    try:
        return main()
    except OSError as e:
        name = os.path.basename(sys.argv[0])
        sys.exit("%s: %s: %s" % (name, e.filename or "", e.strerror or e))


def usage(doc):
    """A script's usage line, from its docstring (its first line that starts with "usage:")."""
    return next((l.strip() for l in doc.splitlines() if l.strip().startswith("usage:")), doc.strip().splitlines()[0])


def qkt_binary(build_dir, script):
    """BUILD_DIR/qkt, or the script's exit naming what is missing."""
    qkt = os.path.join(build_dir, "qkt")
    if not os.access(qkt, os.X_OK):
        sys.exit("%s: %s not found (build first: make build)" % (script, qkt))
    return qkt


def run(cmd, script, what, stderr=False):
    """cmd's standard output (followed by its standard error when stderr is true), or the script's exit
    naming what failed and the end of its stderr."""
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("%s: %s exited %d: %s" % (script, what, out.returncode, out.stderr.strip()[-400:]))
    return out.stdout + (out.stderr if stderr else "")


def machine(qkt, script):
    """"CPU, N cores; load average A B C before the start; `qkt version`", read before a script measures."""
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
    version = run([qkt, "version"], script, "qkt version").strip()
    return "%s, %d cores; load average %s before the start; `%s`" % (cpu, os.cpu_count(), load, version)


def cell_metric(path, metric):
    """{step: value} of one metric in a study cell's file (cells/<id>.csv: columns id, experiment, variant,
    d_k, seed, lr, step, metric, layer, head, value; '#' lines are its seal)."""
    rows = csv.reader(l for l in open(path) if not l.startswith("#"))
    return {int(r[6]): float(r[10]) for r in rows if r[7] == metric}


def write_section(doc, name, script, text):
    """Replaces the section `name` of ROOT/doc (written by scripts/`script`) with text (ending in a newline)."""
    path = os.path.join(ROOT, doc)
    s = open(path).read()
    begin, end = "<!-- %s: written by scripts/%s -->\n" % (name, script), "<!-- %s end -->\n" % name
    if begin not in s or end not in s:
        sys.exit("%s: %s has no %s markers" % (script, doc, name))
    i, j = s.index(begin) + len(begin), s.index(end)
    open(path, "w").write(s[:i] + text + s[j:])
