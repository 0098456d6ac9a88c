#!/bin/sh
# User-space instructions per route message of a listener, by callgrind: the listener runs
# under valgrind in a private namespace through a churn of N /32 route additions and N
# removals, twice (N = 2000 and 8000); the difference of the two totals divided by the 12 000
# extra messages cancels start-up. Root; the root namespace is not touched.
#   Benchmarks/profiles/instructions_per_message.sh COMMAND...
#   e.g. Benchmarks/profiles/instructions_per_message.sh .build/release/reach events --json --receive-buffer 268435456
# (a large receive buffer: under valgrind the listener is slow, and an overflow would skip messages)
set -eu
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
scratch=$(mktemp -d)
namespace=ipm$$
ip netns add $namespace
trap 'ip netns del $namespace 2>/dev/null; rm -rf "$scratch"' EXIT
ip -n $namespace link set lo up
ip -n $namespace link add v0 type veth peer name v1
ip -n $namespace address add 10.200.0.1/24 dev v0
ip -n $namespace link set v0 up
ip -n $namespace link set v1 up
total() {  # total N: instructions of the listener through N additions and N removals
    n=$1
    i=0
    : > "$scratch/add"
    while [ $i -lt "$n" ]; do
        echo "route add 11.$((i / 65536)).$((i / 256 % 256)).$((i % 256))/32 via 10.200.0.2" >> "$scratch/add"
        i=$((i + 1))
    done
    sed 's/^route add/route del/' "$scratch/add" > "$scratch/del"
    shift
    ip netns exec $namespace valgrind --tool=callgrind --callgrind-out-file="$scratch/cg.$n" "$@" \
        > /dev/null 2> "$scratch/valgrind.$n" &
    pid=$!
    sleep 8
    ip -n $namespace -batch "$scratch/add"
    ip -n $namespace -batch "$scratch/del"
    sleep 10
    kill -TERM $pid
    wait $pid || true
    sed -n 's/.*I *refs: *//p' "$scratch/valgrind.$n" | tr -d ,
}
small=$(total 2000 "$@")
large=$(total 8000 "$@")
echo "instructions per message: $(( (large - small) / 12000 )) ($small for 4 000 messages, $large for 16 000)"
