#!/bin/sh
# Installs the Debian packages the library, the tool and the tests need, when they are missing:
# libnl-3 / libnl-route-3 headers (the CNetlink system library), pkg-config (which SwiftPM uses
# to find them), c-ares (libc-ares-dev: the CAres system library, for name lookups with a
# namespace's own resolv.conf), libcurl (libcurl4-openssl-dev: the CCurl system library, for the
# connectivity probe), iproute2 (`ip`, which the tests use to build network namespaces) and python3
# (the tests' HTTP server for connectivity probes).
set -eu
missing=""
for package in libnl-3-dev libnl-route-3-dev libc-ares-dev libcurl4-openssl-dev pkg-config iproute2 python3; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "missing:$missing; run as root (there is no sudo here): apt-get install$missing" >&2
        exit 1
    fi
    sudo="sudo"
fi
echo "installing:$missing" >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >&2
