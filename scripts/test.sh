#!/bin/sh
# Runs every test: installs the Debian packages (libnl, c-ares, pkg-config, iproute2) when missing,
# builds, and runs the suite. The kernel tests need root: they build their own network
# namespaces (never touching the root namespace) and delete them afterwards; without root
# they are skipped and say so.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/remove-stale-namespaces.sh
swift build --build-tests --traits CommandLineTool,ServiceLifecycle
swift test --skip-build --traits CommandLineTool,ServiceLifecycle "$@"
# No test may leave a namespace behind.
leftover=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rt[0-9]*-' || true)
if [ -n "$leftover" ]; then
    echo "test namespaces left behind: $leftover" >&2
    exit 1
fi
