import Dispatch
import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability

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
    /// An engine of a wired namespace (`routes` added) with a gated resolver, started with
    /// its queue held: its first round, which evaluates a watched host and starts a resolution
    /// of its own, runs only after what the test does before it signals `held`.
    private struct HeldEngine {
        let ns: TestNamespace
        let resolver = GatedResolver()
        let engine: ReachabilityEngine
        let held = DispatchSemaphore(value: 0)

        init(_ label: String, routes: [String]) throws {
            ns = try wiredNamespace(label)
            try ns.batch(routes)
            engine = try ReachabilityEngine(namespace: .named(ns.name), policy: .none, resolver: resolver)
            engine.queue.async { [held] in held.wait() }
            engine.start()
        }

        /// The first answers of two watches of `target`: the earlier one is made, `before` runs
        /// here, `middle` is queued behind the earlier watch's first evaluation, the later
        /// watch is made, and the queue is let go. Nil for a watch told nothing in time.
        func firstAnswers(of target: ReachabilityTarget, before: () -> Void = {},
                          middle: @escaping @Sendable () -> Void) -> (earlier: ReachabilityAnswer?, later: ReachabilityAnswer?) {
            let earlier = Deliveries(), later = Deliveries()
            let earlierToken = engine.watch(target) { answer, _ in earlier.append(answer) }
            before()
            engine.queue.async(execute: middle)
            let laterToken = engine.watch(target) { answer, _ in later.append(answer) }
            held.signal()
            _ = eventually { later.count >= 1 && earlier.count >= 1 }
            engine.unwatch(earlierToken)
            engine.unwatch(laterToken)
            return (earlier.answers.withLock { $0.first }, later.answers.withLock { $0.first })
        }

        /// Lets every resolution answer and deletes the namespace.
        func end() {
            resolver.release(through: .max, with: [HostFirstAnswerTests.blackholed])
            ns.delete()
        }
    }

    @Test func aWatchToldAfterAQuerysResolutionHearsTheResolvedAnswer() throws {
        let setup = try HeldEngine("hostfirst", routes: ["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        defer { setup.end() }
        let (resolver, engine) = (setup.resolver, setup.engine)
        let target = ReachabilityTarget.host(Self.name)
        let first = setup.firstAnswers(of: target, before: {
            // No answer is kept yet: the query answers optimistically and resolves (call 1).
            #expect(engine.currentAnswer(for: target).isReachable)
            #expect(eventually { resolver.callCount == 1 })
        }, middle: {
            // After the host's first evaluations (the start's round, the earlier watch's block:
            // they keep an optimistic answer and start the host's own resolution, held), the
            // query's resolution lands.
            resolver.release(through: 1, with: [Self.blackholed])
            _ = eventually { engine.resolvedAddresses(of: Self.name) != nil }
        })
        // Every resolution after the query's (the watch's own, and those of the rounds the
        // namespace's first events start) is still held.
        #expect(resolver.callCount >= 2)
        for (label, answer) in [("earlier", first.earlier), ("later", first.later)] {
            #expect(answer?.reason == .blackholeRoute, "\(label) watch's first answer: \(String(describing: answer))")
            #expect(answer?.addresses == [Self.blackholed], "\(label) watch's first answer's addresses")
        }
    }

    /// A watch whose host was judged optimistically while the subscription ran, and that is
    /// told after the subscription ended (its namespace deleted) with no resolution known,
    /// hears that monitoring ended, not the optimistic answer; so does a watch that waited.
    @Test func aWatchToldAfterTheSubscriptionEndedHearsThatItEnded() throws {
        let setup = try HeldEngine("hostended", routes: ["route add default via 10.1.0.2"])
        defer { setup.end() }
        let (ns, engine) = (setup.ns, setup.engine)
        // After the host's first evaluations (optimistic; its resolution held), the namespace
        // goes and the subscription ends.
        let first = setup.firstAnswers(of: .host(Self.name), middle: {
            ns.delete()
            _ = eventually { engine.termination != nil }
        })
        for (label, answer) in [("earlier", first.earlier), ("later", first.later)] {
            guard case .monitoringEnded = answer?.reason else {
                Issue.record("\(label) watch's first answer: \(String(describing: answer))")
                continue
            }
        }
    }
}
