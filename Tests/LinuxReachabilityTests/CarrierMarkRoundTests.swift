import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability

/// When a link loses or regains its carrier, the kernel marks its routes `linkdown` before it
/// tells of the link, and the subscription's re-read reports the mark on the link's default
/// routes afterwards. Address targets asked the kernel in the link's own round, so the mark
/// costs them no second round; the internet, judged from the default routes, gets one.
@Suite("Carrier marks and evaluation rounds", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct CarrierMarkRoundTests {
    private static let uplink = Route(family: .ipv4, destination: .defaultRoute(.ipv4),
                                      nexthops: [Nexthop(gateway: IPAddress("10.1.0.2"), linkIndex: 2)])

    /// The route with its single next hop marked as the kernel reports it: on both.
    private static func marked(_ route: Route) -> Route {
        var route = route
        route.flags.insert(.linkDown)
        route.nexthops[0].flags.insert(.linkDown)
        return route
    }

    @Test func onlyALinkdownMarkIsACarriersMark() {
        let marked = Self.marked(Self.uplink)
        #expect(ReachabilityEngine.marksCarrierOnly(.changed(old: Self.uplink, new: marked)))
        #expect(ReachabilityEngine.marksCarrierOnly(.changed(old: marked, new: Self.uplink)))
        var dead = marked
        dead.flags.insert(.dead)
        #expect(!ReachabilityEngine.marksCarrierOnly(.changed(old: Self.uplink, new: dead)), "a dead next hop changes lookups")
        var moved = marked
        moved.metric = 100
        #expect(!ReachabilityEngine.marksCarrierOnly(.changed(old: Self.uplink, new: moved)))
        #expect(!ReachabilityEngine.marksCarrierOnly(.changed(old: Self.uplink, new: Self.uplink)), "no change marks nothing")
        #expect(!ReachabilityEngine.marksCarrierOnly(.new(marked)))
        #expect(!ReachabilityEngine.marksCarrierOnly(.removed(marked)))
    }

    /// Address targets answered inside the round (on the evaluation queue, so one round runs
    /// per batch that matters, none coalesced): across a carrier loss and return of the uplink,
    /// every round comes from a batch with a link in it, none from the re-read's marks.
    @Test func theUplinksMarkCostsAddressTargetsNoRound() throws {
        let ns = try TestNamespace("cmark")
        defer { ns.delete() }
        try ns.disableIPv6()
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2 dev va"])
        #expect(eventually { (try? ns.ipJSON("link", "show", "va").first?["operstate"] as? String) == "UP" })
        let namespace = try NetworkNamespace.named(ns.name)
        let engine = try ReachabilityEngine.shared(namespace: namespace)
        let queue = try ReachabilityMonitor.evaluationQueue(in: namespace)
        // One on the link, one through the default route.
        let monitors = try ["10.1.0.9", "192.0.2.1"].map {
            try ReachabilityMonitor(address: IPAddress($0)!, namespace: namespace, queue: queue)
        }
        let deliveries = monitors.map(Deliveries.listening(to:))
        defer { for monitor in monitors { monitor.stopListening() } }
        #expect(eventually { deliveries.allSatisfy { $0.count == 1 } })

        // The batches the engine gets, seen by a second observer of its subscription.
        let batches = Locked<[[NetlinkEvent]]>([])
        let observation = engine.subscription.observeSettledBatchesOnSubscriptionThread { events, _ in
            if !events.isEmpty { batches.withLock { $0.append(events) } }
        }
        defer { observation.cancel() }
        #expect(eventually { !batches.withLock { $0.isEmpty } })
        let before = try #require(settledValue(every: 0.5) { engine.evaluationCount }, "the set-up's rounds never stopped")
        batches.withLock { $0.removeAll() }

        for (state, marked) in [("down", true), ("up", false)] {
            try ns.ip("link", "set", "vb", state)
            #expect(eventually {
                engine.subscription.state.defaultRoutes.values.first?.flags.contains(.linkDown) == marked
            }, "the re-read marks the default route (\(state))")
            #expect(eventually { deliveries.allSatisfy { $0.last?.isReachable == !marked } })
        }
        let after = try #require(settledValue(every: 0.5) { engine.evaluationCount }, "the rounds never stopped")

        let seen = batches.withLock { $0 }
        let marks = seen.filter { batch in
            batch.allSatisfy { if case .route(let change) = $0 { ReachabilityEngine.marksCarrierOnly(change) } else { false } }
        }
        let links = seen.filter { batch in batch.contains { if case .link = $0 { true } else { false } } }
        #expect(marks.count >= 2, "a mark for each carrier change: \(seen)")
        #expect(links.count + marks.count == seen.count, "only links and marks: \(seen)")
        #expect(after - before == monitors.count * links.count,
                "\(after - before) evaluations for \(links.count) batches with links and \(marks.count) with marks")
    }
}
