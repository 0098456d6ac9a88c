import Foundation
import Netlink
import NetnsTestSupport
import Reachability
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

    /// With sysfs from a fixture tree: a bridge whose port is a Wi-Fi card takes the port's type,
    /// the port found by a dump of the bridge's ports; with a dozen ports more, each with its
    /// veth peer, the links come from one dump once a few were asked for, with the same answer.
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
        let probe = try ReachabilityProbe(namespace: namespace, sysfs: source)
        let connection = try NetlinkConnection(namespace: namespace)
        let reference = FullDumpReference(connection: connection, classifier: LinkClassificationCache(source: source))
        for (text, type) in [("10.2.0.9", InterfaceType.wifi)] {
            let address = try #require(IPAddress(text))
            let (answer, expected) = try await reference.agreeing(probe, .address(address), address)
            #expect(FullDumpReference.same(answer, expected), "\(text): \(answer) against \(expected)")
            #expect(answer.interface?.classification.type == type, "\(text): \(answer)")
        }
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

    /// The probe's answer for `target` and this one, read again (bounded) until they agree:
    /// the two read a moment apart, while the kernel's link watch may still be setting a new
    /// link's state.
    func agreeing(_ probe: ReachabilityProbe, _ target: ReachabilityTarget, _ address: IPAddress,
                  through link: Int32? = nil) async throws -> (ReachabilityAnswer, ReachabilityAnswer) {
        var last: (ReachabilityAnswer, ReachabilityAnswer)?
        _ = try await awaitEventually {
            let answers = (try await probe.answer(for: target).answer, try self.answer(address, through: link))
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
