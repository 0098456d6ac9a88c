import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability

/// An interface address changes the kernel's answers in its own family only, so the engine
/// runs a round for it only when a target of that family, a host name or a path observer could
/// see the difference.
@Suite("Address changes and evaluation rounds", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct AddressFamilyRoundTests {
    @Test func anIPv6AddressCostsIPv4TargetsNoRound() throws {
        let ns = try TestNamespace("famr")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "link add vx type veth peer name vy"])
        // The kernel's link watch sets va's operational state a moment after its carrier came
        // (up to a second on a busy machine), a link change with a round of its own.
        #expect(eventually { (try? ns.ipJSON("link", "show", "va").first?["operstate"] as? String) == "UP" })
        let namespace = try NetworkNamespace.named(ns.name)
        let engine = try ReachabilityEngine.shared(namespace: namespace)
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: namespace)
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.count == 1 })
        // The rounds of the set-up's own events: until none came for half a second.
        let before = try #require(settledValue(every: 0.5) { engine.evaluationCount }, "the set-up's rounds never stopped")

        // An IPv6 address, seen by the subscription: no round for the IPv4 target.
        try ns.ip("address", "add", "2001:db8:1::1/64", "dev", "vx", "nodad")
        let added = IPAddress("2001:db8:1::1")!
        #expect(eventually { engine.subscription.state.addresses.values.contains { $0.address == added } })
        usleep(300_000)  // a round, if one were queued, would have run by now
        #expect(engine.evaluationCount == before, "an IPv6 address cannot change an IPv4 answer")

        // An IPv4 address (the preferred source of its routes may change): one round.
        try ns.ip("address", "add", "10.7.0.1/24", "dev", "vx")
        #expect(eventually { engine.evaluationCount == before + 1 })

        // A path observer sees every round: with one, the IPv6 address gets a round too, in
        // which the IPv4 target is still not evaluated again.
        let rounds = Locked(0)
        let path = engine.observeRounds { _ in rounds.withLock { $0 += 1 } }
        defer { engine.stopObservingRounds(path) }
        // The observer's first snapshot, then rounds for the veths' IPv6 link-local addresses
        // as their duplicate address detection ends: wait until the rounds settle.
        #expect(eventually { rounds.withLock { $0 } >= 1 })
        let settled = try #require(settledValue(every: 0.5) { rounds.withLock { $0 } }, "the rounds never settled")
        let evaluations = engine.evaluationCount
        try ns.ip("address", "add", "2001:db8:2::1/64", "dev", "vx", "nodad")
        #expect(eventually { rounds.withLock { $0 } > settled })
        #expect(engine.evaluationCount == evaluations)
        #expect(deliveries.count == 1)
    }
}
