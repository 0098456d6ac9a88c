#!/bin/sh
# Builds the symbol graphs and converts the DocC catalogs; fails on any DocC warning
# (broken symbol links, undocumented parameters) and on a Swift example of README.md that does
# not compile. Not part of CI's test run.
set -eu
cd "$(dirname "$0")/.."
graphs=$(mktemp -d)
output=$(mktemp -d)
trap 'rm -rf "$graphs" "$output"' EXIT
for target in ReachabilityCompat ReachabilityConnectivity; do
    swift build --target "$target" -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >/dev/null
done
# The service's module has its content with its trait only.
swift build --traits CommandLineTool,ServiceLifecycle --target ReachabilityService \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >/dev/null
status=0
for module in Netlink LinuxReachability ReachabilityCompat ReachabilityConnectivity ReachabilityService; do
    # Each catalog with its own module's graphs only: a module's graph also holds the types it
    # re-exports, which are another catalog's.
    mkdir -p "$graphs/$module"
    cp "$graphs/$module.symbols.json" "$graphs/$module"/
    for extension in "$graphs/$module"@*.symbols.json; do
        [ -e "$extension" ] && cp "$extension" "$graphs/$module"/
    done
    log=$(docc convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$graphs/$module" \
        --output-path "$output/$module" --fallback-display-name "$module" \
        --fallback-bundle-identifier "$module" 2>&1) || status=1
    if printf '%s\n' "$log" | grep -q "warning:"; then
        printf '%s\n' "$log" | grep -A3 "warning:"
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "DocC: no warnings in Netlink, LinuxReachability, ReachabilityCompat, ReachabilityConnectivity and ReachabilityService"

# README.md's Swift examples, each on its own with only its own imports, type-checked against the
# modules just built (the article snippets are compiled by DocumentationSnippetTests); the
# service's module with the trait that gives it its content.
swift build --traits CommandLineTool,ServiceLifecycle --target ReachabilityService >/dev/null
snippets=$(mktemp -d)
trap 'rm -rf "$graphs" "$output" "$snippets"' EXIT
awk -v dir="$snippets" '/^```swift$/ { n++; inside = 1; next } /^```$/ { inside = 0; next }
    inside { print > (dir "/readme" n ".swift") }' README.md
for snippet in "$snippets"/*.swift; do
    [ -e "$snippet" ] || continue
    if ! swiftc -typecheck -swift-version 6 -I .build/debug/Modules \
        -Xcc -fmodule-map-file=modulemaps/CNetlink/module.modulemap -Xcc -fmodule-map-file=modulemaps/CAres/module.modulemap \
        -Xcc -fmodule-map-file=modulemaps/CCurl/module.modulemap \
        $(pkg-config --cflags-only-I libnl-3.0 libnl-route-3.0 | sed 's/-I/-Xcc -I/g') "$snippet"; then
        echo "README.md: the Swift example $(basename "$snippet" .swift | sed 's/readme//') does not compile"
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "README.md: every Swift example compiles"
exit "$status"
