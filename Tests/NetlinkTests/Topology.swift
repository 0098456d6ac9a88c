import NetnsTestSupport

/// A namespace with one link of each common sort, IPv4 and IPv6 addresses, and routes of every
/// type, built with `ip` inside the namespace.
///
/// veth0 <-> veth1 (veth1 is a port of br0), mv0 (macvlan on veth0), tun0 (tun, point-to-point),
/// dum0 (a veth whose peer dum0p is up: this kernel has no dummy driver); default routes in main (v4 via veth0, v6 via dum0) and in table 100; blackhole,
/// unreachable, prohibit and throw routes; a rule that sends 203.0.113.0/24 to table 100.
func buildTopology(_ ns: TestNamespace) throws {
    try ns.batch([
        "link add veth0 type veth peer name veth1",
        "link add br0 type bridge",
        "link set veth1 master br0",
        "link add mv0 link veth0 type macvlan mode bridge",
        "tuntap add dev tun0 mode tun",
        "link add dum0 type veth peer name dum0p", "link set dum0p up",
        "link set veth0 up", "link set veth1 up", "link set br0 up", "link set mv0 up", "link set tun0 up", "link set dum0 up",
        "address add 10.10.0.1/24 dev veth0",
        "address add 2001:db8:10::1/64 dev veth0 nodad",
        "address add 10.20.0.1/24 dev br0",
        "address add 10.30.0.1/24 dev mv0",
        "address add 10.40.0.1/24 dev dum0",
        "address add 2001:db8:40::1/64 dev dum0 nodad",
        "address add 10.50.0.1 peer 10.50.0.2/32 dev tun0",
        "route add default via 10.10.0.254 dev veth0",
        "route add default via 2001:db8:40::fe dev dum0",
        "route add 192.0.2.0/24 via 10.40.0.254",
        "route add 2001:db8:99::/48 via 2001:db8:10::fe dev veth0 metric 512",
        "route add blackhole 198.51.100.0/24",
        "route add unreachable 198.51.101.0/24",
        "route add prohibit 198.51.102.0/24",
        "route add throw 198.51.103.0/24",
        "route add blackhole 2001:db8:bad::/48",
        "route add default via 10.20.0.254 dev br0 table 100",
        "route add 203.0.113.0/24 via 10.20.0.253 dev br0 table 100",
        "rule add to 203.0.113.0/24 lookup 100 priority 1000",
    ])
}
