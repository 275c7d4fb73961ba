#!/bin/sh
# The installed package as a user meets it: `cmake --install BUILD --prefix P`, then every
# example of examples/ built and run for a few steps, once through pkg-config and once
# through find_package(qkt); the float32/float64 guard; the headers from C++17.
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
# pkg-config's paths carry the prefix: a space in it is the hard case, so quote per word.
pc() { pkg-config "$@" | sed "s|$prefix|'$prefix'|g"; }
for ex in mlp_adam tiny_gpt fixed_scale custom_scale; do
    run "pkg-config build $ex" sh -c "$cc -Wall -Wextra -Werror '$src/examples/$ex.c' $(pc --cflags --libs qkt) -o '$tmp/$ex'"
done
run "pkg-config build custom_op_silu (qkt64)" sh -c "$cc -Wall -Wextra -Werror '$src/examples/custom_op_silu.c' $(pc --cflags --libs qkt64) -o '$tmp/custom_op_silu'"
run "run mlp_adam" "$tmp/mlp_adam" 300
run "run tiny_gpt" "$tmp/tiny_gpt" 20 1
run "run fixed_scale" "$tmp/fixed_scale" 10
run "run custom_scale" "$tmp/custom_scale" "$tmp/custom_scale_runs" 8
run "run custom_op_silu" "$tmp/custom_op_silu"

# find_package(qkt): the same examples as a CMake project (examples/CMakeLists.txt).
run "find_package configure" cmake -S "$src/examples" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
run "find_package build" cmake --build "$tmp/ex" -j 2
run "find_package run mlp_adam" "$tmp/ex/mlp_adam" 300
run "find_package run tiny_gpt" "$tmp/ex/tiny_gpt" 20 1
run "find_package run fixed_scale" "$tmp/ex/fixed_scale" 10
run "find_package run custom_op_silu" "$tmp/ex/custom_op_silu"

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
else
    echo "FAIL: no C++ compiler ($cxx) to check the headers with"; exit 1
fi
echo "installed package: all checks passed"
