#!/bin/sh
# The installed package as a user meets it: `cmake --install BUILD --prefix P`, then every
# example of examples/ built and run for a few steps: with the link lines docs/library.md
# shows, run verbatim (taken from the doc), through pkg-config in a prefix with a space,
# and through find_package(qkt); the static library (qkt_static.pc); no MPI in libqkt;
# libqkt_mpi when built with MPI; float32 and float64 in one program (the float64 names
# qkt64_...); the float32/float64 guard; the headers from C++17.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR [float32|float64]
#   float64: a -DQKT_DOUBLE=ON build, whose one library libqkt is float64 (qkt.pc and qkt64.pc
#   both name it, with QKT_DOUBLE set).
set -eu
build=$1 src=$2 mode=${3:-float32}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix with space"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc=${CC:-cc}
run() { # name, then the command: its output is shown only on failure
    name=$1; shift
    if ! "$@" >"$tmp/out" 2>&1; then cat "$tmp/out"; echo "FAIL: $name"; exit 1; fi
    echo "ok: $name"
}
fail() { echo "FAIL: $*"; exit 1; }
# pkg-config's paths carry the prefix: a space in it is the hard case, so quote per word.
pc() { pkg-config "$@" | sed "s|$prefix|'$prefix'|g"; }
mpi=no
[ -f "$prefix/lib/pkgconfig/qkt_mpi.pc" ] && mpi=yes

# 1. docs/library.md's link lines, exactly as written (its unquoted $(pkg-config ...) needs a
# prefix without a space): each runs in a directory holding the example under the doc's
# file name. A line the doc no longer shows fails the test.
plain="$tmp/prefix"
cmake --install "$build" --prefix "$plain" >>"$tmp/install.log"
doc_line() { # the doc's indented command starting with $1 (its comment cut off)
    l=$(grep -E "^    $1" "$src/docs/library.md" | head -1 | sed 's/  *#.*$//; s/^    //')
    [ -n "$l" ] || fail "docs/library.md shows no link line starting '$1'"
    printf '%s\n' "$l"
}
doc_run() { # name, example file, the doc's file name, then the doc's lines
    dn=$1 dfile=$2 das=$3; shift 3
    d="$tmp/doc_$dn"
    mkdir -p "$d" && cp "$src/examples/$dfile" "$d/$das"
    for l in "$@"; do
        run "docs/library.md's line for $dn: $l" sh -c "cd '$d' && export PKG_CONFIG_PATH='$plain/lib/pkgconfig' && $l"
    done
}
line32=$(doc_line 'cc prog\.c .*--libs qkt\)')
line_static=$(doc_line 'cc prog\.c .*--libs qkt_static\)')
line64=$(doc_line 'cc my_op_check\.c ')
for ex in mlp_adam tiny_gpt fixed_scale custom_scale study_variant; do
    doc_run "$ex" "$ex.c" prog.c "$line32"
    mv "$tmp/doc_$ex/prog" "$tmp/$ex"
done
doc_run custom_op_silu custom_op_silu.c my_op_check.c "$line64"
mv "$tmp/doc_custom_op_silu/my_op_check" "$tmp/custom_op_silu"
run "run mlp_adam" "$tmp/mlp_adam" 300
run "run tiny_gpt" "$tmp/tiny_gpt" 20 1
run "run fixed_scale" "$tmp/fixed_scale" 10
run "run custom_scale" "$tmp/custom_scale" "$tmp/custom_scale_runs" 8
run "run study_variant (its own variant, the study in one call)" "$tmp/study_variant" "$tmp/study_variant_runs" 8
grep -q "half_sqrt_dk" "$tmp/study_variant_runs/half/report.md" || fail "study_variant's report.md does not name its variant"
run "run custom_op_silu" "$tmp/custom_op_silu"

# The static library: qkt_static.pc links libqkt.a (the program needs no libqkt.so).
doc_run static mlp_adam.c prog.c "$line_static"
readelf -d "$tmp/doc_static/prog" | grep NEEDED >"$tmp/needed"
if grep -q "libqkt" "$tmp/needed"; then cat "$tmp/needed"; fail "qkt_static.pc linked the shared libqkt"; fi
run "run mlp_adam linked with libqkt.a" "$tmp/doc_static/prog" 300
# `pkg-config --static` gives the archive's dependencies (for a static link of -lqkt).
static_libs=$(pkg-config --static --libs qkt)
for dep in -lopenblas -lcjson -lstb -lm; do
    case " $static_libs " in *" $dep "*) ;; *) fail "pkg-config --static --libs qkt lacks $dep: $static_libs";; esac
done
echo "ok: pkg-config --static --libs qkt: $static_libs" | sed "s|$prefix|P|g"

# 2. No MPI unless a program asks for it: not in libqkt's link lines, libraries, programs.
for pkg in qkt qkt_static qkt64; do
    pkg-config --exists "$pkg" || continue
    if pkg-config --static --libs "$pkg" | grep -qE "libmpi|-lmpi"; then fail "pkg-config --static --libs $pkg names MPI"; fi
done
if grep -qE "MPI::|libmpi" "$prefix/lib/cmake/qkt/qktTargets.cmake" "$prefix/lib/cmake/qkt/qktConfig.cmake"; then
    fail "qkt::qkt's CMake targets name MPI"
fi
for f in "$prefix"/lib/libqkt.so "$prefix"/lib/libqkt64.so "$tmp/mlp_adam" "$tmp/custom_op_silu"; do
    [ -e "$f" ] || continue
    if ldd "$f" | grep -qi "libmpi"; then ldd "$f"; fail "$(basename "$f") loads MPI"; fi
done
echo "ok: libqkt, its pkg-config and CMake package and the examples link no MPI"
if [ "$mpi" = yes ]; then
    run "pkg-config build of an MPI program (qkt_mpi)" sh -c "$cc -Wall -Wextra -Werror '$src/tests/packaging/mpi_smoke.c' $(pc --cflags --libs qkt_mpi) -o '$tmp/mpi_smoke'"
    run "run it: qkt_dist_use_mpi puts MPI in use" "$tmp/mpi_smoke"
    grep -q "MPI in use: " "$tmp/out" || { cat "$tmp/out"; fail "mpi_smoke does not report MPI"; }
    ldd "$tmp/mpi_smoke" | grep -q "libmpi" || fail "the MPI program does not load MPI"
    if command -v mpirun >/dev/null 2>&1; then
        run "mpirun -np 2 of it: ranks 0 and 1, the ordered sum over MPI" mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/mpi_smoke"
        grep -q "rank 0 of 2, sum 3" "$tmp/out" || { cat "$tmp/out"; fail "mpi_smoke under mpirun -np 2"; }
    fi
    run "find_package(qkt COMPONENTS mpi) configure" cmake -S "$src/tests/packaging/mpi_project" -B "$tmp/mpi_project" -DCMAKE_PREFIX_PATH="$prefix"
    run "find_package(qkt COMPONENTS mpi) build" cmake --build "$tmp/mpi_project"
    run "find_package(qkt COMPONENTS mpi) run" "$tmp/mpi_project/mpi_smoke"
fi

# 3. The float64 library's names: every qkt_ symbol is qkt64_ (but the flavour guard's).
lib64="$prefix/lib/libqkt64.so"
[ "$mode" = float64 ] && lib64="$prefix/lib/libqkt.so"  # the float64 build's one library
if true; then
    nm -D --defined-only "$lib64" | awk '{print $3}' | grep '^qkt' >"$tmp/syms64"
    if grep -v '^qkt64_' "$tmp/syms64" | grep -v '^qkt_abi_float64__link_with_libqkt64$' >"$tmp/bad"; then
        head "$tmp/bad"; fail "$(basename "$lib64") (float64) defines names outside qkt64_"
    fi
    if [ "$mode" = float32 ] && nm -D --defined-only "$prefix/lib/libqkt.so" | awk '{print $3}' | grep -q '^qkt64_'; then
        fail "libqkt.so defines qkt64_ names"
    fi
    [ "$(wc -l <"$tmp/syms64")" -gt 100 ] || fail "$(basename "$lib64") exports only $(wc -l <"$tmp/syms64") qkt64_ names"
    echo "ok: the float64 $(basename "$lib64")'s $(wc -l <"$tmp/syms64") names are qkt64_..."
fi
# Every public header renames (includes qkt64_names.h first) when compiled with QKT_DOUBLE.
for h in "$prefix"/include/qkt/qkt*.h; do
    b=$(basename "$h")
    case $b in qkt64_names.h | qkt_version.h) continue ;; esac
    printf '#include "%s"\n' "$b" | "$cc" -E -dM -DQKT_DOUBLE -I"$prefix/include/qkt" -x c - >"$tmp/macros" 2>&1 ||
        { cat "$tmp/macros"; fail "$b does not compile alone with QKT_DOUBLE"; }
    grep -q "define QKT_NAMES64_H" "$tmp/macros" || fail "$b, compiled with QKT_DOUBLE, does not include qkt64_names.h (the float64 names)"
done
echo "ok: every public header takes the float64 names under QKT_DOUBLE"

# find_package(qkt): the same examples as a CMake project (examples/CMakeLists.txt).
run "find_package configure" cmake -S "$src/examples" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
run "find_package build" cmake --build "$tmp/ex" -j 2
run "find_package run mlp_adam" "$tmp/ex/mlp_adam" 300
run "find_package run tiny_gpt" "$tmp/ex/tiny_gpt" 20 1
run "find_package run fixed_scale" "$tmp/ex/fixed_scale" 10
run "find_package run custom_op_silu" "$tmp/ex/custom_op_silu"
if ldd "$tmp/ex/mlp_adam" | grep -qi "libmpi"; then fail "find_package's qkt::qkt loads MPI"; fi

if [ "$mode" = float64 ]; then
    # libqkt is float64 here: a program compiled for float32 does not link against it.
    if sh -c "$cc '$src/examples/tiny_gpt.c' -I'$prefix/include/qkt' $(pc --libs qkt) -o '$tmp/mixed'" >"$tmp/out" 2>&1; then
        echo "FAIL: a float32 program linked against the float64 libqkt"; exit 1
    fi
    grep -q "qkt_abi_float32__link_with_libqkt" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the mismatch is not named"; exit 1; }
    echo "ok: a float32 program is refused at link time by the float64 build's libqkt, naming it"
    echo "installed package (float64 build): all checks passed"
    exit 0
fi

# float32 training and a float64 check in one program (examples/mixed_precision.c), built
# with the doc's two lines, and with find_package.
mixed_c=$(doc_line 'cc -c mixed_precision\.c ')
mixed_l=$(doc_line 'cc mixed_precision\.c ')
doc_run mixed_precision mixed_precision.c mixed_precision.c "$mixed_c" "$mixed_l"
run "run mixed_precision (float32 training, float64 check)" "$tmp/doc_mixed_precision/mixed_precision" 600
grep -q "qkt_sum(0.1, 0.2) = 0.30000000000000004 (float64)" "$tmp/out" || { cat "$tmp/out"; fail "the float64 side does not compute in float64"; }
run "find_package run mixed_precision" "$tmp/ex/mixed_precision" 600

# A program compiled for float64 does not link against the float32 library (and back).
if sh -c "$cc '$src/examples/tiny_gpt.c' $(pc --cflags qkt) -DQKT_DOUBLE $(pc --libs qkt) -o '$tmp/mixed'" >"$tmp/out" 2>&1; then
    echo "FAIL: a float64 program linked against libqkt (float32)"; exit 1
fi
grep -q "qkt_abi_float64__link_with_libqkt64" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the mismatch is not named"; exit 1; }
if sh -c "$cc '$src/examples/tiny_gpt.c' $(pc --cflags qkt) $(pc --libs qkt64) -o '$tmp/mixed'" >"$tmp/out" 2>&1; then
    echo "FAIL: a float32 program linked against libqkt64"; exit 1
fi
grep -q "qkt_abi_float32__link_with_libqkt" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the mismatch is not named"; exit 1; }
echo "ok: float32/float64 mismatches refused at link time, naming the library"

# C++17: the headers, and a program using them.
cxx=${CXX:-g++}
if command -v "$cxx" >/dev/null 2>&1; then
    run "C++17 build" sh -c "$cxx -std=c++17 -Wall -Wextra -pedantic -Werror '$src/tests/packaging/cpp_smoke.cpp' $(pc --cflags --libs qkt) -o '$tmp/cpp_smoke'"
    run "C++17 run" "$tmp/cpp_smoke"
    run "C++17 build, float64" sh -c "$cxx -std=c++17 -Wall -Wextra -pedantic -Werror '$src/tests/packaging/cpp_smoke.cpp' $(pc --cflags --libs qkt64) -o '$tmp/cpp_smoke64'"
    run "C++17 run, float64" "$tmp/cpp_smoke64"
else
    echo "FAIL: no C++ compiler ($cxx) to check the headers with"; exit 1
fi
echo "installed package: all checks passed"
