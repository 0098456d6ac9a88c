// libnl_lookup: the fresh route lookup as a libnl program writes it, the floor of the library's
// lookup (which builds its requests and parses its replies with libnl too). N lookups of
// ADDRESS (RTM_GETROUTE, as `ip route get`) on one libnl socket: the request built with
// nlmsg_alloc_simple / nla_put, sent with nl_send_auto (no ACK asked), the reply read with nl_recvmsgs and
// parsed into an rtnl_route by nl_msg_parse, whose table, type and first next hop are read.
//
// usage: libnl_lookup ADDRESS [N]   prints: NS ns per lookup (FOUND of N found a route),
// as ../shared/bench/peers/raw_lookup does. Build: gcc -O2 libnl_lookup.c $(pkg-config
// --cflags --libs libnl-route-3.0)
#include <arpa/inet.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct answer {
    int found;
    unsigned long sink;  // what was read, so that nothing is optimized away
};

static void read_route(struct nl_object *object, void *argument) {
    struct answer *answer = argument;
    struct rtnl_route *route = (struct rtnl_route *)object;
    answer->found++;
    answer->sink += rtnl_route_get_table(route) + rtnl_route_get_type(route);
    struct rtnl_nexthop *hop = rtnl_route_nexthop_n(route, 0);
    if (hop) {
        answer->sink += (unsigned long)rtnl_route_nh_get_ifindex(hop);
        struct nl_addr *gateway = rtnl_route_nh_get_gateway(hop);
        if (gateway) answer->sink += nl_addr_get_len(gateway);
    }
}

static int reply(struct nl_msg *message, void *argument) {
    nl_msg_parse(message, read_route, argument);
    return NL_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: libnl_lookup ADDRESS [N]\n"); return 2; }
    long n = argc > 2 ? atol(argv[2]) : 100000;
    unsigned char destination[16];
    int family = AF_INET, length = 4;
    if (inet_pton(AF_INET, argv[1], destination) != 1) {
        if (inet_pton(AF_INET6, argv[1], destination) != 1) { fprintf(stderr, "bad address\n"); return 2; }
        family = AF_INET6;
        length = 16;
    }
    struct nl_sock *socket = nl_socket_alloc();
    if (!socket || nl_connect(socket, NETLINK_ROUTE) < 0) { fprintf(stderr, "netlink\n"); return 1; }
    // One reply per request, as the library's socket asks (libnl asks for an ACK by default).
    nl_socket_disable_auto_ack(socket);
    struct answer answer = {0, 0};
    nl_socket_modify_cb(socket, NL_CB_VALID, NL_CB_CUSTOM, reply, &answer);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        struct nl_msg *message = nlmsg_alloc_simple(RTM_GETROUTE, 0);
        struct rtmsg header = {.rtm_family = family, .rtm_dst_len = length * 8};
        if (!message || nlmsg_append(message, &header, sizeof header, NLMSG_ALIGNTO) < 0
            || nla_put(message, RTA_DST, length, destination) < 0) { fprintf(stderr, "message\n"); return 1; }
        if (nl_send_auto(socket, message) < 0) { fprintf(stderr, "send\n"); return 1; }
        nlmsg_free(message);
        int rc = nl_recvmsgs_default(socket);
        if (rc < 0 && rc != -NLE_NOADDR && rc != -NLE_FAILURE) { fprintf(stderr, "receive: %s\n", nl_geterror(rc)); return 1; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
    printf("%.0f ns per lookup (%d of %ld found a route)\n", ns, answer.found, n);
    return answer.sink == 0 && answer.found > 0;  // never true; keeps the reads
}
