import Dispatch
import Glibc
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
@testable import LinuxReachability

/// A watched host name is resolved at most once at a time: the network changes that arrive
/// while a resolution runs are merged into one more, shared by every monitor of the name, and
/// nothing runs once the changes have stopped and that one has ended.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct ResolutionMergeTests {
    /// Answers after a pause, counting its calls and how many run at once.
    final class CountingResolver: HostResolver, Sendable {
        let calls = Atomic<Int>(0)
        let running = Atomic<Int>(0)
        let mostAtOnce = Atomic<Int>(0)

        func resolve(_ host: String) async throws -> [IPAddress] {
            calls.add(1, ordering: .relaxed)
            let now = running.add(1, ordering: .relaxed).newValue
            mostAtOnce.max(now, ordering: .relaxed)
            defer { running.subtract(1, ordering: .relaxed) }
            try? await Task.sleep(for: .milliseconds(150))
            return [IPAddress("10.1.0.2")!]
        }
    }

    @Test func aBurstOfNetworkChangesCostsANameAtMostTwoResolutions() throws {
        let ns = try wiredNamespace("merge")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let resolver = CountingResolver()
        let first = try ReachabilityMonitor(target: .host("db.example.test"), namespace: namespace, resolver: resolver)
        let deliveries = Deliveries.listening(to: first)
        defer { first.stopListening() }
        #expect(eventually { deliveries.last?.isReachable == true })
        // The namespace's own changes over first: IPv6 duplicate address detection ends with
        // an address change, which asks for the name again.
        #expect(eventually { (try? ns.ip("-6", "address", "show", "tentative"))?.isEmpty == true })
        usleep(300_000)
        #expect(eventually { resolver.running.load(ordering: .relaxed) == 0 })
        let before = resolver.calls.load(ordering: .relaxed)

        // 40 address changes, each of which asks for the name again, in one burst.
        try ns.batch((0..<20).flatMap { ["address add 10.7.\($0).1/24 dev va", "address del 10.7.\($0).1/24 dev va"] })
        #expect(eventually { resolver.calls.load(ordering: .relaxed) > before })
        #expect(eventually { resolver.running.load(ordering: .relaxed) == 0 })
        usleep(500_000)
        let after = resolver.calls.load(ordering: .relaxed)
        #expect(after - before <= 4, "\(after - before) resolutions for one burst")
        #expect(resolver.mostAtOnce.load(ordering: .relaxed) == 1, "one resolution at a time")
        // Nothing left over once the changes have stopped.
        usleep(1_000_000)
        #expect(resolver.calls.load(ordering: .relaxed) == after && resolver.running.load(ordering: .relaxed) == 0)
        #expect(deliveries.last?.isReachable == true)
    }
}
