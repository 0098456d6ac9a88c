import Glibc
import Netlink
import NetnsTestSupport
import Synchronization
import Testing

@Suite("Observers on the subscription's own thread", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SubscriptionThreadObserverTests {
    @Test func snapshotFirstThenChangesAllOnOneThreadThatIsNotTheCallers() throws {
        let ns = try TestNamespace("inline")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let seen = Mutex<(events: [NetlinkEvent], threads: Set<UInt>)>(([], []))
        let observation = subscription.observeOnSubscriptionThread { event in
            seen.withLock {
                $0.events.append(event)
                $0.threads.insert(UInt(pthread_self()))
            }
        }
        defer { observation.cancel() }
        try ns.ip("link", "set", "dum0", "up")
        try ns.ip("link", "set", "dum0", "mtu", "1400")
        #expect(eventually { seen.withLock { $0.events.contains { $0.linkChange?.value.mtu == 1400 } } })
        let (events, threads) = seen.withLock { ($0.events, $0.threads) }
        if case .snapshot = events.first {} else { Issue.record("the first event must be the snapshot, not \(String(describing: events.first))") }
        #expect(threads.count == 1)
        #expect(!threads.contains(UInt(pthread_self())))
    }

    @Test func cancelFromAnotherThreadOrFromInsideStopsDelivery() throws {
        let ns = try TestNamespace("inlinecancel")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))

        // From another thread: once cancel() returns, nothing more arrives.
        let outside = Mutex(0)
        let fromOutside = subscription.observeOnSubscriptionThread { _ in outside.withLock { $0 += 1 } }
        #expect(eventually { outside.withLock { $0 } >= 1 })
        fromOutside.cancel()
        let count = outside.withLock { $0 }

        // From inside its own handler: no deadlock, and no second call.
        let inside = Mutex(0)
        let holder = Mutex<NetlinkObservation?>(nil)
        let fromInside = subscription.observeOnSubscriptionThread { _ in
            // Calls that come before the test holds the observation (its snapshot) are not counted.
            guard let me = holder.withLock({ $0 }) else { return }
            inside.withLock { $0 += 1 }
            me.cancel()
        }
        holder.withLock { $0 = fromInside }
        for _ in 0..<3 {
            try ns.ip("link", "set", "dum0", "up")
            try ns.ip("link", "set", "dum0", "down")
        }
        let probe = EventRecorder(subscription)
        try ns.ip("link", "set", "dum0", "mtu", "1300")
        #expect(probe.waitFor { $0.linkChange?.value.mtu == 1300 })
        #expect(outside.withLock { $0 } == count)
        #expect(inside.withLock { $0 } == 1)
        // The handler holds `holder`, which holds the observation: break the cycle.
        holder.withLock { $0 = nil }
    }

    @Test func aDeletedNamespaceEndsItAndALateObserverIsToldAtOnce() throws {
        let ns = try TestNamespace("inlinegone")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let ended = Mutex<NetlinkError?>(nil)
        let observation = subscription.observeOnSubscriptionThread(onTermination: { error in ended.withLock { $0 = error } }) { _ in }
        defer { observation.cancel() }
        ns.delete()
        #expect(eventually { ended.withLock { $0 } == .namespaceDeleted })
        let late = Mutex<NetlinkError?>(nil)
        let lateObservation = subscription.observeOnSubscriptionThread(onTermination: { error in late.withLock { $0 = error } }) { _ in }
        defer { lateObservation.cancel() }
        #expect(late.withLock { $0 } == .namespaceDeleted)
    }
}
