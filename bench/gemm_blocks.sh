#!/bin/sh
# The own gemm's block sizes side by side (AVX-512 CPUs): compiles autograd/kern_gemm_avx512.h
# once per variant KC,NC,MC,NC_TA (K block, B block width, A rows per block, B block width with
# A transposed) and times all variants on each shape in one process, interleaved, one thread
# (bench/gemm_blocks.c). The blocks never change the bits; the program checks that too.
#   usage: bench/gemm_blocks.sh [-r REPS] [-b BUILD_DIR] VARIANT... [-- 'ta tb M N K'...]
#   e.g.   bench/gemm_blocks.sh 256,128,64,512 512,128,64,512 -- '0 1 1024 1152 384' '1 0 1152 384 1024'
#   default shapes: the medium config's products at batch 4 (M = 1024), with K 384 .. 1536
set -e
reps=21
build=build
while getopts r:b: o; do
    case $o in
    r) reps=$OPTARG ;;
    b) build=$OPTARG ;;
    *) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
[ -f "$build/generated/qkt_version.h" ] || { echo "gemm_blocks.sh: $build/generated/qkt_version.h not found (build first: make build)" >&2; exit 2; }
! grep -q '^QKT_DOUBLE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
    { echo "gemm_blocks.sh: $build is a float64 build (QKT_DOUBLE=ON); the own gemm is float32's (-b a float32 build)" >&2; exit 2; }
grep -qw avx512f /proc/cpuinfo || { echo "gemm_blocks.sh: this CPU has no AVX-512 (the own gemm runs only there)" >&2; exit 2; }
# a sanitizer build's library needs its runtime (the timings then say little)
san=$(sed -n 's/^QKT_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null)
sanflags=${san:+-fsanitize=$san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
names=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    echo "$1" | grep -Eq '^[0-9]+,[0-9]+,[0-9]+,[0-9]+$' || { echo "gemm_blocks.sh: variant '$1': expected KC,NC,MC,NC_TA" >&2; exit 2; }
    IFS=, read -r kc nc mc ncta <<EOV
$1
EOV
    for b in $kc $nc $mc $ncta; do
        [ "$b" -ge 16 ] && [ $((b % 16)) -eq 0 ] && [ "$b" -le 8192 ] ||
            { echo "gemm_blocks.sh: variant '$1': each size a multiple of 16 in 16..8192" >&2; exit 2; }
    done
    mkdir "$tmp/v$n"
    sed -e "s/enum { GEMM_KC = [0-9]*, GEMM_NC = [0-9]*, GEMM_MC = [0-9]* };/enum { GEMM_KC = $kc, GEMM_NC = $nc, GEMM_MC = $mc };/" \
        -e "s/GEMM_NC_TA = [0-9]*/GEMM_NC_TA = $ncta/" "$root/autograd/kern_gemm_avx512.h" > "$tmp/v$n/kern_gemm_avx512.h"
    grep -q "GEMM_KC = $kc, GEMM_NC = $nc, GEMM_MC = $mc }" "$tmp/v$n/kern_gemm_avx512.h" || { echo "gemm_blocks.sh: block sizes not found in kern_gemm_avx512.h" >&2; exit 2; }
    cat > "$tmp/v$n.c" <<EOC
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#include "ops_internal.h"
#include "kern_table.h"
#include "v$n/kern_gemm_avx512.h"
void gemm_v$n(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C) {
    own_gemm(ta, tb, M, N, K, A, lda, B, ldb, false, NULL, C, N, NULL, NULL);
}
EOC
    cc -O2 -std=gnu11 -fopenmp $sanflags -I"$root/include/qkt" -I"$root/autograd" -I"$build/generated" -c "$tmp/v$n.c" -o "$tmp/v$n.o"
    names="$names \"$1\","
    n=$((n + 1))
    shift
done
[ $n -gt 0 ] || { echo "gemm_blocks.sh: no variant given (e.g. 256,128,64,512)" >&2; exit 2; }
[ "$1" = -- ] && shift
{
    echo "enum { NV = $n };"
    i=0; while [ $i -lt $n ]; do echo "gemm_fn gemm_v$i;"; i=$((i + 1)); done
    printf 'static gemm_fn *fns[] = {'; i=0; while [ $i -lt $n ]; do printf 'gemm_v%d, ' $i; i=$((i + 1)); done; echo '};'
    echo "static const char *names[] = {$names};"
} > "$tmp/variants.h"
cc -O2 $sanflags -I"$tmp" "$root/bench/gemm_blocks.c" "$tmp"/v*.o -o "$tmp/gemm_blocks" "$build/libqkt.a" -lopenblas -lcjson -lm -fopenmp
if [ $# -eq 0 ]; then
    set -- '0 1 1024 1152 384' '0 0 1024 384 1152' '1 0 1152 384 1024' '0 1 1024 384 384' '0 0 1024 384 384' \
        '1 0 384 384 1024' '0 1 1024 1536 384' '0 0 1024 384 1536' '1 0 1536 384 1024' '0 0 1024 1536 384' \
        '1 0 384 1536 1024'
fi
QKT_THREADS=1 "$tmp/gemm_blocks" "$reps" "$@"
