#!/bin/sh
# User-space instructions of a listener's first link flips against its later ones, by callgrind:
# what a listener pays once, on its first events after start-up (the Swift runtime making the
# metadata of generic types only the event path uses, each first check of a type's conformance
# searching every conformance in the process), which the latency harness sees as its slowest
# samples because its listeners start afresh in each round.
#
# flip_latency flips the link 6 times, 300 ms apart, in a namespace of its own; counting is on
# inside the subscription's read loop and the Reachability engine's rounds only, and callgrind
# dumps a profile before each `write` (a listener's line) and each `epoll_wait`. Prints every
# segment's count in order (the first ones belong to start-up: the READY line or first answer)
# and, for each segment, the instructions spent making type metadata by mangled name
# (`swift_getTypeByMangledNameInContext2`, inclusive). Root.
#   Benchmarks/profiles/first_flips.sh [COMMAND...]
#   (default: this package's release `latency-listener subscription`; for example
#    `Benchmarks/.build/release/reach watch 10.200.0.2`)
# Keeps the callgrind files in $OUT (default /tmp/first-flips) for callgrind_annotate.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/first-flips}
rm -rf "$out"
mkdir -p "$out"
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
if [ $# -eq 0 ]; then
    (cd "$here" && swift build -c release --product latency-listener 2>&1 | tail -1)
    set -- "$here/.build/release/latency-listener" subscription
fi
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
"$out/flip_latency" -n 6 -r 1 -g 300 -s 30 \
    "listener=valgrind --tool=callgrind --callgrind-out-file=$out/cg.out --toggle-collect=*readNotifications* \
--toggle-collect=*reconcileMarked* --toggle-collect=*SubscriptionEngine*flush* --toggle-collect=*ReachabilityEngine*evaluateAll* \
--dump-before=write --dump-before=epoll_wait $*" > "$out/latency.json"
echo "segments in order (before: write = up to a line, epoll_wait = after it), instructions, of which making type metadata:"
for file in $(ls "$out"/cg.out.* | sort -t. -k3 -n); do
    count=$(sed -n 's/^totals: //p' "$file")
    [ "$count" = 0 ] && continue
    trigger=$(sed -n 's/^desc: Trigger: --dump-before=//p' "$file")
    metadata=$(callgrind_annotate --inclusive=yes "$file" 2>/dev/null \
        | awk '/swift_getTypeByMangledNameInContext2/ { gsub(",", "", $1); print $1; exit }')
    printf "  %-10s %10s  %s\n" "$trigger" "$count" "${metadata:-0}"
done
