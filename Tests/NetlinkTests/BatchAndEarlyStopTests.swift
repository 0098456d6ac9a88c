import Glibc
@testable import Netlink
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
               "route add default via 10.10.0.252 table 510", "route add default via 10.10.0.251 metric 50",
               // Tables 511 and 767 share the local table's bucket (id modulo 256), dumped after the
               // main table's; the rules that use them name them.
               "route add default via 10.10.0.249 table 511", "route add default via 10.10.0.248 table 767",
               "rule add from 192.0.2.77 lookup 511 priority 1100", "rule add fwmark 9 lookup 767 priority 1101"])
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let everything = Set(try connection.routes(.all).filter(\.isDefault).filter { $0.table != .local })
        #expect(everything.count >= 7)
        for _ in 0..<3 {  // each early stop abandons its socket; the next dump opens another
            #expect(Set(try connection.defaultRoutes()) == everything)
        }
        #expect(try connection.lookupRoute(to: IPAddress("11.0.0.1")!).route?.gateway == IPAddress("10.10.0.254"))
        let main = try connection.routes(RouteFilter(family: .ipv4, table: .main, defaultOnly: true))
        #expect(Set(main) == everything.filter { $0.family == .ipv4 && $0.table == .main })
    }

    /// An IPv4 dump stopped before its end leaves with its socket (closing it is the only way
    /// to end a netlink dump), and the next dump opens another; the sockets answer the next
    /// requests correctly, and lookups keep theirs.
    @Test func aStoppedDumpLeavesWithItsSocket() throws {
        let ns = try TestNamespace("keep")
        defer { ns.delete() }
        try buildTopology(ns)
        let namespace = try NetworkNamespace.named(ns.name)
        nonisolated(unsafe) let socket = try namespace.perform { () throws(NetlinkError) in try RequestSocket(namespace: namespace) }
        let veth0 = try #require(try NetlinkConnection(namespace: namespace).links().first { $0.name == "veth0" }).index
        func defaults(_ filter: RouteFilter) throws -> [Route] {
            var found: [Route] = []
            try socket.forEachDefaultRoute(family: .ipv4, filter: filter) { found.append($0) }
            return found
        }
        func gatewayOf(_ address: String) throws -> IPAddress? {
            try socket.lookupRoutes(to: [IPAddress(address)!], fibMatch: false).first?.route?.gateway
        }
        let byLink = RouteFilter(family: .ipv4, outputLinkIndex: veth0, defaultOnly: true)
        let main = RouteFilter(family: .ipv4, table: .main, defaultOnly: true)
        // A main table that fills more than a datagram after its default route.
        try ns.batch((0..<3000).map { "route add 11.\($0 / 256).\($0 % 256).0/24 via 10.10.0.254" })
        for round in 1...3 {
            #expect(try defaults(byLink).map(\.gateway) == [IPAddress("10.10.0.254")])
            #expect(try defaults(main).map(\.gateway) == [IPAddress("10.10.0.254")])
            #expect(socket.dumpSocketsOpened == 2 * round, "a dump still running leaves with its socket")
            #expect(try gatewayOf("11.0.0.1") == IPAddress("10.10.0.254"))
            #expect(try gatewayOf("192.0.2.9") == IPAddress("10.40.0.254"))
        }
    }

    /// A dump the kernel refuses (a table that does not exist: a flip's re-read of a table that
    /// went away meanwhile) is reported as the kernel's error, and the next dump gets its own
    /// answer.
    @Test(.timeLimit(.minutes(1))) func aRefusedDumpLeavesTheNextOneItsAnswer() throws {
        let ns = try TestNamespace("refused")
        defer { ns.delete() }
        try buildTopology(ns)
        let namespace = try NetworkNamespace.named(ns.name)
        nonisolated(unsafe) let socket = try namespace.perform { () throws(NetlinkError) in try RequestSocket(namespace: namespace) }
        let missing = RouteFilter(family: .ipv4, table: RouteTable(rawValue: 4242), defaultOnly: true)
        let main = RouteFilter(family: .ipv4, table: .main, defaultOnly: true)
        for _ in 0..<3 {
            let error = #expect(throws: NetlinkError.self) {
                try socket.forEachDefaultRoute(family: .ipv4, filter: missing) { _ in }
            }
            #expect(error?.systemErrno == ENOENT)
            var found: [Route] = []
            try socket.forEachDefaultRoute(family: .ipv4, filter: main) { found.append($0) }
            #expect(found.map(\.gateway) == [IPAddress("10.10.0.254")])
        }
    }

    /// A link's default routes in one table (what a carrier change re-reads) are read like the
    /// table's: the IPv4 request names only the table and the dump stops at the table's first
    /// other route, however many routes of other links follow, where a request naming the link
    /// made the kernel walk the whole table for it (a full table through another link: 70–135
    /// ms per carrier change of the uplink). Each dump here stops in a table too large for its
    /// datagram, so each leaves its socket behind; the answers equal `ip route show`'s.
    @Test func aLinksDefaultRoutesStopAtTheTablesFirstOtherRoute() throws {
        let ns = try TestNamespace("linkstop")
        defer { ns.delete() }
        try buildTopology(ns)
        // 3 000 routes through dum0 in the main table and in table 100, after default routes
        // through veth0 (main) and br0 (table 100), two each.
        try ns.batch((0..<3000).flatMap { ["route add 11.\($0 / 256).\($0 % 256).0/24 via 10.40.0.254",
                                            "route add 12.\($0 / 256).\($0 % 256).0/24 via 10.40.0.254 table 100"] }
            + ["route add default via 10.10.0.250 dev veth0 metric 300",
               "route add default via 10.20.0.250 dev br0 table 100 metric 5"])
        let namespace = try NetworkNamespace.named(ns.name)
        nonisolated(unsafe) let socket = try namespace.perform { () throws(NetlinkError) in try RequestSocket(namespace: namespace) }
        let links = try NetlinkConnection(namespace: namespace).links()
        func index(_ name: String) throws -> Int32 { try #require(links.first { $0.name == name }).index }
        let cases: [(table: UInt32, link: String)] = [(254, "veth0"), (254, "dum0"), (100, "br0"), (100, "veth0"),
                                                      (254, "veth0")]
        for (number, (table, link)) in cases.enumerated() {
            var found: [Route] = []
            let filter = RouteFilter(family: .ipv4, table: RouteTable(rawValue: table), outputLinkIndex: try index(link),
                                     defaultOnly: true)
            try socket.forEachDefaultRoute(family: .ipv4, filter: filter) { found.append($0) }
            let kernel = try ns.ipJSON("-4", "route", "show", "table", "\(table)", "default", "dev", link)
            #expect(Set(found.compactMap { $0.gateway?.description }) == Set(kernel.compactMap { $0["gateway"] as? String }),
                    "table \(table) dev \(link)")
            #expect(found.allSatisfy { $0.isDefault && $0.table.rawValue == table && $0.uses(linkIndex: filter.outputLinkIndex!) })
            #expect(socket.dumpSocketsOpened == number + 1, "the dump of table \(table) for \(link) stopped at its first other route")
        }
        // The next request on the socket gets its own answer (no rule sends 12.0.0.1 to table 100).
        #expect(try socket.lookupRoutes(to: [IPAddress("12.0.0.1")!], fibMatch: false).first?.route?.gateway
                == IPAddress("10.10.0.254"))
    }

    @Test func fibEntriesEqualIPRouteGetFibmatch() throws {
        let ns = try TestNamespace("fibmatch")
        defer { ns.delete() }
        try buildTopology(ns)
        try ns.batch(["route add 10.77.0.0/16 nexthop via 10.10.0.250 dev veth0 nexthop via 10.40.0.250 dev dum0"])
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let destinations = ["10.10.0.7", "192.0.2.55", "198.51.100.1", "203.0.113.9", "10.77.1.1", "8.8.8.8",
                            "2001:db8:10::7", "2001:db8:99::1", "2001:db8:bad::1", "10.10.0.1"].map { IPAddress($0)! }
        let entries = try connection.lookupFIBEntries(to: destinations)
        for (destination, result) in zip(destinations, entries) {
            let flag = destination.family == .ipv4 ? "-4" : "-6"
            let reply = try? ns.ipJSON(flag, "route", "get", "fibmatch", destination.description).first
            guard let reply else {
                #expect(result.route == nil, "\(destination): \(result)")
                continue
            }
            let route = try #require(result.route, "\(destination)")
            let prefix = route.destination.prefixLength == route.family.bitWidth ? route.destination.address.description
                : route.isDefault ? "default" : route.destination.description
            #expect(prefix == reply["dst"] as? String, "\(destination)")
            #expect(route.table.description == (reply["table"] as? String ?? "main"), "\(destination)")
            let hops = (reply["nexthops"] as? [[String: Any]])?.count ?? 1
            #expect(route.nexthops.count == hops, "\(destination)")
        }
        let before = try connection.policyRules(family: .ipv4)
        #expect(!before.suppressesByInterfaceGroup)
        #expect(try connection.policyRules(family: .ipv4) == before)
        try ns.batch(["rule add lookup main suppress_ifgroup 5 priority 500"])
        let after = try connection.policyRules(family: .ipv4)
        #expect(after.suppressesByInterfaceGroup && after.fingerprint != before.fingerprint)
        #expect(try connection.policyRules(family: .ipv6).suppressesByInterfaceGroup == false)
    }
}
