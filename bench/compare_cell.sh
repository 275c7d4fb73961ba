#!/bin/sh
# A training cell of `qkt ablate --preset quick`'s shape (its model, batch, steps, schedule and
# validation batches; on mqar data, whose vocabulary of 32 is half that of the preset's induction
# task: the lm_head's share of a step differs that much), qkt against PyTorch, alternately for
# several rounds (qkt first in odd rounds): `qkt train` with the cell's settings and
# bench/torch_cell.py (the same model, data layout, optimizer and validation in PyTorch).
# Prints each run's loop time (qkt: the last log.csv row's elapsed seconds; PyTorch: the
# loop's wall time, both without the process start-up), then the medians and the median
# per-round ratio torch / qkt (> 1: qkt is faster).
#
# usage: bench/compare_cell.sh [-r ROUNDS] [-t THREADS] [-d D_K] [-s STEPS] [-b BATCH] [-e EVAL_EVERY]
#   defaults: the quick preset's cell (d_k 16, 200 steps, batch 16, validation every 20).
#   QKT_BIN (default build/qkt) and TORCH_PY (default /usr/bin/python3) can be overridden.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
rounds=3 threads=1 dk=16 steps=200 batch=16 every=20
while getopts r:t:d:s:b:e: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    t) threads=$OPTARG ;;
    d) dk=$OPTARG ;;
    s) steps=$OPTARG ;;
    b) batch=$OPTARG ;;
    e) every=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-t THREADS] [-d D_K] [-s STEPS] [-b BATCH] [-e EVAL_EVERY]" >&2; exit 2 ;;
    esac
done
me=compare_cell.sh
. "$here/lib.sh"
need_int -r "$rounds" 1
need_int -t "$threads" 1
need_int -d "$dk" 1
need_int -s "$steps" 20 # the cell's 20 warmup steps
need_int -b "$batch" 1
need_int -e "$every" 1
need_bin "$QKT_BIN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$QKT_BIN" version)"
echo "# cell: mqar, d_k $dk (width $((2 * dk)), 2 heads, 2 layers, T 32, B $batch), $steps steps, validation every $every (4 batches), $threads thread(s)"
run_qkt() {
    rm -rf "$tmp/q"
    "$QKT_BIN" train --data mqar --n-layer 2 --n-head 2 --n-embd $((2 * dk)) --block-size 32 --batch-size "$batch" \
        --steps "$steps" --lr 3e-3 --min-lr 3e-4 --warmup-steps 20 --beta2 0.95 --weight-decay 0.1 --grad-clip 1 \
        --eval-every "$every" --eval-batches 4 --ckpt-every 0 --log-every 100000 --threads "$threads" --seed 1 --out "$tmp/q" >"$tmp/out" 2>&1 || run_failed "$QKT_BIN train (d_k $dk)" "$(cat "$tmp/out")"
    s=$(tail -1 "$tmp/q/log.csv" | awk -F, '{print $NF}')
    v=$(tail -1 "$tmp/q/log.csv" | awk -F, '{print $5}')
    echo "qkt train_s=$s final_val_loss=$v"
}
run_torch() {
    out=$("$TORCH_PY" "$here/torch_cell.py" --d-k "$dk" --steps "$steps" --batch "$batch" --eval-every "$every" --threads "$threads" 2>&1) ||
        run_failed "$TORCH_PY $here/torch_cell.py (d_k $dk)" "$out"
    echo "$out" | grep "^torch cell " | sed 's/^torch cell [^ ]* [^ ]* [^ ]* /torch /'
}
log=$tmp/log
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then a=$(run_qkt); b=$(run_torch); else b=$(run_torch); a=$(run_qkt); fi
    echo "$r $a"
    echo "$r $b"
    echo "$r $a" >>"$log"
    echo "$r $b" >>"$log"
    r=$((r + 1))
done
awk -v steps="$steps" "$MED_AWK"'{ split($3, kv, "="); t[$2, $1] = kv[2]; if ($1 > R) R = $1 }
END {
    for (r = 1; r <= R; r++) { q[r] = t["qkt", r]; p[r] = t["torch", r]; s[r] = p[r] / q[r] }
    printf "qkt %.2f s (%.2f ms/step), torch %.2f s (%.2f ms/step), speedup %.2fx (median of per-round ratios)\n", med(q, R), med(q, R) / steps * 1e3, med(p, R), med(p, R) / steps * 1e3, med(s, R)
}' "$log"
