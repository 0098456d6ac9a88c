#!/usr/bin/env python3
"""Milliseconds from starting a listener to its first line (for `reach watch`, its first
answer: the subscription's start-up), with ROUTES IPv4 routes in the namespace, the listeners
alternating. Root; creates and deletes its own namespace, never touches the root one.

usage: first_line.py ROUTES RUNS NAME=COMMAND ...
example (an A/B of two builds, with a full table):
  Benchmarks/profiles/first_line.py 1000000 8 old="/tmp/old/.build/release/reach watch" \\
      new=".build/release/reach watch"
"""
import statistics
import subprocess
import sys
import time

from alternating_rounds import scratch_namespace


def main():
    routes, runs = int(sys.argv[1]), int(sys.argv[2])
    listeners = dict(argument.split("=", 1) for argument in sys.argv[3:])
    setup = ["link set lo up", "link add va type veth peer name vb", "link set va up", "link set vb up",
             "address add 10.1.0.1/16 dev va", "route add default via 10.1.0.2"]
    lines = (f"route add {11 + i // 65536}.{(i // 256) % 256}.{i % 256}.0/24 via 10.1.0.2\n" for i in range(routes))
    with scratch_namespace("firstline", setup, lines) as namespace:
        times = {name: [] for name in listeners}
        for _ in range(runs):
            for name, command in listeners.items():
                start = time.monotonic()
                process = subprocess.Popen(command.split() + ["--netns", namespace], stdout=subprocess.PIPE)
                process.stdout.readline()
                times[name].append((time.monotonic() - start) * 1000)
                process.kill()
                process.wait()
        for name, values in times.items():
            print(f"{name}: median {statistics.median(values):.1f} ms ({' '.join(f'{v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
