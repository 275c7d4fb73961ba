#!/bin/sh
# Fuzz one harness for a while:  tests/fuzz/run.sh TARGET SECONDS   (e.g. safetensors 60)
# Configures a clang build with QKT_FUZZ=ON in $QKT_FUZZ_BUILD (default build-fuzz/),
# runs fuzz_TARGET over a working corpus seeded from tests/fuzz/corpus_TARGET/ (the
# repo's seeds are never modified), and prints the executions. Crashes are saved as
# $QKT_FUZZ_BUILD/fuzz-artifacts/TARGET-crash-*; the exit status is libFuzzer's
# (non-zero on a crash). Reproduce one with: build-fuzz/tests/fuzz_TARGET FILE
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 TARGET SECONDS   (targets: $(ls "$(dirname "$0")" | sed -n 's/^fuzz_\(.*\)\.c$/\1/p' | tr '\n' ' '))" >&2
    exit 2
fi
target=$1
secs=$2
case $secs in '' | *[!0-9]*) echo "$0: SECONDS must be a positive integer, got '$secs'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ ! -f "$here/fuzz_$target.c" ]; then
    echo "$0: no harness tests/fuzz/fuzz_$target.c" >&2
    exit 2
fi
build=${QKT_FUZZ_BUILD:-$root/build-fuzz}
cc=${CC:-clang}
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DQKT_FUZZ=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$build" --target "fuzz_$target" -j 2 >"$build/fuzz-build.log" 2>&1; then
    tail -30 "$build/fuzz-build.log" >&2
    exit 1
fi
work=$build/fuzz-corpus/$target
art=$build/fuzz-artifacts
mkdir -p "$work" "$art"
dict=
[ -f "$here/$target.dict" ] && dict=-dict=$here/$target.dict
log=$build/fuzz-$target.log
status=0
"$build/tests/fuzz_$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/$target-" $dict "$work" "$here/corpus_$target" >"$log" 2>&1 || status=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
echo "fuzz_$target: ${execs:-?} executions (limit ${secs}s), corpus $(ls "$work" | wc -l) files, exit status $status (log: $log)"
if [ $status -ne 0 ]; then
    grep -E "ERROR|SUMMARY|Test unit written" "$log" >&2 || tail -20 "$log" >&2
fi
exit $status
