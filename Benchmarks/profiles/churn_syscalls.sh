#!/bin/bash
# The system calls a listener makes while it follows a churn of 50 000 route additions then
# 50 000 removals (the churn of churn_cpu.py), counted by `perf record -e
# raw_syscalls:sys_enter` on its process: one line per system call, with its count. Root;
# creates and deletes its own namespace, never touches the root one.
#   Benchmarks/profiles/churn_syscalls.sh COMMAND...
#   e.g. Benchmarks/profiles/churn_syscalls.sh .build/release/reach events --json
set -eu
command -v perf >/dev/null || apt-get install -y linux-perf >/dev/null
namespace=churnsys$$
scratch=$(mktemp -d)
ip netns add $namespace
listener="" recorder=""
cleanup() {
    [ -n "$recorder" ] && kill -INT "$recorder" 2>/dev/null || true
    [ -n "$listener" ] && kill "$listener" 2>/dev/null || true
    wait 2>/dev/null || true
    ip netns del $namespace
    rm -rf "$scratch"
}
trap cleanup EXIT
for line in "link set lo up" "link add v0 type veth peer name v1" "address add 10.200.0.1/24 dev v0" \
            "link set v0 up" "link set v1 up"; do
    ip -n $namespace $line
done
python3 -c "
for i in range(50000): print(f'route add 11.{i // 256}.{i % 256}.0/24 via 10.200.0.2')" > "$scratch/add"
sed 's/^route add/route del/' "$scratch/add" > "$scratch/del"
ip netns exec $namespace "$@" > /dev/null 2>&1 &
listener=$!
sleep 2
perf record -q -e raw_syscalls:sys_enter -o "$scratch/perf.data" -p $listener 2>/dev/null &
recorder=$!
sleep 0.5
ip -n $namespace -batch "$scratch/add"
ip -n $namespace -batch "$scratch/del"
sleep 3
kill -INT $recorder
wait $recorder || true
recorder=""
# Named from the kernel's headers (linux-libc-dev), the numbers of x86_64.
perf script -i "$scratch/perf.data" -F trace 2>/dev/null | awk '{ print $2 }' | python3 -c '
import collections, re, sys
names = {int(n): name for name, n in re.findall(r"#define __NR_(\w+) (\d+)",
                                               open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h").read())}
for number, count in collections.Counter(int(line) for line in sys.stdin).most_common():
    print(f"{count:8d}  {names.get(number, number)}")'
