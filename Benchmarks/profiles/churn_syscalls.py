#!/usr/bin/env python3
"""The system calls a listener makes while it follows the churn of churn_cpu.py (50 000 route
additions then 50 000 removals), counted by `perf record -e raw_syscalls:sys_enter` on its
process and named from the kernel's headers (linux-libc-dev, x86_64 numbers). Root; creates and
deletes its own namespace, never touches the root one.

usage: churn_syscalls.py COMMAND...
example:
  Benchmarks/profiles/churn_syscalls.py .build/release/reach events --json
"""
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from churn_cpu import churn_namespace

HEADER = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"


def main():
    command = sys.argv[1:]
    if shutil.which("perf") is None:
        subprocess.run(["apt-get", "install", "-y", "linux-perf"], check=True, stdout=subprocess.DEVNULL)
    names = {int(number): name for name, number in re.findall(r"#define __NR_(\w+) (\d+)", open(HEADER).read())}
    with tempfile.TemporaryDirectory() as scratch, churn_namespace() as (namespace, churn):
        data = os.path.join(scratch, "perf.data")
        listener = subprocess.Popen(["ip", "netns", "exec", namespace, *command],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(2)
            recorder = subprocess.Popen(["perf", "record", "-q", "-e", "raw_syscalls:sys_enter", "-o", data,
                                         "-p", str(listener.pid)], stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5)
                churn()
                time.sleep(3)
            finally:
                recorder.send_signal(signal.SIGINT)
                recorder.wait()
        finally:
            listener.terminate()
            listener.wait(5)
        trace = subprocess.run(["perf", "script", "-i", data, "-F", "trace"], capture_output=True, text=True).stdout
    counts = collections.Counter(int(line.split()[1]) for line in trace.splitlines() if line.startswith("NR "))
    for number, count in counts.most_common():
        print(f"{count:8d}  {names.get(number, number)}")


if __name__ == "__main__":
    main()
