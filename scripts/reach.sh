#!/bin/sh
# Builds `reach` (installing libnl's and c-ares's Debian packages first when missing) and runs it with the
# given arguments; with none, `reach links` on the current namespace. No DNS lookups.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product reach --traits CommandLineTool,ServiceLifecycle >&2
[ "$#" -gt 0 ] || set -- links
exec .build/debug/reach "$@"
