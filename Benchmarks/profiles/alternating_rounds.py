"""The measuring loop that churn_cpu.py and flip_cpu.py share: each listener alone in a
namespace, round after round, in an order that alternates from one round to the next (so that a
slow minute of the VM falls on every listener), with the CPU it used while a workload ran; and
the scratch namespace that first_line.py measures in."""
import contextlib
import os
import subprocess
import time


@contextlib.contextmanager
def scratch_namespace(prefix, setup, batch_lines=()):
    """A network namespace of this process's own (PREFIX and the process id), set up with the
    `ip` commands of `setup` and then the `ip -batch` lines of `batch_lines`; deleted, with the
    batch file, however the block ends. Yields its name."""
    namespace = f"{prefix}{os.getpid()}"
    batch = f"/tmp/{namespace}.batch"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        for line in setup:
            subprocess.run(["ip", "-n", namespace, *line.split()], check=True)
        with open(batch, "w") as out:
            out.writelines(batch_lines)
        subprocess.run(["ip", "-n", namespace, "-batch", batch], check=True)
        yield namespace
    finally:
        subprocess.run(["ip", "netns", "del", namespace])
        if os.path.exists(batch):
            os.remove(batch)


def cpu_nanoseconds(pid):
    """The CPU time of process `pid`, all its threads (those that ended included), in
    nanoseconds: clock_gettime(2) on its process CPU clock, CPUCLOCK_SCHED (2) of the clock id
    that clock_getcpuclockid(3) makes."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def alternating_rounds(rounds, listeners, namespace, workload, cpu, settle, drain):
    """Returns {name: [CPU used per round]}. Each listener (NAME -> COMMAND, run inside
    `namespace`) starts, gets `settle` seconds to read the state, is measured with `cpu(pid)`
    around `workload()` and `drain` more seconds, then is stopped."""
    used = {name: [] for name in listeners}
    for round_number in range(rounds):
        order = list(listeners) if round_number % 2 == 0 else list(reversed(listeners))
        for name in order:
            process = subprocess.Popen(["ip", "netns", "exec", namespace, *listeners[name].split()],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(settle)
            before = cpu(process.pid)
            workload()
            time.sleep(drain)
            used[name].append(cpu(process.pid) - before)
            process.terminate()
            process.wait(5)
    return used


def median(values):
    return sorted(values)[len(values) // 2]
