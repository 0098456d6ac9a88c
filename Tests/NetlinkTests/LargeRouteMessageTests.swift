import Netlink
import NetnsTestSupport
import Testing

/// A route whose message is larger than the first datagram the kernel fills for a new socket's
/// dump (about 3.7 KiB, `NLMSG_GOODSIZE`): a multipath default route of 245 IPv4 or 150 IPv6
/// next hops. When such a route is the first message of a dump, the kernel ends the dump at
/// once with `NLMSG_DONE` and no error, unless the socket has already read a datagram of 32
/// KiB; `ip route show` shows an empty table there. Every read here is the first on a new
/// connection or subscription.
@Suite("Routes larger than a new socket's first dump datagram", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LargeRouteMessageTests {
    static let ipv4Hops = 245
    static let ipv6Hops = 150

    /// A namespace whose only routes of each family are the large defaults through `veth0`
    /// (its peer in the namespace too, so it has a carrier) and the prefix routes of its addresses.
    static func namespaceWithLargeDefaults() throws -> TestNamespace {
        let ns = try TestNamespace("bigroute")
        do {
            try ns.batch(["link set lo up", "link add veth0 type veth peer name veth1", "link set veth0 up", "link set veth1 up",
                          "address add 10.10.0.1/16 dev veth0", "address add 2001:db8:10::1/64 dev veth0 nodad"])
            func nexthops(_ count: Int, _ gateway: (Int) -> String) -> [String] {
                (1...count).flatMap { ["nexthop", "via", gateway($0), "dev", "veth0"] }
            }
            // `ip -batch` takes at most 512 words a line: one `ip` each.
            _ = try ns.exec(["ip", "route", "add", "default"] + nexthops(ipv4Hops) { "10.10.\($0 / 250 + 1).\($0 % 250 + 1)" })
            // One IPv6 request of that size is past `ip`'s limit (4 KiB): appended next hops join
            // the route, and the kernel reports them in one message.
            try ns.batch((1...ipv6Hops).map { "route append default via 2001:db8:10::\(String($0 + 1, radix: 16)) dev veth0" })
        } catch {
            ns.delete()
            throw error
        }
        return ns
    }

    static func hopCounts(_ routes: [Route]) -> [String] {
        routes.filter(\.isDefault).map { "\($0.family) \($0.nexthops.count)" }.sorted()
    }

    static let expected = ["ipv4 \(ipv4Hops)", "ipv6 \(ipv6Hops)"]

    @Test func defaultRoutesOfANewConnection() throws {
        let ns = try Self.namespaceWithLargeDefaults()
        defer { ns.delete() }
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        #expect(Self.hopCounts(try connection.defaultRoutes()) == Self.expected)
    }

    @Test func fullRouteDumpsOfNewConnections() throws {
        let ns = try Self.namespaceWithLargeDefaults()
        defer { ns.delete() }
        let all = try NetlinkConnection(namespace: .named(ns.name)).routes(.all)
        #expect(Self.hopCounts(all) == Self.expected)
        #expect(all.contains { $0.destination == IPNetwork("10.10.0.0/16") }, "the routes after the large one")
        for family in AddressFamily.allCases {
            let main = try NetlinkConnection(namespace: .named(ns.name)).routes(RouteFilter(family: family, table: .main))
            #expect(Self.hopCounts(main) == Self.expected.filter { $0.hasPrefix("\(family)") })
        }
    }

    @Test func aNewSubscriptionsState() throws {
        let ns = try Self.namespaceWithLargeDefaults()
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        #expect(Self.hopCounts(Array(subscription.state.defaultRoutes.values)) == Self.expected)
    }
}
