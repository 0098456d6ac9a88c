import Foundation
import NetnsTestSupport
import Testing

/// Waits until the links' flags and addresses, as `ip -j addr show` prints them, stay the same
/// for 1.1 s (the link watch runs its delayed work at most once a second): for a second or so
/// after links come up, the kernel's link watch sets
/// their operational state and carrier, and IPv6 adds their link-local addresses, so that two
/// reads a moment apart (`reach links`, then `ip`) could disagree.
private func waitUntilLinksSettle(_ ns: TestNamespace) throws {
    func read() throws -> String {
        try ns.ipJSON("addr", "show").map { entry in
            let addresses = (entry["addr_info"] as? [[String: Any]] ?? []).map { "\($0["local"] ?? "")" }
            return "\(entry["ifindex"] ?? "") \(entry["flags"] ?? "") \(entry["operstate"] ?? "") \(addresses)"
        }.joined(separator: "\n")
    }
    #expect(try settledValue(every: 1.1, read) != nil, "the links never settled")
}

@Suite("reach links and reach events", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LinksAndEventsTests {
    @Test func linksJSONListsWhatIPAddrShows() async throws {
        try await withTestNamespace("clilinks") { ns in
            try ns.batch([
                "link add veth0 type veth peer name veth1", "link add br0 type bridge", "link set veth1 master br0",
                "link add mv0 link veth0 type macvlan mode bridge", "tuntap add dev tun0 mode tun",
                "link set veth0 up", "link set veth1 up", "link set br0 up", "link set mv0 up", "link set tun0 up",
                "address add 10.1.0.1/24 dev veth0", "address add 2001:db8:1::1/64 dev veth0 nodad",
                "address add 10.2.0.1/24 dev br0", "address add 10.3.0.1/24 dev mv0",
                "address add 2001:db8:3::1/64 dev mv0 nodad", "address add 10.4.0.1 peer 10.4.0.2/32 dev tun0",
            ])
            // A name with a quote and a backslash, which the JSON must escape; alternative names.
            try ns.ip("link", "add", "q\"b\\s", "type", "veth", "peer", "name", "qpeer")
            try ns.ip("link", "property", "add", "dev", "veth0", "altname", "uplink0", "altname", "q\\\"alt")
            try waitUntilLinksSettle(ns)
            let result = try reach("links", "--json", "--netns", ns.name)
            #expect(result.status == 0, "\(result.error)")
            let links = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
            let expected = try ns.ipJSON("addr", "show")
            #expect(links.count == expected.count)
            for entry in expected {
                let index = entry["ifindex"] as! Int
                let link = try #require(links.first { $0["index"] as? Int == index }, "link \(index)")
                let flags = entry["flags"] as? [String] ?? []
                #expect(link["name"] as? String == entry["ifname"] as? String)
                #expect(link["up"] as? Bool == flags.contains("UP"), "\(entry["ifname"]!)")
                #expect(link["running"] as? Bool == (flags.contains("UP") && !flags.contains("NO-CARRIER")), "\(entry["ifname"]!)")
                let addresses = (entry["addr_info"] as? [[String: Any]] ?? []).map { "\($0["local"]!)/\($0["prefixlen"]!)" }
                #expect(Set(link["addresses"] as? [String] ?? []) == Set(addresses), "\(entry["ifname"]!)")
                #expect(link["altnames"] as? [String] == entry["altnames"] as? [String] ?? [], "\(entry["ifname"]!)")
                for key in ["name", "index", "type", "kind", "arphrd", "operState", "up", "running", "expensive", "addresses", "altnames"] {
                    #expect(link.keys.contains(key), "field \(key)")
                }
            }
            #expect(links.first { $0["name"] as? String == "lo" }?["type"] as? String == "loopback")
            #expect(links.first { $0["name"] as? String == "br0" }?["kind"] as? String == "bridge")
            #expect(links.first { $0["name"] as? String == "mv0" }?["kind"] as? String == "macvlan")
            #expect(links.first { $0["name"] as? String == "tun0" }?["kind"] as? String == "tun")
            #expect(links.first { $0["name"] as? String == "veth0" }?["altnames"] as? [String] == ["uplink0", "q\\\"alt"])
            let text = try reach("links", "--netns", ns.name)
            #expect(text.output.contains("veth0  ") && text.output.contains("\n    altname uplink0\n"), "\(text.output)")
        }
    }

    @Test func badInputExitsWithTwoAndOneLine() throws {
        for arguments in [["links", "--netns", "no-such-ns-\(getpid())"], ["links", "--netns", "a\u{1}/../x"],
                          ["links", "--netns", ""], ["links", "--no-such-flag"], ["nonsense"], ["events", "--netns", "/etc/hostname"]] {
            let result = try run([reachBinary] + arguments, check: false)
            #expect(result.status == 2, "\(arguments)")
            let lines = result.error.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("reach: "), "\(arguments): \(result.error)")
        }
        #expect(try reach("--help").status == 0)
    }

    @Test func eventsJSONPrintsTheStateThenOneLinePerChange() async throws {
        try await withTestNamespace("clievents") { ns in
            try ns.batch(["link add veth0 type veth peer name veth1", "link set veth1 up", "address add 10.9.0.1/24 dev veth0"])
            let events = try ReachProcess(["events", "--json", "--netns", ns.name])
            defer { events.stop() }
            #expect(events.waitForLine(containing: "\"event\":\"synchronized\""))
            #expect(events.lines.withLock { $0.contains { $0.contains("\"present\"") && $0.contains("10.9.0.1/24") } })
            try ns.ip("link", "set", "veth0", "up")
            #expect(events.waitForLine(containing: "\"event\":\"changed\"", "\"object\":\"link\"", "\"name\":\"veth0\"", "\"up\":true"))
            try ns.ip("route", "add", "default", "via", "10.9.0.254")
            #expect(events.waitForLine(containing: "\"event\":\"new\"", "\"object\":\"route\"", "\"destination\":\"default\""))
            for line in events.lines.withLock({ $0 }) {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["time"] is String && object?["event"] is String, "\(line)")
            }
        }
    }

    /// Every field of a route line, byte for byte, for routes of every shape: the contract's
    /// field order, names for known tables, protocols and scopes, numbers for the others,
    /// multipath next hops, flags, IPv6 with a source prefix and a router's preference, a TOS,
    /// a route through a next-hop object, the routes without a link, and tables named, numbered
    /// under 256 and above it (whose names are not kept quoted: see `QuotedNames`).
    @Test func eventsJSONRoutesCarryEveryFieldByteForByte() async throws {
        try await withTestNamespace("cliroutes") { ns in
            try ns.batch(["link add veth0 type veth peer name veth1", "link set veth1 up", "link set veth0 up",
                          "address add 10.9.0.1/24 dev veth0", "address add 2001:db8:9::1/64 dev veth0 nodad"])
            let index = try #require(try ns.ipJSON("link", "show", "veth0").first?["ifindex"] as? Int)
            let events = try ReachProcess(["events", "--json", "--netns", ns.name])
            defer { events.stop() }
            #expect(events.waitForLine(containing: "\"event\":\"synchronized\""))
            try ns.batch([
                "route add 10.77.0.0/16 via 10.9.0.254 metric 50 proto static",
                "route add 10.78.0.0/16 dev veth0 src 10.9.0.1 table 100 proto 99 scope link",
                "route add 10.79.0.0/16 nexthop via 10.9.0.253 weight 3 nexthop via 10.9.0.252 weight 1",
                "route add blackhole 10.80.0.0/16",
                "route add 2001:db8:77::/48 via 2001:db8:9::fe metric 7",
                "route add 10.81.0.0/16 via 10.9.0.254 dev veth0 onlink",
                "route add 10.82.0.0/16 via 10.9.0.254 table 200 proto 250",
                "route add unreachable 10.83.0.0/16 metric 9",
                "nexthop add id 5 via 10.9.0.250 dev veth0", "route add 10.85.0.0/16 nhid 5",
                "route add 10.86.0.0/16 via 10.9.0.254 tos 0x10",
                "route add 10.87.0.0/16 via 10.9.0.254 table 1000",
                "route add 2001:db8:78::/48 from 2001:db8:99::/48 via 2001:db8:9::fe pref high",
                "route add 10.184.0.0/16 via 10.9.0.154 metric 1234567",
            ])
            let expected = [
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.77.0.0/16","sourcePrefix":null,"gateway":"10.9.0.254","index":INDEX,"protocol":"static","scope":"global","metric":50,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"100","type":"unicast","destination":"10.78.0.0/16","sourcePrefix":null,"gateway":null,"index":INDEX,"protocol":"openr","scope":"link","metric":0,"preference":null,"tos":0,"preferredSource":"10.9.0.1","flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.79.0.0/16","sourcePrefix":null,"gateway":"10.9.0.253","index":INDEX,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[{"gateway":"10.9.0.253","index":INDEX,"weight":3,"flags":[]},{"gateway":"10.9.0.252","index":INDEX,"weight":1,"flags":[]}],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"blackhole","destination":"10.80.0.0/16","sourcePrefix":null,"gateway":null,"index":null,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv6","table":"main","type":"unicast","destination":"2001:db8:77::/48","sourcePrefix":null,"gateway":"2001:db8:9::fe","index":INDEX,"protocol":"boot","scope":"global","metric":7,"preference":"medium","tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.81.0.0/16","sourcePrefix":null,"gateway":"10.9.0.254","index":INDEX,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":["onlink"],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"200","type":"unicast","destination":"10.82.0.0/16","sourcePrefix":null,"gateway":"10.9.0.254","index":INDEX,"protocol":"250","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"unreachable","destination":"10.83.0.0/16","sourcePrefix":null,"gateway":null,"index":null,"protocol":"boot","scope":"global","metric":9,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.85.0.0/16","sourcePrefix":null,"gateway":"10.9.0.250","index":INDEX,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":5}"#,
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.184.0.0/16","sourcePrefix":null,"gateway":"10.9.0.154","index":INDEX,"protocol":"boot","scope":"global","metric":1234567,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"main","type":"unicast","destination":"10.86.0.0/16","sourcePrefix":null,"gateway":"10.9.0.254","index":INDEX,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":16,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv4","table":"1000","type":"unicast","destination":"10.87.0.0/16","sourcePrefix":null,"gateway":"10.9.0.254","index":INDEX,"protocol":"boot","scope":"global","metric":0,"preference":null,"tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
                #"{"family":"ipv6","table":"main","type":"unicast","destination":"2001:db8:78::/48","sourcePrefix":"2001:db8:99::/48","gateway":"2001:db8:9::fe","index":INDEX,"protocol":"boot","scope":"global","metric":1024,"preference":"high","tos":0,"preferredSource":null,"flags":[],"nexthops":[],"nexthopID":null}"#,
            ].map { $0.replacingOccurrences(of: "INDEX", with: "\(index)") }
            #expect(events.waitForLine(containing: "\"event\":\"new\"", "10.184.0.0/16"))
            // Every line's time: ISO 8601 in UTC with microseconds.
            let time = try Regex(#"^\{"time":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z","event":"#)
            #expect(events.lines.withLock { lines in lines.allSatisfy { $0.firstMatch(of: time) != nil } })
            let routes = events.lines.withLock { lines in
                lines.filter { $0.contains("\"event\":\"new\",\"object\":\"route\"") }
                    .compactMap { line -> String? in
                        guard let start = line.range(of: ",\"route\":")?.upperBound, line.hasSuffix("}") else { return nil }
                        return String(line[start..<line.index(before: line.endIndex)])
                    }
            }
            for route in expected {
                #expect(routes.contains(route), "missing \(route)")
            }
        }
    }

    /// A multipath default route whose hop dies (its link goes down: the kernel keeps the route
    /// and marks the hop, without a message) is a `changed` line whose old and new routes differ
    /// by the hop's flags.
    @Test func eventsJSONTellsAHopThatDied() async throws {
        try await withTestNamespace("clihop") { ns in
            try ns.batch(TestNamespace.twoUplinks + [
                "route add default nexthop via 10.1.0.2 dev va nexthop via 10.2.0.2 dev wa",
            ])
            let events = try ReachProcess(["events", "--json", "--netns", ns.name])
            defer { events.stop() }
            #expect(events.waitForLine(containing: "\"event\":\"synchronized\""))
            try ns.ip("link", "set", "wa", "down")
            #expect(events.waitForLine(containing: "\"event\":\"changed\",\"object\":\"route\""))
            let line = try #require(events.lines.withLock { $0.first { $0.contains("\"event\":\"changed\",\"object\":\"route\"") } })
            let new = try #require(line.range(of: ",\"route\":")).upperBound
            let old = try #require(line.range(of: ",\"old\":")).lowerBound
            let newRoute = String(line[new..<old]), oldRoute = String(line[line.index(old, offsetBy: 7)...].dropLast())
            #expect(newRoute != oldRoute, "\(line)")
            #expect(oldRoute.contains(#""gateway":"10.2.0.2","index":"#) && !oldRoute.contains("\"dead\""), "\(line)")
            #expect(newRoute.contains(#""weight":1,"flags":["dead","linkdown"]}"#), "\(line)")
        }
    }

    /// Link lines, written straight into the line's bytes like routes: every field, and the
    /// old version of a changed link, byte for byte.
    @Test func eventsJSONLinksCarryEveryFieldByteForByte() async throws {
        try await withTestNamespace("clilinks") { ns in
            try ns.batch(["link add va address 02:00:00:00:00:0a type veth peer name vb address 02:00:00:00:00:0b",
                          "link property add dev va altname uplink0 altname alt.1", "link set va up"])
            // The kernel's link watch sets va's operational state a moment later (up to a
            // second on a busy machine): the snapshot and the change below must both see it set.
            #expect(eventually { (try? ns.ipJSON("link", "show", "va").first?["operstate"] as? String) == "LOWERLAYERDOWN" })
            let va = try #require(try ns.ipJSON("link", "show", "va").first?["ifindex"] as? Int)
            let vb = try #require(try ns.ipJSON("link", "show", "vb").first?["ifindex"] as? Int)
            let events = try ReachProcess(["events", "--json", "--netns", ns.name])
            defer { events.stop() }
            #expect(events.waitForLine(containing: "\"event\":\"synchronized\""))
            try ns.ip("link", "set", "va", "mtu", "1400")
            #expect(events.waitForLine(containing: "\"event\":\"changed\"", "\"mtu\":1400"))
            let classification = #""type":"other","kind":"veth","infoKind":"veth","expensive":false,"transient":false,"virtual":true,"constrained":false,"evidence":"IFLA_INFO_KIND veth","arphrd":1"#
            func vaJSON(mtu: Int) -> String {
                #"{"name":"va","index":VA,"#.replacingOccurrences(of: "VA", with: "\(va)") + classification
                    + #","operState":"lowerLayerDown","up":true,"running":false,"flags":["up","broadcast","multicast"],"carrier":false,"mtu":MTU,"hardwareAddress":"02:00:00:00:00:0a","master":null,"link":VB,"linkNetnsid":null,"group":0,"altnames":["uplink0","alt.1"]}"#
                    .replacingOccurrences(of: "MTU", with: "\(mtu)").replacingOccurrences(of: "VB", with: "\(vb)")
            }
            let changed = events.lines.withLock { $0.first { $0.contains("\"event\":\"changed\",\"object\":\"link\"") && $0.contains("\"mtu\":1400") } }
            let line = try #require(changed)
            let body = try #require(line.range(of: ",\"link\":")).upperBound
            #expect(String(line[body...]) == vaJSON(mtu: 1400) + ",\"old\":" + vaJSON(mtu: 1500) + "}")
            let present = events.lines.withLock { $0.first { $0.contains("\"event\":\"present\",\"object\":\"link\",\"link\":{\"name\":\"va\"") } }
            #expect(present?.hasSuffix(",\"link\":" + vaJSON(mtu: 1500) + "}") == true, "\(String(describing: present))")
        }
    }

    @Test func eventsHumanFormAndNamespaceDeletion() throws {
        let ns = try TestNamespace("clihuman")
        defer { ns.delete() }
        let events = try ReachProcess(["events", "--netns", ns.name])
        defer { events.stop() }
        #expect(events.waitForLine(containing: "synchronized"))
        try ns.ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        #expect(events.waitForLine(containing: "new link", "veth0"))
        // Up: the kernel tells of a new alternative name only for a link that is up.
        try ns.ip("link", "set", "veth0", "up")
        try ns.ip("link", "property", "add", "dev", "veth0", "altname", "uplink0")
        #expect(events.waitForLine(containing: "changed link", "veth0", "(was altnames none)"))
        try ns.ip("link", "property", "del", "dev", "veth0", "altname", "uplink0")
        #expect(events.waitForLine(containing: "changed link", "veth0", "(was altnames uplink0)"))
        ns.delete()
        #expect(events.exitStatus() == 2, "a deleted namespace ends `reach events` with status 2")
    }
}
