#!/bin/sh
# The measurements behind docs/performance.md's "Where it stands": the default build against
# PyTorch (bench/compare.sh at 1 and 2 threads), against the -march=native build
# (bench/compare_builds.sh), and the quick study's cells against PyTorch (bench/compare_cell.sh),
# each run's whole output kept in OUT_DIR; scripts/perf_standing.py OUT_DIR writes the section.
#
# usage: bench/standing.sh [-r ROUNDS] OUT_DIR
#   QKT_BIN (default build/qkt, the default build) and NATIVE_BIN (default build-native/qkt:
#   cmake -S . -B build-native -DCMAKE_BUILD_TYPE=Release -DQKT_NATIVE=ON && cmake --build
#   build-native --target qkt) can be overridden. Run it on an idle machine: every figure is a
#   median of alternating rounds, but a busy machine still moves them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
me=standing.sh
. "$here/lib.sh"
rounds_opt "[-r ROUNDS] OUT_DIR" "$@"
shift "$nopt"
[ $# -eq 1 ] || { echo "usage: $0 [-r ROUNDS] OUT_DIR" >&2; exit 2; }
out=$1
QKT_BIN=${QKT_BIN:-$root/build/qkt}
NATIVE_BIN=${NATIVE_BIN:-$root/build-native/qkt}
for b in "$QKT_BIN" "$NATIVE_BIN"; do
    [ -x "$b" ] || { echo "standing.sh: $b not found (see the usage line on the native build)" >&2; exit 2; }
done
"$NATIVE_BIN" version | grep -q native || { echo "standing.sh: $NATIVE_BIN is not a -DQKT_NATIVE=ON build: $("$NATIVE_BIN" version)" >&2; exit 2; }
mkdir -p "$out"
export QKT_BIN
{
    echo "machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "qkt version: $("$QKT_BIN" version)"
    echo "rounds: $rounds"
} >"$out/meta.txt"
step() { echo "standing.sh: $1" >&2; }
step "default against native build, 1 thread"
sh "$here/compare_builds.sh" -r "$rounds" -t 1 "$QKT_BIN" "$NATIVE_BIN" tiny small cell32 cell128 >"$out/builds.txt"
step "against PyTorch, 1 thread"
sh "$here/compare.sh" -r "$rounds" -t 1 cell32 cell128 tiny small >"$out/torch_t1.txt"
step "against PyTorch, 2 threads (qkt --replicas 2)"
sh "$here/compare.sh" -r "$rounds" -t 2 tiny small medium >"$out/torch_t2.txt"
step "the quick study's cells against PyTorch"
sh "$here/compare_cell.sh" -r "$rounds" -d 16 >"$out/cell_dk16.txt"
sh "$here/compare_cell.sh" -r "$rounds" -d 64 >"$out/cell_dk64.txt"
sh "$here/compare_cell.sh" -r "$rounds" -d 16 -s 150 -e 5 >"$out/cell_lr.txt"
echo "standing.sh: $out (scripts/perf_standing.py $out writes docs/performance.md's section)"
