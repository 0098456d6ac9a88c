#!/usr/bin/python3
"""CPU per address change among N addresses on one link, for each listener, in a namespace of its
own: N addresses on a veth, the listeners started, then one more address added and removed 2 500
times. libnl 3.7's address cache has no hash key: it searches every address for each change.

usage: address_change_cpu.py REACH PEERS_DIR [N ...]     (root; default N: 40 4000)
prints one line per round: the CPU µs per change of raw_listener, libnl_listener and
`reach events --json` (user and system time from /proc/PID/stat)."""
import os, subprocess, sys, time

REACH, PEERS = sys.argv[1], sys.argv[2]
LISTENERS = [("raw_listener", [f"{PEERS}/raw_listener"]), ("libnl_listener", [f"{PEERS}/libnl_listener"]),
             ("reach events --json", [REACH, "events", "--json"])]
CHANGES = 2 * 2500


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_(addresses):
    ns = f"addrcpu{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        setup = "link add va type veth peer name vb\nlink set va up\nlink set vb up\n"
        setup += "".join(f"address add 10.{i // 250}.{i % 250}.1/32 dev va\n" for i in range(addresses))
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=setup, text=True, check=True)
        # `ip netns exec` execs the listener: its pid is the listener's.
        procs = {name: subprocess.Popen(["ip", "netns", "exec", ns] + command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL) for name, command in LISTENERS}
        time.sleep(3)
        before = {name: cpu_seconds(p.pid) for name, p in procs.items()}
        flips = "address add 10.250.0.1/32 dev va\naddress del 10.250.0.1/32 dev va\n" * (CHANGES // 2)
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=flips, text=True, check=True)
        time.sleep(2)
        used = {name: (cpu_seconds(p.pid) - before[name]) / CHANGES * 1e6 for name, p in procs.items()}
        for p in procs.values():
            p.terminate()
            p.wait(5)
        return used
    finally:
        subprocess.run(["ip", "netns", "del", ns])


for addresses in [int(a) for a in sys.argv[3:]] or [40, 4000]:
    for number in range(3):
        used = round_(addresses)
        print(f"{addresses} addresses, round {number + 1}: "
              + ", ".join(f"{name} {value:.0f} µs" for name, value in used.items()), flush=True)
