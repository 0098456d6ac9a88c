#!/bin/sh
# Event latency with the CPUs kept from going idle: the flip_latency harness of compare.sh (20
# ms between flips), in alternating runs without and with a SCHED_IDLE spinner on every CPU
# (busy_cpu.c, pinned one to each CPU). The spinners run no memory traffic and give way to any
# thread that wakes, so a listener's path runs the same instructions either way; what changes
# is that no vCPU halts between flips: what a halted vCPU costs a listener (its caches, and its
# wake-up through the host) is the difference. Prints one line per run with each listener's
# median and its ratio to the bare C listener. Root; creates and deletes its own namespaces,
# never touches the root one; ends only the spinners it started (which also end with it).
#   Benchmarks/profiles/latency_with_busy_cpus.sh [PAIRS]    (PAIRS of runs, 4 by default)
# Run Benchmarks/compare.sh once first on a fresh machine (it installs what the peers need).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$here/../../shared" && pwd)
out=${OUT:-/tmp/reach-busy-cpus}
pairs=${1:-4}
mkdir -p "$out"
sh "$shared/bench/build-peers.sh" "$out/peers" >/dev/null
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
gcc -O2 -Wall -o "$out/raw_reachability" "$here/latency/raw_reachability.c"
gcc -O2 -Wall -o "$out/busy_cpu" "$here/profiles/busy_cpu.c"
for product in latency-listener reach; do
    (cd "$here" && swift build -c release --product "$product" > "$out/build.log" 2>&1) || { tail "$out/build.log"; exit 1; }
    tail -1 "$out/build.log"
done
listener="$here/.build/release/latency-listener"
spinners=""
stop_spinners() {
    for pid in $spinners; do kill "$pid" 2>/dev/null || true; done
    for pid in $spinners; do wait "$pid" 2>/dev/null || true; done
    spinners=""
}
trap stop_spinners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
run() {
    "$out/flip_latency" -n 50 -r 2 \
        raw="$out/peers/raw_listener" \
        raw_reachability="$out/raw_reachability 10.200.0.2" \
        subscription="$listener subscription" \
        reachability_evaluation_queue="$listener reachability-inline 10.200.0.2" \
        reachability_default_queue="$listener reachability 10.200.0.2" \
        reach_watch="$here/.build/release/reach watch 10.200.0.2" |
    python3 "$here/profiles/latency_medians.py" "$(printf '%5s' "$1")"
}
pair=0
while [ "$pair" -lt "$pairs" ]; do
    run idle
    cpu=0
    while [ "$cpu" -lt "$(nproc)" ]; do
        taskset -c "$cpu" chrt -i 0 "$out/busy_cpu" $$ &
        spinners="$spinners $!"
        cpu=$((cpu + 1))
    done
    sleep 1
    for pid in $spinners; do
        kill -0 "$pid" 2>/dev/null || { echo "latency_with_busy_cpus: a spinner did not start" >&2; exit 1; }
    done
    run busy
    stop_spinners
    pair=$((pair + 1))
done
