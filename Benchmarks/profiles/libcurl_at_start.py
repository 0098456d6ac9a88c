#!/usr/bin/env python3
"""What loading libcurl at every start would cost `reach check`: the tool as built (libcurl
opened only when a probe is asked for) against the same tool with libcurl and the libraries it
needs loaded at start (LD_PRELOAD, as linking it in would), in alternating rounds.

Usage: libcurl_at_start.py REACH [ROUNDS] [RUNS]
The target is 127.0.0.1 in the current namespace: a route lookup, nothing is sent."""
import os
import statistics
import subprocess
import sys
import time

LIBCURL = "/usr/lib/x86_64-linux-gnu/libcurl.so.4"


def per_run(reach, environment, runs):
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run([reach, "check", "127.0.0.1"], env=environment, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) / runs * 1000


def main():
    reach = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    as_built, preloaded = [], []
    for _ in range(rounds):
        as_built.append(per_run(reach, dict(os.environ), runs))
        preloaded.append(per_run(reach, dict(os.environ, LD_PRELOAD=LIBCURL), runs))
    built, loaded = statistics.median(as_built), statistics.median(preloaded)
    print(f"reach check, libcurl opened when probing: {built:.2f} ms (median of {rounds} rounds of {runs})")
    print(f"reach check, libcurl loaded at start:     {loaded:.2f} ms ({loaded / built:.2f}x)")


if __name__ == "__main__":
    main()
