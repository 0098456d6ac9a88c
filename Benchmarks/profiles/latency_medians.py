#!/usr/bin/env python3
"""Reads flip_latency's JSON lines on standard input and prints one line: LABEL, then each
listener's median and its ratio to the listener named `raw` (the bare C listener). Used by
latency_by_idle_gap.sh and latency_with_busy_cpus.sh.

usage: flip_latency ... | latency_medians.py LABEL
"""
import json
import sys

medians = {}
for line in sys.stdin:
    try:
        result = json.loads(line)
    except ValueError:
        continue
    medians[result["name"]] = result["p50_us"]
floor = medians["raw"]
print(f"{sys.argv[1]}: " + "  ".join(f"{name} {p50:.0f} us ({p50 / floor:.2f}x)" for name, p50 in medians.items()),
      flush=True)
