#!/bin/sh
# User-space instructions per route change told to 10 000 monitors, by callgrind:
# monitor-fanout runs under valgrind through 2 and then 6 default-route changes; the difference
# of the two totals divided by 4 cancels start-up and the first answers. Root; the program
# creates and deletes its own namespace.
#   Benchmarks/profiles/instructions_per_change.sh [NOTIFY]    (NOTIFY 1, the default, or 0)
# Keeps the two callgrind files in $OUT (default /tmp/fanout-callgrind) for callgrind_annotate.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
notify=${1:-1}
out=${OUT:-/tmp/fanout-callgrind}
mkdir -p "$out"
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
(cd "$here" && swift build -c release --product monitor-fanout 2>&1 | tail -1)
total() {
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" "$here/.build/release/monitor-fanout" "$1" "$notify" \
        > /dev/null 2> "$out/valgrind.$1"
    sed -n 's/.*I *refs: *//p' "$out/valgrind.$1" | tr -d ,
}
two=$(total 2)
six=$(total 6)
echo "instructions per change (notifications: $notify): $(( (six - two) / 4 )) ($two for 2 changes, $six for 6)"
