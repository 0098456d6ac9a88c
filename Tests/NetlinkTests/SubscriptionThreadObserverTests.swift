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
        let seen = Locked<(events: [NetlinkEvent], threads: Set<UInt>)>(([], []))
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

    /// A carrier change of a link that carries a default route comes unsettled: the routes the
    /// kernel flags without a message are re-read right after, and the batch that ends the
    /// re-read is settled (empty if the re-read changed nothing). Settled observers never
    /// stay unsettled; plain batch observers never see an empty batch.
    @Test func aCarrierChangeIsSettledByTheReReadOfItsRoutes() throws {
        let ns = try TestNamespace("settled")
        defer { ns.delete() }
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.5.0.1/24 dev va", "route add default via 10.5.0.2 dev va",
                      "link add dum0 type veth peer name dum0p", "link set dum0p up"])
        _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let calls = Locked<[(events: [NetlinkEvent], settled: Bool)]>([])
        let plain = Locked<[[NetlinkEvent]]>([])
        let settledObservation = subscription.observeSettledBatchesOnSubscriptionThread { events, settled in
            calls.withLock { $0.append((events, settled)) }
        }
        let plainObservation = subscription.observeBatchesOnSubscriptionThread { events in plain.withLock { $0.append(events) } }
        defer { settledObservation.cancel(); plainObservation.cancel() }
        #expect(eventually { calls.withLock { $0.count } >= 1 })
        #expect(calls.withLock { $0[0].settled }, "the snapshot is settled")

        try ns.ip("link", "set", "vb", "down")
        let isDead: @Sendable (NetlinkEvent) -> Bool = { event in
            if case .route(let change) = event, change.route.outputLinkIndex != nil {
                return change.route.isDefault && change.route.nexthops.allSatisfy { $0.flags.contains(.dead) }
            }
            return false
        }
        #expect(eventually { calls.withLock { $0.contains { $0.events.contains(where: isDead) } } })
        var recorded = calls.withLock { $0 }
        let carrierLost = recorded.firstIndex { $0.events.contains { $0.linkChange?.value.name == "va" && $0.linkChange?.value.isRunning == false } }
        let marked = recorded.firstIndex { $0.events.contains(where: isDead) }
        #expect(carrierLost != nil && marked != nil)
        if let carrierLost, let marked {
            #expect(!recorded[carrierLost].settled, "the carrier's change waits for the re-read of the link's routes")
            #expect(carrierLost < marked && recorded[marked].settled)
        }
        // A link that carries no default route: its change is settled at once, or by an empty
        // settled batch right after.
        let before = recorded.count
        try ns.ip("link", "set", "dum0", "up")
        #expect(eventually { calls.withLock { $0.count > before && $0.last!.settled } })
        recorded = calls.withLock { $0 }
        #expect(recorded.last!.settled)
        #expect(plain.withLock { $0.allSatisfy { !$0.isEmpty } })
    }

    /// An observer attached between a carrier's change and the re-read of the link's routes
    /// gets its snapshot unsettled (the state then shows the link without carrier beside its
    /// routes not yet marked dead), then the settled batch that ends the re-read.
    @Test func anObserverAttachedDuringAReReadIsToldItsSnapshotIsNotSettled() throws {
        let ns = try TestNamespace("settledlate")
        defer { ns.delete() }
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.5.0.1/24 dev va", "route add default via 10.5.0.2 dev va"])
        _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let late = Locked<[(events: [NetlinkEvent], settled: Bool)]>([])
        let lateObservation = Locked<NetlinkObservation?>(nil)
        let trigger = subscription.observeBatchesOnSubscriptionThread { events in
            guard events.contains(where: { $0.linkChange?.value.name == "va" && $0.linkChange?.value.isRunning == false }),
                  lateObservation.withLock({ $0 == nil }) else { return }
            let observation = subscription.observeSettledBatchesOnSubscriptionThread { events, settled in
                late.withLock { $0.append((events, settled)) }
            }
            lateObservation.withLock { $0 = observation }
        }
        defer { trigger.cancel(); lateObservation.withLock { $0?.cancel() } }
        #expect(eventually { subscription.state.links.values.contains { $0.name == "va" } })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { late.withLock { $0.contains { $0.settled } } })
        let calls = late.withLock { $0 }
        guard let first = calls.first else { return }
        if case .snapshot = first.events.first {} else { Issue.record("the first call must be the snapshot") }
        #expect(!first.settled, "attached during the re-read: the snapshot is not settled")
        let settledState = subscription.settledState
        #expect(settledState.isSettled)
        #expect(settledState.state.defaultRoutes.values.allSatisfy { $0.nexthops.allSatisfy { $0.flags.contains(.dead) } })
    }

    /// A batch observer sees the same events as a per-event observer, in the same order, in
    /// batches: the snapshot alone first, never an empty batch, and a burst of kernel messages
    /// read in one wake-up in fewer calls than events.
    @Test func batchObserversSeeTheSameEventsInFewerCalls() throws {
        let ns = try TestNamespace("inlinebatch")
        defer { ns.delete() }
        try ns.disableIPv6()
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "address add 10.3.0.1/24 dev dum0"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        // Pthread-based locks: written on the subscription's thread, read on the test's, and the
        // thread sanitizer does not see `Mutex`'s synchronization.
        let single = Locked<[NetlinkEvent]>([])
        let batches = Locked<[[NetlinkEvent]]>([])
        // Both attach before the burst below.
        let each = subscription.observeOnSubscriptionThread { event in single.withLock { $0.append(event) } }
        let batched = subscription.observeBatchesOnSubscriptionThread { events in batches.withLock { $0.append(events) } }
        defer { each.cancel(); batched.cancel() }
        // Holds the subscription's thread at the first change until the burst below is queued
        // in the kernel, so that the rest of it is read in one wake-up on any machine.
        let staller = SubscriptionHold(subscription, for: .seconds(10)) { $0.linkChange != nil }
        defer { staller.cancel() }
        #expect(eventually { batches.withLock { $0.count } >= 1 })
        // One ip -batch: the link's changes and its 40 routes reach the socket in a burst.
        try ns.batch(["link set dum0 up"] + (0..<40).map { "route add 10.4.\($0).0/24 dev dum0" } + ["link set dum0 mtu 1400"])
        staller.release()
        let isFirst: @Sendable (NetlinkEvent) -> Bool = { $0.linkChange?.value.name == "dum0" && $0.linkChange?.value.isUp == true }
        let isLast: @Sendable (NetlinkEvent) -> Bool = { $0.linkChange?.value.mtu == 1400 }
        #expect(eventually { batches.withLock { $0.contains { $0.contains(where: isLast) } } })
        #expect(eventually { single.withLock { $0.contains(where: isLast) } })
        // Both are parts of one stream, but the kernel may announce the peer's operstate late
        // (before, between or after the two attached) and more may follow the MTU change:
        // compare the burst, from `dum0` coming up to its MTU change.
        let (perEvent, perBatch) = (single.withLock { $0 }, batches.withLock { $0 })
        if case .snapshot = perBatch.first?.first, perBatch.first?.count == 1 {} else {
            Issue.record("the first batch must be the snapshot alone, not \(String(describing: perBatch.first))")
        }
        #expect(!perBatch.contains { $0.isEmpty })
        let joined = Array(perBatch.joined())
        let eventStart = try #require(perEvent.firstIndex(where: isFirst))
        let eventEnd = try #require(perEvent.firstIndex(where: isLast))
        let batchStart = try #require(joined.firstIndex(where: isFirst))
        let batchEnd = try #require(joined.firstIndex(where: isLast))
        #expect(Array(perEvent[eventStart...eventEnd]) == Array(joined[batchStart...batchEnd]), "the same events in the same order")
        // The batches that carried the burst.
        var offset = 0
        var burstBatches = 0
        for batch in perBatch {
            if offset + batch.count > batchStart, offset <= batchEnd { burstBatches += 1 }
            offset += batch.count
        }
        let burstEvents = eventEnd - eventStart + 1
        #expect(burstBatches < burstEvents, "\(burstEvents) events came in \(burstBatches) batches")
    }

    @Test func cancelFromAnotherThreadOrFromInsideStopsDelivery() throws {
        let ns = try TestNamespace("inlinecancel")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))

        // From another thread: once cancel() returns, nothing more arrives.
        let outside = Locked(0)
        let fromOutside = subscription.observeOnSubscriptionThread { _ in outside.withLock { $0 += 1 } }
        #expect(eventually { outside.withLock { $0 } >= 1 })
        fromOutside.cancel()
        let count = outside.withLock { $0 }

        // From inside its own handler: no deadlock, and no second call.
        let inside = Locked(0)
        let holder = Locked<NetlinkObservation?>(nil)
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
        // The probe's queue may get a batch before the subscription's thread has handed it to
        // its own observers (`Publisher.publish`): the call from inside may still be on its way.
        #expect(eventually { inside.withLock { $0 } >= 1 })
        #expect(inside.withLock { $0 } == 1)
        // The handler holds `holder`, which holds the observation: break the cycle.
        holder.withLock { $0 = nil }
    }

    /// A per-event observer that cancels itself in the middle of a published batch gets none of
    /// the batch's later events, although the batch was handed to it whole.
    @Test func cancelInsideTheHandlerSkipsTheRestOfItsBatch() throws {
        let ns = try TestNamespace("inlinecancelmid")
        defer { ns.delete() }
        try ns.disableIPv6()
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "link set dum0 up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let isRoute: @Sendable (NetlinkEvent, Int) -> Bool = { event, third in
            event.routeChange?.route.destination == IPNetwork("10.4.\(third).0/24")
        }
        // Route events seen from the burst's tenth route on (the first message of a wake-up is
        // published alone; the tenth is well inside the batch that follows it).
        let seen = Locked(0)
        let holder = Locked<NetlinkObservation?>(nil)
        let observation = subscription.observeOnSubscriptionThread { event in
            guard event.routeChange != nil, (10..<40).contains(where: { isRoute(event, $0) }) else { return }
            seen.withLock { $0 += 1 }
            holder.withLock { $0 }?.cancel()
        }
        holder.withLock { $0 = observation }
        defer { holder.withLock { $0 = nil } }
        let markerSeen = Locked(false)
        let marker = subscription.observeOnSubscriptionThread { event in
            if event.linkChange?.value.mtu == 1400 { markerSeen.withLock { $0 = true } }
        }
        defer { marker.cancel() }
        // Holds the subscription's thread at the MTU change until the routes are queued in the
        // kernel, so that they are read in one wake-up on any machine.
        let staller = SubscriptionHold(subscription, for: .seconds(10)) { $0.linkChange?.value.mtu == 1300 }
        defer { staller.cancel() }
        let probe = EventRecorder(subscription)
        try ns.ip("link", "set", "dum0", "mtu", "1300")
        #expect(probe.waitFor { $0.linkChange?.value.mtu == 1300 })
        try ns.batch((0..<40).map { "route add 10.4.\($0).0/24 dev dum0" })
        staller.release()
        #expect(probe.waitFor { isRoute($0, 39) })
        // The subscription's thread hands each batch to all of its observers before it reads
        // the next: once the marker sees a later change, the burst has been handed out.
        try ns.ip("link", "set", "dum0", "mtu", "1400")
        #expect(eventually { markerSeen.withLock { $0 } })
        #expect(seen.withLock { $0 } == 1, "events of the batch after the cancel were delivered")
    }

    @Test func aDeletedNamespaceEndsItAndALateObserverIsToldAtOnce() throws {
        let ns = try TestNamespace("inlinegone")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let ended = Locked<NetlinkError?>(nil)
        let observation = subscription.observeOnSubscriptionThread(onTermination: { error in ended.withLock { $0 = error } }) { _ in }
        defer { observation.cancel() }
        ns.delete()
        #expect(eventually { ended.withLock { $0 } == .namespaceDeleted })
        let late = Locked<NetlinkError?>(nil)
        let lateObservation = subscription.observeOnSubscriptionThread(onTermination: { error in late.withLock { $0 = error } }) { _ in }
        defer { lateObservation.cancel() }
        #expect(late.withLock { $0 } == .namespaceDeleted)
    }
}
