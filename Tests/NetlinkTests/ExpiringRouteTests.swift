import Netlink
import NetnsTestSupport
import Testing

/// IPv6 default routes that expire (a router advertisement's lifetime): the kernel's lookups pass
/// an expired route over at once, but delete it, with a message, only at its next garbage
/// collection (`net.ipv6.route.gc_interval`, 30 s). The library stops keeping it at its expiry.
@Suite("Expiring default routes", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ExpiringRouteTests {
    @Test func anExpiredDefaultRouteIsNoLongerKeptOrDumped() throws {
        let ns = try TestNamespace("expire")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up"])
        try ns.ip("-6", "route", "add", "default", "via", "fe80::1", "dev", "va", "metric", "1024", "expires", "8", "proto", "ra")
        try ns.ip("-6", "route", "add", "default", "via", "fe80::2", "dev", "va", "metric", "2048", "proto", "static")
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let expiring = IPAddress("fe80::1")!
        let removed = Locked<[Route]>([])
        let observation = subscription.observe { event in
            if case .route(.removed(let route)) = event { removed.withLock { $0.append(route) } }
        }
        defer { observation.cancel() }
        #expect(subscription.state.defaultRoutes.values.contains { $0.gateway == expiring })
        #expect(try connection.defaultRoutes().contains { $0.gateway == expiring })
        // After its expiry (8 s, for a subscription that starts slowly on a busy machine), and
        // before the kernel's garbage collection deletes it: the collection runs 30 s
        // (`gc_interval`) after the route was added, and the wait ends before.
        #expect(eventually(20) { removed.withLock { $0.contains { $0.gateway == expiring } } })
        #expect(!subscription.state.defaultRoutes.values.contains { $0.gateway == expiring })
        #expect(subscription.state.defaultRoutes.values.contains { $0.gateway == IPAddress("fe80::2")! })
        #expect(try !connection.defaultRoutes().contains { $0.gateway == expiring })
        // The kernel still lists it, expired, and routes by the other one.
        let listed = try ns.ip("-6", "route", "show", "default")
        #expect(listed.contains("fe80::1"), "the kernel has not collected it yet: \(listed)")
        #expect(try ns.ipJSON("-6", "route", "get", "2001:db8::7").first?["gateway"] as? String == "fe80::2")
    }
}
