#!/bin/sh
# Two qkt builds side by side: `qkt bench` of build A and build B alternately (A first in
# odd rounds, B first in even ones) for several rounds per config, so both see the same
# machine load; prints every run, then per config the medians and the median of the
# per-round ratios B_ms / A_ms (> 1: A is faster) of the wall time and of the CPU time
# per step.
#
# usage: bench/compare_builds.sh [-r ROUNDS] [-t THREADS] [-p REPLICAS] [-s STEPS] [-w WARMUP] A_BIN B_BIN [CONFIG...]
#   e.g. bench/compare_builds.sh build/qkt build-native/qkt tiny small cell32 cell128
#   A_ENV / B_ENV: environment for A's / B's runs (e.g. A_ENV=QKT_ISA=avx2).
#   configs default to "tiny small cell32 cell128"; qkt runs with --replicas REPLICAS
#   (default 1: the plain step, every op split over the threads; bench/compare.sh's default
#   is THREADS).
set -eu
rounds=5 threads=1 replicas=1 steps=10 warmup=3
while getopts r:t:p:s:w: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    t) threads=$OPTARG ;;
    p) replicas=$OPTARG ;;
    s) steps=$OPTARG ;;
    w) warmup=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-t THREADS] [-p REPLICAS] [-s STEPS] [-w WARMUP] A_BIN B_BIN [CONFIG...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: $0 [-r ROUNDS] [-t THREADS] [-p REPLICAS] [-s STEPS] [-w WARMUP] A_BIN B_BIN [CONFIG...]" >&2; exit 2; }
A=$1 B=$2
shift 2
configs=${*:-tiny small cell32 cell128}
me=compare_builds.sh
. "$(dirname "$0")/lib.sh"
need_int -r "$rounds" 1
need_int -t "$threads" 1
need_int -p "$replicas" 1
need_int -s "$steps" 1
need_int -w "$warmup" 0
need_bin "$A"
need_bin "$B"
need_configs $configs
A_ENV=${A_ENV:-} B_ENV=${B_ENV:-}
peak=100 # mfu only; both builds get the same
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $threads, replicas $replicas"
echo "# A: $A $A_ENV ($(env $A_ENV "$A" version))"
echo "# B: $B $B_ENV ($(env $B_ENV "$B" version))"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { # who bin env cfg -> "who cfg ms cpu_ms isa"
    out=$(bench_run "$1's $2 bench --config $4" env $3 "$2" bench --config "$4" --threads "$threads" --replicas "$replicas" \
        --steps "$steps" --warmup "$warmup" --peak "$peak")
    ms=$(echo "$out" | sed -n 's/.* ms_per_step=\([0-9.]*\).*/\1/p')
    cpu=$(echo "$out" | sed -n 's/.*cpu_ms_per_step=\([0-9.]*\).*/\1/p')
    isa=$(echo "$out" | sed -n 's/.* isa=\([a-z0-9]*\).*/\1/p')
    echo "$1 $4 $ms $cpu $isa"
}
for cfg in $configs; do
    r=1
    while [ "$r" -le "$rounds" ]; do
        if [ $((r % 2)) -eq 1 ]; then a=$(run A "$A" "$A_ENV" "$cfg"); b=$(run B "$B" "$B_ENV" "$cfg")
        else b=$(run B "$B" "$B_ENV" "$cfg"); a=$(run A "$A" "$A_ENV" "$cfg"); fi
        echo "$r $a"
        echo "$r $b"
        echo "$r $a" >>"$log"
        echo "$r $b" >>"$log"
        r=$((r + 1))
    done
done
echo
awk "$MED_AWK"'{ r = $1; who = $2; cfg = $3; ms[who, cfg, r] = $4; cpu[who, cfg, r] = $5; isa[who, cfg] = $6; if (!(cfg in seen)) { seen[cfg] = 1; order[++nc] = cfg }; if (r > R) R = r }
END {
    printf "%-8s %8s %8s %9s %9s %8s %8s %9s %8s %8s\n", "config", "A_isa", "B_isa", "A_ms", "B_ms", "B/A", "A_cpu", "B_cpu", "B/A_cpu", "min-max"
    for (c = 1; c <= nc; c++) {
        cfg = order[c]; n = 0; lo = 1e9; hi = 0
        for (r = 1; r <= R; r++) {
            if (!(("A", cfg, r) in ms) || !(("B", cfg, r) in ms)) continue
            n++; a[n] = ms["A", cfg, r]; b[n] = ms["B", cfg, r]; q[n] = b[n] / a[n]
            ac[n] = cpu["A", cfg, r]; bc[n] = cpu["B", cfg, r]; qc[n] = bc[n] / ac[n]
            if (q[n] < lo) lo = q[n]; if (q[n] > hi) hi = q[n]
        }
        if (!n) continue
        printf "%-8s %8s %8s %9.2f %9.2f %8.3f %8.2f %9.2f %8.3f %4.2f-%4.2f\n", cfg, isa["A", cfg], isa["B", cfg], med(a, n), med(b, n), med(q, n), med(ac, n), med(bc, n), med(qc, n), lo, hi
    }
}' "$log"
