"""The measuring loop that churn_cpu.py and flip_cpu.py share: each listener alone in a
namespace, round after round, in an order that alternates from one round to the next (so that a
slow minute of the VM falls on every listener), with the CPU it used while a workload ran; the
container host of 1 000 links and the link flips that flip_cpu.py and compare.py measure; and
the uplink and the extra links of the latency harness's namespace."""
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


# A namespace's uplink as the latency harness builds it: lo, veth v0/v1 with 10.200.0.1/24 on
# v0, and (the last line) a default route via 10.200.0.2 through v0. `ip` commands.
UPLINK_SETUP = ["link set lo up", "link add v0 type veth peer name v1", "address add 10.200.0.1/24 dev v0",
                "link set v0 up", "link set v1 up", "route add default via 10.200.0.2 dev v0"]


def extra_links(count):
    """The `ip -batch` lines (without newlines) of `count` more links as `flip_latency -l` adds
    them: veth pairs, up, one /32 address on each pair's first link."""
    lines = []
    for i in range(count // 2):
        lines += [f"link add xa{i} type veth peer name xb{i}",
                  f"address add 10.{100 + i // 256 % 100}.{i % 256}.1/32 dev xa{i}",
                  f"link set xa{i} up", f"link set xb{i} up"]
    return lines


def build_container_host(namespace):
    """Fills `namespace` as a container host: 500 veth pairs (1 000 links), up, aI with
    10.(100 + I / 250).(I % 250).1/24, and a default route via 10.200.0.2 on a0; then waits for
    the kernel's link watch to settle the new links' states."""
    lines = ["link set lo up"]
    for i in range(500):
        lines += [f"link add a{i} type veth peer name b{i}", f"link set a{i} up", f"link set b{i} up",
                  f"address add 10.{100 + i // 250}.{i % 250}.1/24 dev a{i}"]
    lines += ["address add 10.200.0.1/24 dev a0", "route add default via 10.200.0.2"]
    subprocess.run(["ip", "-n", namespace, "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)
    time.sleep(3)


def lines_time(command, count=1):
    """Milliseconds from starting `command` to its `count`th line of output (it is then
    killed); exits the script if the command ends before."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        for _ in range(count):
            if not process.stdout.readline():
                raise SystemExit(f"{' '.join(command[:6])} ...: fewer than {count} lines")
        return (time.perf_counter() - start) * 1e3
    finally:
        process.kill()
        process.wait()


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


def flip_link(namespace, link, flips, gap):
    """Sets `link` in `namespace` down and up, `flips` times in all (down first), `gap` seconds
    apart: the workload of the link-flip measurements."""
    for flip in range(flips):
        subprocess.run(["ip", "-n", namespace, "link", "set", link, "down" if flip % 2 == 0 else "up"], check=True)
        time.sleep(gap)


def median(values):
    return sorted(values)[len(values) // 2]
