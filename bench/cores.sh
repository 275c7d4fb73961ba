#!/bin/sh
# One thread of qkt bench pinned to each CPU in turn (taskset), several rounds, the CPUs'
# order rotated each round: whether the machine's CPUs run the same step at the same speed.
# Two threads (and the study's two workers) wait for the slower one, so a gap here is a
# ceiling on the two-thread MFU that no change to qkt lifts (docs/performance.md).
#
# usage: bench/cores.sh [-r ROUNDS] [-s STEPS] CONFIG [BENCH FLAGS...]
#   e.g. bench/cores.sh tiny --batch 8      (a shard of tiny at --replicas 2)
#   CPUs: all that the process may run on (taskset -p), at most 64; QKT_BIN as in
#   bench/compare.sh. Prints every run, then per CPU the median step time and MFU and the
#   median of per-round ratios to the first CPU's time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
rounds=5 steps=20
while getopts r:s: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    s) steps=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-s STEPS] CONFIG [BENCH FLAGS...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-s STEPS] CONFIG [BENCH FLAGS...]" >&2; exit 2; }
cfg=$1
shift
me=cores.sh
. "$here/lib.sh"
need_int -r "$rounds" 1
need_int -s "$steps" 1
need_bin "$QKT_BIN"
need_configs "$cfg"
command -v taskset >/dev/null || { echo "$me: taskset not found (Debian: apt-get install util-linux)" >&2; exit 2; }
# the CPUs this process may use, from its affinity list (e.g. "0-1" or "0,2,4-5")
list=$(taskset -cp $$ | sed 's/.*: *//')
cpus=$(echo "$list" | tr ',' '\n' | awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }' | head -64 | tr '\n' ' ')
[ -n "$cpus" ] || { echo "$me: no CPU in this process's affinity list '$list'" >&2; exit 2; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), CPUs $cpus, load $(cut -d' ' -f1-3 /proc/loadavg); $("$QKT_BIN" version)"
echo "# qkt bench --config $cfg $* --threads 1 --steps $steps, the MFU against one sgemm peak measured on each CPU in round 1"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
r=1
order=$cpus
while [ "$r" -le "$rounds" ]; do
    for c in $order; do
        if [ "$r" -eq 1 ]; then
            p=$(sgemm_peak 1 taskset -c "$c" "$QKT_BIN")
            eval "peak_$c=$p"
            echo "cpu $c sgemm peak $p GFLOP/s"
        fi
        eval "p=\$peak_$c"
        out=$(bench_run "taskset -c $c $QKT_BIN bench --config $cfg" taskset -c "$c" "$QKT_BIN" bench --config "$cfg" "$@" \
            --threads 1 --steps "$steps" --peak "$p")
        line=$(echo "$out" | grep " ms_per_step=")
        echo "$r cpu $c $line"
        echo "$r $c $(echo "$line" | sed -n 's/.* ms_per_step=\([0-9.]*\) .* mfu=\([0-9.]*\) .*/\1 \2/p') $p" >>"$log"
    done
    order="${order#* }${order%% *} " # the first CPU last next round
    r=$((r + 1))
done
echo
awk "$MED_AWK"'{ r = $1; c = $2; ms[r, c] = $3; mfu[r, c] = $4; peak[c] = $5; if (!(c in seen)) { seen[c] = 1; order[++nc] = c }; if (r > R) R = r }
END {
    printf "%-5s %10s %9s %7s %14s %s\n", "cpu", "peak", "ms_step", "mfu", "ms/first_cpu", "min-max"
    first = order[1]
    for (i = 1; i <= nc; i++) {
        c = order[i]; n = 0; lo = 1e9; hi = 0
        for (r = 1; r <= R; r++) {
            if (!((r, c) in ms) || !((r, first) in ms)) continue
            n++; a[n] = ms[r, c]; m[n] = mfu[r, c]; q[n] = ms[r, c] / ms[r, first]
            if (q[n] < lo) lo = q[n]; if (q[n] > hi) hi = q[n]
        }
        if (n) printf "%-5s %10.1f %9.2f %7.3f %14.3f %4.2f-%4.2f\n", c, peak[c], med(a, n), med(m, n), med(q, n), lo, hi
    }
}' "$log"
