import Netlink
import NetnsTestSupport
import Testing

/// The kernel's order among IPv4 default routes of one metric, which `ip route append` and
/// `prepend` set: a subscription keeps it as a fresh dump reads it, through a tour of changes.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct DefaultRouteOrderTests {
    @Test func aSubscriptionKeepsTheKernelsOrderAsADumpReadsIt() throws {
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
            ("wa down", ["link set wa down"]),
            ("wa up, appended", ["link set wa up", "route append default via 10.2.0.2 dev wa metric 100"]),
            ("va deleted", ["link del va"]),
        ]
        try expectAgreementThroughTour(in: ns, steps: steps, view: { $0.defaultRoutes })
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
}
