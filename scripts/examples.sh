#!/bin/sh
# Builds the example consumers in Examples/ and runs them in a network namespace of their own
# (a veth uplink with a default route, the host name in the namespace's hosts file: nothing is
# sent outside it). Checks that the core-only consumer resolves swift-log alone and links no
# Foundation (not even FoundationEssentials), that the compatibility one is told in
# Reachability.swift's style, and that the service stops on SIGTERM. Needs root; .ci/run calls
# it after the tests.
#   scripts/examples.sh
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
ns="rt$$-0-examples"
work=$(mktemp -d)
cleanup() {
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns" "$work"
}
trap cleanup EXIT
fail() { echo "examples: $*" >&2; exit 1; }

for example in CoreOnly CompatStyle ServiceStop; do
    (cd "Examples/$example" && swift build --quiet)
done

# Only swift-log is fetched for a program that uses the core, and Foundation is not linked.
resolved=$(sed -n 's/.*"identity" : "\(.*\)".*/\1/p' Examples/CoreOnly/Package.resolved)
[ "$resolved" = "swift-log" ] || fail "CoreOnly resolved: $resolved"
core="Examples/CoreOnly/.build/debug/CoreOnly"
if ldd "$core" | grep -q "libFoundation"; then fail "CoreOnly links Foundation"; fi

ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add uplink type veth peer name far
ip -n "$ns" link set far up
ip -n "$ns" link set uplink up
ip -n "$ns" address add 10.77.0.2/24 dev uplink
ip -n "$ns" route add default via 10.77.0.1
mkdir -p "/etc/netns/$ns"
echo "10.77.0.1 gateway.example.test" > "/etc/netns/$ns/hosts"
echo "nameserver 127.0.0.1" > "/etc/netns/$ns/resolv.conf"
run() { timeout 60 ip netns exec "$ns" "$@"; }

run "$core" 10.77.0.9 gateway.example.test > "$work/core" || fail "CoreOnly exited $?: $(cat "$work/core")"
cat "$work/core"
grep -q "^check 10.77.0.9: reachable" "$work/core" || fail "CoreOnly: no reachable check"
grep -q "^internet: reachableViaOther" "$work/core" || fail "CoreOnly: the internet is not reachable"
grep -q "^host gateway.example.test: reachable" "$work/core" || fail "CoreOnly: the host is not reachable"
grep -q "^path: satisfied via \[\"uplink\"\]" "$work/core" || fail "CoreOnly: no satisfied path"

run "$root/Examples/CompatStyle/.build/debug/CompatStyle" > "$work/compat" || fail "CompatStyle exited $?"
cat "$work/compat"
grep -q "^reachable over" "$work/compat" || fail "CompatStyle: whenReachable was not called"
grep -q "^notified:" "$work/compat" || fail "CompatStyle: no notification"

ip netns exec "$ns" "$root/Examples/ServiceStop/.build/debug/ServiceStop" 10.77.0.9 > "$work/service" 2>&1 &
service=$!
waited=0
until grep -q "^answer: reachable" "$work/service"; do
    [ "$waited" -lt 300 ] || { kill -KILL "$service"; fail "ServiceStop: no answer within 30 s"; }
    sleep 0.1
    waited=$((waited + 1))
done
kill -TERM "$service"
status=0
wait "$service" || status=$?
cat "$work/service"
[ "$status" -eq 0 ] || fail "ServiceStop exited $status on SIGTERM"
grep -q "^stopped" "$work/service" || fail "ServiceStop did not stop gracefully"
echo "examples: CoreOnly, CompatStyle and ServiceStop built and ran"
