#!/bin/sh
# Builds the library's release binaries and benchmarks, the C peers, and prints one table: the
# library beside the floor (bare rtnetlink) and the peers (libnl's cache manager, GLib, ip),
# measured in the same run. Needs root; creates and deletes its own namespaces only.
# Usage: Benchmarks/compare.sh        (6 minutes on 2 cores with the builds made; not part of CI)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
shared=$(cd "$root/../shared" && pwd)
out=${COMPARE_OUTPUT:-/tmp/reach-compare}
mkdir -p "$out"
started=$(date +%s)

# What it needs on a fresh machine (Debian): the library's own build dependencies, the peers'
# compiler and GLib's Python bindings, strace for the idle check, GNU time for RSS.
"$root/scripts/install-deps.sh"
"$root/scripts/remove-stale-namespaces.sh"
missing=""
for pkg in gcc pkg-config python3-gi gir1.2-glib-2.0 strace time iproute2; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

echo "== building reach (release) and the peers ($(date +%T))"
(cd "$root" && swift build -c release --product reach 2>&1 | tail -1)
# The same tool with the Swift runtime and Foundation linked in (the deployment build of README.md).
(cd "$root" && swift build -c release --product reach --static-swift-stdlib --scratch-path "$root/.build-static" 2>&1 | tail -1)
sh "$shared/bench/build-peers.sh" "$out/peers" >/dev/null
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
gcc -O2 -Wall -o "$out/raw_reachability" "$here/latency/raw_reachability.c"
(cd "$here" && swift build -c release --product latency-listener 2>&1 | tail -1)
(cd "$here" && swift build -c release --product lookup-loop 2>&1 | tail -1)

echo "== in-process benchmarks (ordo-one/benchmark) ($(date +%T))"
(cd "$here" && swift package --disable-sandbox benchmark --no-progress \
    --filter 'Cached answer|Fresh lookup.*|10000 monitors.*|10000 NotificationCenter.*|Event latency.*' 2>&1 \
    | grep -v '^\[' | tee "$out/benchmarks.txt" | sed -n '/Running Benchmarks/,$p')

echo "== beside the floor and the peers ($(date +%T))"
python3 "$here/compare.py" "$root/.build/release/reach" "$out/peers" "$out/benchmarks.txt" \
    "$here/.build/release/latency-listener" "$out/flip_latency" "$root/.build-static/release/reach" | tee "$out/table.md"
echo "== done in $(( ($(date +%s) - started + 30) / 60 )) minutes"
