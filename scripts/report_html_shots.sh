#!/bin/sh
# The screenshots of report.html in docs/img/ (docs/ablate.md, docs/train.md), taken by the
# browser test's own headless Chromium (tests/html/report_html_test.py), which checks the
# pages as it goes: the study's page of RUN_DIR (default runs/quick, from `make demo`) and
# the page of two tiny qkt train runs.
#   scripts/report_html_shots.sh [RUN_DIR]
set -e
cd "$(dirname "$0")/.."
run=${1:-runs/quick}
[ -f "$run/report.html" ] || { echo "$run/report.html: not found (make demo writes runs/quick)" >&2; exit 1; }
/usr/bin/python3 tests/html/report_html_test.py build/qkt "${TMPDIR:-/tmp}/qkt_report_html_shots" --study "$run" --screenshots docs/img
