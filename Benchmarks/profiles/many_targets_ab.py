#!/usr/bin/env python3
"""Time to the 150th line of `reach watch` with 150 address targets, each through a link of its
own (10.100.I.9 for I in 0-149, on veths a0-a149), in a namespace with 1 000 more links (the
namespace of many_links_ab.py): how a monitor's start-up grows with the links its answers use.
Two builds of `reach` take turns in ROUNDS alternating rounds; in each, each form (inside the
namespace by `ip netns exec`, and from outside with `--netns`) is started RUNS times and the
round's figure is the median. Prints the medians of the rounds and each round's figure. Root;
creates and deletes its own namespace, never touches the root one.

usage: many_targets_ab.py OLD_REACH NEW_REACH [ROUNDS [RUNS]]   (5 and 3 by default; a minute)
"""
import os
import statistics
import subprocess
import sys

from alternating_rounds import build_container_host, lines_time

old, new = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
builds = {"old": old, "new": new}
ns = f"rt{os.getpid()}-targets"   # removable by scripts/remove-stale-namespaces.sh
targets = [f"10.100.{i}.9" for i in range(150)]


def main():
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        build_container_host(ns)
        forms = {"ip netns exec": lambda b: ["ip", "netns", "exec", ns, b, "watch"] + targets,
                 "--netns": lambda b: [b, "watch", "--netns", ns] + targets}
        figures = {(b, f): [] for b in builds for f in forms}
        for r in range(rounds):
            for label in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                for name, command in forms.items():
                    samples = [lines_time(command(builds[label]), len(targets)) for _ in range(runs)]
                    figures[(label, name)].append(statistics.median(samples))
        for name in forms:
            o, n = statistics.median(figures[("old", name)]), statistics.median(figures[("new", name)])
            print(f"150th line of reach watch, {name:13} ms {o:6.1f} -> {n:6.1f} ({n / o:.2f}x); rounds "
                  f"{[round(x, 1) for x in figures[('old', name)]]} {[round(x, 1) for x in figures[('new', name)]]}")
    finally:
        subprocess.run(["ip", "netns", "del", ns])


main()
