#!/usr/bin/env python3
"""User-space instructions that a listener spends on the first event of each kind after it
started, against the second of the same kind (callgrind): what a long-lived service pays on
the events it sees rarely, such as the first time its uplink loses its carrier, hours after
start-up. `first_flips.sh` does this for link flips in the latency harness; this probe goes
through one kind of change after the other.

In a namespace of its own (lo, veth v0/v1 with 10.200.0.1/24 on v0, a default route via
10.200.0.2, and LINKS more links as in `flip_latency -l`), the listener runs under callgrind,
counting only inside the subscription's read loop, the Reachability engine's rounds (as
`first_flips.sh`) and a monitor's deliveries on its own queue, with a dump before each
`epoll_wait`. Each kind of change is made twice
(for example v0 down and up, twice), 1.5 s apart; a dump belongs to the change made last
before it was written. For each change the table shows all instructions, those spent making
type metadata by mangled name (`swift_getTypeByMangledNameInContext2`, inclusive; the first
check of a generic type's requirements searches every protocol conformance in the process)
and those spent copying a whole dictionary or set (`_NativeDictionary.copy`,
`_NativeSet.copy`: storage shared with another copy, changed for the first time). Root;
creates and deletes its own namespace.

usage: first_events.py [LINKS] [COMMAND...]
  (LINKS 0 by default; COMMAND defaults to this package's release `reach watch 10.200.0.2`)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

from alternating_rounds import UPLINK_SETUP, extra_links, scratch_namespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Each kind of change: a label and its two `ip` commands (there and back).
CHANGES = [
    ("link v0 down/up", "link set v0 down", "link set v0 up"),
    ("carrier of v0 (v1 down/up)", "link set v1 down", "link set v1 up"),
    ("IPv4 address add/del", "address add 10.201.0.1/24 dev v0", "address del 10.201.0.1/24 dev v0"),
    ("IPv6 address add/del", "address add fd00:200::1/64 dev v0 nodad", "address del fd00:200::1/64 dev v0"),
    ("route to the target add/del", "route add 10.200.0.2/32 dev v0 metric 5", "route del 10.200.0.2/32 dev v0 metric 5"),
    ("default route change", "route replace default via 10.200.0.2 dev v0 mtu 1400",
     "route replace default via 10.200.0.2 dev v0"),
]


def inclusive(path, pattern):
    """The inclusive instruction counts of every function matching `pattern` in a dump, summed
    (the patterns used here name functions that do not call one another)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    total = 0
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+) \(.*?\)\s+(\S.*)", line)
        if match and re.search(pattern, match.group(2)):
            total += int(match.group(1).replace(",", ""))
    return total


def totals(path):
    for line in open(path):
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def listen_through(namespace, command, out, label, there, back):
    """Starts the listener under callgrind, makes the change there and back twice, and returns a
    row per step: its label, all instructions, metadata and copies."""
    os.makedirs(out)
    listener = subprocess.Popen(
        ["ip", "netns", "exec", namespace, "valgrind", "--tool=callgrind",
         f"--callgrind-out-file={out}/cg.out", "--toggle-collect=*readNotifications*",
         "--toggle-collect=*reconcileMarked*", "--toggle-collect=*SubscriptionEngine*flush*",
         "--toggle-collect=*ReachabilityEngine*evaluateAll*", "--toggle-collect=*deliverBatched*",
         "--dump-before=epoll_wait", *command],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks = []
    try:
        time.sleep(15)  # start-up under valgrind
        for occurrence in ("first", "second"):
            for step, direction in ((there, "there"), (back, "back")):
                marks.append((time.time(), f"{label}, {occurrence} {direction}"))
                subprocess.run(["ip", "-n", namespace, *step.split()], check=True)
                time.sleep(1.5)
    finally:
        listener.terminate()
        listener.wait()
    segments = {}
    for path in glob.glob(f"{out}/cg.out.*"):
        written = os.path.getmtime(path)
        owner = [mark for moment, mark in marks if moment <= written]
        if owner:
            segments.setdefault(owner[-1], []).append(path)
    rows = []
    for _, mark in marks:
        paths = segments.get(mark, [])
        rows.append((mark, sum(totals(p) for p in paths),
                     sum(inclusive(p, r"swift_getTypeByMangledNameInContext2 ") for p in paths),
                     sum(inclusive(p, r"_Native(Dictionary|Set)V4copy") for p in paths)))
    return rows


def main():
    arguments = sys.argv[1:]
    links = int(arguments.pop(0)) if arguments and arguments[0].isdigit() else 0
    command = arguments or [os.path.join(ROOT, ".build/release/reach"), "watch", "10.200.0.2"]
    out = tempfile.mkdtemp(prefix="first-events.")
    batch = [line + "\n" for line in extra_links(links)]
    rows = []
    with scratch_namespace("firstev", UPLINK_SETUP, batch) as namespace:
        time.sleep(3)  # the kernel's link watch settles the new links' states
        for label, there, back in CHANGES:
            rows += listen_through(namespace, command, f"{out}/{len(rows)}", label, there, back)
    print(f"{' '.join(command)}, {links} more links: user-space instructions per change, each kind in a "
          "process of its own (all / making type metadata / copying whole dictionaries and sets)")
    for label, count, metadata, copies in rows:
        print(f"  {label:<48} {count:>10,} {metadata:>10,} {copies:>10,}")
    print(f"(callgrind files in {out})")


if __name__ == "__main__":
    main()
