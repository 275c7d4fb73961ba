#!/bin/sh
# Cells of a `qkt ablate` run, computed again by two qkt builds alternately (A first in odd
# rounds): each run drops the cell's result file and runs `qkt _cell --run RUN --cell ID` on one
# thread, as the study's workers do, then reads the CPU-seconds the cell recorded in its .cost
# file and the page faults of the process (/usr/bin/time). B's result file must be A's byte for
# byte (the builds compute the same numbers), else it stops. Prints every run, then per cell the
# medians and the median of the per-round ratios B / A of the CPU-seconds (< 1: B is cheaper).
# The run's result files are left as the last run wrote them (the same bytes).
#
# usage: bench/compare_cells.sh [-r ROUNDS] A_BIN B_BIN RUN CELL...
#   e.g. qkt ablate --preset quick --out /tmp/q; bench/compare_cells.sh build-a/qkt build/qkt /tmp/q/quick init_dk_dk512
set -eu
here=$(cd "$(dirname "$0")" && pwd)
me=compare_cells.sh
. "$here/lib.sh"
rounds_opt "[-r ROUNDS] A_BIN B_BIN RUN CELL..." "$@"
shift "$nopt"
[ $# -ge 4 ] || { echo "usage: $0 [-r ROUNDS] A_BIN B_BIN RUN CELL..." >&2; exit 2; }
A=$1 B=$2 run=$3
shift 3
need_bin "$A"
need_bin "$B"
[ -x /usr/bin/time ] || { echo "$me: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
[ -f "$run/config.json" ] || { echo "$me: $run has no config.json (a qkt ablate run directory, such as OUT/quick)" >&2; exit 2; }
for c; do
    [ -f "$run/cells/$c.csv" ] || { echo "$me: cell '$c' has no result in $run/cells (a finished cell's id)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); A $("$A" version); B $("$B" version)"
# one_run WHICH BIN CELL ROUND: prints "ROUND WHICH CELL CPU_S FAULTS"
one_run() {
    rm -f "$run/cells/$3.csv"
    out=$(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 QKT_THREADS=1 /usr/bin/time -f 'faults=%R' \
        "$2" _cell --run "$run" --cell "$3" 2>&1) || run_failed "$1 ($2) on cell $3" "$out"
    [ -f "$run/cells/$3.csv" ] || run_failed "$1 ($2) on cell $3 (no result file)" "$out"
    cpu=$(sed -n 's/.*cpu_s=\([0-9.e+-]*\).*/\1/p' "$run/cells/$3.cost" | head -1)
    faults=$(printf '%s\n' "$out" | sed -n 's/^faults=\([0-9]*\)$/\1/p' | tail -1)
    [ -n "$cpu" ] && [ -n "$faults" ] || run_failed "$1 ($2) on cell $3 (no cpu_s or fault count)" "$out"
    cp "$run/cells/$3.csv" "$tmp/$1.csv"
    echo "$4 $1 $3 $cpu $faults"
}
for r in $(seq "$rounds"); do
    for c; do
        if [ $((r % 2)) -eq 1 ]; then one_run A "$A" "$c" "$r"; one_run B "$B" "$c" "$r"; else one_run B "$B" "$c" "$r"; one_run A "$A" "$c" "$r"; fi
        cmp -s "$tmp/A.csv" "$tmp/B.csv" || { echo "$me: cell $c: B's result file differs from A's" >&2; exit 1; }
    done
done >"$tmp/runs"
cat "$tmp/runs"
echo
awk "$MED_AWK"'
{ cpu[$3, $2, $1] = $4; flt[$3, $2, $1] = $5; if (!($3 in seen)) { seen[$3] = 1; order[++nc] = $3 } if ($1 > R) R = $1 }
END {
    printf "%-28s %9s %9s %8s %9s %9s %s\n", "cell", "A_cpu_s", "B_cpu_s", "B/A", "A_faults", "B_faults", "min-max"
    for (i = 1; i <= nc; i++) {
        c = order[i]
        for (r = 1; r <= R; r++) { a[r] = cpu[c, "A", r]; b[r] = cpu[c, "B", r]; q[r] = b[r] / a[r]; fa[r] = flt[c, "A", r]; fb[r] = flt[c, "B", r] }
        lo = q[1]; hi = q[1]
        for (r = 2; r <= R; r++) { if (q[r] < lo) lo = q[r]; if (q[r] > hi) hi = q[r] }
        printf "%-28s %9.3f %9.3f %8.3f %9d %9d %.2f-%.2f\n", c, med(a, R), med(b, R), med(q, R), med(fa, R), med(fb, R), lo, hi
    }
}' "$tmp/runs"
