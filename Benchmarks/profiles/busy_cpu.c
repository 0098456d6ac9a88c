// busy_cpu PARENT_PID: spins forever on one CPU while touching almost no memory (no loads or
// stores in its loop, no `pause`, which a hypervisor may take for a lock spin and deschedule).
// Run with SCHED_IDLE (`chrt -i 0`), one per CPU, it keeps every vCPU from halting, and any
// other thread that wakes takes the CPU from it at once: latency_with_busy_cpus.sh uses it to
// tell what a halted vCPU costs a listener (its caches, its wake-up through the host) from what
// the listener's path costs. It ends with the process that started it (PARENT_PID, its parent),
// however that one ends.
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return 1;
    if (getppid() != (pid_t)atoi(argv[1])) return 1;  // the parent ended before the line above
    for (;;) __asm__ volatile("" ::: "memory");
}
