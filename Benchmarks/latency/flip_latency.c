// flip_latency: the event-latency harness of ../shared/bench/latency.py, in C and in rounds.
//
// Same idea as latency.py: in a private network namespace, flip a veth link with RTM_NEWLINK
// and time how long each listener takes to print its first line after the request was sent
// (t0 is read just before the send, as latency.py does). Two differences make the figures
// steadier on a small, shared VM:
//
// - one thread does everything: it sends the flip, waits for the kernel's acknowledgement,
//   then sleeps in poll(2) on the listener's stdout and reads the clock when it wakes. No
//   interpreter and no reader thread stand between the listener's write and the timestamp.
// - the listeners take turns in rounds (`-r`, default 6): each round flips the link `-n`
//   times for each listener, one after the other, in an order that alternates from round to
//   round. A slow minute of the VM then falls on every listener instead of on one.
//
// usage: flip_latency [-n FLIPS_PER_ROUND] [-r ROUNDS] [-g GAP_MS] [-l LINKS] [-s READY_S] NAME=COMMAND ...
// `-l` adds that many links (veth pairs, up, one address per pair) to the namespace first: the scale
// of a container host, where every listener that walks all links pays for it on each flip.
// Each COMMAND runs inside the namespace (`ip netns exec`), may print READY, then prints a
// line per event. A listener is ready at its first line (READY, or whatever it prints once it
// is subscribed); one that prints nothing is given `-s` seconds (default 3) to subscribe: more
// for one run under valgrind. Its flips start half a second after it is ready. Output: one JSON line per listener, like latency.py's.
// Needs root (it creates and deletes its own namespace; the root namespace is not touched).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_LISTENERS = 16 };

struct listener {
    const char *name;
    const char *command;
    double *samples;  // µs, one per flip that the listener answered
    int count;
    int missed;
    long lines;
};

static char namespace_name[64];

static void cleanup(void) {
    if (namespace_name[0]) {
        char command[128];
        snprintf(command, sizeof command, "ip netns del %s 2>/dev/null", namespace_name);
        if (system(command) != 0) fprintf(stderr, "flip_latency: could not delete %s\n", namespace_name);
        namespace_name[0] = 0;
    }
}

static void on_signal(int signal_number) {
    (void)signal_number;
    cleanup();
    _exit(1);
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void run(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void run(const char *format, ...) {
    char command[512];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(command, sizeof command, format, arguments);
    va_end(arguments);
    if (system(command) != 0) {
        fprintf(stderr, "flip_latency: failed: %s\n", command);
        exit(1);
    }
}

// A NETLINK_ROUTE socket made inside the namespace (a socket keeps the namespace it was made in).
static int netlink_in_namespace(void) {
    char path[128];
    snprintf(path, sizeof path, "/run/netns/%s", namespace_name);
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int target = open(path, O_RDONLY | O_CLOEXEC);
    if (home < 0 || target < 0 || setns(target, CLONE_NEWNET) != 0) {
        perror("flip_latency: setns");
        exit(1);
    }
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    struct sockaddr_nl local = {.nl_family = AF_NETLINK};
    if (fd < 0 || bind(fd, (struct sockaddr *)&local, sizeof local) != 0) {
        perror("flip_latency: netlink socket");
        exit(1);
    }
    if (setns(home, CLONE_NEWNET) != 0) {
        perror("flip_latency: setns home");
        exit(1);
    }
    close(home);
    close(target);
    return fd;
}

// Sets the link up or down and waits for the acknowledgement: the kernel has applied the
// change and queued its notifications.
static void set_link(int fd, int ifindex, int up, uint32_t sequence) {
    struct {
        struct nlmsghdr header;
        struct ifinfomsg info;
    } request = {
        .header = {.nlmsg_len = sizeof request, .nlmsg_type = RTM_NEWLINK,
                   .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = sequence},
        .info = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = up ? IFF_UP : 0,
                 .ifi_change = IFF_UP},
    };
    char reply[4096];
    if (send(fd, &request, sizeof request, 0) < 0 || recv(fd, reply, sizeof reply, 0) < 0) {
        perror("flip_latency: RTM_NEWLINK");
        exit(1);
    }
}

static pid_t start_listener(const char *command, int *output) {
    int pipe_ends[2];
    if (pipe2(pipe_ends, O_CLOEXEC) != 0) {
        perror("flip_latency: pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipe_ends[1], STDOUT_FILENO);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, STDERR_FILENO);
        char line[1024];
        snprintf(line, sizeof line, "exec ip netns exec %s %s", namespace_name, command);
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    close(pipe_ends[1]);
    *output = pipe_ends[0];
    return pid;
}

// Reads what the listener printed until `deadline`; returns the time of the first read that
// brought bytes, or 0. Counts lines in `lines`. `ready` is set when a line starts with READY.
static int64_t read_until(int fd, int64_t deadline, long *lines, int *ready) {
    int64_t first = 0;
    char buffer[65536];
    for (;;) {
        int64_t left = deadline - now_ns();
        if (left <= 0) return first;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int timeout_ms = (int)((left + 999999) / 1000000);
        if (poll(&p, 1, timeout_ms) <= 0) continue;
        int64_t t = now_ns();
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n <= 0) return first;
        if (!first) first = t;
        for (ssize_t i = 0; i < n; i++) {
            if (buffer[i] == '\n') (*lines)++;
            if (ready && buffer[i] == 'R' && (i == 0 || buffer[i - 1] == '\n') && n - i >= 5 &&
                memcmp(buffer + i, "READY", 5) == 0)
                *ready = 1;
        }
    }
}

static void measure(struct listener *listener, int socket_fd, int ifindex, int flips, int gap_ms,
                    int ready_s, uint32_t *sequence) {
    int output;
    pid_t pid = start_listener(listener->command, &output);
    // A listener is ready at its READY line, or at its first line if it prints no READY (`reach
    // watch` prints its first answer and `reach events` the snapshot once subscribed); one that
    // prints nothing is given 3 s to subscribe (by default), as in latency.py.
    int ready = 0;
    long ignored = 0;
    int64_t give_up = now_ns() + (int64_t)ready_s * 1000000000LL;
    while (!ready && now_ns() < give_up) {
        if (read_until(output, now_ns() + 10000000, &ignored, &ready)) ready = 1;
    }
    read_until(output, now_ns() + 500000000, &ignored, NULL);
    for (int i = 0; i < flips; i++) {
        int64_t t0 = now_ns();
        // Each round starts from the link being up; even flips take it down.
        set_link(socket_fd, ifindex, i % 2 == 1, ++*sequence);
        int64_t first = read_until(output, t0 + (int64_t)gap_ms * 1000000, &listener->lines, NULL);
        if (first) listener->samples[listener->count++] = (double)(first - t0) / 1000.0;
        else listener->missed++;
    }
    if (flips % 2 == 1) set_link(socket_fd, ifindex, 1, ++*sequence);
    kill(pid, SIGTERM);
    read_until(output, now_ns() + 200000000, &ignored, NULL);
    close(output);
    waitpid(pid, NULL, 0);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pick(const struct listener *listener, double quantile) {
    if (listener->count == 0) return -1;
    int index = (int)(quantile * listener->count);
    if (index >= listener->count) index = listener->count - 1;
    return listener->samples[index];
}

static int usage(void) {
    fprintf(stderr, "usage: flip_latency [-n FLIPS_PER_ROUND] [-r ROUNDS] [-g GAP_MS] [-l LINKS] [-s READY_S] NAME=COMMAND ...\n");
    return 2;
}

int main(int argc, char **argv) {
    int flips = 50, rounds = 6, gap_ms = 20, extra_links = 0, ready_s = 3, option;
    while ((option = getopt(argc, argv, "n:r:g:l:s:")) != -1) {
        switch (option) {
        case 'n': flips = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'g': gap_ms = atoi(optarg); break;
        case 'l': extra_links = atoi(optarg); break;
        case 's': ready_s = atoi(optarg); break;
        default:
            return usage();
        }
    }
    int count = argc - optind;
    if (count < 1 || count > MAX_LISTENERS || flips < 1 || rounds < 1 || gap_ms < 1 || extra_links < 0 || extra_links > 60000 || ready_s < 1) {
        return usage();
    }
    struct listener listeners[MAX_LISTENERS] = {0};
    for (int i = 0; i < count; i++) {
        char *spec = argv[optind + i];
        char *equals = strchr(spec, '=');
        if (!equals) {
            fprintf(stderr, "flip_latency: expected NAME=COMMAND, got %s\n", spec);
            return 2;
        }
        *equals = 0;
        listeners[i].name = spec;
        listeners[i].command = equals + 1;
        listeners[i].samples = calloc((size_t)flips * (size_t)rounds, sizeof(double));
    }

    snprintf(namespace_name, sizeof namespace_name, "rlat%d", (int)getpid());
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    run("ip netns add %s", namespace_name);
    run("ip -n %s link add vb0 type veth peer name vb1", namespace_name);
    run("ip -n %s addr add 10.200.0.1/24 dev vb0", namespace_name);
    run("ip -n %s link set vb1 up", namespace_name);
    run("ip -n %s link set vb0 up", namespace_name);
    run("ip -n %s route add default via 10.200.0.2 dev vb0", namespace_name);
    if (extra_links > 0) {
        // One `ip -batch` for all of them: veth pairs xaN / xbN, up, xaN with a 10.x.y.1/32.
        char batch_path[96];
        snprintf(batch_path, sizeof batch_path, "/tmp/%s.links", namespace_name);
        FILE *batch = fopen(batch_path, "w");
        if (!batch) {
            perror("flip_latency: links batch");
            return 1;
        }
        for (int i = 0; i < extra_links / 2; i++) {
            fprintf(batch, "link add xa%d type veth peer name xb%d\naddress add 10.%d.%d.1/32 dev xa%d\n"
                    "link set xa%d up\nlink set xb%d up\n",
                    i, i, 100 + i / 256 % 100, i % 256, i, i, i);
        }
        fclose(batch);
        run("ip -n %s -batch %s", namespace_name, batch_path);
        unlink(batch_path);
    }
    int socket_fd = netlink_in_namespace();
    // if_nametoindex would look in this process's namespace; `ip -n` looks in the test's.
    char command[256];
    snprintf(command, sizeof command, "ip -n %s -o link show vb0", namespace_name);
    FILE *ip = popen(command, "r");
    int ifindex = 0;
    if (!ip || fscanf(ip, "%d:", &ifindex) != 1 || ifindex <= 0) {
        fprintf(stderr, "flip_latency: no index for vb0\n");
        return 1;
    }
    pclose(ip);

    uint32_t sequence = 0;
    for (int round = 0; round < rounds; round++) {
        for (int k = 0; k < count; k++) {
            int i = round % 2 == 0 ? k : count - 1 - k;
            measure(&listeners[i], socket_fd, ifindex, flips, gap_ms, ready_s, &sequence);
        }
    }
    for (int i = 0; i < count; i++) {
        struct listener *l = &listeners[i];
        qsort(l->samples, (size_t)l->count, sizeof(double), compare_doubles);
        printf("{\"name\": \"%s\", \"flips\": %d, \"missed\": %d, \"events\": %ld, "
               "\"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f}\n",
               l->name, flips * rounds, l->missed, l->lines, pick(l, 0.5), pick(l, 0.9), pick(l, 0.99));
    }
    fflush(stdout);
    return 0;
}
