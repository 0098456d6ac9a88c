import Dispatch
import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability

/// A resolver whose calls each wait until the test releases them. Calls are numbered from 1 in
/// the order they start; the test releases them in order, each group with its own answer.
final class GatedResolver: HostResolver {
    /// The answers released so far: calls up to `through` get `addresses` (the first group
    /// that reaches a call answers it).
    private let released = Locked<[(through: Int, addresses: [IPAddress])]>([])
    let calls = Locked(0)
    var callCount: Int { calls.withLock { $0 } }

    /// Lets the calls numbered up to `last` that still wait answer `addresses`.
    func release(through last: Int, with addresses: [IPAddress]) {
        released.withLock { $0.append((last, addresses)) }
    }

    func resolve(_ host: String) async throws -> [IPAddress] {
        let call = calls.withLock { calls -> Int in
            calls += 1
            return calls
        }
        while true {
            if let group = released.withLock({ $0.first { call <= $0.through } }) { return group.addresses }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A monitor stopped and started again, a target watched again while an older resolution of it
/// is still under way, and a path sequence iterated without another reference to its monitor.
@Suite("Restarts and late results", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct RestartTests {
    static let blackholed = IPAddress("198.51.100.1")!
    static let onLink = IPAddress("10.1.0.7")!

    /// `wiredNamespace` with a default route via 10.1.0.2 and 198.51.100.0/24 blackholed.
    private func routedNamespace(_ label: String) throws -> TestNamespace {
        let ns = try wiredNamespace(label)
        try ns.batch(["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        return ns
    }

    @Test func aRestartTellsTheCurrentAnswerFirstAgain() throws {
        let ns = try wiredNamespace("rst1")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.count == 1 })
        monitor.stopListening()
        monitor.startListening()
        #expect(eventually { deliveries.count == 2 }, "a new start tells the current answer, unchanged as it is")
        #expect(deliveries.answers.withLock { $0.count == 2 && $0[0] == $0[1] })
        monitor.stopListening()
    }

    /// A change held in a coalescing window when the monitor stops belongs to that listening:
    /// the next start tells its current answer at once, and its own changes after its own
    /// windows, instead of leaving them to the old window's timer (which may not deliver them).
    @Test func aCoalescingWindowOfAnEndedListeningKeepsNothingOfTheNext() throws {
        let ns = try wiredNamespace("rst2")
        defer { ns.delete() }
        let coalesced = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        coalesced.coalescingInterval = .seconds(3)
        let deliveries = Deliveries()
        coalesced.onChange = { _, answer in deliveries.append(answer) }
        // A monitor of the same target in the same engine: once it is told of a change, the
        // round that told it has put the change into `coalesced`'s window.
        let witness = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        let witnessed = Deliveries()
        witness.onChange = { _, answer in witnessed.append(answer) }
        coalesced.startListening()
        witness.startListening()
        defer { witness.stopListening() }
        #expect(eventually { deliveries.count == 1 && witnessed.count == 1 })

        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { witnessed.count == 2 })
        #expect(deliveries.count == 1, "the change waits in the window")
        coalesced.stopListening()
        coalesced.startListening()
        #expect(eventually { deliveries.count == 2 }, "the new start tells its current answer at once")
        #expect(deliveries.last?.isReachable == false)
        try ns.ip("link", "set", "vb", "up")  // inside the old window
        #expect(eventually { deliveries.last?.isReachable == true }, "the new listening's change is told after its window")
        coalesced.stopListening()
    }

    /// A target watched again gets a new entry, whose resolutions are counted from one again:
    /// a slow resolution started for the old entry (a name server that answers late) must not
    /// pass for the new entry's first one, and take its place.
    @Test func aResolutionOfAnEarlierWatchDoesNotOverwriteTheNewWatchesAnswers() throws {
        let ns = try routedNamespace("rst3")
        defer { ns.delete() }
        let resolver = GatedResolver()
        let monitor = try ReachabilityMonitor(target: .host("api.example.test"), namespace: .named(ns.name), resolver: resolver)
        let deliveries = Deliveries.listening(to: monitor)
        // The first watch resolves the name (once or more: its first round re-resolves too).
        #expect(eventually { resolver.callCount > 0 })
        settle()
        let firstWatchCalls = resolver.callCount
        monitor.stopListening()
        monitor.startListening()
        #expect(eventually { resolver.callCount > firstWatchCalls }, "the new watch resolves the name itself")
        resolver.release(through: firstWatchCalls, with: [Self.blackholed])  // the first watch's results land first...
        settle()
        resolver.release(through: .max, with: [Self.onLink])  // ...then the new watch's own
        #expect(eventually { deliveries.last?.addresses == [Self.onLink] })
        settle()
        #expect(deliveries.last?.addresses == [Self.onLink])
        #expect(deliveries.last?.isReachable == true)
        #expect(!deliveries.answers.withLock { $0 }.contains { $0.addresses == [Self.blackholed] },
                "the earlier watch's addresses were never the answer")
        monitor.stopListening()
    }

    /// A queried (unwatched) host name resolved across a network change is kept as stale: the
    /// next query answers from it and resolves the name again.
    @Test func aQueryResolvedAcrossANetworkChangeIsResolvedAgain() throws {
        let ns = try routedNamespace("rst4")
        defer { ns.delete() }
        let resolver = GatedResolver()
        let engine = try ReachabilityEngine(namespace: .named(ns.name), policy: .none, resolver: resolver)
        engine.start()
        let target = ReachabilityTarget.host("db.example.test")
        #expect(engine.currentAnswer(for: target).addresses.isEmpty, "optimistic while it resolves")
        #expect(eventually { resolver.callCount == 1 })
        let changes = engine.hostNetworkChangeCount
        try ns.ip("address", "add", "10.1.0.60/24", "dev", "va")
        #expect(eventually { engine.hostNetworkChangeCount > changes })
        resolver.release(through: 1, with: [Self.blackholed])
        #expect(eventually { engine.currentAnswer(for: target).addresses == [Self.blackholed] })
        #expect(eventually { resolver.callCount == 2 }, "the stale result is resolved again")
        resolver.release(through: .max, with: [Self.onLink])
        #expect(eventually { engine.currentAnswer(for: target).addresses == [Self.onLink] })
    }

    /// `for await path in NetworkPathMonitor()` follows paths with no other reference to the
    /// monitor, as NWPathMonitor's sequence does; once the iteration ends the monitor goes.
    @Test func aPathSequenceKeepsItsMonitorWhileIteratedAndReleasesItAfter() async throws {
        let ns = try routedNamespace("rst5")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        var firstPath: NetworkPath?
        for await path in NetworkPathMonitor(namespace: namespace) {
            firstPath = path
            break
        }
        #expect(firstPath?.status == .satisfied)

        weak var weakMonitor: NetworkPathMonitor?
        var iterator: AsyncStream<NetworkPath>.Iterator?
        do {
            let monitor = NetworkPathMonitor(namespace: namespace)
            weakMonitor = monitor
            iterator = monitor.makeAsyncIterator()
        }
        let next = await iterator?.next()
        #expect(next?.status == .satisfied)
        #expect(weakMonitor != nil, "the iteration keeps its monitor")
        iterator = nil
        #expect(eventually { weakMonitor == nil }, "and lets it go when it ends")
    }
}
