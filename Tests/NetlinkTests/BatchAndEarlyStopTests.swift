import Netlink
import NetnsTestSupport
import Testing

@Suite("Batched lookups and early-stopping default-route dumps", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct BatchAndEarlyStopTests {
    @Test func batchedLookupsAgreeWithSingleLookups() throws {
        let ns = try TestNamespace("batch")
        defer { ns.delete() }
        try buildTopology(ns)
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let special = ["10.10.0.7", "10.10.0.1", "192.0.2.55", "198.51.100.1", "198.51.101.1", "198.51.102.1",
                       "198.51.103.1", "203.0.113.9", "2001:db8:10::7", "2001:db8:bad::1", "127.0.0.1", "::1"]
        // More destinations than one window of requests, families and outcomes interleaved.
        let destinations = (0..<300).map { IPAddress(special[$0 % special.count])! }
            + (0..<200).map { IPAddress("198.18.\($0 / 250).\($0 % 250 + 1)")! }
        let batched = try connection.lookupRoutes(to: destinations)
        #expect(batched.count == destinations.count)
        // IPv6 answers carry cache details (last use, expiry) that differ between two asks.
        func essence(_ result: RouteLookupResult) -> String {
            guard case .route(let r) = result else { return result.description }
            return "\(r.type) \(r.table) \(r.destination) \(r.gateway?.description ?? "-") \(r.outputLinkIndex ?? 0) \(r.preferredSource?.description ?? "-")"
        }
        for (destination, result) in zip(destinations, batched) {
            let single = try connection.lookupRoute(to: destination)
            #expect(essence(result) == essence(single), "\(destination): \(essence(result)) vs \(essence(single))")
        }
        #expect(try connection.lookupRoutes(to: []).isEmpty)
    }

    @Test func earlyStoppingDumpFindsEveryDefaultRoute() throws {
        let ns = try TestNamespace("early")
        defer { ns.delete() }
        try buildTopology(ns)
        // Many main-table routes after the defaults, routes that share the default's key
        // (0.0.0.0/8), and defaults in other tables on either side of the main table's bucket.
        try ns.batch((0..<3000).map { "route add 11.\($0 / 256).\($0 % 256).0/24 via 10.10.0.254" }
            + ["route add 0.0.0.0/8 via 10.10.0.254", "route add default via 10.10.0.253 table 7",
               "route add default via 10.10.0.252 table 510", "route add default via 10.10.0.251 metric 50"])
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let everything = Set(try connection.routes(.all).filter(\.isDefault).filter { $0.table != .local })
        #expect(everything.count >= 5)
        for _ in 0..<3 {  // each early stop abandons its socket; the next dump opens another
            #expect(Set(try connection.defaultRoutes()) == everything)
        }
        #expect(try connection.lookupRoute(to: IPAddress("11.0.0.1")!).route?.gateway == IPAddress("10.10.0.254"))
        let main = try connection.routes(RouteFilter(family: .ipv4, table: .main, defaultOnly: true))
        #expect(Set(main) == everything.filter { $0.family == .ipv4 && $0.table == .main })
    }
}
