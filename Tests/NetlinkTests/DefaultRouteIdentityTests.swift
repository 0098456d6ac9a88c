import Netlink
import NetnsTestSupport
import Testing

/// Default routes kept as the kernel keeps them apart: IPv4 routes that differ only in what
/// `ip route append` may vary, an IPv6 append that joins a multipath route, and tables that a
/// dump of every table does not read.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct DefaultRouteIdentityTests {
    /// A veth with an IPv4 and an IPv6 subnet, up on both ends.
    private func uplinkNamespace(_ name: String) throws -> TestNamespace {
        let ns = try TestNamespace(name)
        try ns.batch(["link add r0 type veth peer name r0p", "link set r0 up", "link set r0p up",
                      "address add 10.10.0.1/24 dev r0", "address add 2001:db8:10::1/64 dev r0 nodad",
                      "address add 2001:db8:12::1/64 dev r0 nodad"])
        return ns
    }

    private func kernelDefaultRoutes(_ ns: TestNamespace) throws -> Set<Route> {
        Set(try NetlinkConnection(namespace: .named(ns.name)).defaultRoutes())
    }

    @Test func ipv4RoutesThatDifferInProtocolOrSourceAreKeptApart() throws {
        let ns = try uplinkNamespace("rtid1")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let recorder = EventRecorder(subscription)
        try ns.ip("route", "add", "default", "via", "10.10.0.254", "metric", "120")
        try ns.ip("route", "append", "default", "via", "10.10.0.254", "metric", "120", "proto", "static")
        try ns.ip("route", "append", "default", "via", "10.10.0.254", "metric", "120", "src", "10.10.0.1")
        #expect(eventually { Set(subscription.state.defaultRoutes.values) == (try? kernelDefaultRoutes(ns)) })
        #expect(subscription.state.defaultRoutes.count == 3)
        #expect(!recorder.all.contains { if case .changed? = $0.routeChange { true } else { false } },
                "each append is a route of its own, not a change of the first")
        try ns.ip("route", "del", "default", "via", "10.10.0.254", "metric", "120", "proto", "static")
        #expect(recorder.waitFor { if case .removed(let route)? = $0.routeChange { route.routeProtocol == .static } else { false } })
        #expect(eventually { Set(subscription.state.defaultRoutes.values) == (try? kernelDefaultRoutes(ns)) })
        #expect(subscription.state.defaultRoutes.values.map(\.routeProtocol).sorted { $0.rawValue < $1.rawValue } == [.boot, .boot])
    }

    @Test func ipv4RoutesThatDifferInTheirNexthopsAreKeptApart() throws {
        let ns = try uplinkNamespace("rtid4")
        defer { ns.delete() }
        try ns.batch(["link add r1 type veth peer name r1p", "link set r1 up", "link set r1p up",
                      "address add 10.11.0.1/24 dev r1"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        try ns.ip("route", "add", "default", "via", "10.10.0.254", "metric", "100")
        try ns.ip("route", "append", "default", "via", "10.10.0.254", "dev", "r0", "metric", "100", "onlink")
        try ns.ip("route", "append", "default", "metric", "100", "nexthop", "via", "10.10.0.254",
                  "nexthop", "via", "10.11.0.254")
        #expect(eventually { Set(subscription.state.defaultRoutes.values) == (try? kernelDefaultRoutes(ns)) },
                "\(subscription.state.defaultRoutes.values)")
        #expect(subscription.state.defaultRoutes.count == 3)
        // Deleting one leaves the others, as in the kernel.
        try ns.ip("route", "del", "default", "via", "10.10.0.254", "dev", "r0", "metric", "100", "onlink")
        #expect(eventually { Set(subscription.state.defaultRoutes.values) == (try? kernelDefaultRoutes(ns)) })
        #expect(subscription.state.defaultRoutes.count == 2)
    }

    @Test func anIPv6AppendChangesTheMultipathRouteItJoins() throws {
        let ns = try uplinkNamespace("rtid2")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        try ns.ip("-6", "route", "add", "default", "via", "2001:db8:10::fe", "metric", "500")
        #expect(eventually { subscription.state.defaultRoutes.values.contains { $0.family == .ipv6 } })
        let recorder = EventRecorder(subscription)
        try ns.ip("-6", "route", "append", "default", "via", "2001:db8:12::fe", "metric", "500")
        #expect(recorder.waitFor { if case .changed? = $0.routeChange { true } else { false } })
        #expect(eventually { Set(subscription.state.defaultRoutes.values) == (try? kernelDefaultRoutes(ns)) })
        let routes = subscription.state.defaultRoutes.values.filter { $0.family == .ipv6 }
        #expect(routes.count == 1 && routes.first?.nexthops.count == 2)
        // One change, and no route of the new hop's own that the re-read then removes. Only
        // default routes count: the links' IPv6 link-local addresses end their duplicate
        // address detection a second or two after the links came up, and bring a local route
        // each, which a slow run records too.
        let changes = recorder.all.compactMap(\.routeChange).filter(\.route.isDefault)
        #expect(changes.count == 1, "\(changes)")
    }

    @Test func aResynchronizationKeepsDefaultRoutesOfTablesADumpDoesNotRead() throws {
        let ns = try uplinkNamespace("rtid3")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0 up", "link set dum0p up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name), options: SubscriptionOptions(receiveBufferSize: 1))
        let recorder = EventRecorder(subscription)
        // Tables of the local table's bucket that no rule names, told by their messages.
        try ns.ip("route", "add", "default", "via", "10.10.0.79", "table", "767")
        try ns.ip("route", "add", "unreachable", "default", "table", "local", "metric", "9")
        #expect(eventually { subscription.state.defaultRoutes.count == 2 })
        let kept = Set(subscription.state.defaultRoutes.values)
        // Overflow the buffer while the subscription's thread is held.
        let hold = SubscriptionHold(subscription, for: .milliseconds(500)) { $0.addressChange != nil }
        defer { hold.cancel() }
        var burst: [String] = []
        for i in 0..<1000 { burst.append("address add 10.\(100 + i / 250).\(i % 250).1/32 dev dum0") }
        try ns.batch(burst)
        #expect(recorder.waitFor { $0 == .resynchronized(.overflow) })
        #expect(Set(subscription.state.defaultRoutes.values) == kept)
        #expect(!recorder.all.contains { if case .removed? = $0.routeChange { true } else { false } })
        // Their deletions are told.
        try ns.ip("route", "del", "default", "via", "10.10.0.79", "table", "767")
        try ns.ip("route", "del", "unreachable", "default", "table", "local", "metric", "9")
        #expect(eventually { subscription.state.defaultRoutes.isEmpty })
        #expect(eventually { recorder.all.filter { if case .removed? = $0.routeChange { true } else { false } }.count == 2 })
    }
}
