#!/bin/sh
# Builds the symbol graphs and converts both DocC catalogs; fails on any DocC warning
# (broken symbol links, undocumented parameters). Not part of CI's test run.
set -eu
cd "$(dirname "$0")/.."
graphs=$(mktemp -d)
output=$(mktemp -d)
trap 'rm -rf "$graphs" "$output"' EXIT
swift build --target Reachability -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >/dev/null
status=0
for module in Netlink Reachability; do
    log=$(docc convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$graphs" \
        --output-path "$output/$module" --fallback-display-name "$module" \
        --fallback-bundle-identifier "$module" 2>&1) || status=1
    if printf '%s\n' "$log" | grep -q "warning:"; then
        printf '%s\n' "$log" | grep -A3 "warning:"
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "DocC: no warnings in Netlink and Reachability"
exit "$status"
