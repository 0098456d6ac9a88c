#!/usr/bin/env python3
"""The latency of a listener's first event of one kind after its start, for two or more builds
in alternating rounds: what `first_events.py` counts in instructions, on the clock. Each round
starts every listener afresh (in an order that alternates), waits for its first line (its
current answer, or READY), lets it settle for half a second, makes the change through a
running `ip -batch` (so that no process start lies between the clock and the kernel), and
times the listener's next line; then undoes the change. Medians over the rounds, in µs.

In a namespace of its own: lo, veth v0/v1 with 10.200.0.1/24 on v0, a default route via
10.200.0.2 on v0, and LINKS more links as in `flip_latency -l`. Root; creates and deletes its
own namespace.

usage: first_event_latency.py [--second] ROUNDS LINKS CHANGE UNDO NAME=COMMAND ...
With `--second`, each listener sees the change and its undoing once before the timed change:
the same change's latency once the listener has met it (the control).
example (the first loss of the default route, as `reach watch` of the internet sees it):
  Benchmarks/profiles/first_event_latency.py 15 0 "route del default" \\
      "route add default via 10.200.0.2 dev v0" old="/tmp/reach-old watch" new=".build/release/reach watch"
"""
import os
import select
import statistics
import subprocess
import sys
import time

from alternating_rounds import UPLINK_SETUP, extra_links, scratch_namespace


def next_line(process, timeout):
    """The moment (perf_counter) the listener's next line arrived, or None after `timeout` s."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready or not process.stdout.readline():
        return None
    return time.perf_counter()


def main():
    arguments = sys.argv[1:]
    second = arguments[0] == "--second"
    if second:
        arguments = arguments[1:]
    rounds, links, change, undo = int(arguments[0]), int(arguments[1]), arguments[2], arguments[3]
    listeners = [argument.split("=", 1) for argument in arguments[4:]]
    batch = [line + "\n" for line in extra_links(links)]
    samples = {name: [] for name, _ in listeners}
    with scratch_namespace("firstlat", UPLINK_SETUP, batch) as namespace:
        time.sleep(2)  # the kernel's link watch settles the new links' states
        ip = subprocess.Popen(["ip", "-n", namespace, "-batch", "-"], stdin=subprocess.PIPE, text=True)
        try:
            for round_number in range(rounds):
                order = listeners if round_number % 2 == 0 else listeners[::-1]
                for name, command in order:
                    process = subprocess.Popen(["ip", "netns", "exec", namespace, *command.split()],
                                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                    try:
                        if next_line(process, 10) is None:
                            raise SystemExit(f"{name}: no first line")
                        time.sleep(0.5)
                        if second:
                            for step in (change, undo):
                                ip.stdin.write(step + "\n")
                                ip.stdin.flush()
                                time.sleep(0.3)
                            while next_line(process, 0.2) is not None:
                                pass
                        start = time.perf_counter()
                        ip.stdin.write(change + "\n")
                        ip.stdin.flush()
                        arrived = next_line(process, 2)
                        if arrived is not None:
                            samples[name].append((arrived - start) * 1e6)
                    finally:
                        process.kill()
                        process.wait()
                    ip.stdin.write(undo + "\n")
                    ip.stdin.flush()
                    time.sleep(0.3)
        finally:
            ip.stdin.close()
            ip.wait()
    print(f"{'second' if second else 'first'} `{change}` after start-up, {links} more links, {rounds} rounds (µs):")
    for name, values in samples.items():
        if values:
            print(f"  {name}: median {statistics.median(values):.0f}, {len(values)} samples, "
                  f"{' '.join(f'{v:.0f}' for v in values)}")
        else:
            print(f"  {name}: no samples")


if __name__ == "__main__":
    main()
