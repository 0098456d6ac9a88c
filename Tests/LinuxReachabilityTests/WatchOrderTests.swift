import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// The engine walks its targets in the order they were first watched (allocation order, which
/// keeps a round over 10 000 monitors off main memory's latency; see `InsertionOrderedTable`).
/// Watchers told inside a round hear of a change in that order, also after targets were
/// dropped and watched again.
@Suite("Targets walked in watch order", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct WatchOrderTests {
    @Test func aRoundTellsItsWatchersInTheOrderTheirTargetsWereFirstWatched() throws {
        let ns = try TestNamespace("order")
        defer { ns.delete() }
        // No IPv6: its link-local addresses arrive a moment later, and a round with an address
        // event shares no lookup.
        try ns.disableIPv6()
        try ns.batch([
            "link add va type veth peer name vb", "link set va up", "link set vb up",
            "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2",
        ])
        let engine = try ReachabilityEngine(namespace: try NetworkNamespace.named(ns.name), policy: .none,
                                            resolver: StaticHostResolver([:]))
        engine.start()
        let addresses = (0..<300).map { IPAddress("198.18.\($0 / 250).\($0 % 250 + 1)")! }
        // A permutation (7 919 is prime to 300): neither sorted nor any hash's order.
        let watchOrder = (0..<300).map { addresses[($0 * 7919) % 300] }
        let told = Locked<[IPAddress]>([])
        let firstAnswers = Locked(0)
        var tokens: [IPAddress: ReachabilityEngine.Token] = [:]
        func watch(_ address: IPAddress) {
            let first = Locked(true)
            tokens[address] = engine.watch(.address(address)) { _, _ in
                // On the engine's queue, in the round: the first answer is not a change.
                let wasFirst = first.withLock { isFirst in
                    defer { isFirst = false }
                    return isFirst
                }
                if wasFirst { firstAnswers.withLock { $0 += 1 } } else { told.withLock { $0.append(address) } }
            }
        }
        for address in watchOrder { watch(address) }
        defer { for token in tokens.values { engine.unwatch(token) } }
        // Every first answer heard before the change: a round that came first would store a
        // target's answer, and the watch would then tell the changed one as its first.
        #expect(eventually { firstAnswers.withLock { $0 } == 300 })

        // Two thirds dropped (their holes squeezed out), and some of them watched again: those
        // come last.
        for address in watchOrder.prefix(200) { engine.unwatch(tokens.removeValue(forKey: address)!) }
        let again = watchOrder.prefix(200).enumerated().filter { $0.offset % 10 == 3 }.map(\.element)
        for address in again { watch(address) }
        #expect(eventually { firstAnswers.withLock { $0 } == 300 + again.count })
        let expected = Array(watchOrder.dropFirst(200)) + again

        // The first change asks the kernel for each target; the second shares one lookup.
        for (round, gateway) in ["10.1.0.3", "10.1.0.4"].enumerated() {
            told.withLock { $0.removeAll() }
            let saved = engine.sharedLookupCount
            try ns.batch(["route replace default via \(gateway)"])
            #expect(eventually { told.withLock { $0.count } >= expected.count }, "round \(round)")
            let heard = told.withLock { $0 }
            let inWatchOrder = heard == expected
            #expect(inWatchOrder, "round \(round): \(heard.count) told, first out of order at \(heard.indices.first { heard[$0] != expected[$0] } ?? -1)")
            if round == 1 { #expect(engine.sharedLookupCount > saved, "the second round shared a lookup") }
        }
    }
}
