#!/usr/bin/env python3
"""CPU time that listeners spend per link flip in a namespace with many links: the cost of one
change at a container host's scale, which the latency harness cannot show there (its clock
stops after the kernel's acknowledgement of the flip, which takes over a millisecond with
1 000 links, longer than any listener). Each listener alone, in alternating rounds (an A/B of
two builds, or a build beside the floor); each round flips veth `v0` down and up FLIPS/2
times, 5 ms apart. CPU time is the listener's process CPU clock (clock_gettime(2) on the
clock of clock_getcpuclockid(3), in nanoseconds): the run time of all its threads, including
those that ended meanwhile. (Summing `/proc/PID/task/*/schedstat` instead loses a thread's
whole run time when it ends, as an idle libdispatch worker does some seconds after start-up,
and could make a round's figure negative.) Root; creates and deletes its own namespace,
never touches the root one.

usage: flip_cpu.py [--uplink | --uplink-after NAME,... [--uplink-only NAME,...]] ROUNDS LINKS FLIPS NAME=COMMAND ...
With `--uplink`, the default route goes through `v0` (via 10.200.0.2) and the peer
`v1` is flipped instead, so `v0` loses and regains its carrier, as in the latency harness: the
change a host sees when the cable of its uplink is pulled. With `--uplink-after`, the rounds
run first as without it, then the default route is added in the same namespace (its links
are not built twice) and the listeners named (a comma-separated list) are measured again on
flips of `v1`; a second block of figures is printed. Those named by `--uplink-only` as well are
measured in that second block only.
example:
  Benchmarks/profiles/flip_cpu.py 3 1000 200 raw=/tmp/reach-peers/raw_listener \\
      watch=".build/release/reach watch 10.200.0.2"
"""
import subprocess
import sys

from alternating_rounds import (UPLINK_SETUP, alternating_rounds, cpu_nanoseconds, extra_links, flip_link, median,
                                scratch_namespace)


def measure(namespace, flipped, listeners, rounds, links, flips):
    """Each listener alone in alternating rounds of `flips` flips of `flipped`; prints a block."""
    used = alternating_rounds(rounds, listeners, namespace, lambda: flip_link(namespace, flipped, flips, 0.005),
                              cpu_nanoseconds, settle=3, drain=1)
    print(f"CPU per flip of {flipped}, {links} more links, {flips} flips per round, {rounds} rounds:")
    for name, values in used.items():
        per_flip = [v / flips / 1000 for v in values]
        print(f"  {name}: {' '.join(f'{v:.0f}' for v in per_flip)} µs, median {median(per_flip):.0f} µs")


def main():
    arguments = sys.argv[1:]
    uplink = arguments[0] == "--uplink"
    uplink_after = arguments[1].split(",") if arguments[0] == "--uplink-after" else []
    uplink_only = []
    if uplink:
        arguments = arguments[1:]
    elif uplink_after:
        arguments = arguments[2:]
        if arguments[0] == "--uplink-only":
            uplink_only = arguments[1].split(",")
            uplink_after += uplink_only
            arguments = arguments[2:]
    rounds, links, flips = int(arguments[0]), int(arguments[1]), int(arguments[2])
    listeners = dict(argument.split("=", 1) for argument in arguments[3:])
    # The default route (the setup's last line) only with --uplink.
    setup = UPLINK_SETUP if uplink else UPLINK_SETUP[:-1]
    with scratch_namespace("flipcpu", [], [line + "\n" for line in setup + extra_links(links)]) as namespace:
        measure(namespace, "v1" if uplink else "v0",
                {name: command for name, command in listeners.items() if name not in uplink_only}, rounds, links, flips)
        if uplink_after:
            subprocess.run(["ip", "-n", namespace, "route", "add", "default", "via", "10.200.0.2", "dev", "v0"],
                           check=True)
            measure(namespace, "v1", {name: listeners[name] for name in uplink_after}, rounds, links, flips)


if __name__ == "__main__":
    main()
