"""The part of a doc a script writes: the lines between "<!-- NAME: written by scripts/SCRIPT -->"
and "<!-- NAME end -->" (scripts/full_study_doc.py, perf_standing.py, report_html_size.py, bench_doc.py, distributed_doc.py,
sigma_init_doc.py, data_doc.py, main_task_doc.py, profile_doc.py)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def qkt_binary(build_dir, script):
    """BUILD_DIR/qkt, or the script's exit naming what is missing."""
    qkt = os.path.join(build_dir, "qkt")
    if not os.access(qkt, os.X_OK):
        sys.exit("%s: %s not found (build first: make build)" % (script, qkt))
    return qkt


def run(cmd, script, what):
    """cmd's standard output, or the script's exit naming what failed and the end of its stderr."""
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("%s: %s exited %d: %s" % (script, what, out.returncode, out.stderr.strip()[-400:]))
    return out.stdout


def write_section(doc, name, script, text):
    """Replaces the section `name` of ROOT/doc (written by scripts/`script`) with text (ending in a newline)."""
    path = os.path.join(ROOT, doc)
    s = open(path).read()
    begin, end = "<!-- %s: written by scripts/%s -->\n" % (name, script), "<!-- %s end -->\n" % name
    if begin not in s or end not in s:
        sys.exit("%s: %s has no %s markers" % (script, doc, name))
    i, j = s.index(begin) + len(begin), s.index(end)
    open(path, "w").write(s[:i] + text + s[j:])
