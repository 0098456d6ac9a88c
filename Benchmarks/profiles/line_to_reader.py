#!/usr/bin/env python3
"""When the latency harness reads a listener's line, against when the listener wrote it and when
it went back to sleep: a system-wide trace (`perf record -a` of scheduler switches and system
calls) of flip_latency's flips with one listener. On this 2-CPU VM the kernel wakes the
listener, and the reader woken by the listener's write, on the CPU that woke each of them; a
listener that goes on working after its line (the rest of the kernel's burst, a second
evaluation) keeps the harness from reading it until it sleeps, and the harness's latency then
counts that work. Prints, for each flip, in µs after the harness sent it: the listener's
`write` of its line, its next sleep, and the harness's `read` of the line; then the medians.
Root; flip_latency creates and deletes its own namespace.

usage: line_to_reader.py FLIPS COMMAND...
example:
  Benchmarks/profiles/line_to_reader.py 12 .build/release/reach watch 10.200.0.2
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EVENT = re.compile(r"\s*(\S.*?)\s+(\d+)/(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s+(.*)")
WRITE, READ, SENDTO = 1, 0, 44


def trace(flips, command, scratch):
    harness = os.path.join(scratch, "flip_latency")
    subprocess.run(["gcc", "-O2", "-Wall", "-o", harness, os.path.join(HERE, "..", "latency", "flip_latency.c")],
                   check=True)
    data = os.path.join(scratch, "perf.data")
    subprocess.run(["perf", "record", "-a", "-q", "-o", data,
                    "-e", "sched:sched_switch,raw_syscalls:sys_enter,raw_syscalls:sys_exit", "--",
                    harness, "-n", str(flips), "-r", "1", "-g", "20", "listener=" + " ".join(command)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,cpu,time,event,trace"],
                            check=True, capture_output=True, text=True).stdout
    events = []
    for line in script.splitlines():
        match = EVENT.match(line)
        if match:
            comm, pid, tid, time, event, rest = match.groups()
            events.append((float(time), comm, int(pid), int(tid), event.split(":")[-1], rest))
    return events


def analyse(events):
    """One row per flip: (write, sleep, read) in µs after the harness's request, or None."""
    def syscall(event, kind, number):
        return event[4] == kind and event[5].startswith(f"NR {number} ")
    harness_pid = next(e[2] for e in events if e[1] == "flip_latency")
    # A flip is the harness's RTM_NEWLINK request: a 32-byte send on its netlink socket.
    flips = [i for i, e in enumerate(events)
             if e[2] == harness_pid and syscall(e, "sys_enter", SENDTO) and ", 20, " in e[5]]
    rows = []
    for number, start in enumerate(flips):
        end = flips[number + 1] if number + 1 < len(flips) else len(events)
        t0 = events[start][0]
        window = events[start:end]
        # The listener's line: its first write to standard output (fd 1) after the flip.
        writer = next((e for e in window if e[2] != harness_pid and e[4] == "sys_enter"
                       and e[5].startswith(f"NR {WRITE} (1,")), None)
        if writer is None:
            continue
        after = [e for e in window if e[0] >= writer[0]]
        sleep = next((e for e in after if e[4] == "sched_switch" and f"prev_pid={writer[3]} " in e[5]
                      and "prev_state=S" in e[5]), None)
        read = next((e for e in after if e[2] == harness_pid and syscall(e, "sys_exit", READ)), None)
        rows.append(tuple(None if e is None else (e[0] - t0) * 1e6 for e in (writer, sleep, read)))
    return rows


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    flips, command = int(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as scratch:
        rows = analyse(trace(flips, command, scratch))
    print("flip   write   sleep    read  (µs after the harness's request)")
    for number, row in enumerate(rows):
        print(f"{number:4} " + " ".join(f"{v:7.0f}" if v is not None else "      -" for v in row))
    for name, column in (("write", 0), ("sleep", 1), ("read", 2)):
        values = [row[column] for row in rows[1:] if row[column] is not None]
        if values:
            print(f"median {name} (without the first flip): {statistics.median(values):.0f} µs")


if __name__ == "__main__":
    main()
