#!/bin/sh
# Event latency as a function of how long the listeners sleep between link flips: the same
# flip_latency harness as compare.sh, with its gap (-g, the time from one flip to the next)
# swept from 1 to 20 ms. Prints one line per gap with each listener's median and its ratio to
# the bare C listener. Root; creates and deletes its own namespace, never touches the root one.
#   Benchmarks/profiles/latency_by_idle_gap.sh [GAPS_MS...]    (default: 1 2 3 4 6 10 20)
# Run Benchmarks/compare.sh once first on a fresh machine (it installs what the peers need).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$here/../../shared" && pwd)
out=${OUT:-/tmp/reach-idle-gap}
mkdir -p "$out"
sh "$shared/bench/build-peers.sh" "$out/peers" >/dev/null
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
gcc -O2 -Wall -o "$out/raw_reachability" "$here/latency/raw_reachability.c"
(cd "$here" && swift build -c release --product latency-listener > "$out/build.log" 2>&1) || { tail "$out/build.log"; exit 1; }
tail -1 "$out/build.log"
listener="$here/.build/release/latency-listener"
gaps=${*:-1 2 3 4 6 10 20}
for gap in $gaps; do
    "$out/flip_latency" -n 40 -r 3 -g "$gap" \
        raw="$out/peers/raw_listener" \
        raw_reachability="$out/raw_reachability 10.200.0.2" \
        subscription="$listener subscription" \
        reachability_evaluation_queue="$listener reachability-inline 10.200.0.2" \
        reachability_default_queue="$listener reachability 10.200.0.2" |
    python3 "$here/profiles/latency_medians.py" "$(printf 'gap %2s ms' "$gap")"
done
