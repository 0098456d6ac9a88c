// CNetlink: the one door from Swift to libnl-3 / libnl-route-3 and the few Linux calls the
// Netlink overlay needs. Only the `Netlink` module imports it.
//
// Every shim is `static inline`, prefixed `cnetlink_`, and says why Swift cannot do without it.
#ifndef CNETLINK_H
#define CNETLINK_H

// Deliberately no _GNU_SOURCE: defining it here would give glibc's structs (fd_set among them)
// other field names than Swift's Glibc module sees, and the two modules would clash. The two
// GNU-only calls this header needs are declared by hand below.

#include <errno.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <net/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/nexthop.h>

#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/rule.h>
#include <netlink/route/netconf.h>
#include <netlink/route/neighbour.h>
#include <linux/fib_rules.h>
#include <linux/netconf.h>
#include <linux/neighbour.h>

/// Reads one datagram from a netlink socket without blocking, into `buffer`.
///
/// Returns its whole length, which is larger than `length` when the datagram did not fit and
/// only `length` bytes of it were read (`MSG_TRUNC` is asked for), or -1 with `errno` in
/// `*saved_errno`, read here at once: Swift code cannot promise that nothing runs between the
/// call's return and its own read of `errno` (ENOBUFS, the kernel dropped notifications, must
/// not be mistaken for another failure). `*sender_port` gets the sender's netlink port (0 for
/// the kernel).
///
/// `recvfrom(2)` rather than `recvmsg(2)`: the kernel then copies no `msghdr` and imports no
/// vector from user space for each datagram (`copy_msghdr_from_user` and `import_iovec` were
/// 4 % of `reach events`' CPU under a churn of route changes, one datagram per change).
static inline ssize_t cnetlink_receive_datagram(int fd, void *buffer, size_t length, uint32_t *sender_port,
                                                int *saved_errno) {
    struct sockaddr_nl sender;
    memset(&sender, 0, sizeof sender);
    socklen_t sender_length = sizeof sender;
    ssize_t received = recvfrom(fd, buffer, length, MSG_DONTWAIT | MSG_TRUNC,
                                (struct sockaddr *)&sender, &sender_length);
    *saved_errno = received < 0 ? errno : 0;
    *sender_port = sender.nl_pid;
    return received;
}

/// Whether every entry of an `RTA_MULTIPATH` attribute is whole (the kernel's `RTNH_OK`).
///
/// libnl 3.7's `rtnl_route_parse` never ends on an entry whose length is shorter than its
/// header (its `parse_multipath` steps by that length): a message with one is refused before
/// libnl sees it. `RTNH_OK` and `RTNH_NEXT` are function-like macros Swift cannot import.
static inline int cnetlink_multipath_is_well_formed(const struct nlattr *attribute) {
    const struct rtnexthop *entry = (const struct rtnexthop *)nla_data(attribute);
    int remaining = nla_len(attribute);
    while (remaining > 0) {
        if (!RTNH_OK(entry, remaining)) return 0;
        remaining -= RTNH_ALIGN(entry->rtnh_len);
        entry = RTNH_NEXT(entry);
    }
    return 1;
}

/// A descriptor of process `pid` that becomes readable when the process exits (pidfd_open(2),
/// Linux 5.3+), or -1 with `errno` in `*saved_errno`. glibc 2.36 declares no wrapper in the
/// headers Swift sees, and `syscall` is variadic, which Swift cannot call.
static inline int cnetlink_pidfd_open(pid_t pid, int *saved_errno) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    *saved_errno = fd < 0 ? errno : 0;
    return (int)fd;
}

/// glibc's declaration of setns(2), visible only under _GNU_SOURCE (see the top of this file).
extern int setns(int fd, int nstype);

/// Joins the calling thread to the network namespace behind `fd`.
///
/// Swift's Glibc module does not declare `setns` (it needs `_GNU_SOURCE`). `errno` is read here,
/// at once, for the same reason as above.
static inline int cnetlink_setns_net(int fd, int *saved_errno) {
    int rc = setns(fd, CLONE_NEWNET);
    *saved_errno = rc < 0 ? errno : 0;
    return rc;
}

/// glibc's declaration of unshare(2), visible only under _GNU_SOURCE (see the top of this file).
extern int unshare(int flags);

/// Gives the calling thread a private mount namespace whose `/sys` shows the network namespace
/// behind `netns_fd`: unshare the mount namespace, make every mount a slave (so nothing mounted
/// here propagates back to the host), join the network namespace, then mount a fresh, read-only
/// sysfs over `/sys`. A sysfs mount lists the links of the network namespace of the task that
/// mounted it, which is why `ip netns exec` does the same. The mount namespace dies with the
/// thread. Returns the step that failed (1 to 4) or 0; `errno` is read here, at once.
static inline int cnetlink_enter_namespace_sysfs(int netns_fd, int *saved_errno) {
    int step = 0;
    if (unshare(CLONE_NEWNS) != 0) step = 1;
    else if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) step = 2;
    else if (setns(netns_fd, CLONE_NEWNET) != 0) step = 3;
    else if (mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) step = 4;
    *saved_errno = step ? errno : 0;
    return step;
}

/// Names the calling thread (at most 15 bytes are kept), for `top -H`, `gdb` and crash reports.
///
/// `pthread_setname_np` is GNU-only (see the top of this file); `prctl(PR_SET_NAME)` is not.
static inline void cnetlink_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/// Sets an integer socket option and returns 0 or the `errno` of the failure.
///
/// `setsockopt` takes a `const void *` and a `socklen_t`; this keeps the pointer dance and the
/// immediate `errno` read out of Swift.
static inline int cnetlink_setsockopt_int(int fd, int level, int name, int value) {
    return setsockopt(fd, level, name, &value, sizeof value) < 0 ? errno : 0;
}

/// Reads an integer socket option; returns the value, or -1 with `*saved_errno` set.
static inline int cnetlink_getsockopt_int(int fd, int level, int name, int *saved_errno) {
    int value = 0;
    socklen_t len = sizeof value;
    if (getsockopt(fd, level, name, &value, &len) < 0) {
        *saved_errno = errno;
        return -1;
    }
    *saved_errno = 0;
    return value;
}

/// The payload of a netlink message: `NLMSG_DATA` is a function-like macro Swift cannot import.
static inline void *cnetlink_nlmsg_data(struct nlmsghdr *header) {
    return NLMSG_DATA(header);
}

/// `SOL_NETLINK` and `NETLINK_GET_STRICT_CHK` come from headers Swift's Glibc module does not
/// pull in consistently; named here so the Swift side never spells a bare number.
static inline int cnetlink_sol_netlink(void) { return SOL_NETLINK; }
static inline int cnetlink_netlink_get_strict_chk(void) { return NETLINK_GET_STRICT_CHK; }

/// The magic number of the nsfs file system (`NSFS_MAGIC`), which every namespace file lives on;
/// `linux/magic.h` is not part of Swift's Glibc module.
static inline unsigned long cnetlink_nsfs_magic(void) { return 0x6e736673UL; }

#endif
