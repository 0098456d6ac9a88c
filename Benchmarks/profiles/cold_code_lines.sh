#!/bin/sh
# How much of an answer's cold latency is its code: `reach watch`'s latency for a link flip,
# with and without every code line its path runs read back into the caches at the wake-up.
#
# 1. callgrind (--dump-instr=yes, the same toggles and dumps as instructions_per_flip.sh, 12
#    flips 300 ms apart) lists the distinct 64-byte code lines that `reach watch 10.200.0.2`
#    runs from the wake-up to its line, per object (callgrind_code_lines.py).
# 2. flip_latency (20 ms between flips, as in compare.sh) then measures, in the same rounds:
#    raw_reachability (the bare-C answer floor), `reach watch` as built, and `reach watch` with
#    touch_code_lines.c preloaded, which reads one byte of each listed line whenever
#    epoll_wait returns events (independent loads that the CPU overlaps), and two controls
#    with the same preload: one line of each of those 4 KiB pages (the TLB, not the lines) and
#    as many lines 64 KiB away (the cost of the reads, not the lines).
# The difference between `watch` and `touch` is what missing on the code lines one by one
# costs the path; what `touch` still pays over raw_reachability is the rest (data lines,
# predictors). Root; creates and deletes its own namespaces, never touches the root one.
#   Benchmarks/profiles/cold_code_lines.sh [ROUNDS] [REACH]    (ROUNDS 8 by default; 0 lists
#   the lines in $OUT/lines and stops, as cold_data_lines.sh uses it)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
rounds=${1:-8}
reach=${2:-$root/.build/release/reach}
out=${OUT:-/tmp/reach-cold-code}
rm -rf "$out"
mkdir -p "$out"
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
[ -n "${2:-}" ] || (cd "$root" && swift build -c release --product reach 2>&1 | tail -1)
gcc -O2 -Wall -o "$out/flip_latency" "$here/latency/flip_latency.c"
gcc -O2 -Wall -o "$out/raw_reachability" "$here/latency/raw_reachability.c"
gcc -O2 -Wall -shared -fPIC -o "$out/touch_code_lines.so" "$here/profiles/touch_code_lines.c" -ldl

"$out/flip_latency" -n 12 -r 1 -g 300 \
    "watch=valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
--callgrind-out-file=$out/cg.out --toggle-collect=*readNotifications* --toggle-collect=*reconcileMarked* \
--toggle-collect=*SubscriptionEngine*flush* --dump-before=write --dump-before=epoll_wait \
$reach watch 10.200.0.2" > "$out/callgrind-latency.json"
# The segments that end at a `write`: from the wake-up to the line, for the last flips.
segments=$(for file in $(ls "$out"/cg.out.* | sort -t. -k3 -n | tail -10); do
    if grep -q '^desc: Trigger: --dump-before=write' "$file"; then echo "$file"; fi; done)
echo "code lines from the wake-up to the line ($(echo $segments | wc -w) flips):"
python3 "$here/profiles/callgrind_code_lines.py" "$out/lines" $segments

[ "$rounds" != 0 ] || exit 0

preload="env LD_PRELOAD=$out/touch_code_lines.so TOUCH_CODE_LINES"
echo "latency, $rounds alternating rounds of 50 flips, 20 ms apart:"
"$out/flip_latency" -n 50 -r "$rounds" \
    raw_reachability="$out/raw_reachability 10.200.0.2" \
    watch="$reach watch 10.200.0.2" \
    touch="$preload=$out/lines $reach watch 10.200.0.2" \
    control_pages="$preload=$out/lines.pages $reach watch 10.200.0.2" \
    control_other_lines="$preload=$out/lines.shifted $reach watch 10.200.0.2"
