#!/bin/sh
# Data-parallel qkt train over MPI ranks on this machine (docs/distributed.md): tokens/s
# for N = 1, 2, 4 ranks and, beside each, the in-process --replicas N on the same cores
# (the same bits: the same work split the same way), plus the gradient sum's time per
# step measured on its own (the ranks meet at a barrier first, so it is communication
# alone; the barrier's wait for the slowest shard is shown apart).
#   N = 1: one process, all cores as threads (no mpirun);
#   N ranks: mpirun -np N, each rank with max(1, cores / N) threads. With more ranks
#   than cores (N = 4 on 2 cores) the job is oversubscribed: ranks take turns on the
#   cores, each step waits for the last rank the OS schedules, and the communication
#   time includes ranks that were descheduled mid-sum. It measures the overhead, not a
#   speed-up: there are no cores to gain.
# Configs: the bench configs' shapes (qkt bench --help) on text data (this repo's README:
# a ~90-character vocabulary rather than 65; the gradient size differs by that much).
# usage: bench/mpi_scaling.sh [-c "tiny small medium"] [-n "1 2 4"] [-s STEPS]
# QKT_BIN (default build/qkt); MPIRUN (default: mpirun --allow-run-as-root --oversubscribe).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
configs="tiny small medium" ranks="1 2 4" steps=12
while getopts c:n:s: opt; do
    case $opt in
    c) configs=$OPTARG ;;
    n) ranks=$OPTARG ;;
    s) steps=$OPTARG ;;
    *) echo "usage: $0 [-c CONFIGS] [-n RANKS] [-s STEPS]" >&2; exit 2 ;;
    esac
done
"$QKT_BIN" version | grep -q "MPI:" || { echo "$0: $QKT_BIN is built without MPI (qkt version)" >&2; exit 2; }
cores=$(nproc)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg), $("$QKT_BIN" version)"
echo "# tokens/s: median of log.csv's per-step column over steps 3..$steps (rank 0's clock; a step includes the sum)"
printf "%-7s %2s %-22s %12s %10s %10s %10s %9s\n" config N how tokens_per_s sum_ms wait_ms grad_MB params

shape() { # config -> qkt train flags (T, B, C, L, NH of qkt bench)
    case $1 in
    tiny) echo "--block-size 64 --batch-size 16 --n-embd 64 --n-layer 2 --n-head 4" ;;
    small) echo "--block-size 128 --batch-size 16 --n-embd 128 --n-layer 4 --n-head 4" ;;
    medium) echo "--block-size 256 --batch-size 8 --n-embd 384 --n-layer 6 --n-head 6" ;;
    *) echo "$0: unknown config $1 (tiny, small, medium)" >&2; exit 2 ;;
    esac
}

# median of tokens_per_s (column 7) over steps >= 3
median_tps() {
    awk -F, 'NR > 1 && $1 >= 3 && $7 != "" { print $7 }' "$1/log.csv" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

one() { # config N how run-prefix threads extra
    dir="$tmp/$1_$2_$(echo "$3" | tr -c 'a-z0-9' _)"
    args="train --data text:$root/README.md $(shape "$1") --steps $steps --eval-every 0 --eval-batches 1 --ckpt-every 0 --threads $5 $6"
    log=$($4 "$QKT_BIN" $args --out "$dir" 2>&1) || { echo "$log" >&2; exit 1; }
    params=$(echo "$log" | sed -n 's/.* \([0-9]*\) params.*/\1/p' | head -1)
    sum=$(echo "$log" | sed -n 's/.*gradient sum \([0-9.]*\) ms\/step.*/\1/p')
    wait=$(echo "$log" | sed -n 's/.*slowest rank \([0-9.]*\) ms\/step.*/\1/p')
    mb=$(awk -v p="$params" 'BEGIN { printf "%.3f", p * 4 / 1e6 }')
    printf "%-7s %2s %-22s %12s %10s %10s %10s %9s\n" "$1" "$2" "$3" "$(median_tps "$dir")" "${sum:--}" "${wait:--}" "$mb" "$params"
}

for c in $configs; do
    for n in $ranks; do
        t=$((cores / n)); [ "$t" -ge 1 ] || t=1
        if [ "$n" = 1 ]; then
            one "$c" 1 "1 process x $cores thr" "" "$cores" ""
        else
            one "$c" "$n" "--replicas $n x $cores thr" "" "$cores" "--replicas $n"
            one "$c" "$n" "mpirun -np $n x $t thr" "$MPIRUN -np $n" "$t" ""
        fi
    done
done
