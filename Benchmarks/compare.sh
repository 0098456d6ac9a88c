#!/bin/sh
# Builds the library's release binaries and benchmarks, the C peers, and prints one table: the
# library beside the floor (bare rtnetlink) and the peers (libnl's cache manager, GLib, ip),
# measured in the same run. Needs root; creates and deletes its own namespaces only.
# Usage: Benchmarks/compare.sh        (9-11 minutes on 2 cores with the builds made, 11-12 from a
#        fresh clone; not part of CI). COMPARE_STATIC=1 also builds `reach` with the Swift runtime
#        linked in, for the per-process row (a minute more).
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
# Everything Swift is built in the Benchmarks package, `reach` too (a product of the library it
# depends on by path): the library is compiled once, not once per package.
(cd "$here" && swift build -c release --product latency-listener 2>&1 | tail -1)
(cd "$here" && swift build -c release --product lookup-loop 2>&1 | tail -1)
(cd "$here" && swift build -c release --product reach 2>&1 | tail -1)
(cd "$here" && swift build -c release --product ReachabilityBenchmarks 2>&1 | tail -1)
static_reach=""
if [ "${COMPARE_STATIC:-0}" = 1 ]; then
    # The same tool with the Swift runtime and Foundation linked in (the deployment build of
    # README.md), for the per-process row: a whole second build, so only when asked.
    (cd "$root" && swift build -c release --product reach --traits CommandLineTool --static-swift-stdlib --scratch-path "$root/.build-static" 2>&1 | tail -1)
    static_reach="$root/.build-static/release/reach"
fi
sh "$shared/bench/build-peers.sh" "$out/peers" >/dev/null
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
gcc -O2 -Wall -o "$out/raw_reachability" "$here/latency/raw_reachability.c"
gcc -O2 -Wall -o "$out/libnl_lookup" "$here/latency/libnl_lookup.c" $(pkg-config --cflags --libs libnl-route-3.0)

echo "== in-process benchmarks (ordo-one/benchmark) ($(date +%T))"
# The benchmark executable is run directly, a process per benchmark as `swift package benchmark`
# runs them. It then prints each metric's histogram (its "debug" output, which compare.py
# reads). The package plugin would first build its own BenchmarkTool twice, in debug and in
# release mode: about 1.5 minutes of a run from a fresh clone, for a table compare.py does not
# need (`swift package --disable-sandbox benchmark` still prints it, see BENCHMARKS.md).
# `--filter` takes a regular expression that must match a whole name: these names have no
# character that means more than itself in one.
: > "$out/benchmarks.txt"
for name in "10000 NotificationCenter posts with a monitor's userInfo" \
            '10000 monitors posting notifications, one route change' '10000 monitors, one route change' \
            'Cached answer' 'Fresh lookup' 'Fresh lookup, batch of 1000'; do
    "$here/.build/release/ReachabilityBenchmarks" --quiet true --filter "$name" >> "$out/benchmarks.txt" \
        || echo "benchmark '$name' failed: its rows read n/a" >&2
done
grep -c '^Debug results for ' "$out/benchmarks.txt" | sed 's/$/ benchmarks run/'

echo "== beside the floor and the peers ($(date +%T))"
python3 "$here/compare.py" "$here/.build/release/reach" "$out/peers" "$out/benchmarks.txt" \
    "$here/.build/release/latency-listener" "$out/flip_latency" $static_reach | tee "$out/table.md"
echo "== done in $(( ($(date +%s) - started + 30) / 60 )) minutes"
