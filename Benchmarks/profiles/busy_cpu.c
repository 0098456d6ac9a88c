// busy_cpu: spins forever on one CPU while touching almost no memory (no loads or stores in
// its loop, no `pause`, which a hypervisor may take for a lock spin and deschedule). Run with
// SCHED_IDLE (`chrt -i 0`), one per CPU, it keeps every vCPU from going idle, and any other
// thread that wakes takes the CPU from it at once: latency_with_busy_cpus.sh uses it to tell
// what an idle vCPU loses (its caches) from what a path costs.
int main(void) {
    for (;;) __asm__ volatile("" ::: "memory");
}
