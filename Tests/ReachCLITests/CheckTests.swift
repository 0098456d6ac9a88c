import Foundation
import NetnsTestSupport
import Testing

/// `reach check` against `ip route get` and the links' state, destination by destination.
@Suite("reach check agrees with the kernel", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct CheckTests {
    /// A namespace with wired, bridged, tunnelled and carrier-less links, special routes, IPv6
    /// and a policy rule; the peer ends live in a second namespace.
    private func buildTopology(_ ns: TestNamespace, peer: TestNamespace) throws {
        try ns.batch([
            "link add va type veth peer name vb", "link set vb netns \(peer.name)",
            "link add br0 type bridge", "link add vc type veth peer name vd", "link set vd netns \(peer.name)",
            "link set vc master br0",
            "link add ve type veth peer name vf",              // vf stays down: ve has no carrier
            "tuntap add dev tun0 mode tun",                    // nobody attached: no carrier
            "link set va up", "link set br0 up", "link set vc up", "link set ve up", "link set tun0 up",
            "address add 10.1.0.1/24 dev va", "address add 2001:db8:1::1/64 dev va nodad",
            "address add 10.2.0.1/24 dev br0", "address add 10.5.0.1/24 dev ve",
            "address add 10.4.0.1 peer 10.4.0.2/32 dev tun0",
            "route add default via 10.1.0.2 dev va", "route add default via 2001:db8:1::2 dev va",
            "route add unreachable 203.0.113.0/24", "route add blackhole 198.51.100.0/24",
            "route add prohibit 192.0.2.128/25", "route add 10.6.0.0/24 via 10.5.0.2 dev ve",
            "route add unreachable 2001:db8:dead::/48",
            "route add 10.9.0.0/16 via 10.2.0.2 dev br0 table 100", "rule add to 10.9.0.0/16 lookup 100 pref 1000",
        ])
        try peer.batch(["link set vb up", "link set vd up", "address add 10.1.0.2/24 dev vb",
                        "address add 2001:db8:1::2/64 dev vb nodad", "address add 10.2.0.2/24 dev vd"])
    }

    /// The namespace and its peer, with the topology built; both are deleted when released.
    private func topology(_ label: String) throws -> (TestNamespace, TestNamespace) {
        let ns = try TestNamespace(label)
        let peer = try TestNamespace(label + "peer")
        try buildTopology(ns, peer: peer)
        return (ns, peer)
    }

    @Test func everyDestinationAgreesWithIPRouteGet() throws {
        let (ns, peer) = try topology("check")
        defer { ns.delete(); peer.delete() }
        #expect(eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true })

        let destinations = ["10.1.0.2", "10.1.0.1", "192.0.2.10", "10.2.0.5", "203.0.113.5", "198.51.100.5",
                            "192.0.2.200", "10.4.0.2", "10.6.0.9", "10.9.1.1", "127.0.0.1",
                            "2001:db8:1::2", "2001:db8:1::1", "2001:db8:99::1", "2001:db8:dead::1"]
        var reachableCount = 0
        for destination in destinations {
            let kernel = try run(["ip", "-n", ns.name, "-j", "route", "get", destination], check: false)
            let result = try reach("check", destination, "--json", "--netns", ns.name)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any],
                                      "\(destination): \(result.output) \(result.error)")
            let flags = answer["flags"] as? [String] ?? []
            let interface = answer["interface"] as? [String: Any]
            guard kernel.status == 0,
                  let route = (try JSONSerialization.jsonObject(with: Data(kernel.output.utf8)) as? [[String: Any]])?.first else {
                // The kernel refused the lookup (unreachable, blackhole, prohibit, no route).
                #expect(answer["reachable"] as? Bool == false, "\(destination)")
                #expect(interface == nil, "\(destination)")
                #expect(result.status == 1, "\(destination)")
                continue
            }
            let type = route["type"] as? String ?? "unicast"
            let device = try #require(route["dev"] as? String)
            let linkFlags = try ns.ipJSON("link", "show", "dev", device).first?["flags"] as? [String] ?? []
            let usable = (type == "unicast" || type == "local") && linkFlags.contains("UP")
                && (type == "local" || !linkFlags.contains("NO-CARRIER"))
            #expect(answer["reachable"] as? Bool == usable, "\(destination): \(route) \(linkFlags)")
            #expect(result.status == (usable ? 0 : 1), "\(destination)")
            #expect(interface?["name"] as? String == device, "\(destination)")
            #expect(answer["gateway"] as? String == route["gateway"] as? String, "\(destination)")
            #expect(flags.contains("isDirect") == (usable && route["gateway"] == nil), "\(destination)")
            #expect(flags.contains("isLocalAddress") == (usable && type == "local"), "\(destination)")
            #expect(flags.contains("transientConnection") == (usable && device == "tun0"), "\(destination)")
            if usable { reachableCount += 1 }
        }
        // The topology really has both kinds of answer.
        #expect(reachableCount >= 7)

        // The policy rule steers 10.9/16 to br0 through table 100.
        let steered = try reach("check", "10.9.1.1", "--json", "--netns", ns.name)
        #expect(steered.output.contains("\"name\":\"br0\""))
        #expect(steered.output.contains("\"gateway\":\"10.2.0.2\""))
    }

    @Test func theInternetFollowsTheDefaultRoutes() throws {
        let ns = try TestNamespace("checknet")
        defer { ns.delete() }
        let peer = try TestNamespace("checknetpeer")
        defer { peer.delete() }
        let none = try reach("check", "--json", "--netns", ns.name)
        #expect(none.status == 1)
        #expect(none.output.contains("\"reason\":\"no default route\""))
        #expect(none.output.contains("\"target\":null"))

        try buildTopology(ns, peer: peer)
        #expect(eventually { (try? reach("check", "--netns", ns.name).status) == 0 })
        let up = try reach("check", "--json", "--netns", ns.name)
        #expect(up.output.contains("\"status\":\"reachableViaOther\""), "a veth is other: \(up.output)")
        #expect(up.output.contains("\"gateway\":\"10.1.0.2\""))

        // Carrier lost on the uplink: the default routes stay, the internet is gone.
        try peer.ip("link", "set", "vb", "down")
        #expect(eventually { (try? reach("check", "--netns", ns.name).status) == 1 })
        let down = try reach("check", "--json", "--netns", ns.name)
        #expect(down.output.contains("\"reason\":\"no carrier\""), "\(down.output)")
    }

    /// A multipath default route of 245 next hops: its message (about 4 KiB) is larger than the
    /// first datagram the kernel fills for a new socket's dump, and a dump that starts with it
    /// reads as empty unless the socket first raised its datagram size.
    @Test func aDefaultRouteLargerThanADumpsFirstDatagramIsSeen() throws {
        let ns = try TestNamespace("checkbig")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/16 dev va"])
        let nexthops = (1...245).flatMap { ["nexthop", "via", "10.1.\($0 / 250 + 1).\($0 % 250 + 1)", "dev", "va"] }
        _ = try ns.exec(["ip", "route", "add", "default"] + nexthops)
        let answer = try reach("check", "--json", "--netns", ns.name)
        #expect(answer.status == 0, "\(answer.output)")
        #expect(answer.output.contains("\"status\":\"reachableViaOther\""), "\(answer.output)")
    }

    @Test func aMultipathDefaultRouteIsUsableThroughItsLiveHop() throws {
        let ns = try TestNamespace("checkmp")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + [
            "route add default nexthop via 10.1.0.2 dev va nexthop via 10.2.0.2 dev wa", "link set va down",
        ])
        // The kernel keeps the route, its first hop dead: the internet goes through wa.
        let answer = try reach("check", "--json", "--netns", ns.name)
        #expect(answer.status == 0, "\(answer.output)")
        #expect(answer.output.contains("\"name\":\"wa\""), "\(answer.output)")
        #expect(answer.output.contains("\"gateway\":\"10.2.0.2\""), "\(answer.output)")
        try ns.ip("link", "set", "wa", "down")
        let none = try reach("check", "--json", "--netns", ns.name)
        #expect(none.status == 1, "\(none.output)")
    }

    @Test func aDefaultRouteThroughANextHopObjectIsUsable() throws {
        let ns = try TestNamespace("checknh")
        defer { ns.delete() }
        // Outside the compatibility mode, the route message carries the object's id alone.
        _ = try ns.exec(["sysctl", "-q", "-w", "net.ipv4.nexthop_compat_mode=0"])
        try ns.batch(TestNamespace.twoUplinks + [
            "nexthop add id 1 via 10.1.0.2 dev va", "nexthop add id 2 via 10.2.0.2 dev wa",
            "nexthop add id 10 group 1/2", "route add default nhid 10 metric 10", "link set vb down",
        ])
        // va lost its carrier: the kernel took object 1 out of the group; the route goes through wa.
        let answer = try reach("check", "--json", "--netns", ns.name)
        #expect(answer.status == 0, "\(answer.output)")
        #expect(answer.output.contains("\"name\":\"wa\""), "\(answer.output)")
        #expect(answer.output.contains("\"gateway\":\"10.2.0.2\""), "\(answer.output)")
        try ns.batch(["nexthop add id 3 blackhole", "route add default nhid 3 metric 1"])
        let blackholed = try reach("check", "--json", "--netns", ns.name)
        #expect(blackholed.status == 1, "a blackhole object with a lower metric blocks the internet: \(blackholed.output)")
    }

    /// An IPv6 source-specific default route carries only packets from its prefix: the kernel
    /// chooses a source when the first lookup finds nothing, and looks up again with it.
    @Test func aSourceSpecificDefaultRouteNeedsAnAddressInItsPrefix() throws {
        let ns = try TestNamespace("checkfrom")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinkLinks + [
            "address add 2001:db8:9::1/64 dev wa nodad", "route add ::/0 from 2001:db8:2::/64 via 2001:db8:9::2 dev wa",
        ])
        let without = try reach("check", "--json", "--netns", ns.name)
        #expect(without.status == 1, "the host's source, 2001:db8:9::1, is outside the prefix: \(without.output)")
        try ns.ip("address", "add", "2001:db8:2::1/64", "dev", "va", "nodad")
        let with = try reach("check", "--json", "--netns", ns.name)
        #expect(with.status == 0, "\(with.output)")
        #expect(with.output.contains("\"name\":\"wa\""), "\(with.output)")
    }

    @Test func anUnreachableDefaultRouteWithALowerMetricBlocksTheInternet() throws {
        let ns = try TestNamespace("checkkill")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2 metric 100",
                      "route add unreachable default metric 1"])
        // The kernel answers every address outside 10.1.0.0/24 with the unreachable route.
        #expect(try ns.exec(["ip", "route", "get", "192.0.2.1"], check: false).status != 0)
        let blocked = try reach("check", "--json", "--netns", ns.name)
        #expect(blocked.status == 1, "\(blocked.output)")
        try ns.ip("route", "del", "unreachable", "default", "metric", "1")
        let open = try reach("check", "--json", "--netns", ns.name)
        #expect(open.status == 0, "\(open.output)")
    }

    @Test func hostNamesResolveFromTheNamespacesHostsFile() throws {
        let (ns, peer) = try topology("checkhost")
        defer { ns.delete(); peer.delete() }
        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The first address is blackholed, the second reachable: the best one is reported.
        try "198.51.100.7 api.example.test\n10.1.0.2 api.example.test\n203.0.113.9 down.example.test\n"
            .write(toFile: directory + "/hosts", atomically: true, encoding: .utf8)

        let api = try reach("check", "api.example.test", "--json", "--netns", ns.name)
        #expect(api.status == 0, "\(api.output) \(api.error)")
        #expect(api.output.contains("\"addresses\":[\"198.51.100.7\",\"10.1.0.2\"]"))
        #expect(api.output.contains("\"name\":\"va\""))
        let down = try reach("check", "down.example.test", "--json", "--netns", ns.name)
        #expect(down.status == 1)
        for bad in ["", "-bad", "a..b", String(repeating: "a", count: 300), "bad name"] {
            let result = try reach("check", bad, "--netns", ns.name)
            #expect(result.status == 2, "\(bad)")
            #expect(result.error.hasPrefix("reach: "), "\(bad)")
        }
    }

    /// A plain `check` command line is read without swift-argument-parser; `--sysfs-root /sys`
    /// (the same live sysfs) sends the same question through swift-argument-parser. Both give
    /// the same output and status, for answers and for errors.
    @Test func aPlainCommandLineAnswersAsTheParsedOne() throws {
        let (ns, peer) = try topology("checkplain")
        defer { ns.delete(); peer.delete() }
        let questions: [[String]] = [
            ["check", "--netns", ns.name], ["check", "--netns=\(ns.name)", "--json"],
            ["check", "10.1.0.2", "--netns", ns.name], ["check", "--json", "--netns", ns.name, "203.0.113.1"],
            ["check", "2001:db8:1::2", "--json", "--netns=\(ns.name)"], ["check", "10.5.0.9", "--netns", ns.name],
            ["check", "999.1.1.1", "--netns", ns.name], ["check", "10.1.0.2", "--netns", "no-such-namespace-\(ns.name)"],
            ["check", "fe80::1%nosuchlink", "--netns", ns.name],
        ]
        for question in questions {
            let plain = try run([reachBinary] + question, check: false)
            let parsed = try run([reachBinary] + question + ["--sysfs-root", "/sys"], check: false)
            #expect(plain.status == parsed.status, "\(question)")
            #expect(plain.output == parsed.output, "\(question)")
            #expect(plain.error == parsed.error, "\(question)")
            #expect(!plain.output.isEmpty || !plain.error.isEmpty, "\(question)")
        }
        // Forms left to swift-argument-parser keep its answers: a repeated flag is taken, an
        // unknown option refused, help given.
        #expect(try reach("check", "--json", "--json", "--netns", ns.name).status == 0)
        #expect(try reach("check", "--colour", "--netns", ns.name).status == 2)
        #expect(try reach("check", "--help").output.contains("USAGE: reach check"))
    }
}
