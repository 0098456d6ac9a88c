import Foundation
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
@testable import LinuxReachability

/// Faults under a running monitor: its namespace deleted, its link renamed, its link moved to
/// another namespace and back. Each ends in a correct answer or a typed one, never in silence.
@Suite("Faults", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct FaultTests {
    /// A namespace whose link `va` carries 10.1.0.1/24 and a default route through 10.1.0.2.
    private func routedNamespace(_ label: String) throws -> TestNamespace {
        let ns = try TestNamespace(label)
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2"])
        _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
        return ns
    }

    @Test(.timeLimit(.minutes(1))) func aDeletedNamespaceEndsEveryMonitorWithATypedLastAnswer() async throws {
        let ns = try routedNamespace("gone")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let answers = Locked<[ReachabilityAnswer]>([])
        let monitor = try ReachabilityMonitor(address: IPAddress("198.51.100.1")!, namespace: namespace)
        monitor.onChange = { _, answer in answers.withLock { $0.append(answer) } }
        monitor.startListening()
        defer { monitor.stopListening() }
        let paths = NetworkPathMonitor(namespace: namespace)
        let lastPath = Locked<NetworkPath?>(nil)
        paths.pathUpdateHandler = { path in lastPath.withLock { $0 = path } }
        _ = paths.start(queue: DispatchQueue(label: "fault.paths"))
        defer { paths.cancel() }
        let updates = monitor.updates()
        #expect(eventually { answers.withLock { $0.last?.isReachable == true } })
        #expect(eventually { lastPath.withLock { $0?.status == .satisfied } })

        ns.delete()
        let ended = NetlinkError.namespaceDeleted
        #expect(eventually { answers.withLock { $0.last?.reason } == .monitoringEnded(ended) },
                "the monitor's last answer says monitoring ended: \(String(describing: answers.withLock { $0.last }))")
        #expect(answers.withLock { $0.last?.isReachable } == false)
        #expect(answers.withLock { $0.last?.addresses } == [IPAddress("198.51.100.1")!])
        #expect(eventually { lastPath.withLock { $0?.status == .unsatisfied } }, "the path is unsatisfied")
        #expect(paths.error == .netlink(ended))
        // The sequence is told too, and ends there: a `for await` loop does not wait forever
        // for answers that cannot come (the test's time limit catches a sequence that does not end).
        var lastUpdate: ReachabilityAnswer?
        for await answer in updates { lastUpdate = answer }
        #expect(lastUpdate?.reason == .monitoringEnded(ended), "the sequence is told too")
        // A new monitor of the deleted namespace is refused with a typed error.
        #expect(throws: ReachabilityError.self) { try ReachabilityMonitor(address: IPAddress("198.51.100.1")!, namespace: namespace) }
    }

    @Test func aRenamedLinkIsFollowed() throws {
        let ns = try routedNamespace("rename")
        defer { ns.delete() }
        let answers = Locked<[ReachabilityAnswer]>([])
        let monitor = try ReachabilityMonitor(address: IPAddress("198.51.100.1")!, namespace: .named(ns.name))
        monitor.onChange = { _, answer in answers.withLock { $0.append(answer) } }
        monitor.startListening()
        defer { monitor.stopListening() }
        #expect(eventually { answers.withLock { $0.last?.interface?.name } == "va" })
        // A link must be down to be renamed: the answer goes, then comes back under the new name.
        try ns.batch(["link set va down", "link set va name uplink0", "link set uplink0 up", "route add default via 10.1.0.2"])
        #expect(eventually { answers.withLock { $0.last?.interface?.name } == "uplink0" && answers.withLock { $0.last?.isReachable } == true },
                "the answer names the renamed link: \(String(describing: answers.withLock { $0.last }))")
    }

    @Test func aLinkMovedAwayAndBackIsFollowed() throws {
        let ns = try routedNamespace("move")
        defer { ns.delete() }
        let elsewhere = try TestNamespace("elsewhere")
        defer { elsewhere.delete() }
        let answers = Locked<[ReachabilityAnswer]>([])
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        monitor.onChange = { _, answer in answers.withLock { $0.append(answer) } }
        monitor.startListening()
        defer { monitor.stopListening() }
        #expect(eventually { answers.withLock { $0.last?.isReachable } == true })
        try ns.ip("link", "set", "va", "netns", elsewhere.name)
        #expect(eventually { answers.withLock { $0.last?.isReachable } == false }, "the link left: not reachable")
        #expect(answers.withLock { $0.last?.reason } == .noRoute)
        try elsewhere.ip("link", "set", "va", "netns", ns.name)
        try ns.batch(["link set va up", "address add 10.1.0.1/24 dev va"])
        #expect(eventually { answers.withLock { $0.last?.isReachable } == true && answers.withLock { $0.last?.interface?.name } == "va" },
                "the link came back: reachable again")
    }

    @Test func aResolverThatFailsOrHangsIsReportedWithinItsTimeout() async throws {
        let ns = try routedNamespace("resolver")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        // Hangs: never answers (its sleep outlives the test; nothing waits for it).
        let hanging = try ReachabilityMonitor(target: .host("hangs.example.test"), namespace: namespace,
                                       resolver: FaultyResolver(.hang), resolutionTimeout: .milliseconds(300))
        let failing = try ReachabilityMonitor(target: .host("fails.example.test"), namespace: namespace,
                                       resolver: FaultyResolver(.fail))
        let answers = Locked<[String: ReachabilityAnswer]>([:])
        for (name, monitor) in [("hangs", hanging), ("fails", failing)] {
            monitor.onChange = { _, answer in answers.withLock { $0[name] = answer } }
            monitor.startListening()
        }
        defer { hanging.stopListening(); failing.stopListening() }
        #expect(eventually { answers.withLock { $0["hangs"]?.reason } ==
                .resolutionFailed(.resolutionFailed(host: "hangs.example.test", message: "no answer within 0.3 s")) },
                "a hanging resolver is reported: \(String(describing: answers.withLock { $0["hangs"] }))")
        #expect(eventually { answers.withLock { $0["fails"]?.reason } ==
                .resolutionFailed(.resolutionFailed(host: "fails.example.test", message: "SERVFAIL")) },
                "a failing resolver's error is the answer's reason")
        #expect(answers.withLock { $0.values.allSatisfy { !$0.isReachable } })

        // A timeout too long for a timer is no deadline, not a crash.
        let patient = try ReachabilityProbe(namespace: namespace, resolver: StaticHostResolver(["far.example.test": [IPAddress("10.9.9.9")!]]),
                                            resolutionTimeout: .seconds(10_000_000_000))
        #expect(try await patient.answer(for: .host("far.example.test")).addresses == [IPAddress("10.9.9.9")!])

        // The one-shot probe (reach check) gives up the same way, with a typed error.
        let probe = try ReachabilityProbe(namespace: namespace, resolver: FaultyResolver(.hang), resolutionTimeout: .milliseconds(200))
        await #expect(throws: ReachabilityError.resolutionFailed(host: "hangs.example.test", message: "no answer within 0.2 s")) {
            _ = try await probe.answer(for: .host("hangs.example.test"))
        }
    }
}

/// A resolver that fails with SERVFAIL or never answers.
private struct FaultyResolver: HostResolver {
    enum Behaviour { case fail, hang }
    let behaviour: Behaviour
    init(_ behaviour: Behaviour) { self.behaviour = behaviour }

    func resolve(_ host: String) async throws -> [IPAddress] {
        switch behaviour {
        case .fail:
            throw ReachabilityError.resolutionFailed(host: host, message: "SERVFAIL")
        case .hang:
            try? await Task.sleep(for: .seconds(3600))
            return []
        }
    }
}
