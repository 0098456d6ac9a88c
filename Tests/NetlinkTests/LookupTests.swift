import Netlink
import NetnsTestSupport
import Testing

@Suite("Route lookups agree with ip route get", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LookupTests {
    /// What `ip route get` says, in the terms of `RouteLookupResult`.
    func ipRouteGet(_ ns: TestNamespace, _ destination: String) throws -> String {
        let result = ns.ipStatus("-j", "route", "get", destination)
        if result.status != 0 {
            if result.error.contains("Invalid argument") { return "blackhole" }
            if result.error.contains("No route to host") { return "unreachable" }
            if result.error.contains("Permission denied") { return "prohibited" }
            if result.error.contains("Network is unreachable") { return "no route" }
            return "error: \(result.error)"
        }
        let entries = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as! [[String: Any]]
        let e = entries[0]
        return "\(e["type"] as? String ?? "unicast") \(e["gateway"] as? String ?? "-") \(e["dev"]!) \(e["prefsrc"] as? String ?? "-")"
    }

    func describe(_ result: RouteLookupResult, _ names: [Int32: String]) -> String {
        guard case .route(let r) = result else { return result.description }
        return "\(r.type) \(r.gateway?.description ?? "-") \(r.outputLinkIndex.flatMap { names[$0] } ?? "-") \(r.preferredSource?.description ?? "-")"
    }

    @Test(arguments: [
        "10.10.0.7", "10.10.0.1", "10.40.0.9", "192.0.2.55", "198.18.0.1", "10.50.0.2", "127.0.0.1",
        "198.51.100.1", "198.51.101.1", "198.51.102.1", "198.51.103.1", "203.0.113.9",
        "2001:db8:10::7", "2001:db8:10::1", "2001:db8:99::1", "2001:db8:bad::1", "2001:db8:ffff::1", "::1",
    ])
    func lookupMatchesIPRouteGet(destination: String) async throws {
        try await withTestNamespace("lookup") { ns in
            try buildTopology(ns)
            let connection = try NetlinkConnection(namespace: .named(ns.name))
            let names = Dictionary(uniqueKeysWithValues: try connection.links().map { ($0.index, $0.name) })
            let result = try connection.lookupRoute(to: try #require(IPAddress(destination)))
            #expect(describe(result, names) == (try ipRouteGet(ns, destination)), "\(destination)")
        }
    }

    @Test func typedReasonsAndPolicyRouting() async throws {
        try await withTestNamespace("reasons") { ns in
            try buildTopology(ns)
            let connection = try NetlinkConnection(namespace: .named(ns.name))
            #expect(try connection.lookupRoute(to: IPAddress("198.51.100.1")!) == .blackhole)
            #expect(try connection.lookupRoute(to: IPAddress("198.51.101.1")!) == .unreachable)
            #expect(try connection.lookupRoute(to: IPAddress("198.51.102.1")!) == .prohibited)
            #expect(try connection.lookupRoute(to: IPAddress("2001:db8:bad::1")!) == .blackhole)
            // A throw route ends the lookup in its table (the main table's default route does not
            // answer); the next rule's table is empty.
            #expect(try connection.lookupRoute(to: IPAddress("198.51.103.1")!) == .noRoute)
            try ns.ip("-6", "route", "del", "default")
            #expect(try connection.lookupRoute(to: IPAddress("2001:db8:ffff::1")!) == .noRoute)
            // The rule steers 203.0.113.0/24 to table 100, which the answer names.
            let steered = try #require(try connection.lookupRoute(to: IPAddress("203.0.113.9")!).route)
            #expect(steered.table == RouteTable(rawValue: 100))
            #expect(steered.gateway == IPAddress("10.20.0.253"))
            let local = try #require(try connection.lookupRoute(to: IPAddress("10.10.0.1")!).route)
            #expect(local.type == .local && local.table == .local)
            // A fixed output link and source take part in the lookup, as with `ip route get ... oif`.
            let viaDummy = try connection.lookupRoute(to: IPAddress("192.0.2.1")!, outputLinkIndex: try ns.index(of: "dum0"))
            #expect(viaDummy.route?.outputLinkIndex == (try ns.index(of: "dum0")))
            #expect(throws: NetlinkError.self) {
                try connection.lookupRoute(to: IPAddress("192.0.2.1")!, from: IPAddress("2001:db8::1")!)
            }
        }
    }
}

import Foundation
