#!/bin/sh
# The measurements behind docs/distributed.md's "Measured on this machine" and "Expected scaling
# on paper": ROUNDS runs of bench/mpi_scaling.sh (tokens/s of one process, --replicas N and
# mpirun -np N; the gradient sum's time) and the one-core step times of the bench configs
# (`qkt bench --threads 1`, the model's t1), each output kept in OUT_DIR;
# scripts/distributed_doc.py OUT_DIR writes the two sections.
#
# usage: bench/distributed.sh [-r ROUNDS] OUT_DIR        (QKT_BIN: default build/qkt, built with MPI)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
me=distributed.sh
. "$here/lib.sh"
rounds_opt "[-r ROUNDS] OUT_DIR" "$@"
shift "$nopt"
[ $# -eq 1 ] || { echo "usage: $0 [-r ROUNDS] OUT_DIR" >&2; exit 2; }
out=$1
QKT_BIN=${QKT_BIN:-$root/build/qkt}
export QKT_BIN
mkdir -p "$out"
{
    echo "started: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
    echo "qkt version: $("$QKT_BIN" version)"
} >"$out/meta.txt"
: >"$out/t1.txt"
for c in tiny small medium; do
    "$QKT_BIN" bench --config "$c" --threads 1 --steps 5 --warmup 2 >>"$out/t1.txt" 2>&1
done
r=1
while [ "$r" -le "$rounds" ]; do
    sh "$here/mpi_scaling.sh" >"$out/scaling$r.txt"
    r=$((r + 1))
done
echo "distributed.sh: $out (now scripts/distributed_doc.py $out)"
