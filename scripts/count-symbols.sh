#!/bin/sh
# Counts the public symbols each library module declares (types, their members and cases, and
# what its extensions add to other modules' types), from the compiler's symbol graphs, as
# `swift package dump-symbol-graph` writes them. Left out: what a type gets from a protocol's
# default implementations, and the types a module re-exports from another. Not part of CI.
#   scripts/count-symbols.sh
set -eu
cd "$(dirname "$0")/.."
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
for target in ReachabilityCompat ReachabilityConnectivity; do
    swift build --traits CommandLineTool,ServiceLifecycle --target "$target" -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >/dev/null
done
python3 - "$graphs" <<'PY'
import json, os, sys
graphs = sys.argv[1]
for module in ("Netlink", "LinuxReachability", "ReachabilityCompat", "ReachabilityConnectivity"):
    count = 0
    for name in os.listdir(graphs):
        if name != f"{module}.symbols.json" and not name.startswith(f"{module}@"):
            continue
        for symbol in json.load(open(os.path.join(graphs, name)))["symbols"]:
            precise = symbol["identifier"]["precise"]
            # A symbol's USR names the module that declares it (s:<length><module>...).
            owner = f"s:{len(module)}{module}"
            if symbol.get("accessLevel") == "public" and (precise.startswith(owner) or "@" in name):
                count += 1
    print(f"{module}: {count} public symbols")
PY
