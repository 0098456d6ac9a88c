#!/usr/bin/env python3
"""CPU seconds that listeners spend following a churn of 50 000 route additions then 50 000
removals, each listener alone, in alternating rounds (an A/B of two builds, or a build beside
the floor). Root; creates and deletes its own namespace, never touches the root one.

usage: churn_cpu.py ROUNDS NAME=COMMAND ...
  MODE=user or MODE=system in the environment counts only that part of the CPU time.
example:
  Benchmarks/profiles/churn_cpu.py 5 raw=/tmp/reach-peers/raw_listener \\
      events=".build/release/reach events --json"
"""
import contextlib
import os
import subprocess
import sys

from alternating_rounds import alternating_rounds, median

MODE = os.environ.get("MODE", "all")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    user, system = int(fields[11]), int(fields[12])
    ticks = {"user": user, "system": system}.get(MODE, user + system)
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def churn_namespace():
    """A namespace of this process's own with a veth pair up and 10.200.0.1/24 on v0, and the
    churn to run in it: 50 000 additions of /24 routes via 10.200.0.2, then their removals, each
    one `ip -batch`. Yields (namespace, churn); deleted, with the batch files, however the
    block ends."""
    namespace = f"churncpu{os.getpid()}"
    batch = {kind: f"/tmp/{namespace}.{kind}" for kind in ("add", "del")}
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        for line in ["link set lo up", "link add v0 type veth peer name v1",
                     "address add 10.200.0.1/24 dev v0", "link set v0 up", "link set v1 up"]:
            subprocess.run(["ip", "-n", namespace, *line.split()], check=True)
        adds = "".join(f"route add 11.{i // 256}.{i % 256}.0/24 via 10.200.0.2\n" for i in range(50_000))
        open(batch["add"], "w").write(adds)
        open(batch["del"], "w").write(adds.replace("route add", "route del"))
        def churn():
            for kind in ("add", "del"):
                subprocess.run(["ip", "-n", namespace, "-batch", batch[kind]], check=True)
        yield namespace, churn
    finally:
        subprocess.run(["ip", "netns", "del", namespace])
        for path in batch.values():
            if os.path.exists(path):
                os.remove(path)


def main():
    rounds = int(sys.argv[1])
    listeners = dict(argument.split("=", 1) for argument in sys.argv[2:])
    with churn_namespace() as (namespace, churn):
        used = alternating_rounds(rounds, listeners, namespace, churn, cpu_seconds, settle=2, drain=3)
    for name, values in used.items():
        print(f"{name}: {' '.join(f'{v:.2f}' for v in values)} s, median {median(values):.2f} s")


if __name__ == "__main__":
    main()
