import Netlink
import NetnsTestSupport
import Testing

/// The kernel's order among IPv4 default routes of one metric, which `ip route append` and
/// `prepend` set, and the halves of the address space that VPNs route instead of a default
/// route: a subscription keeps both as a fresh dump reads them, through a tour of changes.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct DefaultRouteOrderTests {
    @Test func aSubscriptionKeepsTheKernelsOrderAndTheHalvesAsADumpReadsThem() throws {
        let ns = try TestNamespace("rtorder")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + ["address add 2001:db8:1::1/64 dev va nodad",
                                                 "address add 2001:db8:2::1/64 dev wa nodad",
                                                 "route add 10.9.0.0/16 via 10.1.0.2"])
        let steps: [(String, [String])] = [
            ("a default route", ["route add default via 10.2.0.2 dev wa metric 100"]),
            ("one appended after it", ["route append default via 10.1.0.2 dev va metric 100"]),
            ("one prepended before both", ["route prepend default via 10.1.0.3 dev va metric 100"]),
            ("the middle one deleted", ["route del default via 10.2.0.2 dev wa metric 100"]),
            ("the first one replaced in place", ["route replace default via 10.1.0.4 dev va metric 100"]),
            ("another metric", ["route add default via 10.2.0.2 dev wa metric 50"]),
            ("the lower IPv4 half", ["route add 0.0.0.0/1 via 10.2.0.2 dev wa"]),
            ("the upper IPv4 half", ["route add 128.0.0.0/1 via 10.2.0.2 dev wa"]),
            ("a route inside the upper half", ["route add 128.66.0.0/16 via 10.2.0.2 dev wa"]),
            ("the IPv6 halves", ["route add ::/1 via 2001:db8:2::2 dev wa", "route add 8000::/1 via 2001:db8:2::2 dev wa"]),
            ("wa down", ["link set wa down"]),
            ("the halves again", ["link set wa up", "route add 0.0.0.0/1 via 10.2.0.2 dev wa",
                                  "route add 128.0.0.0/1 via 10.2.0.2 dev wa"]),
            ("va deleted", ["link del va"]),
        ]
        let subscription = try expectAgreementThroughTour(in: ns, steps: steps, view: { $0.defaultRoutes })
        let halves = subscription.state.defaultRoutes.values.filter { !$0.isDefault }.map(\.destination.description)
        #expect(Set(halves) == ["0.0.0.0/1", "128.0.0.0/1"], "\(halves)")
    }

    @Test func theDumpNumbersTiesInTheKernelsOrder() throws {
        let ns = try TestNamespace("rtorder2")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + [
            "route add default via 10.2.0.2 dev wa metric 100", "route append default via 10.1.0.2 dev va metric 100",
            "route prepend default via 10.1.0.3 dev va metric 100",
        ])
        let routes = try NetlinkConnection(namespace: .named(ns.name)).defaultRoutes()
        let order = routes.sorted { $0.tieOrder < $1.tieOrder }.map { $0.gateway?.description ?? "" }
        #expect(order == ["10.1.0.3", "10.2.0.2", "10.1.0.2"])
        #expect(try ns.ip("-4", "route", "show", "default").split(separator: "\n").map { String($0.split(separator: " ")[2]) } == order)
    }

    /// An upper half that was there before the subscription, alone (the start-up read stops
    /// before it): the lower half's message brings a re-read that finds it.
    @Test func anUpperHalfThatCameFirstIsFoundWithTheLowerOne() throws {
        let ns = try TestNamespace("rtorder4")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + ["route add default via 10.1.0.2 dev va",
                                                 "route add 128.0.0.0/1 via 10.2.0.2 dev wa",
                                                 "route add 192.0.2.0/24 via 10.1.0.2 dev va"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        #expect(!subscription.state.defaultRoutes.values.contains { $0.destination.description == "128.0.0.0/1" })
        try ns.ip("route", "add", "0.0.0.0/1", "via", "10.2.0.2", "dev", "wa")
        #expect(eventually { Set(subscription.state.defaultRoutes.values.map(\.destination.description)) == ["0.0.0.0/0", "0.0.0.0/1", "128.0.0.0/1"] },
                "\(subscription.state.defaultRoutes.values.map(\.destination))")
    }

    /// With the lower half in the main table, the start-up read goes on to the upper half,
    /// past every route of a lower key, and stops after it.
    @Test func theUpperHalfIsReadPastTheRoutesBeforeIt() throws {
        let ns = try TestNamespace("rtorder3")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + ["route add default via 10.1.0.2 dev va",
                                                 "route add 0.0.0.0/1 via 10.2.0.2 dev wa",
                                                 "route add 128.0.0.0/1 via 10.2.0.2 dev wa",
                                                 "route add 128.0.0.0/8 via 10.2.0.2 dev wa"]
                     + (0..<200).map { "route add 10.\($0 / 100 + 20).\($0 % 100).0/24 via 10.1.0.2" })
        let routes = try NetlinkConnection(namespace: .named(ns.name)).defaultRoutes()
        #expect(Set(routes.map(\.destination.description)) == ["0.0.0.0/0", "0.0.0.0/1", "128.0.0.0/1"],
                "\(routes.map(\.destination))")
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        #expect(Set(subscription.state.defaultRoutes.values) == Set(routes))
    }
}
