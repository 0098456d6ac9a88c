#!/bin/sh
# User-space instructions that `reach watch ADDRESS` (or `reach events`) executes per link
# flip, by callgrind, split at the lines it writes: from the wake-up to the `write` of a line
# (what the latency waits for) and from the `write` to the next `epoll_wait` (the rest of the
# kernel's burst: route, address and peer messages, a second evaluation). Counting is switched
# on only inside the subscription's read loop (`readNotifications`, `flush`, `reconcileMarked`),
# so start-up is left out; callgrind dumps a profile at each `write` and each `epoll_wait`.
#
# flip_latency flips the link 12 times, 300 ms apart, in a namespace of its own with LINKS more
# links (veth pairs, up, one address each): the scale of a container host. Root.
#   Benchmarks/profiles/instructions_per_flip.sh [LINKS] [REACH] [ARGUMENTS]
#   (LINKS 0 by default; REACH defaults to this package's release build; ARGUMENTS, the
#   command's, to "watch 10.200.0.2": "events --json" measures `reach events`, whose flip
#   writes a line for the link's first message and one for the rest of the burst)
# Prints the last flips' segments; keeps the callgrind files in $OUT (default
# /tmp/flip-callgrind) for callgrind_annotate --inclusive=yes.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
links=${1:-0}
reach=${2:-$root/.build/release/reach}
arguments=${3:-watch 10.200.0.2}
out=${OUT:-/tmp/flip-callgrind}
rm -rf "$out"
mkdir -p "$out"
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
[ -n "${2:-}" ] || (cd "$root" && swift build -c release --product reach 2>&1 | tail -1)
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
"$out/flip_latency" -n 12 -r 1 -g 300 -l "$links" \
    "watch=valgrind --tool=callgrind --callgrind-out-file=$out/cg.out --toggle-collect=*readNotifications* \
--toggle-collect=*reconcileMarked* --toggle-collect=*SubscriptionEngine*flush* \
--dump-before=write --dump-before=epoll_wait $reach $arguments" > "$out/latency.json"
echo "links: $links more; per segment of the last flips (instructions):"
for file in $(ls "$out"/cg.out.* | sort -t. -k3 -n | tail -8); do
    trigger=$(sed -n 's/^desc: Trigger: --dump-before=//p' "$file")
    count=$(sed -n 's/^totals: //p' "$file")
    case $trigger in
        write) echo "  wake-up to the line:      $count" ;;
        epoll_wait) echo "  the line to the next wait: $count" ;;
    esac
done
