#!/bin/sh
# How a config's step efficiency moves with the batch size: qkt bench --config CONFIG --batch B
# for each B, in rounds (the order of the batches reversed every other round), against one sgemm
# peak measured at the start. Prints every run, then per batch the medians of the step time,
# of tokens per second and of the MFU. A step whose fixed per-op costs (tape, dispatch, the
# OpenMP runtime) weighed much would gain MFU with the batch; one made of per-element passes
# and products running near their rate would not (docs/performance.md, "What stands in the way").
#
# usage: bench/batch_sweep.sh [-r ROUNDS] [-t THREADS] [-s STEPS] CONFIG [B...]
#   e.g. bench/batch_sweep.sh cell32 16 32 64 128
#   batches default to 16 32 64 128; model flags for qkt bench go in QKT_BENCH_FLAGS
#   (e.g. QKT_BENCH_FLAGS='--n-embd 16' for the study's d_k 8 cells); QKT_BIN as in
#   bench/compare.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
QKT_BENCH_FLAGS=${QKT_BENCH_FLAGS:-}
rounds=3 threads=1 steps=20
while getopts r:t:s: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    t) threads=$OPTARG ;;
    s) steps=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-t THREADS] [-s STEPS] CONFIG [B...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-t THREADS] [-s STEPS] CONFIG [B...]" >&2; exit 2; }
cfg=$1
shift
batches=${*:-16 32 64 128}
me=batch_sweep.sh
. "$here/lib.sh"
need_int -r "$rounds" 1
need_int -t "$threads" 1
need_int -s "$steps" 1
need_bin "$QKT_BIN"
need_configs "$cfg"
for B in $batches; do need_int batch "$B" 1; done
peak=$(sgemm_peak "$threads" "$QKT_BIN")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$QKT_BIN" version)"
echo "# $cfg $QKT_BENCH_FLAGS, $threads thread(s), $steps steps a run, sgemm peak $peak GFLOP/s"
reversed=""
for B in $batches; do reversed="$B $reversed"; done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then order=$batches; else order=$reversed; fi
    for B in $order; do
        out=$(bench_run "$QKT_BIN bench --config $cfg --batch $B" "$QKT_BIN" bench --config "$cfg" $QKT_BENCH_FLAGS --batch "$B" \
            --threads "$threads" --steps "$steps" --peak "$peak")
        line=$(echo "$out" | grep " ms_per_step=")
        echo "$r B=$B $line"
        echo "$B $(echo "$line" | sed -n 's/.* ms_per_step=\([0-9.]*\) tokens_per_s=\([0-9]*\) .* mfu=\([0-9.]*\) .*/\1 \2 \3/p')" >>"$log"
    done
    r=$((r + 1))
done
echo
awk "$MED_AWK"'{ b = $1; n[b]++; ms[b, n[b]] = $2; tps[b, n[b]] = $3; mfu[b, n[b]] = $4; if (!(b in seen)) { seen[b] = 1; order[++nb] = b } }
END {
    printf "%-6s %10s %13s %7s\n", "batch", "ms_step", "tokens_per_s", "mfu"
    for (i = 1; i <= nb; i++) {
        b = order[i]
        for (k = 1; k <= n[b]; k++) { x[k] = ms[b, k]; y[k] = tps[b, k]; z[k] = mfu[b, k] }
        printf "%-6s %10.2f %13.0f %7.3f\n", b, med(x, n[b]), med(y, n[b]), med(z, n[b])
    }
}' "$log"
