#!/bin/sh
# Checks that qkt's Debian packages are present. As root, installs what is missing
# (apt-get update once, then apt-get install -y); otherwise prints the exact line.
# Usage: scripts/deps.sh [--with-torch]
set -e
PKGS="cmake make gcc g++ libopenblas-dev libcjson-dev libstb-dev pkg-config"
if [ "$1" = "--with-torch" ]; then PKGS="$PKGS python3-torch python3-numpy"; fi
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ]; then
    echo "qkt: installing missing packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing
else
    echo "qkt: missing packages:$missing"
    echo "qkt: install them with: sudo apt-get install -y$missing"
    exit 1
fi
