#!/bin/sh
# cmake/prefix_symbols.cmake on a small archive: every global qkt_ function and variable
# (qkt__ internals too) becomes qkt64_, definitions and references alike, and the header
# lists them; the flavour guard qkt_abi_* and static functions keep their names; an archive
# with a global symbol outside qkt_ is refused, naming it.
# Usage: check_prefix.sh SOURCE_DIR CC LD NM OBJCOPY
set -eu
src=$1 cc=$2 ld=$3 nm=$4 objcopy=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
prefix() { # name, archive
    cmake -DLD="$ld" -DNM="$nm" -DOBJCOPY="$objcopy" -DMAIN="$1=$tmp/$2" -DOUT_DIR="$tmp" -DHEADER="$tmp/names.h" \
          -P "$src/cmake/prefix_symbols.cmake"
}
cat >a.c <<'C'
int qkt__count;                                   /* internal data */
const int qkt_abi_float64__link_with_libqkt64 = 64; /* the guard */
static int helper(void) { return 2; }
int qkt_f(void) { return ++qkt__count; }
C
cat >b.c <<'C'
int qkt_f(void);
int qkt_g(void) { return qkt_f() + 1; }           /* a reference across objects */
C
"$cc" -fPIC -c a.c b.c && ar rc libq.a a.o b.o
prefix q libq.a >log 2>&1 || { cat log; fail "prefix_symbols refused a clean archive"; }
"$nm" q.o >syms
for s in "T qkt64_f" "T qkt64_g" "B qkt64__count" "R qkt_abi_float64__link_with_libqkt64" "t helper"; do
    grep -q " $s\$" syms || { cat syms; fail "no '$s' in the renamed object"; }
done
if grep -qE " (qkt_f|qkt_g|qkt__count)$" syms; then cat syms; fail "an old name is left"; fi
for d in "#define qkt_f qkt64_f" "#define qkt_g qkt64_g" "#define qkt__count qkt64__count"; do
    grep -q "^$d\$" names.h || { cat names.h; fail "names.h lacks '$d'"; }
done
if grep -q "abi\|helper" names.h; then cat names.h; fail "names.h renames the guard or a static function"; fi
echo "ok: qkt_ functions and data (qkt__ too) renamed qkt64_ in definitions, references and the header"

printf 'int stray_global(void) { return 0; }\n' >c.c
"$cc" -fPIC -c c.c && ar rc libs.a a.o c.o
if prefix s libs.a >log 2>&1; then fail "an archive with a global symbol outside qkt_ was accepted"; fi
grep -q "global symbol 'stray_global' is outside the qkt_ prefix" log || { cat log; fail "the stray symbol is not named"; }
echo "ok: a global symbol outside qkt_ is refused, naming it"
