#!/bin/sh
# Checks that qkt's Debian packages are present. As root, installs what is missing
# (apt-get update once, then apt-get install -y); otherwise prints the missing ones and the
# apt-get line that installs them.
# Open MPI (libopenmpi-dev openmpi-bin: mpirun -np N qkt train / ablate, docs/distributed.md)
# is optional: installed with the rest as root; otherwise its line is printed as a note and
# qkt builds without MPI (its tests are then reported as skipped).
# Usage: scripts/deps.sh [--with-torch] [--without-mpi]
set -e
PKGS="cmake make gcc g++ libopenblas-dev libcjson-dev libstb-dev pkg-config"
OPTIONAL="libopenmpi-dev openmpi-bin"
for opt in "$@"; do
    case $opt in
    --with-torch) PKGS="$PKGS python3-torch python3-numpy" ;;
    --without-mpi) OPTIONAL="" ;;
    *) echo "usage: scripts/deps.sh [--with-torch] [--without-mpi]" >&2; exit 2 ;;
    esac
done
absent() {
    out=""
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            out="$out $p"
        fi
    done
    echo "$out"
}
missing=$(absent $PKGS)
optional=$(absent $OPTIONAL)
if [ "$(id -u)" = "0" ]; then
    [ -z "$missing$optional" ] && exit 0
    echo "qkt: installing missing packages:$missing$optional"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing $optional
    exit 0
fi
[ -n "$optional" ] && echo "qkt: note: without Open MPI qkt builds without MPI (optional: sudo apt-get install -y$optional)"
[ -z "$missing" ] && exit 0
echo "qkt: missing packages:$missing"
echo "qkt: install them with: sudo apt-get install -y$missing"
exit 1
