#!/bin/sh
# How much of an answer's cold latency is its static data, after its code: `reach watch`'s
# latency for a link flip with its path's code lines, then also its static data lines (type
# metadata, value witness tables, globals, GOT entries) and its stack read back at the wake-up.
#
# 1. cold_code_lines.sh (ROUNDS 0) lists the code lines of the path (callgrind).
# 2. valgrind's lackey (--trace-mem=yes, 24 flips 300 ms apart) traces every access of
#    `reach watch 10.200.0.2`, with mark_wake_and_line.c preloaded to mark the wake-up and the
#    line; lackey_segments.c keeps what lies between them, and lackey_data_lines.py prints, per
#    flip, the data lines by place (each object's static data, the waking thread's stack, the
#    heap and the rest) and lists the static ones.
# 3. flip_latency (20 ms between flips, as in compare.sh) then measures, in the same rounds:
#    raw_reachability (the bare-C answer floor), `reach watch` as built, and `reach watch` with
#    touch_code_lines.c preloaded reading back at each wake-up the code lines (`code`), the code
#    and static data lines (`code_static`), and those and the 16 KiB of stack below the wait
#    (`code_static_stack`). Heap lines are not listed: their addresses change from run to run.
# Root; creates and deletes its own namespaces, never touches the root one.
#   Benchmarks/profiles/cold_data_lines.sh [ROUNDS] [REACH]    (ROUNDS 8 by default)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
rounds=${1:-8}
reach=${2:-$root/.build/release/reach}
out=${OUT:-/tmp/reach-cold-data}
rm -rf "$out"
mkdir -p "$out"
[ -n "${2:-}" ] || (cd "$root" && swift build -c release --product reach 2>&1 | tail -1)
OUT="$out/code" sh "$here/profiles/cold_code_lines.sh" 0 "$reach"
gcc -O2 -Wall -shared -fPIC -o "$out/mark_wake_and_line.so" "$here/profiles/mark_wake_and_line.c" -ldl
gcc -O2 -Wall -o "$out/lackey_segments" "$here/profiles/lackey_segments.c"

mkfifo "$out/trace"
"$out/lackey_segments" < "$out/trace" > "$out/segments" &
filter=$!
# The reader waits on the pipe until lackey opens it: never leave it behind.
trap 'kill "$filter" 2>/dev/null || true' EXIT
"$out/code/flip_latency" -n 24 -r 1 -g 300 -s 300 \
    "lackey=env LD_PRELOAD=$out/mark_wake_and_line.so MARKER_BASES=$out/bases \
valgrind --tool=lackey --trace-mem=yes --log-file=$out/trace $reach watch 10.200.0.2" > "$out/lackey-latency.json"
wait "$filter"
trap - EXIT
python3 "$here/profiles/lackey_data_lines.py" "$out/bases" "$out/segments" "$out/static"
cat "$out/code/lines" "$out/static" > "$out/code_static"
rm -f "$out/segments" "$out/trace"

code="$out/code"
preload="env LD_PRELOAD=$code/touch_code_lines.so TOUCH_CODE_LINES"
echo "latency, $rounds alternating rounds of 50 flips, 20 ms apart:"
"$code/flip_latency" -n 50 -r "$rounds" \
    raw_reachability="$code/raw_reachability 10.200.0.2" \
    watch="$reach watch 10.200.0.2" \
    code="$preload=$code/lines $reach watch 10.200.0.2" \
    code_static="$preload=$out/code_static $reach watch 10.200.0.2" \
    code_static_stack="$preload=$out/code_static TOUCH_STACK_BYTES=16384 $reach watch 10.200.0.2"
