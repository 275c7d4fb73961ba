#!/bin/sh
# Runs a study preset (quick, as `make demo` does, or full) and records how it ran, for
# scripts/readme_demo.py and scripts/full_study_doc.py: OUT/PRESET/timing.txt holds the load average before the start, the output of /usr/bin/time -v
# (wall clock, user and system seconds), `qkt version` (build, kernel path) and the machine.
#   usage: scripts/demo_timed.sh [BUILD_DIR] [OUT] [PRESET]      (defaults: build, runs, quick)
set -e
build=${1:-build}
out=${2:-runs}
preset=${3:-quick}
case $preset in quick | full) ;; *) echo "demo_timed.sh: preset $preset: expected quick or full" >&2; exit 2 ;; esac
[ -x "$build/qkt" ] || { echo "demo_timed.sh: $build/qkt not found (build first: make build)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "demo_timed.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp)
load=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/time -v -o "$tmp" "$build/qkt" ablate --preset "$preset" --out "$out"
{
    echo "load average before: $load"
    echo "qkt version: $("$build/qkt" version)"
    echo "machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
    cat "$tmp"
} >"$out/$preset/timing.txt"
rm -f "$tmp"
echo "demo_timed.sh: $out/$preset/timing.txt"
