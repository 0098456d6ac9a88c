import Netlink
import NetnsTestSupport
import Testing

@Suite("Snapshots equal what ip -j reports", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SnapshotTests {
    @Test func linksEqualIPLink() async throws {
        try await withTestNamespace("links") { ns in
            try buildTopology(ns)
            let links = try NetlinkConnection(namespace: .named(ns.name)).links()
            let expected = try ns.ipJSON("-d", "link", "show")
            #expect(links.count == expected.count)
            for entry in expected {
                let index = Int32(entry["ifindex"] as! Int)
                let link = try #require(links.first { $0.index == index }, "link \(index) missing")
                #expect(link.name == entry["ifname"] as? String)
                #expect(Int(link.mtu) == entry["mtu"] as? Int)
                let flags = entry["flags"] as? [String] ?? []
                #expect(link.isUp == flags.contains("UP"), "\(link.name)")
                #expect(link.flags.contains(.lowerUp) == flags.contains("LOWER_UP"), "\(link.name)")
                #expect(link.operState.description.lowercased() == (entry["operstate"] as? String)?.lowercased().replacingOccurrences(of: "_", with: ""), "\(link.name)")
                let info = entry["linkinfo"] as? [String: Any]
                #expect(link.kind == info?["info_kind"] as? String, "\(link.name)")
                #expect(link.hardwareAddress?.description == entry["address"] as? String, "\(link.name)")
                if let master = entry["master"] as? String {
                    #expect(links.first { $0.index == link.masterIndex }?.name == master)
                } else {
                    #expect(link.masterIndex == nil)
                }
            }
            let tun = try #require(links.first { $0.name == "tun0" })
            #expect(tun.arphrdType == .none)
            #expect(links.first { $0.name == "lo" }?.arphrdType == .loopback)
        }
    }

    @Test func addressesEqualIPAddr() async throws {
        try await withTestNamespace("addrs") { ns in
            try buildTopology(ns)
            let addresses = try NetlinkConnection(namespace: .named(ns.name)).addresses()
            var expected: Set<String> = []
            for link in try ns.ipJSON("addr", "show") {
                for info in link["addr_info"] as? [[String: Any]] ?? [] {
                    expected.insert("\(link["ifindex"]!) \(info["local"]!)/\(info["prefixlen"]!)")
                }
            }
            let actual = Set(addresses.map { "\($0.linkIndex) \($0.cidr)" })
            #expect(actual == expected)
            let tun = try #require(addresses.first { $0.address == IPAddress("10.50.0.1") })
            #expect(tun.peer == IPAddress("10.50.0.2"))
            #expect(addresses.first { $0.address == IPAddress("2001:db8:10::1") }?.flags.contains(.noDAD) == true)
        }
    }

    @Test func routesEqualIPRouteInEveryTable() async throws {
        try await withTestNamespace("routes") { ns in
            try buildTopology(ns)
            let connection = try NetlinkConnection(namespace: .named(ns.name))
            let names = Dictionary(uniqueKeysWithValues: try connection.links().map { ($0.index, $0.name) })
            func describe(_ r: Route) -> String {
                let destination = r.isDefault ? "default"
                    : r.destination.prefixLength == r.family.bitWidth ? r.destination.address.description : r.destination.description
                return "\(r.table) \(r.type) \(destination) \(r.gateway?.description ?? "-") \(r.outputLinkIndex.flatMap { names[$0] } ?? "-")"
            }
            func describe(_ e: [String: Any], defaultTable: String) -> String {
                "\(e["table"] as? String ?? defaultTable) \(e["type"] as? String ?? "unicast") \(e["dst"]!) \(e["gateway"] as? String ?? "-") \(e["dev"] as? String ?? "-")"
            }
            for family in AddressFamily.allCases {
                let flag = family == .ipv4 ? "-4" : "-6"
                let all = try ns.ipJSON(flag, "route", "show", "table", "all")
                let expectedAll = Set(all.map { describe($0, defaultTable: "main") })
                let actualAll = Set(try connection.routes(RouteFilter(family: family)).map(describe))
                #expect(actualAll == expectedAll, "\(family): every table")
                let main = Set(try ns.ipJSON(flag, "route", "show", "table", "main").map { describe($0, defaultTable: "main") })
                #expect(Set(try connection.routes(RouteFilter(family: family, table: .main)).map(describe)) == main, "\(family): main table")
                let blackholes = try connection.routes(RouteFilter(family: family, type: .blackhole))
                #expect(blackholes.count == 1 && blackholes.allSatisfy { $0.type == .blackhole })
            }
            let defaults = try connection.defaultRoutes()
            #expect(Set(defaults.map(describe)) == ["main unicast default 10.10.0.254 veth0", "main unicast default 2001:db8:40::fe dum0",
                                                     "100 unicast default 10.20.0.254 br0"])
            let viaVeth0 = try connection.routes(RouteFilter(outputLinkIndex: try ns.index(of: "veth0")))
            #expect(!viaVeth0.isEmpty && viaVeth0.allSatisfy { $0.uses(linkIndex: try! ns.index(of: "veth0")) })
        }
    }
}
