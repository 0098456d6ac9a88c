import Foundation
import Glibc
import Netlink
import NetnsTestSupport
import Synchronization
import Testing

/// Dumps interrupted by changes (`NLM_F_DUMP_INTR`). The kernel marks a link or address dump
/// whose parts straddle a change of the namespace's links; a reader that ignores the mark can
/// miss or repeat links. (Route dumps are not marked: IPv6 restarts its walk by itself, IPv4
/// reads its trie under RCU.) With links coming and going all the time, the test first shows
/// that plain dumps do get marked, then that every snapshot the library takes meanwhile, and
/// the state of a subscription that keeps re-reading, hold every link that never changed.
@Suite("Interrupted dumps", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct InterruptedDumpTests {
    /// Stable links: enough for a link dump to take many datagrams.
    private static let stablePairs = 150

    @Test func snapshotsTakenDuringLinkChurnHoldEveryStableLink() throws {
        let ns = try TestNamespace("dumpintr")
        defer { ns.delete() }
        try ns.batch((0..<Self.stablePairs).flatMap { i in
            ["link add s\(i) type veth peer name s\(i)p", "address add 10.9.\(i / 250).\(i % 250 + 1)/32 dev s\(i)"]
        })
        let namespace = try NetworkNamespace.named(ns.name)
        let stable = Set((0..<Self.stablePairs).flatMap { ["s\($0)", "s\($0)p"] } + ["lo"])
        let stableAddresses = Set((0..<Self.stablePairs).map { "10.9.\($0 / 250).\($0 % 250 + 1)" })

        // Links come and go until the churn is stopped.
        let churn = RepeatedBatch(ns, (0..<20).flatMap { ["link add c\($0) type veth peer name c\($0)p", "link del c\($0)"] })
        defer { churn.stop() }
        // The dumps below must run while links come and go: on a loaded machine the first
        // `ip -batch` may not have started yet (a liveness bound only).
        #expect(eventually { churn.rounds.load(ordering: .relaxed) >= 1 }, "the churn runs")

        // Plain dumps, read as the kernel sends them, get marked. They go on until one is, for
        // as long as the churn makes progress (five more rounds of 40 link changes): a count of
        // dumps was not enough on a loaded machine, where `ip -batch` can stall for a while.
        var marked = 0
        let firstRound = churn.rounds.load(ordering: .relaxed)
        let giveUp = ContinuousClock.now + .seconds(60)  // a liveness bound only
        while marked == 0, churn.rounds.load(ordering: .relaxed) < firstRound + 5, ContinuousClock.now < giveUp {
            marked += try namespace.perform { () throws(NetlinkError) in try interruptedLinkDumpCount() }
        }
        #expect(marked > 0, "the churn interrupts link dumps (NLM_F_DUMP_INTR)")

        // The library's snapshots, meanwhile, are whole: libnl starts an interrupted dump again.
        let connection = try NetlinkConnection(namespace: namespace)
        for _ in 0..<30 {
            let state = try connection.snapshot()
            let names = Set(state.links.values.map(\.name))
            #expect(stable.isSubset(of: names), "missing stable links: \(stable.subtracting(names).sorted().prefix(5))")
            #expect(state.links.count == names.count, "a link listed twice")
            let addresses = Set(state.addresses.values.map(\.address.description))
            #expect(stableAddresses.isSubset(of: addresses), "missing addresses: \(stableAddresses.subtracting(addresses).count)")
        }

        // A subscription on the smallest buffer re-reads the state again and again meanwhile.
        // Its thread is held a moment at each of the first link changes, so that the buffer
        // overflows and the state is re-read while links come and go.
        let subscription = try NetlinkSubscription(namespace: namespace, options: SubscriptionOptions(receiveBufferSize: 1))
        let staller = SubscriptionHold(subscription, times: 3, for: .milliseconds(200)) { $0.linkChange != nil }
        defer { staller.cancel() }
        #expect(eventually { subscription.resynchronizationCount >= 3 }, "the churn overflows the subscription")
        churn.stop()
        let kernel = try NetlinkConnection(namespace: namespace)
        #expect(eventually {
            let truth = try? kernel.snapshot()
            return truth.map { Set($0.links.keys) == Set(subscription.state.links.keys) && $0.links == subscription.state.links } ?? false
        }, "after the churn the subscription's links are the kernel's")
        #expect(subscription.termination == nil)
    }
}

/// Dumps the links of the calling thread's namespace on a bare socket and returns how many
/// messages of the answer carried `NLM_F_DUMP_INTR`.
private func interruptedLinkDumpCount() throws(NetlinkError) -> Int {
    var marked = 0
    try rawLinkDump { _, flags, _ in
        if flags & 0x10 /* NLM_F_DUMP_INTR */ != 0 { marked += 1 }
        return true
    }
    return marked
}
