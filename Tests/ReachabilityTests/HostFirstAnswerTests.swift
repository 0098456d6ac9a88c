import Dispatch
import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import Reachability

/// The first answer a watcher of a host name is told, when a query's resolution of the name
/// lands before the watch's own: it must come from the addresses now known, not from the
/// optimistic answer the entry kept while nothing was resolved.
@Suite("A host's first answer", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct HostFirstAnswerTests {
    static let name = "api.example.test"
    static let blackholed = IPAddress("198.51.100.1")!

    /// Orders the engine's queue by hand: an earlier watch's first evaluation keeps an
    /// optimistic answer (nothing resolved), then a query's resolution lands, then a later
    /// watch is told its first answer. Both watchers must hear the resolved (blackholed) answer
    /// first, while the earlier watch's own resolution is still under way.
    @Test func aWatchToldAfterAQuerysResolutionHearsTheResolvedAnswer() throws {
        let ns = try wiredNamespace("hostfirst")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        let resolver = GatedResolver()
        defer { resolver.release(through: .max, with: [Self.blackholed]) }
        let engine = try ReachabilityEngine(namespace: .named(ns.name), policy: .none, resolver: resolver)
        let target = ReachabilityTarget.host(Self.name)
        // The queue is held before the engine starts: its first round, which evaluates the
        // watched host and starts a resolution of its own, then runs only after the query's
        // resolution (call 1) started, and before the earlier watch's block.
        let held = DispatchSemaphore(value: 0)
        engine.queue.async { held.wait() }
        engine.start()
        let earlier = Deliveries(), later = Deliveries()
        let earlierToken = engine.watch(target) { answer, _ in earlier.append(answer) }
        defer { engine.unwatch(earlierToken) }
        // No answer is kept yet: the query answers optimistically and resolves (call 1).
        #expect(engine.currentAnswer(for: target).isReachable)
        #expect(eventually { resolver.callCount == 1 })
        // After the host's first evaluations (the start's round, the earlier watch's block:
        // they keep an optimistic answer and start the host's own resolution, held), the
        // query's resolution lands.
        engine.queue.async {
            resolver.release(through: 1, with: [Self.blackholed])
            _ = eventually { engine.resolvedAddresses(of: Self.name) != nil }
        }
        let laterToken = engine.watch(target) { answer, _ in later.append(answer) }
        defer { engine.unwatch(laterToken) }
        held.signal()
        #expect(eventually { later.count >= 1 && earlier.count >= 1 })
        // Every resolution after the query's (the watch's own, and those of the rounds the
        // namespace's first events start) is still held.
        #expect(resolver.callCount >= 2)
        for (label, deliveries) in [("later", later), ("earlier", earlier)] {
            let first = deliveries.answers.withLock { $0.first }
            #expect(first?.reason == .blackholeRoute, "\(label) watch's first answer: \(String(describing: first))")
            #expect(first?.addresses == [Self.blackholed], "\(label) watch's first answer's addresses")
        }
    }

    /// A watch whose host was judged optimistically while the subscription ran, and that is
    /// told after the subscription ended (its namespace deleted) with no resolution known,
    /// hears that monitoring ended, not the optimistic answer; so does a watch that waited.
    @Test func aWatchToldAfterTheSubscriptionEndedHearsThatItEnded() throws {
        let ns = try wiredNamespace("hostended")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2"])
        let resolver = GatedResolver()
        defer { resolver.release(through: .max, with: [Self.blackholed]) }
        let engine = try ReachabilityEngine(namespace: .named(ns.name), policy: .none, resolver: resolver)
        let target = ReachabilityTarget.host(Self.name)
        let held = DispatchSemaphore(value: 0)
        engine.queue.async { held.wait() }
        engine.start()
        let earlier = Deliveries(), later = Deliveries()
        let earlierToken = engine.watch(target) { answer, _ in earlier.append(answer) }
        defer { engine.unwatch(earlierToken) }
        // After the host's first evaluations (optimistic; its resolution held), the namespace
        // goes and the subscription ends.
        engine.queue.async {
            ns.delete()
            _ = eventually { engine.termination != nil }
        }
        let laterToken = engine.watch(target) { answer, _ in later.append(answer) }
        defer { engine.unwatch(laterToken) }
        held.signal()
        #expect(eventually { later.count >= 1 && earlier.count >= 1 })
        for (label, deliveries) in [("later", later), ("earlier", earlier)] {
            let first = deliveries.answers.withLock { $0.first }
            guard case .monitoringEnded = first?.reason else {
                Issue.record("\(label) watch's first answer: \(String(describing: first))")
                continue
            }
        }
    }
}
