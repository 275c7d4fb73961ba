#!/bin/sh
# How step time and peak memory grow with the sequence length T and the width C,
# for qkt and (with -t) PyTorch, on custom configs around `small`:
#   T sweep: V=65, B=16, C=128, L=4, NH=4, T = 64 128 256 512 1024
#   C sweep: V=65, B=16, T=128, L=4, NH=4, C = 64 128 256 384 512 768
# usage: bench/scaling.sh [-t] [-n THREADS] [-s STEPS]   (-t adds PyTorch runs)
# QKT_BIN and TORCH_PY as in bench/compare.sh; TORCH_ENV is PyTorch's environment
# (default OMP_WAIT_POLICY=PASSIVE, its best setting for all but the smallest configs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
TORCH_ENV=${TORCH_ENV:-OMP_WAIT_POLICY=PASSIVE}
torch=0 threads=2 steps=4
while getopts tn:s: opt; do
    case $opt in
    t) torch=1 ;;
    n) threads=$OPTARG ;;
    s) steps=$OPTARG ;;
    *) echo "usage: $0 [-t] [-n THREADS] [-s STEPS]" >&2; exit 2 ;;
    esac
done
me=scaling.sh
. "$here/lib.sh"
need_int -n "$threads" 1
need_int -s "$steps" 1
need_bin "$QKT_BIN"
peak=$(sgemm_peak "$threads" "$QKT_BIN")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), sgemm peak $peak GFLOP/s, $threads threads"
printf "%-6s %5s %5s %10s %12s %10s %7s %10s %10s\n" who T C ms_per_step tokens_per_s peak_rss_mb mfu cpu_ms GFLOP
one() { # who T C
    args="--vocab 65 --batch 16 --n-layer 4 --n-head 4 --seq $2 --n-embd $3 --threads $threads --steps $steps --warmup 2 --peak $peak"
    if [ "$1" = qkt ]; then
        line=$("$QKT_BIN" bench $args 2>&1)
    else
        line=$(env $TORCH_ENV "$TORCH_PY" "$here/torch_gpt.py" $args 2>&1)
    fi
    get() { echo "$line" | tr ' ;,' '\n\n\n' | sed -n "s/^$1=//p" | head -1; }
    gf=$(echo "$line" | sed -n 's/.* \([0-9.]*\) GFLOP per step.*/\1/p')
    printf "%-6s %5s %5s %10s %12s %10s %7s %10s %10s\n" "$1" "$2" "$3" "$(get ms_per_step)" "$(get tokens_per_s)" \
        "$(get peak_rss_mb)" "$(get mfu)" "$(get cpu_ms_per_step)" "${gf:--}"
}
for T in 64 128 256 512 1024; do
    one qkt "$T" 128
    [ "$torch" = 1 ] && one torch "$T" 128
done
for C in 64 128 256 384 512 768; do
    one qkt 128 "$C"
    [ "$torch" = 1 ] && one torch 128 "$C"
done
