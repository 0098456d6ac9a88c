import Foundation
import Netlink
import NetnsTestSupport
import LinuxReachability
import Testing

/// A `ReachabilityProbe` asks the kernel for the links an answer needs one by one (the scope's,
/// the output link, its lower link and ports) instead of dumping every link. Its answers must be
/// the ones a full dump gives: each is compared with an answer made here from every link.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct ProbeLinkReadsTests {
    @Test func answersFromLinksReadOneByOneAreTheAnswersOfAFullDump() async throws {
        let ns = try TestNamespace("probelinks")
        defer { ns.delete() }
        try ns.batch([
            "link add v0 type veth peer name v1", "link set v0 up", "link set v1 up", "address add 10.1.0.1/24 dev v0",
            // A bridge whose ports are veths: its type comes from its ports.
            "link add br0 type bridge", "link add p0 type veth peer name p1", "link add p2 type veth peer name p3",
            "link set p0 master br0", "link set p2 master br0",
            "link set br0 up", "link set p0 up", "link set p1 up", "link set p2 up", "link set p3 up",
            "address add 10.2.0.1/24 dev br0", "link property add dev br0 altname lan-bridge0",
            // A macvlan and a vxlan on v0: their lower link is read too.
            "link add mv0 link v0 type macvlan mode bridge", "link set mv0 up", "address add 10.3.0.1/24 dev mv0",
            "link add vx0 type vxlan id 7 dev v0 dstport 4789", "link set vx0 up", "address add 10.4.0.1/24 dev vx0",
            "route add 198.51.100.0/24 via 10.2.0.254",
        ])
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "br0"))?.contains("fe80::/64") == true })
        let namespace = try NetworkNamespace.named(ns.name)
        let connection = try NetlinkConnection(namespace: namespace)
        let probe = try ReachabilityProbe(namespace: namespace)
        let reference = FullDumpReference(connection: connection, classifier: LinkClassificationCache(source: .live(namespace)))
        for text in ["10.1.0.9", "10.2.0.9", "10.3.0.9", "10.4.0.9", "198.51.100.7", "127.0.0.1", "10.1.0.1", "10.99.0.1"] {
            let address = try #require(IPAddress(text))
            let (answer, expected) = try await reference.agreeing(probe, .address(address), address)
            #expect(FullDumpReference.same(answer, expected), "\(text): \(answer) against \(expected)")
        }
        // Scoped: by name, alternative name and index, each the answer through that link.
        let bridge = try ns.index(of: "br0")
        for scope in ["br0", "lan-bridge0", String(bridge)] {
            let address = IPAddress("fe80::1")!
            let (answer, expected) = try await reference.agreeing(probe, .scopedAddress(address, interface: scope), address, through: bridge)
            #expect(FullDumpReference.same(answer, expected), "%\(scope): \(answer) against \(expected)")
        }
        for scope in ["nosuch0", "0", "-1", "999999"] {
            #expect(try await probe.answer(for: .scopedAddress(IPAddress("fe80::1")!, interface: scope)).answer.reason == .linkMissing,
                    "%\(scope)")
        }
    }

    /// The internet's answer reads only its default routes' links (and the loopback link for a
    /// rule that selects by input link), or every link when the walk needs addresses. Each step
    /// changes what the answer depends on: a multipath route over a bridge, a rule's
    /// `suppress_ifgroup`, an `iif lo` rule, more hop links than the probe asks for one by one,
    /// a rule that selects by source, IPv6 with and without rules, a table that no rule looks
    /// up.
    @Test func theInternetsAnswerFromItsRoutesLinksIsTheAnswerOfAFullDump() async throws {
        let ns = try TestNamespace("probenet")
        defer { ns.delete() }
        try ns.batch([
            "link add v0 type veth peer name v1", "link set v0 up", "link set v1 up", "address add 10.1.0.1/24 dev v0",
            "link add br0 type bridge", "link add p0 type veth peer name p1",
            "link set p0 master br0", "link set br0 up", "link set p0 up", "link set p1 up",
            "address add 10.2.0.1/24 dev br0",
            "route add default via 10.1.0.254",
        ] + (0..<10).flatMap { ["link add h\($0) type veth peer name k\($0)", "link set h\($0) up", "link set k\($0) up",
                                "address add 10.5.\($0).1/24 dev h\($0)"] })
        let namespace = try NetworkNamespace.named(ns.name)
        let connection = try NetlinkConnection(namespace: namespace)
        let probe = try ReachabilityProbe(namespace: namespace)
        let reference = FullDumpReference(connection: connection, classifier: LinkClassificationCache(source: .live(namespace)))
        // Each step: its commands, and the link the answer goes out through afterwards.
        let steps: [(String, [String], String)] = [
            ("one default route", [], "v0"),
            ("multipath, the first hop without carrier",
             ["route replace default nexthop via 10.1.0.254 nexthop via 10.2.0.254", "link set v1 down"], "br0"),
            ("suppress_ifgroup", ["link set v1 up", "link set v0 group 5", "route replace default via 10.1.0.254",
                                  "route add default via 10.2.0.254 table 100",
                                  "rule add table main suppress_ifgroup 5 pref 100", "rule add table 100 pref 200"], "br0"),
            // The kernel matches the loopback link by index; the walk by its name, read here.
            ("iif of a renamed loopback link", ["rule del pref 100", "rule del pref 200", "link set lo down", "link set lo name lp", "link set lp up",
                                                "rule add iif lp table 100 pref 50"], "br0"),
            ("ten hop links", ["rule del pref 50", "route replace default "
                               + (0..<10).map { "nexthop via 10.5.\($0).254" }.joined(separator: " ")], "h0"),
            ("a rule by source", ["rule add from 10.5.0.1 table 100 pref 40"], "br0"),
            ("IPv6 alone", ["rule del pref 40", "route del default", "address add 2001:db8:1::1/64 dev v0 nodad",
                            "route add default via 2001:db8:1::fe dev v0"], "v0"),
            // Without rules, IPv6 follows its default ones (the walk's `defaultIPv6Rules`).
            ("IPv6 without rules", ["-6 rule del pref 0", "-6 rule del pref 32766"], "v0"),
            ("a table no rule looks up", ["route add default via 10.2.0.254 table 300",
                                          "route add default via 2001:db8:1::fe dev v0 table 300"], "v0"),
        ]
        for (step, commands, link) in steps {
            // `ip -batch` takes no options: a line for IPv6 rules runs on its own.
            for command in commands where command.hasPrefix("-6 ") {
                try run(["ip", "-n", ns.name] + command.split(separator: " ").map(String.init))
            }
            let batch = commands.filter { !$0.hasPrefix("-6 ") }
            if !batch.isEmpty { try ns.batch(batch) }
            let (answer, expected) = try await reference.agreeing(probe, .internet)
            #expect(FullDumpReference.same(answer, expected), "\(step): \(answer) against \(expected)")
            #expect(answer.interface?.name == link, "\(step): \(answer)")
        }
    }

    /// With sysfs from a fixture tree: a bridge whose port is a Wi-Fi card takes the port's type,
    /// the port found by a dump of the bridge's ports; with a dozen ports more, each with its
    /// veth peer, the links come from one dump once a few were asked for, with the same answer.
    /// So does the internet's answer through the bridge, the second hop of its default route.
    @Test func aBridgesPortsAreReadByADumpOfItsPorts() async throws {
        let ns = try TestNamespace("probefix")
        defer { ns.delete() }
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/sysfs").standardized
        let root = NSTemporaryDirectory() + "reach-probe-sysfs-\(getpid())"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for fixture in ["iwlwifi-ax201"] {
            try run(["cp", "-a", fixtures.appendingPathComponent(fixture).appendingPathComponent("sys").path + "/.", root])
        }
        try ns.batch([
            "link add br0 type bridge", "link add wlp0s20f3 type veth peer name e1", "link add p2 type veth peer name p3",
            "link set wlp0s20f3 master br0", "link set p2 master br0",
            "link set br0 up", "link set wlp0s20f3 up", "link set e1 up", "link set p2 up", "link set p3 up",
            "address add 10.2.0.1/24 dev br0",
            // The internet through two hops, the first without carrier: the answer is the bridge's.
            "link add v0 type veth peer name v1", "link set v0 up", "address add 10.1.0.1/24 dev v0",
            "route add default nexthop via 10.1.0.254 nexthop via 10.2.0.254",
        ] + (4..<16).flatMap { ["link add p\($0) type veth peer name q\($0)", "link set p\($0) master br0", "link set p\($0) up"] })
        // The fixtures' indexes made the live links' (a link whose `IFINDEX` disagrees is read
        // as renamed, and its sysfs facts ignored).
        for name in ["wlp0s20f3"] {
            let entry = root + "/class/net/" + name
            let device = (try? FileManager.default.destinationOfSymbolicLink(atPath: entry)).map {
                $0.hasPrefix("/") ? $0 : root + "/class/net/" + $0
            } ?? entry
            let index = try ns.index(of: name)
            let uevent = try String(contentsOfFile: device + "/uevent", encoding: .utf8)
                .split(separator: "\n").map { $0.hasPrefix("IFINDEX=") ? "IFINDEX=\(index)" : String($0) }.joined(separator: "\n") + "\n"
            try uevent.write(toFile: device + "/uevent", atomically: false, encoding: .utf8)
            if FileManager.default.fileExists(atPath: device + "/ifindex") {
                try "\(index)\n".write(toFile: device + "/ifindex", atomically: false, encoding: .utf8)
            }
        }
        let namespace = try NetworkNamespace.named(ns.name)
        let source = SysfsSource(root: root, namespace: namespace)
        let probe = try ReachabilityProbe(namespace: namespace, sysfs: source, policy: .none)
        let connection = try NetlinkConnection(namespace: namespace)
        let reference = FullDumpReference(connection: connection, classifier: LinkClassificationCache(source: source))
        for (text, type) in [("10.2.0.9", InterfaceType.wifi)] {
            let address = try #require(IPAddress(text))
            let (answer, expected) = try await reference.agreeing(probe, .address(address), address)
            #expect(FullDumpReference.same(answer, expected), "\(text): \(answer) against \(expected)")
            #expect(answer.interface?.classification.type == type, "\(text): \(answer)")
        }
        let (answer, expected) = try await reference.agreeing(probe, .internet)
        #expect(FullDumpReference.same(answer, expected), "internet: \(answer) against \(expected)")
        #expect(answer.interface?.name == "br0" && answer.interface?.classification.type == .wifi, "internet: \(answer)")
    }
}

/// The answer made here from a full dump of the links, to compare a probe's with.
private struct FullDumpReference {
    let connection: NetlinkConnection
    let classifier: LinkClassificationCache

    /// The answer for `address` (through link `through`, if given) from every link, read now.
    func answer(_ address: IPAddress, through link: Int32? = nil) throws -> ReachabilityAnswer {
        let everyLink = try connection.links()
        let byIndex = Dictionary(everyLink.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        let lookup = try connection.lookupRoute(to: address, outputLinkIndex: link)
        return ReachabilityEvaluator.evaluate(lookup, address: address, links: byIndex,
                                              classifications: classifier.classifications(of: everyLink))
    }

    /// The internet's answer from every link, address, default route and rule, read now.
    func internetAnswer() throws -> ReachabilityAnswer {
        let everyLink = try connection.links()
        var state = try NetworkState(links: everyLink, addresses: connection.addresses(), defaultRoutes: connection.defaultRoutes())
        state.policyRules = try connection.rules()
        return ReachabilityEvaluator.evaluateInternet(state, classifications: classifier.classifications(of: everyLink))
    }

    /// The probe's answer for `target` and this one for `address` (through link `through`, if
    /// given), or for the internet without an address, read again (bounded) until they agree:
    /// the two read a moment apart, while the kernel's link watch may still be setting a new
    /// link's state.
    func agreeing(_ probe: ReachabilityProbe, _ target: ReachabilityTarget, _ address: IPAddress? = nil,
                  through link: Int32? = nil) async throws -> (ReachabilityAnswer, ReachabilityAnswer) {
        var last: (ReachabilityAnswer, ReachabilityAnswer)?
        _ = try await awaitEventually {
            let expected = try address.map { try self.answer($0, through: link) } ?? self.internetAnswer()
            let answers = (try await probe.answer(for: target).answer, expected)
            last = answers
            return Self.same(answers.0, answers.1)
        }
        return last!
    }

    /// Whether two answers say the same: flags, reason, interface (with its classification)
    /// and gateway.
    static func same(_ a: ReachabilityAnswer, _ b: ReachabilityAnswer) -> Bool {
        a.flags == b.flags && a.reason == b.reason && a.interface == b.interface && a.gateway == b.gateway
    }
}
