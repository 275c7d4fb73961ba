#!/bin/sh
# Runs the quick study as `make demo` does and records how it ran, for scripts/readme_demo.py:
# RUN_DIR/timing.txt holds the load average before the start, the output of /usr/bin/time -v
# (wall clock, user and system seconds) and `qkt version` (build, kernel path).
#   usage: scripts/demo_timed.sh [BUILD_DIR] [OUT]      (defaults: build, runs)
set -e
build=${1:-build}
out=${2:-runs}
[ -x "$build/qkt" ] || { echo "demo_timed.sh: $build/qkt not found (build first: make build)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "demo_timed.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp)
load=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/time -v -o "$tmp" "$build/qkt" ablate --preset quick --out "$out"
{
    echo "load average before: $load"
    echo "qkt version: $("$build/qkt" version)"
    cat "$tmp"
} >"$out/quick/timing.txt"
rm -f "$tmp"
echo "demo_timed.sh: $out/quick/timing.txt"
