import Foundation
import Netlink
import NetnsTestSupport
import LinuxReachability
import Testing

/// The internet's answer when the link of the preferred default route loses its carrier, against
/// the kernel's own choice, with and without `ignore_routes_with_linkdown`.
@Suite("The internet when a carrier goes", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct InternetCarrierTests {
    /// va (10.1.0.1/24, peer vb) carries the preferred default route (metric 10), vx
    /// (10.2.0.1/24, peer vy) the fallback (metric 20).
    private func twoUplinks(_ label: String, ignoreRoutesWithLinkDown: Bool) throws -> TestNamespace {
        let ns = try wiredNamespace(label)
        if ignoreRoutesWithLinkDown {
            _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        }
        try ns.batch(["link set vx up", "link set vy up", "address add 10.2.0.1/24 dev vx",
                      "route add default via 10.1.0.2 dev va metric 10",
                      "route add default via 10.2.0.2 dev vx metric 20"])
        _ = eventually { (try? ns.ipJSON("link", "show", "dev", "vx").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
        return ns
    }

    /// The output link of the kernel's route to an internet address (`ip route get`).
    private func kernelsLink(in ns: TestNamespace) throws -> String? {
        try ns.ipJSON("route", "get", "198.51.100.7").first?["dev"] as? String
    }

    /// A monitor of the internet in `ns`, listening, once it has said "reachable through va".
    private func listeningToTheInternet(in ns: TestNamespace) throws -> (ReachabilityMonitor, Deliveries) {
        let monitor = try ReachabilityMonitor(target: .internet, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.last?.interface?.name == "va" && deliveries.last?.isReachable == true })
        return (monitor, deliveries)
    }

    @Test func withoutTheSettingTheKernelKeepsSendingThroughTheLinkAndTheInternetIsNotReachable() async throws {
        let ns = try twoUplinks("carrier0", ignoreRoutesWithLinkDown: false)
        defer { ns.delete() }
        let (monitor, deliveries) = try listeningToTheInternet(in: ns)
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.last?.reason == .noCarrier })
        #expect(deliveries.last?.interface?.name == "va")
        let kernels = try kernelsLink(in: ns)
        #expect(kernels == "va", "the kernel still routes through the link without carrier")
        // A one-shot answer (`reach check`) agrees.
        let probe = try ReachabilityProbe(namespace: .named(ns.name))
        #expect(try await probe.answer(for: .internet).answer.reason == .noCarrier)
        monitor.stopListening()
    }

    /// The setting changed while the carrier is gone: the kernel sends only a netconf message,
    /// and its lookups change at once; so does the answer.
    @Test func settingItWhileTheCarrierIsGoneMovesTheAnswerAtOnce() throws {
        let ns = try twoUplinks("carrier2", ignoreRoutesWithLinkDown: false)
        defer { ns.delete() }
        let (monitor, deliveries) = try listeningToTheInternet(in: ns)
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.last?.reason == .noCarrier })
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        #expect(eventually { deliveries.last?.interface?.name == "vx" && deliveries.last?.isReachable == true })
        #expect(try kernelsLink(in: ns) == "vx")
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=0"])
        #expect(eventually { deliveries.last?.reason == .noCarrier && deliveries.last?.interface?.name == "va" })
        #expect(try kernelsLink(in: ns) == "va")
        monitor.stopListening()
    }

    @Test func withTheSettingTheFallbackTakesOverWithNoPassingNotReachable() throws {
        let ns = try twoUplinks("carrier1", ignoreRoutesWithLinkDown: true)
        defer { ns.delete() }
        let (monitor, deliveries) = try listeningToTheInternet(in: ns)
        for _ in 0..<5 {
            try ns.ip("link", "set", "vb", "down")
            #expect(eventually { deliveries.last?.interface?.name == "vx" })
            let kernels = try kernelsLink(in: ns)
            #expect(kernels == "vx")
            try ns.ip("link", "set", "vb", "up")
            #expect(eventually { deliveries.last?.interface?.name == "va" })
        }
        // The round after a carrier change waits for the re-read of the link's routes: it never
        // judges the link without carrier beside its route not yet marked dead.
        let answers = deliveries.answers.withLock { $0 }
        let unreachable = answers.filter { !$0.isReachable }
        #expect(unreachable.isEmpty, "every answer told was reachable: \(answers.map(\.description))")
        monitor.stopListening()
    }
}
