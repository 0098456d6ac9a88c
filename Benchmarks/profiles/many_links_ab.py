#!/usr/bin/env python3
"""One-shot commands and an idle watcher in a namespace with 1 000 more links (500 veth pairs,
up, one address each, a default route): what reading every link costs, which a container
host's scale makes visible. Two builds of `reach` (an A/B) take turns in ROUNDS alternating
rounds; in each, every command runs RUNS times, and the round's figure is the median of its
wall and CPU times (user and system, from getrusage of the child). Then each build's `reach
watch` is started, left idle 3 s, and its resident memory (VmRSS) read, in alternating rounds
too; and each build's monitors are started 3 times per round and timed to their first line
(`reach watch` of an address and of the internet, inside the namespace by `ip netns exec` and
from outside with `--netns`, which mounts that namespace's sysfs). Prints the medians of the
rounds and each round's wall time. Root; creates and deletes
its own namespace, never touches the root one.

usage: many_links_ab.py OLD_REACH NEW_REACH [ROUNDS [RUNS]]   (5 and 15 by default; 2 minutes)
"""
import os
import resource
import statistics
import subprocess
import sys
import time

from alternating_rounds import build_container_host, lines_time

old, new = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 15
builds = {"old": old, "new": new}
ns = f"rt{os.getpid()}-many"   # removable by scripts/remove-stale-namespaces.sh


def timed(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode > 1:   # 1 is "not reachable", an answer; 2 is an error, which is not timed
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def idle_watch_rss(binary):
    watch = subprocess.Popen([binary, "watch", "--netns", ns, "10.100.3.9"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)
        with open(f"/proc/{watch.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    finally:
        watch.terminate()
        watch.wait()


def main():
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        build_container_host(ns)
        commands = {"check": ["check", "--netns", ns], "check ADDRESS": ["check", "--netns", ns, "10.100.3.9"],
                    "links --json": ["links", "--json", "--netns", ns]}
        walls = {(b, c): [] for b in builds for c in commands}
        cpus = {(b, c): [] for b in builds for c in commands}
        rss = {b: [] for b in builds}
        monitors = {"watch ADDRESS (netns exec)": lambda b: ["ip", "netns", "exec", ns, b, "watch", "10.100.3.9"],
                    "watch (netns exec)": lambda b: ["ip", "netns", "exec", ns, b, "watch"],
                    "watch --netns ADDRESS": lambda b: [b, "watch", "--netns", ns, "10.100.3.9"],
                    "watch --netns": lambda b: [b, "watch", "--netns", ns]}
        firsts = {(b, m): [] for b in builds for m in monitors}
        for r in range(rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for label in order:
                for name, args in commands.items():
                    samples = [timed([builds[label]] + args) for _ in range(runs)]
                    walls[(label, name)].append(statistics.median(s[0] for s in samples) * 1e3)
                    cpus[(label, name)].append(statistics.median(s[1] for s in samples) * 1e3)
                rss[label].append(idle_watch_rss(builds[label]) / 1024)
                for name, command in monitors.items():
                    firsts[(label, name)].append(statistics.median(lines_time(command(builds[label])) for _ in range(3)))
        for name in commands:
            ow, nw = statistics.median(walls[("old", name)]), statistics.median(walls[("new", name)])
            oc, nc = statistics.median(cpus[("old", name)]), statistics.median(cpus[("new", name)])
            print(f"reach {name:14} wall ms {ow:6.1f} -> {nw:6.1f} ({nw / ow:.2f}x), CPU ms {oc:6.1f} -> {nc:6.1f} "
                  f"({nc / oc:.2f}x); rounds {[round(x, 1) for x in walls[('old', name)]]} "
                  f"{[round(x, 1) for x in walls[('new', name)]]}")
        for name in monitors:
            o, n = statistics.median(firsts[("old", name)]), statistics.median(firsts[("new", name)])
            print(f"first line of reach {name:26} ms {o:6.1f} -> {n:6.1f} ({n / o:.2f}x); rounds "
                  f"{[round(x, 1) for x in firsts[('old', name)]]} {[round(x, 1) for x in firsts[('new', name)]]}")
        o, n = statistics.median(rss["old"]), statistics.median(rss["new"])
        print(f"idle reach watch VmRSS MiB {o:.1f} -> {n:.1f} ({n - o:+.1f}); rounds {rss['old']} {rss['new']}")
    finally:
        subprocess.run(["ip", "netns", "del", ns])


main()
