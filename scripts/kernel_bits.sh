#!/bin/sh
# Do the elementwise kernels of the working tree give the bits of revision REV? Compiles
# autograd/kern_ops.h (with the kern_simd.h beside it) from REV and from the working tree
# into one program per kernel path, as kern_<isa>.c compiles it (its target pragma), and
# runs scripts/kernel_bits.c: exp, tanh, GELU forward, gradient and epilogue on all 2^32
# float32 inputs, cross-entropy on random cases. For changes meant to keep every bit (the
# study's published results depend on them); one to two minutes per path on 2 cores.
#   usage: scripts/kernel_bits.sh [REV] [BUILD_DIR]      (defaults: HEAD, build)
set -e
rev=${1:-HEAD}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) gen=$build/generated ;; *) gen=$root/$build/generated ;; esac
[ -f "$gen/qkt_version.h" ] || { echo "kernel_bits.sh: $gen/qkt_version.h not found (build first: make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/old" "$tmp/new"
for f in kern_ops.h kern_simd.h; do
    git -C "$root" show "$rev:autograd/$f" > "$tmp/old/$f" || { echo "kernel_bits.sh: no autograd/$f at $rev" >&2; exit 2; }
    cp "$root/autograd/$f" "$tmp/new/$f"
done
cflags="-O2 -std=gnu11 -fopenmp -I$root/include/qkt -I$root/autograd -I$gen"
status=0
for isa in baseline avx2 avx512; do
    case $isa in
    avx512) flag=avx512f target='#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")' ;;
    avx2) flag=avx2 target='#pragma GCC target("avx2,fma")' ;;
    *) flag=sse2 target= ;;
    esac
    if ! grep -qw "$flag" /proc/cpuinfo; then echo "$isa: skipped (this CPU has no $flag)"; continue; fi
    for v in old new; do
        cat > "$tmp/$v.c" <<EOC
$target
#pragma GCC optimize("no-trapping-math")
#include "$v/kern_ops.h"
void ${v}_epi(float *c, float *g, int rows, int cols) { gelu_epilogue(c, g, rows, cols, cols); }
void ${v}_fwd(const float *x, float *y, long n) { gelu_forward(x, y, n); }
void ${v}_bwd(bool fresh, const float *x, const float *dy, float *dx, long n) { gelu_backward(fresh, x, dy, dx, n); }
void ${v}_exp_tanh(const float *x, float *e, float *t, long n) { exp_tanh(x, e, t, n); }
double ${v}_cef(const float *x, const int *tg, float *lse, long rows, int V) { return cross_entropy_forward(x, tg, lse, rows, V); }
void ${v}_ceb(const float *x, const int *tg, const float *lse, float g, float *dx, long rows, int V) { cross_entropy_backward(x, tg, lse, g, dx, rows, V); }
EOC
        cc $cflags -c "$tmp/$v.c" -o "$tmp/$v.o"
    done
    cc -O2 "$root/scripts/kernel_bits.c" "$tmp/old.o" "$tmp/new.o" -fopenmp -lm -o "$tmp/kernel_bits"
    "$tmp/kernel_bits" "$isa" || status=1
done
exit $status
