#!/bin/sh
# The long reliability runs of RELIABILITY.md, on demand (not in CI). Needs root; works only
# in network namespaces it creates and deletes.
#   1. the storm and the lifetime tests at the issue's full size (100 000 route changes,
#      10 000 address flaps, 1 000 link cycles; 10 000 monitors created and destroyed);
#   2. the same under the address sanitizer with LeakSanitizer;
#   3. `reach watch` and `reach events` built with the address sanitizer, through 50 000 link
#      flaps, then the namespace is deleted so that both exit by themselves (status 2) and
#      LeakSanitizer checks their heaps at exit: no leak. (Resident memory under the sanitizer
#      is mostly its quarantine and says nothing; RELIABILITY.md has the release build's.)
#   4. the release `reach watch` alone through 40 000 link flaps, its resident memory printed
#      every 5 000 (for RELIABILITY.md; no verdict: resident memory is not a leak detector);
#   5. the test command and the sanitizers' runs (what .ci/run runs), each RUNS times (default 3) at nice 15
#      beside two busy loops per core: a test that waits for a thread or a timer too briefly,
#      or reads a state before what it checks has happened, fails here rather than now and
#      then in CI, on a machine busier than this one.
#   scripts/stress.sh [all|storm|sanitizer|leaks|rss|contended [RUNS]]
set -eu
cd "$(dirname "$0")/.."
part=${1:-all}
runs=${2:-3}
case $runs in
    '' | *[!0-9]*) echo "usage: scripts/stress.sh contended [RUNS], RUNS a number" >&2; exit 2 ;;
esac
scripts/install-deps.sh

# What parts 3 and 4 start, ended and deleted on any exit.
pids="" namespaces="" logs="" log=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for name in $namespaces; do ip netns del "$name" 2>/dev/null || true; done
    [ -z "$logs" ] || rm -rf "$logs"
    [ -z "$log" ] || rm -f "$log"
    pids="" namespaces="" logs="" log=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A namespace NAME whose veth vb0 carries 10.200.0.1/24 and the default route via 10.200.0.2;
# flapping its peer vb1 flips the answer for 10.200.0.2.
uplink_namespace() {
    ip netns add "$1"
    namespaces="$namespaces $1"
    ip -n "$1" -batch - <<BATCH
link set lo up
link add vb0 type veth peer name vb1
address add 10.200.0.1/24 dev vb0
link set vb1 up
link set vb0 up
route add default via 10.200.0.2 dev vb0
BATCH
}

# flap NAME COUNT: takes vb1 of namespace NAME down and up COUNT times, in one ip -batch.
flap() {
    i=0
    while [ $i -lt "$2" ]; do echo "link set vb1 down"; echo "link set vb1 up"; i=$((i + 1)); done | ip -n "$1" -batch -
}

if [ "$part" = all ] || [ "$part" = storm ]; then
    echo "== 1. storm and lifetimes, full size"
    swift build --build-tests --traits CommandLineTool,ServiceLifecycle >/dev/null
    REACH_STORM=full swift test --skip-build --traits CommandLineTool,ServiceLifecycle --filter 'StormTests|LifetimeTests' 2>&1 | grep -E "storm \(|Test run|✘"
fi

if [ "$part" = all ] || [ "$part" = sanitizer ]; then
    echo "== 2. the same under the address sanitizer and LeakSanitizer"
    REACH_STORM=full scripts/sanitizers.sh address
fi

if [ "$part" = all ] || [ "$part" = leaks ]; then
    echo "== 3. reach watch and reach events under LeakSanitizer through 50 000 link flaps"
    swift build --product reach --traits CommandLineTool,ServiceLifecycle --sanitize=address --scratch-path .build-address >/dev/null 2>&1
    reach=.build-address/debug/reach
    ns=rstress$$
    logs=$(mktemp -d)
    uplink_namespace "$ns"
    export ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp print_suppressions=0"
    $reach watch --netns "$ns" 10.200.0.2 12.0.0.1 >/dev/null 2>"$logs/watch" &
    watch_pid=$!
    $reach events --json --netns "$ns" >/dev/null 2>"$logs/events" &
    events_pid=$!
    pids="$watch_pid $events_pid"
    sleep 2
    flap "$ns" 25000
    sleep 1
    kill -0 $watch_pid && kill -0 $events_pid && echo "both streams alive after 50 000 flaps"
    ip netns del "$ns"
    namespaces=""
    for pid in $watch_pid $events_pid; do
        status=0
        wait $pid || status=$?
        [ $status -eq 2 ] || { echo "process $pid exited $status, not 2" >&2; exit 1; }
    done
    pids=""
    if grep -q "LeakSanitizer" "$logs/watch" "$logs/events"; then
        cat "$logs/watch" "$logs/events" >&2
        exit 1
    fi
    echo "no leak in reach watch or reach events (both exited 2 when the namespace was deleted)"
fi

if [ "$part" = all ] || [ "$part" = rss ]; then
    echo "== 4. resident memory of the release reach watch through 40 000 link flaps"
    swift build -c release --product reach --traits CommandLineTool,ServiceLifecycle >/dev/null
    ns=rstress$$-rss
    uplink_namespace "$ns"
    .build/release/reach watch --netns "$ns" 10.200.0.2 12.0.0.1 >/dev/null &
    watch_pid=$!
    pids="$watch_pid"
    sleep 1
    for chunk in 1 2 3 4 5 6 7 8; do
        flap "$ns" 2500
        sleep 0.3
        echo "after $((chunk * 5000)) flaps: $(awk '/^VmRSS/ {print $2}' "/proc/$watch_pid/status") KiB"
    done
    # Before part 5, which needs a quiet machine but for its own load.
    cleanup
fi

if [ "$part" = all ] || [ "$part" = contended ]; then
    echo "== 5. the tests beside busy loops, $runs runs each"
    swift build --build-tests --traits CommandLineTool,ServiceLifecycle >/dev/null
    log=$(mktemp)
    for sanitizer in thread address; do
        swift build --build-tests --traits CommandLineTool,ServiceLifecycle --sanitize=$sanitizer --scratch-path .build-$sanitizer >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    done
    for _ in $(seq 1 $((2 * $(nproc)))); do
        (while :; do :; done) &
        pids="$pids $!"
    done
    failed=0
    run=1
    while [ $run -le "$runs" ]; do
        for command in scripts/test.sh scripts/sanitizers.sh; do
            if nice -n 15 $command >"$log" 2>&1; then
                echo "run $run, $command: passed"
            else
                failed=$((failed + 1))
                echo "run $run, $command: FAILED"
                grep -E "✘|WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|error:" "$log" | head -20
            fi
        done
        run=$((run + 1))
    done
    [ $failed -eq 0 ] || exit 1
fi
