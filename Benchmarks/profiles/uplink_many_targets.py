#!/usr/bin/env python3
"""CPU that `reach watch` spends per carrier change of the uplink when it watches many addresses
that go out through another link: their answers do not change, but every round that the change
starts asks the kernel for each of them. The uplink `v0` carries the default route (via
10.200.0.2); the targets, 198.18.I/J, go through `w0` (198.18.0.0/16 via 10.201.0.2). Each
round flips the uplink's peer `v1` down and up FLIPS/2 times, GAP seconds apart (0.3 by
default: each change is read and answered before the next), with each build alone in
alternating rounds (alternating_rounds.py). Root; creates and deletes its own namespace (rtPID,
which scripts/remove-stale-namespaces.sh knows), never touches the root one.

usage: uplink_many_targets.py ROUNDS TARGETS FLIPS NAME=REACH ...   (GAP=seconds in the environment)
example:
  Benchmarks/profiles/uplink_many_targets.py 3 1000 20 old=/tmp/reach-old new=.build/release/reach
"""
import os
import sys

from alternating_rounds import alternating_rounds, cpu_nanoseconds, flip_link, median, scratch_namespace

SETUP = ["link set lo up", "link add v0 type veth peer name v1", "address add 10.200.0.1/24 dev v0",
         "link set v0 up", "link set v1 up", "route add default via 10.200.0.2 dev v0",
         "link add w0 type veth peer name w1", "address add 10.201.0.1/24 dev w0", "link set w0 up",
         "link set w1 up", "route add 198.18.0.0/16 via 10.201.0.2 dev w0"]


def main():
    rounds, targets, flips = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    builds = dict(argument.split("=", 1) for argument in sys.argv[4:])
    gap = float(os.environ.get("GAP", "0.3"))
    addresses = " ".join(f"198.18.{i // 250}.{i % 250 + 1}" for i in range(targets))
    with scratch_namespace("rt", [], [line + "\n" for line in SETUP]) as namespace:
        listeners = {name: f"{reach} watch {addresses}" for name, reach in builds.items()}
        used = alternating_rounds(rounds, listeners, namespace, lambda: flip_link(namespace, "v1", flips, gap),
                                  cpu_nanoseconds, settle=3, drain=1)
        print(f"CPU per carrier change of the uplink, {targets} address targets through another link, "
              f"{flips} changes {gap} s apart, {rounds} rounds:")
        for name, values in used.items():
            per_change = [value / flips / 1000 for value in values]
            print(f"  {name}: {' '.join(f'{v:.0f}' for v in per_change)} µs, median {median(per_change):.0f} µs")


if __name__ == "__main__":
    main()
