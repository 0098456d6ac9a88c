#!/bin/sh
# Deletes the network namespaces that this project's tests, benchmarks and profiles made but
# could not delete, because their process was killed outright (SIGKILL, a machine restarted
# under them). Each of those names carries its creator's process id (rt<pid>-…, rbench-<pid>-…,
# rcmp<pid>-…, rlat<pid>, rfan-<pid>, churncpu<pid>, flipcpu<pid>, ipm<pid>, rstress<pid>…);
# a namespace is deleted only when that process no longer runs, with the files a test gave it
# under /etc/netns. No other namespace is touched, and the root namespace never is. Needs root;
# without it, does nothing.
#   scripts/remove-stale-namespaces.sh        (test.sh and Benchmarks/compare.sh run it first)
set -eu
[ "$(id -u)" = 0 ] || exit 0
command -v ip >/dev/null || exit 0
for name in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    pid=$(printf '%s\n' "$name" |
        sed -nE 's/^(rt|rbench-|rcmp|rlat|rfan-|churncpu|flipcpu|ipm|rstress)([0-9]+)(-.*)?$/\2/p')
    [ -n "$pid" ] || continue
    if ! kill -0 "$pid" 2>/dev/null; then
        ip netns del "$name" && echo "removed a namespace left behind by process $pid: $name" >&2
    fi
done
# The files some tests give their namespaces (/etc/netns/NAME/resolv.conf and hosts, which
# `ip netns exec` would mount): removed with the test's namespace, or here once it is gone.
for directory in /etc/netns/rt[0-9]*; do
    [ -d "$directory" ] || continue
    name=$(basename "$directory")
    pid=$(printf '%s\n' "$name" | sed -nE 's/^rt([0-9]+)-.*$/\1/p')
    [ -n "$pid" ] || continue
    kill -0 "$pid" 2>/dev/null || rm -rf "$directory"
done
