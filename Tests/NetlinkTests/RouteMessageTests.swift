import Foundation
@testable import Netlink
import NetnsTestSupport
import Testing

@Suite("Route messages parsed by libnl")
struct RouteMessageTests {
    /// Every field of every route, as `ip -j -d route show table all` prints it: multipath
    /// routes with their weights, metrics, protocols, scopes, preferred sources, IPv6 and its
    /// routers' preferences.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func everyFieldEqualsIPRoute() async throws {
        try await withTestNamespace("rtmsg") { ns in
            try buildTopology(ns)
            try ns.batch([
                "route add 10.77.0.0/16 proto static metric 42 nexthop via 10.10.0.250 dev veth0 weight 3 nexthop via 10.40.0.250 dev dum0 weight 256",
                "route add 10.78.0.0/16 dev veth0 scope link src 10.10.0.1 proto dhcp",
                "route add 2001:db8:77::/48 metric 7 nexthop via 2001:db8:10::fa dev veth0 weight 2 nexthop via 2001:db8:40::fa dev dum0",
                "route add 172.16.9.0/24 via 10.10.0.250 dev veth0 table 4242 tos 0x10",
                "route add 2001:db8:78::/48 via 2001:db8:10::fa dev veth0 pref high",
                "route add 2001:db8:79::/48 dev veth0 metric 9 pref low",
            ])
            let connection = try NetlinkConnection(namespace: .named(ns.name))
            let names = Dictionary(uniqueKeysWithValues: try connection.links().map { ($0.index, $0.name) })
            for family in AddressFamily.allCases {
                let expected = try ns.ipJSON(family == .ipv4 ? "-4" : "-6", "-d", "route", "show", "table", "all")
                    .map { IPRouteLine($0) }
                let actual = try connection.routes(RouteFilter(family: family)).map { IPRouteLine($0, names: names) }
                #expect(actual.sorted() == expected.sorted(), "\(family)")
            }
        }
    }

    /// A message cut anywhere, or with any single byte changed, parses to a route or to nil:
    /// it never reads past its end.
    @Test func truncatedAndCorruptedMessagesNeverOverrun() {
        let message = Self.multipathMessage()
        message.withUnsafeBytes { whole in
            #expect(Route(payload: whole) != nil)
            for length in 0..<whole.count {
                _ = Route(payload: UnsafeRawBufferPointer(rebasing: whole[..<length]))
            }
        }
        for position in 0..<message.count {
            for value: UInt8 in [0, 1, 3, 0x7f, 0xff] {
                var corrupted = message
                corrupted[position] = value
                corrupted.withUnsafeBytes { _ = Route(payload: $0) }
            }
        }
    }

    @Test func multipathWeightsAndViaGateways() throws {
        let route = try #require(Self.multipathMessage().withUnsafeBytes { Route(payload: $0) })
        #expect(route.destination == IPNetwork("10.77.0.0/16"))
        #expect(route.metric == 42)
        #expect(route.nexthops.map(\.weight) == [3, 256])
        #expect(route.nexthops.map(\.gateway) == [IPAddress("10.10.0.250"), IPAddress("fe80::1")])
        #expect(route.nexthops.map(\.linkIndex) == [2, 3])
        #expect(route.flags.isEmpty)
    }

    /// libnl's parser refuses an attribute shorter than its type (a 16-bit metric) and a family
    /// other than IPv4 and IPv6; it stops at an attribute that overruns the message, whose
    /// bytes are never read.
    @Test func malformedAttributes() throws {
        var shortMetric = Self.multipathMessage()
        shortMetric[20] = 6  // RTA_PRIORITY's length: 2 bytes of value
        #expect(shortMetric.withUnsafeBytes { Route(payload: $0) } == nil)
        var wrongFamily = Self.multipathMessage()
        wrongFamily[0] = 7
        #expect(wrongFamily.withUnsafeBytes { Route(payload: $0) } == nil)
        var overrun = Self.multipathMessage()
        overrun[28] = 0xff  // RTA_MULTIPATH's length now overruns the message
        let route = try #require(overrun.withUnsafeBytes { Route(payload: $0) })
        #expect(route.nexthops.isEmpty && route.metric == 42)
    }

    /// An IPv4 route to 10.77.0.0/16, metric 42, with two next hops: via 10.10.0.250 on link 2
    /// (weight 3) and via fe80::1 on link 3 (RTA_VIA, weight 256).
    static func multipathMessage() -> [UInt8] {
        var bytes: [UInt8] = [2, 16, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0]  // rtmsg: AF_INET, /16, main, boot, universe, unicast
        func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
            var out = withUnsafeBytes(of: UInt16(4 + payload.count)) { Array($0) } + withUnsafeBytes(of: type) { Array($0) } + payload
            while out.count % 4 != 0 { out.append(0) }
            return out
        }
        func hop(_ weight: UInt8, _ link: Int32, _ attributes: [UInt8]) -> [UInt8] {
            withUnsafeBytes(of: UInt16(8 + attributes.count)) { Array($0) } + [0, weight] + withUnsafeBytes(of: link) { Array($0) } + attributes
        }
        bytes += attribute(1, [10, 77, 0, 0])  // RTA_DST
        bytes += attribute(6, withUnsafeBytes(of: UInt32(42)) { Array($0) })  // RTA_PRIORITY
        let via = withUnsafeBytes(of: UInt16(10)) { Array($0) } + [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]
        bytes += attribute(9, hop(2, 2, attribute(5, [10, 10, 0, 250])) + hop(255, 3, attribute(18, via)))  // RTA_MULTIPATH
        return bytes
    }
}

/// One route as both `ip -j -d route` and the library describe it.
private struct IPRouteLine: Comparable, CustomStringConvertible {
    var text: String

    init(_ e: [String: Any]) {
        let hops = (e["nexthops"] as? [[String: Any]]).map { hops in
            hops.map { "\($0["gateway"] as? String ?? "-")@\($0["dev"] as? String ?? "-")*\($0["weight"] as? Int ?? 1)" }
        } ?? ["\(e["gateway"] as? String ?? "-")@\(e["dev"] as? String ?? "-")*1"]
        text = [e["table"] as? String ?? "main", e["type"] as? String ?? "unicast", e["dst"] as? String ?? "?",
                e["protocol"] as? String ?? "boot", e["scope"] as? String ?? "global", "\(e["metric"] as? Int ?? 0)",
                e["prefsrc"] as? String ?? "-", e["tos"] as? String ?? "0", e["pref"] as? String ?? "-",
                hops.joined(separator: ",")].joined(separator: " ")
    }

    init(_ r: Route, names: [Int32: String]) {
        let destination = r.isDefault ? "default"
            : r.destination.prefixLength == r.family.bitWidth ? r.destination.address.description : r.destination.description
        let scope = r.scope.description == "universe" ? "global" : r.scope.description
        let hops = r.nexthops.isEmpty ? ["-@-*1"]
            : r.nexthops.map { "\($0.gateway?.description ?? "-")@\($0.linkIndex.flatMap { names[$0] } ?? "-")*\($0.weight)" }
        text = ["\(r.table)", "\(r.type)", destination, "\(r.routeProtocol)", scope, "\(r.metric)",
                r.preferredSource?.description ?? "-", r.tos == 0 ? "0" : "0x" + String(r.tos, radix: 16),
                r.preference?.description ?? "-", hops.joined(separator: ",")].joined(separator: " ")
    }

    var description: String { text }
    static func < (a: Self, b: Self) -> Bool { a.text < b.text }
}
