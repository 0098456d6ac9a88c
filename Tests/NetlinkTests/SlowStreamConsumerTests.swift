import Foundation
@testable import Netlink
import NetnsTestSupport
import Testing

/// ``NetlinkSubscription/events(bufferLimit:)`` does not buffer without end for a consumer that
/// sleeps through a storm: it drops the batches past its limit and, once the consumer has taken
/// most of what waits, reports the differences and `resynchronized(.overflow)`.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct SlowStreamConsumerTests {
    @Test func aConsumerThatFallsBehindCatchesUpThroughAResynchronization() async throws {
        // The scenario needs the subscription to tell the thirty changes one by one: a
        // resynchronization before the storm (the kernel's own overflow) would turn them into
        // one difference, and a stream that waits under half its limit keeps no earlier state,
        // so it gives the storm's batch whole, as designed. Such a run proves nothing and is
        // made again.
        for _ in 0..<3 {
            if try await fallBehindOnce() { return }
        }
        Issue.record("every run resynchronized before the storm")
    }

    /// One run of the scenario above; false when the subscription resynchronized before the
    /// storm.
    private func fallBehindOnce() async throws -> Bool {
        try await withTestNamespace("slow") { ns in
            // No IPv6: its addresses would come and go with the link.
            try ns.disableIPv6()
            try ns.batch(["link add va type veth peer name vb", "link set vb up"])
            let index = try ns.index(of: "va")
            let subscription = try NetlinkSubscription(namespace: .named(ns.name),
                                                       options: SubscriptionOptions(receiveBufferSize: 32 << 20))
            var iterator = subscription.events(bufferLimit: 50).makeAsyncIterator()
            guard case .snapshot(let snapshot)? = try await iterator.next() else {
                Issue.record("the first event is the snapshot")
                return true
            }
            var links = snapshot.links
            // Thirty changes wait for the consumer, then a storm of a thousand: more than the
            // limit allows.
            try ns.batch((1...30).map { "link set va mtu \(1300 + $0)" })
            #expect(eventually { subscription.state.links[index]?.mtu == 1330 })
            guard subscription.resynchronizationCount == 0 else { return false }
            try ns.batch((0..<500).flatMap { _ in ["link set va up", "link set va down"] } + ["link set va up", "link set va mtu 1400"])
            #expect(eventually { subscription.state.links[index]?.mtu == 1400 && subscription.state.links[index]?.isUp == true })
            // The subscription shows a batch's state before it hands the batch to its streams
            // (see `Publisher.publish`): consumed from here, the thirty could be taken before
            // the storm's last batch reached the stream, which then took it whole, as a batch
            // into an empty stream. A later change, seen in the state, is published after the
            // storm was handed over (seen under load: 2 503 events in one batch).
            let marker = IPAddress("192.0.2.77")!
            try ns.batch(["address add 192.0.2.77/32 dev lo"])
            #expect(eventually { subscription.state.addresses.values.contains { $0.address == marker } })
            var received = 0
            var resynchronized = false
            // Until told of the resynchronization; a stream that buffered the whole storm (over
            // 2 000 events) would hand over more than a thousand first.
            while !resynchronized, received <= 1000, let event = try await iterator.next() {
                received += 1
                switch event {
                case .link(.new(let link)), .link(.changed(_, let link)): links[link.index] = link
                case .link(.removed(let link)): links[link.index] = nil
                case .resynchronized(let reason):
                    #expect(reason == .overflow)
                    resynchronized = true
                default: break
                }
            }
            #expect(resynchronized, "the consumer was told it missed events")
            let resynchronizations = subscription.resynchronizationCount
            #expect(received < 200, "at most about the limit waited: \(received) events, not the storm's thousand (\(resynchronizations) resynchronizations)")
            #expect(links == subscription.state.links, "the consumer's view equals the subscription's after the differences")
            #expect(links[index]?.mtu == 1400 && links[index]?.isUp == true)
            return true
        }
    }

    @Test func aBatchThatOverflowsAsTheLastEventIsTakenStillEndsInAResynchronization() async throws {
        // A batch that overflows the buffer while the consumer takes the last waiting event: the
        // consumer's check of the overflow once came before the producer set it, and then no
        // event was left to take, so the stream handed over nothing more, ever.
        @Sendable func state(_ mtu: UInt32) -> NetworkState {
            NetworkState(links: [Link(index: 2, name: "eth0", arphrdType: .ether, flags: [], operState: .down, mtu: mtu)],
                         addresses: [], defaultRoutes: [])
        }
        let (stream, continuation) = AsyncThrowingStream<NetlinkEvent, any Error>.makeStream()
        let sink = StreamObserver(continuation: continuation, limit: 2)
        sink.enqueue([.snapshot(state(0))], settled: true)
        let last: UInt32 = 40_000
        let seen = Task {
            var mtu: UInt32 = 0
            for try await event in NetlinkEventStream(base: stream, sink: sink) {
                if case .link(.changed(_, let link)) = event { mtu = link.mtu }
                if mtu == last { return true }
            }
            return false
        }
        // The consumer gets ten seconds from the producer's last batch: a stalled stream has
        // nothing to hand over by then, and a slow producer fails nothing (ten seconds from
        // the start failed once in three runs under the thread sanitizer beside busy loops).
        let (produced, producerDone) = AsyncStream<Void>.makeStream()
        Thread.detachNewThread {
            defer { producerDone.finish() }
            for burst in 1...Int(last) / 2 {
                let first = UInt32(burst * 2 - 1)
                let events: [NetlinkEvent] = [first, first + 1].map { mtu in
                    .link(.changed(old: state(mtu - 1).links[2]!, new: state(mtu).links[2]!))
                }
                sink.enqueue(events, settled: true, state: state(first + 1))
                if burst % 64 == 0 { sched_yield() }
            }
        }
        let deadline = Task {
            for await _ in produced {}
            try await Task.sleep(for: .seconds(10))
            continuation.finish()
        }
        #expect(try await seen.value, "the consumer reached the last state")
        deadline.cancel()
    }

    @Test func aStatesChangesSinceAnotherTurnOneIntoTheOther() {
        func link(_ index: Int32, _ name: String) -> Link {
            Link(index: index, name: name, arphrdType: .ether, flags: [], operState: .down, mtu: 1500)
        }
        let a = link(2, "eth0"), b = link(3, "wlan0"), c = link(4, "wwan0")
        var renamed = a
        renamed.name = "uplink0"
        let old = NetworkState(links: [a, b], addresses: [], defaultRoutes: [])
        var new = NetworkState(links: [renamed, c], addresses: [], defaultRoutes: [])
        new.policyRules[.ipv4] = []
        let changes = new.changes(since: old)
        #expect(changes.contains(.link(.changed(old: a, new: renamed))))
        #expect(changes.contains(.link(.new(c))))
        #expect(changes.contains(.rulesChanged(.ipv4)))
        #expect(changes.contains(.link(.removed(b))))
        #expect(changes.count == 4)
        #expect(new.changes(since: new).isEmpty)
    }
}
