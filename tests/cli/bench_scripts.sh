#!/bin/sh
# The bench scripts' argument and run checks (bench/lib.sh): a bad flag, binary or config is one
# line naming it and exit 2; a run that fails is one line naming it and exit 1. No timing runs:
# every case stops before the first, or at a binary that fails (/bin/false), except one
# gemm_blocks.sh run of one repetition on a small product (on AVX-512 CPUs).
# usage: bench_scripts.sh SOURCE_DIR QKT_BIN
set -u
src=$1 qkt=$2
fails=0
# expect RC MESSAGE COMMAND...: COMMAND exits RC and its last stderr line (its only one) is MESSAGE
expect() {
    want_rc=$1 want=$2
    shift 2
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    lines=$(printf '%s\n' "$err" | sed '/^$/d' | wc -l)
    if [ "$rc" -ne "$want_rc" ] || [ "$err" != "$want" ] || [ "$lines" -ne 1 ]; then
        echo "FAIL: $*: exit $rc (want $want_rc), stderr: $err" >&2
        echo "      want: $want" >&2
        fails=$((fails + 1))
    fi
}
b=$src/bench
expect 2 "compare_builds.sh: -r '0': expected an integer >= 1" sh "$b/compare_builds.sh" -r 0 "$qkt" "$qkt" tiny
expect 2 "compare_builds.sh: -w 'x': expected an integer >= 0" sh "$b/compare_builds.sh" -w x "$qkt" "$qkt" tiny
expect 2 "compare_builds.sh: /nonexistent/qkt is not an executable file (build it: make build)" \
    sh "$b/compare_builds.sh" /nonexistent/qkt "$qkt" tiny
expect 2 "compare_builds.sh: config 'huge': expected tiny, small, medium, cell32 or cell128" \
    sh "$b/compare_builds.sh" "$qkt" "$qkt" tiny huge
expect 1 "compare_builds.sh: B's /bin/false bench --config cell32 failed: no output" \
    sh "$b/compare_builds.sh" -r 1 -s 1 -w 0 "$qkt" /bin/false cell32
expect 2 "compare.sh: -t '-1': expected an integer >= 1" sh "$b/compare.sh" -t -1
expect 2 "compare.sh: config 'cell64': expected tiny, small, medium, cell32 or cell128" sh "$b/compare.sh" cell64
expect 2 "compare.sh: /nonexistent/qkt is not an executable file (build it: make build)" \
    env QKT_BIN=/nonexistent/qkt sh "$b/compare.sh" tiny
expect 1 "compare.sh: /bin/false bench --sgemm-peak failed: no output" env QKT_BIN=/bin/false sh "$b/compare.sh" -r 1 cell32
expect 2 "compare_cell.sh: -s '5': expected an integer >= 20" sh "$b/compare_cell.sh" -s 5
expect 2 "compare_cell.sh: -d '1.5': expected an integer >= 1" sh "$b/compare_cell.sh" -d 1.5
expect 1 "compare_cell.sh: /bin/false train (d_k 16) failed: no output" env QKT_BIN=/bin/false sh "$b/compare_cell.sh" -r 1
expect 2 "scaling.sh: -n '0': expected an integer >= 1" sh "$b/scaling.sh" -n 0
expect 2 "batch_sweep.sh: batch '0': expected an integer >= 1" sh "$b/batch_sweep.sh" cell32 16 0
expect 2 "batch_sweep.sh: config 'big': expected tiny, small, medium, cell32 or cell128" sh "$b/batch_sweep.sh" big
expect 1 "batch_sweep.sh: /bin/false bench --sgemm-peak failed: no output" env QKT_BIN=/bin/false sh "$b/batch_sweep.sh" cell32
expect 2 "cores.sh: -r 'two': expected an integer >= 1" sh "$b/cores.sh" -r two tiny
expect 2 "cores.sh: config 'tiny8': expected tiny, small, medium, cell32 or cell128" sh "$b/cores.sh" tiny8
expect 2 "distributed.sh: -r '0': expected an integer >= 1" sh "$b/distributed.sh" -r 0 /nonexistent/out
expect 2 "standing.sh: -r 'x': expected an integer >= 1" sh "$b/standing.sh" -r x /nonexistent/out
expect 2 "usage: $b/standing.sh [-r ROUNDS] OUT_DIR" sh "$b/standing.sh" -r 2
expect 2 "compare_cells.sh: -r '-2': expected an integer >= 1" sh "$b/compare_cells.sh" -r -2 "$qkt" "$qkt" /nonexistent c
expect 2 "usage: $b/compare_cells.sh [-r ROUNDS] A_BIN B_BIN RUN CELL..." sh "$b/compare_cells.sh" -r 2 "$qkt" "$qkt" /x
expect 2 "compare_cells.sh: /nonexistent/qkt is not an executable file (build it: make build)" \
    sh "$b/compare_cells.sh" "$qkt" /nonexistent/qkt /nonexistent/run c
expect 2 "compare_cells.sh: /nonexistent/run has no config.json (a qkt ablate run directory, such as OUT/quick)" \
    sh "$b/compare_cells.sh" "$qkt" "$qkt" /nonexistent/run c
expect 2 "gemm_blocks.sh: variant '128,64': expected KC,NC,MC,NC_TA" sh "$b/gemm_blocks.sh" 128,64
expect 2 "gemm_blocks.sh: variant '512,100,64,512': each size a multiple of 16 in 16..8192" \
    sh "$b/gemm_blocks.sh" 512,100,64,512
fake=$(mktemp -d) # a float64 build directory, as far as gemm_blocks.sh looks
mkdir "$fake/generated" && touch "$fake/generated/qkt_version.h" && echo 'QKT_DOUBLE:BOOL=ON' > "$fake/CMakeCache.txt"
expect 2 "gemm_blocks.sh: $fake is a float64 build (QKT_DOUBLE=ON); the own gemm is float32's (-b a float32 build)" \
    sh "$b/gemm_blocks.sh" -b "$fake" 512,128,64,512
rm -rf "$fake"
# gemm_blocks.sh compiles autograd's own gemm header into its program: one real run (two
# variants, one small product, one repetition) keeps it in step with that header. Where the
# script refuses to run (a float64 build, a CPU without AVX-512: its own checks, each
# tested above or by its message), the run is not checked.
out=$(sh "$b/gemm_blocks.sh" -r 1 -b "$(dirname "$qkt")" 512,128,64,512 256,128,64,512 -- '1 0 96 80 40' 2>&1)
rc=$?
case "$out" in
"gemm_blocks.sh: "*" is a float64 build (QKT_DOUBLE=ON); "* | "gemm_blocks.sh: this CPU has no AVX-512 "*)
    [ "$rc" -eq 2 ] && echo "bench_scripts.sh: the gemm_blocks.sh run is not checked: $out" ;;
*"ta=1 tb=0 M=96 N=80 K=40  512,128,64,512 "*" 256,128,64,512 "*"(GFLOP/s, median of 1)") [ "$rc" -eq 0 ] ;;
*) false ;;
esac || { echo "FAIL: gemm_blocks.sh run: exit $rc, output: $out" >&2; fails=$((fails + 1)); }
# every script with a #! line runs as the docs write it (bench/cores.sh ...): it is executable
for f in "$src"/bench/* "$src"/scripts/*; do
    [ "$(head -c 2 "$f")" = "#!" ] && [ ! -x "$f" ] && { echo "FAIL: $f has a #! line but is not executable" >&2; fails=$((fails + 1)); }
done
# the checks can fail: a planted wrong message is caught
fails0=$fails
expect 2 "compare.sh: planted" sh "$b/compare.sh" -t -1 2>/dev/null
if [ "$fails" -eq $((fails0 + 1)) ]; then fails=$fails0; else
    echo "FAIL: a planted wrong message was not caught" >&2
    fails=$((fails0 + 1))
fi
[ "$fails" -eq 0 ] || { echo "bench_scripts.sh: $fails case(s) failed" >&2; exit 1; }
echo "bench_scripts.sh: all cases passed"
