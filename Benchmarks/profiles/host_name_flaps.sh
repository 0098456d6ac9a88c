#!/bin/sh
# CPU time of `reach watch NAME` over 10 flaps of its uplink's carrier (down 0.2 s, up 0.2 s),
# with the name in the namespace's own hosts file (/etc/netns/NS/hosts) among LINES other
# lines, as blocklist hosts files are long; and the first answer's wall time and memory
# (`reach check NAME`, which reads the file once). Each flap changes the default route, which
# makes the tool resolve the name again. Root; makes and deletes its own namespace and its
# /etc/netns files; sends nothing outside it (the name is in the hosts file, and the
# namespace's resolv.conf names a server on its own loopback).
#   Benchmarks/profiles/host_name_flaps.sh REACH LINES...
set -eu
reach=$1
shift
ns="rbench-$$-hosts"
cleanup() {
    [ -n "${watcher:-}" ] && kill "$watcher" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add va type veth peer name vb
ip -n "$ns" link set va up
ip -n "$ns" link set vb up
ip -n "$ns" address add 10.1.0.1/24 dev va
ip -n "$ns" route add default via 10.1.0.2
mkdir -p "/etc/netns/$ns"
echo "nameserver 127.0.0.1" > "/etc/netns/$ns/resolv.conf"
ticks=$(getconf CLK_TCK)
for lines in "$@"; do
    awk -v n="$lines" 'BEGIN { for (i = 0; i < n; i++) printf "10.%d.%d.%d host%d.blocked.test\n", int(i / 65536) % 256, int(i / 256) % 256, i % 256, i
                               print "10.1.0.2 db.example.test" }' > "/etc/netns/$ns/hosts"
    sleep 0.1    # the file's change time a tick old, so that its answers are kept
    first=$( { /usr/bin/time -f "%e s, %M KiB" "$reach" check db.example.test --netns "$ns" > /dev/null; } 2>&1 )
    "$reach" watch db.example.test --netns "$ns" > /dev/null 2>&1 &
    watcher=$!
    sleep 2
    before=$(awk '{ print $14 + $15 }' "/proc/$watcher/stat")
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        ip -n "$ns" link set vb down; sleep 0.2
        ip -n "$ns" link set vb up; sleep 0.2
    done
    sleep 3    # what is left to do after the flaps counts too
    after=$(awk '{ print $14 + $15 }' "/proc/$watcher/stat")
    kill "$watcher"
    wait "$watcher" 2>/dev/null || true
    watcher=
    echo "$lines lines: 10 flaps cost $(echo "scale=2; ($after - $before) / $ticks" | bc) s of CPU; first answer $first"
done
