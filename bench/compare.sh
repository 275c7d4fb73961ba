#!/bin/sh
# Side-by-side training-step benchmark: qkt bench and bench/torch_gpt.py, run
# alternately (qkt first in odd rounds, torch first in even ones) for several rounds
# per config, so both see the same machine load. Prints every run, then per config
# the medians, the median of the per-round step-time ratios (torch / qkt: > 1 means
# qkt is faster), the peak-RSS ratio (qkt / torch), and the same ratio of CPU time per
# step (all threads: on a machine shared with other jobs it shows the work done, where
# wall time also counts the waiting for a core).
#
# usage: bench/compare.sh [-r ROUNDS] [-t THREADS] [-p REPLICAS] [-s STEPS] [-w WARMUP] [CONFIG...]
#   qkt runs with --replicas REPLICAS (default: THREADS, each thread a data-parallel
#   shard of the batch; -p 1 times the plain step, every op split over the threads).
#   configs: tiny small medium (the default), cell32 cell128 (cells of the study's quick
#   preset). QKT_BIN (default build/qkt, the portable build: its kernels run the widest
#   path the CPU has, docs/performance.md) and TORCH_PY (default /usr/bin/python3) can be
#   overridden.
#   TORCH_ENVS lists environments for PyTorch's process, separated by '|'; every round
#   runs PyTorch once with each and keeps its fastest (so PyTorch runs at its best
#   setting for that config: see docs/performance.md). The default is the two settings
#   measured best on the 2-core machine: OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads
#   sleep instead of spinning against OpenBLAS's) and GOMP_SPINCOUNT=1000 (a ~26 us spin).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
QKT_BIN=${QKT_BIN:-$root/build/qkt}
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
TORCH_ENVS=${TORCH_ENVS:-OMP_WAIT_POLICY=PASSIVE|GOMP_SPINCOUNT=1000}
rounds=5 threads=2 steps=10 warmup=3 replicas=""
while getopts r:t:p:s:w: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    t) threads=$OPTARG ;;
    p) replicas=$OPTARG ;;
    s) steps=$OPTARG ;;
    w) warmup=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-t THREADS] [-p REPLICAS] [-s STEPS] [-w WARMUP] [CONFIG...]" >&2; exit 2 ;;
    esac
done
replicas=${replicas:-$threads}
shift $((OPTIND - 1))
configs=${*:-tiny small medium}
me=compare.sh
. "$here/lib.sh"
need_int -r "$rounds" 1
need_int -t "$threads" 1
need_int -p "$replicas" 1
need_int -s "$steps" 1
need_int -w "$warmup" 0
need_bin "$QKT_BIN"
need_configs $configs

# The MFU denominator: qkt_gemm's rate on 2048^2 at THREADS threads, measured again at the
# start of every round (this machine's speed drifts by 20 % over minutes: a peak measured
# once at the start made later rounds' MFU wrong), given to both frameworks that round.
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$QKT_BIN" version)"
echo "# sgemm peak measured each round at $threads threads (peak= on the lines); qkt --replicas $replicas; torch envs (best of): $TORCH_ENVS"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for cfg in $configs; do
    r=1
    while [ "$r" -le "$rounds" ]; do
        peak=$(sgemm_peak "$threads" "$QKT_BIN")
        # the result line, with cpu_ms_per_step (from the stderr diagnostics) appended
        run_qkt() {
            out=$(bench_run "$QKT_BIN bench --config $cfg" "$QKT_BIN" bench --config "$cfg" --threads "$threads" --replicas "$replicas" \
                --steps "$steps" --warmup "$warmup" --peak "$peak")
            echo "$(echo "$out" | grep "^qkt $cfg ") cpu_ms_per_step=$(echo "$out" | sed -n 's/.*cpu_ms_per_step=\([0-9.]*\).*/\1/p') peak=$peak"
        }
        run_torch() { # the fastest of the TORCH_ENVS runs
            best="" best_ms=""
            rest=$TORCH_ENVS
            while [ -n "$rest" ]; do
                e=${rest%%|*}
                case $rest in *"|"*) rest=${rest#*|} ;; *) rest="" ;; esac
                out=$(env $e "$TORCH_PY" "$here/torch_gpt.py" --config "$cfg" --threads "$threads" --steps "$steps" \
                    --warmup "$warmup" --peak "$peak" 2>&1) || true # another of TORCH_ENVS may run
                line="$(echo "$out" | grep "^torch $cfg ") cpu_ms_per_step=$(echo "$out" | sed -n 's/.*cpu_ms_per_step=\([0-9.]*\).*/\1/p') env=$(echo $e | tr ' ' ',') peak=$peak"
                ms=$(echo "$line" | sed -n 's/.* ms_per_step=\([0-9.]*\).*/\1/p')
                if [ -n "$ms" ] && { [ -z "$best_ms" ] || awk "BEGIN{exit !($ms < $best_ms)}"; }; then best=$line best_ms=$ms; fi
            done
            [ -n "$best" ] || run_failed "$TORCH_PY $here/torch_gpt.py --config $cfg (every one of TORCH_ENVS)" "$out"
            echo "$best"
        }
        if [ $((r % 2)) -eq 1 ]; then a=$(run_qkt); b=$(run_torch); else b=$(run_torch); a=$(run_qkt); fi
        echo "$a"
        echo "$b"
        echo "$r $a" >>"$log"
        echo "$r $b" >>"$log"
        r=$((r + 1))
    done
done
echo
awk -v rounds="$rounds" "$MED_AWK"'function field(name,    i, kv) { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] } return "" }
{
    who = $2; cfg = $3; r = $1
    ms[who, cfg, r] = field("ms_per_step"); rss[who, cfg, r] = field("peak_rss_mb"); mfu[who, cfg, r] = field("mfu")
    cpu[who, cfg, r] = field("cpu_ms_per_step")
    if (!(cfg in seen)) { seen[cfg] = 1; order[++nc] = cfg }
}
END {
    printf "%-8s %9s %9s %8s %8s %9s %9s %8s %9s %8s %9s %9s\n", "config", "qkt_ms", "torch_ms", "speedup", "qkt_rss", "torch_rss", "rss_ratio", "qkt_mfu", "torch_mfu", "qkt_cpu", "torch_cpu", "cpu_ratio"
    for (c = 1; c <= nc; c++) {
        cfg = order[c]; n = 0
        for (r = 1; r <= rounds; r++) {
            if (!(("qkt", cfg, r) in ms) || !(("torch", cfg, r) in ms)) continue
            n++
            q[n] = ms["qkt", cfg, r]; t[n] = ms["torch", cfg, r]; s[n] = t[n] / q[n]
            qr[n] = rss["qkt", cfg, r]; tr[n] = rss["torch", cfg, r]; rr[n] = qr[n] / tr[n]
            qm[n] = mfu["qkt", cfg, r]; tm[n] = mfu["torch", cfg, r]
            qc[n] = cpu["qkt", cfg, r]; tc[n] = cpu["torch", cfg, r]; cr[n] = (qc[n] > 0) ? tc[n] / qc[n] : 0
        }
        if (!n) continue
        printf "%-8s %9.2f %9.2f %7.2fx %8.1f %9.1f %9.2f %8.3f %9.3f %8.1f %9.1f %8.2fx\n", cfg, med(q, n), med(t, n), med(s, n), med(qr, n), med(tr, n), med(rr, n), med(qm, n), med(tm, n), med(qc, n), med(tc, n), med(cr, n)
    }
}' "$log"
