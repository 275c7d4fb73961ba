#!/bin/sh
# Do the ops of BUILD_DIR's autograd library give the bits of revision REV's? Builds REV's
# library in a temporary worktree, compiles scripts/op_bits.c against both, and compares what
# they print: a hash of each output and grad of the ops outside the GPT's fused path (softmax,
# log-softmax, ReLU, GELU, scale, split, reshape, the axis reductions, narrow, index_select,
# gather, permute, the broadcast ops) and of the fused attention (18 configurations), at 1
# and 2 threads, below and above QKT_PAR_MIN, on each kernel path this CPU runs (QKT_ISA
# baseline, avx2, avx512). Also checks that 1 and 2 threads print the same. About two minutes
# on 2 cores.
#   usage: scripts/op_bits.sh [REV] [BUILD_DIR]      (defaults: HEAD, build)
set -e
rev=${1:-HEAD}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
[ -f "$build/libqkt_autograd.a" ] || { echo "op_bits.sh: $build/libqkt_autograd.a not found (build first: make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/src" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP PIPE # through the EXIT trap: no worktree left behind
git -C "$root" worktree add --detach "$tmp/src" "$rev" >/dev/null 2>&1 || { echo "op_bits.sh: cannot check out $rev" >&2; exit 2; }
cmake -S "$tmp/src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j "$(nproc)" --target qkt_autograd >/dev/null
libs="-lopenblas -lm"
cc -O2 -fopenmp -I"$tmp/src/include/qkt" -I"$tmp/build/generated" "$root/scripts/op_bits.c" "$tmp/build/libqkt_autograd.a" $libs -o "$tmp/old"
cc -O2 -fopenmp -I"$root/include/qkt" -I"$build/generated" "$root/scripts/op_bits.c" "$build/libqkt_autograd.a" $libs -o "$tmp/new"
status=0
for isa in baseline avx2 avx512; do
    QKT_ISA=$isa "$tmp/new" > "$tmp/new.txt" 2> "$tmp/err.txt" || {
        echo "op_bits: $isa: not run here ($(head -c 200 "$tmp/err.txt"))"
        continue
    }
    QKT_ISA=$isa "$tmp/old" > "$tmp/old.txt"
    if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
        echo "op_bits: $isa: $(wc -l < "$tmp/new.txt") hashes, the same as $rev's"
    else
        echo "op_bits: $isa: differs from $rev's:"; diff "$tmp/old.txt" "$tmp/new.txt" || true; status=1
    fi
    if [ "$(grep '^threads 1' "$tmp/new.txt" | cut -d' ' -f3-)" = "$(grep '^threads 2' "$tmp/new.txt" | cut -d' ' -f3-)" ]; then
        echo "op_bits: $isa: 1 and 2 threads the same"
    else
        echo "op_bits: $isa: 1 and 2 threads differ"; status=1
    fi
done
exit $status
