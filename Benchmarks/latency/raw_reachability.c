// raw_reachability: the floor for a reachability callback, in bare C.
//
// `raw_listener` (../shared/bench) prints as soon as the first message of a burst arrives. A
// reachability answer cannot be known that early: when a link goes down the kernel announces
// the link before it flushes the link's routes, and when it comes up the carrier and the prefix
// route are announced after the first message. Whoever answers "can I reach ADDRESS?" must ask
// the kernel after the messages that matter. This program does the least such a listener can:
//
//   - one rtnetlink socket on the link, address and route groups (those `raw_listener` joins);
//   - after each wake-up it reads every queued message (until EAGAIN), keeping each link's
//     IFF_UP and IFF_LOWER_UP from RTM_NEWLINK / RTM_DELLINK;
//   - then one RTM_GETROUTE for ADDRESS on a second socket;
//   - it prints CHANGED when the answer changed: the lookup's error, output link and gateway,
//     and whether that link is up with its carrier (the library's "reachable" needs both).
//
// With `--reread`, it also does what the kernel's silent `linkdown` flags ask of a listener that
// keeps the default routes' flags exact, as the library does: after a burst in which the carrier
// (IFF_LOWER_UP) of a link that a default route goes out through changed, it dumps the IPv4
// default routes of the main table (strict checking, the table named, read to NLMSG_DONE)
// before its lookup, and the answer counts the default routes flagged RTNH_F_LINKDOWN. The
// kernel walks the whole main table for that dump (with no policy rules of its own, the local
// table's routes too: one trie), which is the CPU floor for an uplink's carrier change
// (compare.py's uplink row).
//
// No library, no threads, no queues: the library's `Reachability` callback is measured against
// it in the same run (Benchmarks/compare.py). usage: raw_reachability [--reread] IPV4_ADDRESS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { LINK_SLOTS = 4096 };

static unsigned link_flags[LINK_SLOTS];  // by interface index; 0 when unknown or deleted

struct answer {
    int error;        // the lookup's errno, 0 when the kernel has a route
    int oif;          // its output link
    uint32_t gateway;
    int link_ready;   // that link is up and has its carrier
    int linkdown_defaults;  // with --reread: the main table's IPv4 default routes flagged linkdown
};

static int reread;  // --reread
static unsigned char carries_default[LINK_SLOTS];  // with --reread: a main-table IPv4 default route goes out there
static int carrier_changed;  // the IFF_LOWER_UP of such a link changed since the last burst

static void note_link(const struct nlmsghdr *header) {
    const struct ifinfomsg *info = NLMSG_DATA(header);
    if (info->ifi_index <= 0 || info->ifi_index >= LINK_SLOTS) return;
    unsigned flags = header->nlmsg_type == RTM_DELLINK ? 0 : info->ifi_flags;
    if ((flags ^ link_flags[info->ifi_index]) & IFF_LOWER_UP && carries_default[info->ifi_index]) carrier_changed = 1;
    link_flags[info->ifi_index] = flags;
}

// Marks the output link of a main-table IPv4 default route (a single-path one: enough for the
// benchmarks' uplink) in `carries_default`; returns whether the route is flagged linkdown.
static int note_default_route(const struct nlmsghdr *header) {
    const struct rtmsg *route = NLMSG_DATA(header);
    if (route->rtm_family != AF_INET || route->rtm_dst_len != 0 || route->rtm_table != RT_TABLE_MAIN) return 0;
    int left = (int)RTM_PAYLOAD(header);
    for (const struct rtattr *a = RTM_RTA(route); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
        int oif;
        if (a->rta_type != RTA_OIF) continue;
        memcpy(&oif, RTA_DATA(a), sizeof oif);
        if (oif > 0 && oif < LINK_SLOTS) carries_default[oif] = 1;
    }
    return (route->rtm_flags & RTNH_F_LINKDOWN) != 0;
}

static void read_messages(const char *buffer, ssize_t length) {
    for (const struct nlmsghdr *h = (const void *)buffer; NLMSG_OK(h, length); h = NLMSG_NEXT(h, length)) {
        if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK) note_link(h);
        if (reread && h->nlmsg_type == RTM_NEWROUTE) note_default_route(h);
    }
}

// Sends the dump `request` and reads its reply to NLMSG_DONE, adding up what `each` returns for
// the messages of type `type`; -1 when sending or reading failed or the kernel refused.
static int dump(int fd, const struct nlmsghdr *request, uint16_t type, int (*each)(const struct nlmsghdr *)) {
    if (send(fd, request, request->nlmsg_len, 0) < 0) return -1;
    static char buffer[65536];
    int sum = 0;
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n < 0) return -1;
        for (const struct nlmsghdr *h = (const void *)buffer; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != request->nlmsg_seq) continue;
            if (h->nlmsg_type == NLMSG_DONE) return sum;
            if (h->nlmsg_type == NLMSG_ERROR) return -1;
            if (h->nlmsg_type == type) sum += each(h);
        }
    }
}

static int note_dumped_link(const struct nlmsghdr *header) {
    note_link(header);
    return 0;
}

// Reads the link table once (RTM_GETLINK dump) so that the first answer knows the carriers.
static int dump_links(int fd) {
    struct {
        struct nlmsghdr header;
        struct ifinfomsg info;
    } request = {
        .header = {.nlmsg_len = sizeof request, .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1},
        .info = {.ifi_family = AF_UNSPEC},
    };
    return dump(fd, &request.header, RTM_NEWLINK, note_dumped_link);
}

// With --reread: the IPv4 default routes of the main table, by a dump that names the table
// (the socket has NETLINK_GET_STRICT_CHK, so the kernel applies it); how many are flagged
// linkdown, or -1 when the dump failed.
static int linkdown_default_routes(int fd, uint32_t sequence) {
    struct {
        struct nlmsghdr header;
        struct rtmsg route;
        struct rtattr attribute;
        uint32_t table;
    } request = {
        .header = {.nlmsg_len = sizeof request, .nlmsg_type = RTM_GETROUTE, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = sequence},
        .route = {.rtm_family = AF_INET, .rtm_table = RT_TABLE_MAIN},
        .attribute = {.rta_len = RTA_LENGTH(sizeof(uint32_t)), .rta_type = RTA_TABLE},
        .table = RT_TABLE_MAIN,
    };
    return dump(fd, &request.header, RTM_NEWROUTE, note_default_route);
}

static struct answer lookup(int fd, struct in_addr destination, uint32_t sequence) {
    struct {
        struct nlmsghdr header;
        struct rtmsg route;
        struct rtattr attribute;
        struct in_addr address;
    } request = {
        .header = {.nlmsg_len = sizeof request, .nlmsg_type = RTM_GETROUTE, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = sequence},
        .route = {.rtm_family = AF_INET, .rtm_dst_len = 32},
        .attribute = {.rta_len = RTA_LENGTH(sizeof(struct in_addr)), .rta_type = RTA_DST},
        .address = destination,
    };
    struct answer answer = {.error = EIO};
    if (send(fd, &request, sizeof request, 0) < 0) return answer;
    char buffer[4096];
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    for (const struct nlmsghdr *h = (const void *)buffer; n > 0 && NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_seq != sequence) continue;
        if (h->nlmsg_type == NLMSG_ERROR) {
            answer.error = -((const struct nlmsgerr *)NLMSG_DATA(h))->error;
            return answer;
        }
        if (h->nlmsg_type != RTM_NEWROUTE) continue;
        answer.error = 0;
        const struct rtmsg *route = NLMSG_DATA(h);
        int left = (int)RTM_PAYLOAD(h);
        for (const struct rtattr *a = RTM_RTA(route); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
            if (a->rta_type == RTA_OIF) memcpy(&answer.oif, RTA_DATA(a), sizeof answer.oif);
            if (a->rta_type == RTA_GATEWAY) memcpy(&answer.gateway, RTA_DATA(a), sizeof answer.gateway);
        }
        unsigned flags = answer.oif > 0 && answer.oif < LINK_SLOTS ? link_flags[answer.oif] : 0;
        answer.link_ready = (flags & IFF_UP) && (flags & IFF_LOWER_UP);
        return answer;
    }
    return answer;
}

int main(int argc, char **argv) {
    struct in_addr destination;
    reread = argc == 3 && strcmp(argv[1], "--reread") == 0;
    if (argc != 2 + reread || inet_pton(AF_INET, argv[argc - 1], &destination) != 1) {
        fprintf(stderr, "usage: raw_reachability [--reread] IPV4_ADDRESS\n");
        return 2;
    }
    int events = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    int requests = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    struct sockaddr_nl groups = {.nl_family = AF_NETLINK,
                                 .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
                                              RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE};
    if (events < 0 || requests < 0 || bind(events, (struct sockaddr *)&groups, sizeof groups) < 0 || dump_links(requests) < 0) {
        perror("raw_reachability: netlink");
        return 1;
    }
    int strict = 1;
    if (reread && setsockopt(requests, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &strict, sizeof strict) < 0) {
        perror("raw_reachability: NETLINK_GET_STRICT_CHK");
        return 1;
    }
    uint32_t sequence = 2;
    struct answer current = lookup(requests, destination, sequence++);
    if (reread) current.linkdown_defaults = linkdown_default_routes(requests, sequence++);
    printf("READY\n");
    fflush(stdout);
    static char buffer[65536];
    for (;;) {
        ssize_t n = recv(events, buffer, sizeof buffer, 0);
        if (n < 0) {
            if (errno == ENOBUFS) dump_links(requests);  // overflow: read the links again
            continue;
        }
        read_messages(buffer, n);
        while ((n = recv(events, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) read_messages(buffer, n);
        int linkdown = current.linkdown_defaults;
        if (reread && carrier_changed) linkdown = linkdown_default_routes(requests, sequence++);
        carrier_changed = 0;
        struct answer next = lookup(requests, destination, sequence++);
        next.linkdown_defaults = linkdown;
        if (memcmp(&next, &current, sizeof next) != 0) {
            current = next;
            if (write(STDOUT_FILENO, "CHANGED\n", 8) != 8) return 1;
        }
    }
}
