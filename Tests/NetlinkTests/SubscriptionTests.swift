import Foundation
import Netlink
import NetnsTestSupport
import Testing

@Suite("Live events from the kernel", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SubscriptionTests {
    @Test func startsWithTheCurrentState() async throws {
        try await withTestNamespace("start") { ns in
            try buildTopology(ns)
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let kernel = try NetlinkConnection(namespace: .named(ns.name)).snapshot()
            #expect(Set(subscription.state.links.keys) == Set(kernel.links.keys))
            #expect(Set(subscription.state.addresses.keys) == Set(kernel.addresses.keys))
            #expect(subscription.state.defaultRoutes == kernel.defaultRoutes)
            var iterator = subscription.events().makeAsyncIterator()
            guard case .snapshot(let first)? = try await iterator.next() else {
                Issue.record("the first event must be the snapshot")
                return
            }
            #expect(first.links.keys == subscription.state.links.keys)
        }
    }

    @Test func linkUpDownCarrierAndRename() async throws {
        try await withTestNamespace("link") { ns in
            try ns.ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            let index = try ns.index(of: "veth0")
            try ns.ip("link", "set", "veth1", "up")
            try ns.ip("link", "set", "veth0", "up")
            #expect(recorder.waitFor { $0.linkChange.map { $0.value.index == index && $0.value.isRunning } ?? false }, "up with carrier")
            try ns.ip("link", "set", "veth1", "down")
            #expect(recorder.waitFor {
                guard case .changed(let old, let new)? = $0.linkChange else { return false }
                return new.index == index && old.isRunning && !new.isRunning && new.isUp
            }, "carrier loss")
            try ns.ip("link", "set", "veth0", "down")
            #expect(recorder.waitFor { $0.linkChange.map { $0.value.index == index && !$0.value.isUp } ?? false }, "down")
            try ns.ip("link", "set", "veth0", "name", "uplink0")
            #expect(recorder.waitFor {
                guard case .changed(let old, let new)? = $0.linkChange else { return false }
                return old.name == "veth0" && new.name == "uplink0" && new.index == index
            }, "rename")
            #expect(subscription.state.links[index]?.name == "uplink0")
            try ns.ip("link", "del", "uplink0")
            #expect(recorder.waitFor { if case .removed(let l)? = $0.linkChange { return l.index == index } else { return false } })
            #expect(eventually { subscription.state.links[index] == nil })
        }
    }

    /// The link revision stays while links only change state, and changes with what a link is.
    @Test func theLinkRevisionFollowsWhatLinksAreNotTheirState() async throws {
        try await withTestNamespace("rev") { ns in
            try ns.ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let index = try ns.index(of: "veth0")
            let first = try #require(subscription.state.linkRevision)
            try ns.ip("link", "set", "veth1", "up")
            try ns.ip("link", "set", "veth0", "up")
            #expect(eventually { subscription.state.links[index]?.isRunning == true })
            try ns.ip("link", "set", "veth1", "down")
            #expect(eventually { subscription.state.links[index]?.isRunning == false })
            try ns.ip("link", "set", "veth0", "down")
            #expect(eventually { subscription.state.links[index]?.isUp == false })
            #expect(subscription.state.linkRevision == first, "up, down and the carrier are state")
            try ns.ip("link", "set", "veth0", "name", "uplink0")
            #expect(eventually { subscription.state.links[index]?.name == "uplink0" })
            let renamed = try #require(subscription.state.linkRevision)
            #expect(renamed != first)
            try ns.ip("link", "set", "uplink0", "mtu", "1400")
            #expect(eventually { subscription.state.links[index]?.mtu == 1400 })
            let resized = try #require(subscription.state.linkRevision)
            #expect(resized != renamed)
            // Another subscription of the same namespace never has the same revision.
            let other = try NetlinkSubscription(namespace: .named(ns.name))
            #expect(other.state.linkRevision != resized)
            try ns.ip("link", "del", "uplink0")
            #expect(eventually { subscription.state.links[index] == nil })
            #expect(subscription.state.linkRevision != resized)
        }
    }

    @Test func addressAddAndRemove() async throws {
        try await withTestNamespace("addr") { ns in
            try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            try ns.ip("address", "add", "10.77.0.1/24", "dev", "dum0")
            try ns.ip("address", "add", "2001:db8:77::1/64", "dev", "dum0", "nodad")
            let v4 = IPAddress("10.77.0.1")!, v6 = IPAddress("2001:db8:77::1")!
            #expect(recorder.waitFor { if case .new(let a)? = $0.addressChange { return a.address == v4 && a.prefixLength == 24 } else { return false } })
            #expect(recorder.waitFor { if case .new(let a)? = $0.addressChange { return a.address == v6 } else { return false } })
            try ns.ip("address", "del", "10.77.0.1/24", "dev", "dum0")
            #expect(recorder.waitFor { if case .removed(let a)? = $0.addressChange { return a.address == v4 } else { return false } })
            #expect(eventually { !subscription.state.addresses.values.contains { $0.address == v4 } })
            #expect(subscription.state.addresses.values.contains { $0.address == v6 })
        }
    }

    @Test func routeAddReplaceRemove() async throws {
        try await withTestNamespace("route") { ns in
            try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "link set dum0 up", "address add 10.88.0.1/24 dev dum0"])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            let prefix = IPNetwork("10.99.0.0/16")!
            try ns.ip("route", "add", "10.99.0.0/16", "via", "10.88.0.254")
            #expect(recorder.waitFor { if case .new(let r)? = $0.routeChange { return r.destination == prefix } else { return false } })
            try ns.ip("route", "replace", "10.99.0.0/16", "via", "10.88.0.253")
            #expect(recorder.waitFor {
                if case .replaced(let r)? = $0.routeChange { return r.destination == prefix && r.gateway == IPAddress("10.88.0.253") } else { return false }
            })
            try ns.ip("route", "del", "10.99.0.0/16")
            #expect(recorder.waitFor { if case .removed(let r)? = $0.routeChange { return r.destination == prefix } else { return false } })
            // Default routes are kept: a replace reports both versions.
            try ns.ip("route", "add", "default", "via", "10.88.0.254")
            #expect(recorder.waitFor { if case .new(let r)? = $0.routeChange { return r.isDefault } else { return false } })
            try ns.ip("route", "replace", "default", "via", "10.88.0.253")
            #expect(recorder.waitFor {
                guard case .changed(let old, let new)? = $0.routeChange else { return false }
                return old.gateway == IPAddress("10.88.0.254") && new.gateway == IPAddress("10.88.0.253")
            })
            #expect(eventually { subscription.state.defaultRoutes.values.map { $0.gateway } == [IPAddress("10.88.0.253")] })
            // `append` keeps two default routes with the same prefix part apart; deleting one
            // leaves the other.
            try ns.ip("route", "append", "default", "via", "10.88.0.252")
            #expect(eventually { subscription.state.defaultRoutes.count == 2 })
            try ns.ip("route", "del", "default", "via", "10.88.0.253")
            #expect(eventually { subscription.state.defaultRoutes.values.map { $0.gateway } == [IPAddress("10.88.0.252")] })
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            #expect(eventually { agrees(subscription.state, kernel) })
            // Non-default routes are not kept in the state.
            #expect(subscription.state.defaultRoutes.values.allSatisfy { $0.isDefault })
        }
    }

    @Test func policyRuleChangesAreReported() async throws {
        try await withTestNamespace("rules") { ns in
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            #expect(recorder.waitFor { if case .snapshot = $0 { return true } else { return false } })
            try ns.ip("rule", "add", "to", "203.0.113.0/24", "lookup", "100", "priority", "1000")
            #expect(recorder.waitFor { $0 == .rulesChanged(.ipv4) })
            try ns.ip("-6", "rule", "add", "to", "2001:db8:77::/48", "lookup", "100", "priority", "1000")
            #expect(recorder.waitFor { $0 == .rulesChanged(.ipv6) })
            let count = recorder.all.filter { $0 == .rulesChanged(.ipv4) }.count
            try ns.ip("rule", "del", "priority", "1000")
            #expect(eventually { recorder.all.filter { $0 == .rulesChanged(.ipv4) }.count == count + 1 })
        }
    }

    @Test func routesFlushedSilentlyByTheKernelLeaveTheState() async throws {
        try await withTestNamespace("flush") { ns in
            try ns.batch([
                "link add veth0 type veth peer name veth1", "link set veth1 up", "link set veth0 up",
                "address add 10.66.0.1/24 dev veth0", "address add 2001:db8:66::1/64 dev veth0 nodad",
                "route add default via 10.66.0.254", "route add default via 2001:db8:66::fe",
                // The link's routes in another table too: its re-read must cover every table.
                "route add default via 10.66.0.253 table 100", "route add default via 2001:db8:66::fd table 100",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            let connection = try NetlinkConnection(namespace: .named(ns.name))
            #expect(subscription.state.defaultRoutes.count == 4)
            // Carrier loss: the kernel marks the routes linkdown and tells nobody.
            try ns.ip("link", "set", "veth1", "down")
            #expect(eventually { subscription.state.defaultRoutes.values.allSatisfy { $0.flags.contains(.linkDown) } })
            #expect(recorder.waitFor { if case .changed(_, let r)? = $0.routeChange { return r.isDefault && r.flags.contains(.linkDown) } else { return false } })
            #expect(try Set(subscription.state.defaultRoutes.values) == Set(connection.defaultRoutes()))
            // The carrier back: the flags go, again silently.
            try ns.ip("link", "set", "veth1", "up")
            #expect(eventually { subscription.state.defaultRoutes.values.allSatisfy { !$0.flags.contains(.linkDown) } })
            #expect(try Set(subscription.state.defaultRoutes.values) == Set(connection.defaultRoutes()))
            #expect(subscription.state.defaultRoutes.count == 4)
            try ns.ip("link", "set", "veth1", "down")
            // Administratively down: the kernel deletes them, again without RTM_DELROUTE for IPv4.
            try ns.ip("link", "set", "veth0", "down")
            #expect(eventually { subscription.state.defaultRoutes.isEmpty })
            #expect(try connection.defaultRoutes().isEmpty)
        }
    }

    /// An IPv6 route's router preference is read, and a change of it alone (what a router's
    /// new advertisement makes, here `ip -6 route replace`) is a change of the route.
    @Test func aChangeOfARoutersPreferenceIsAChange() async throws {
        try await withTestNamespace("pref") { ns in
            try ns.batch(TestNamespace.twoUplinks + [
                "route add ::/0 via fe80::1 dev va metric 1024 pref low", "route add default via 10.1.0.2 dev va",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            let routes = subscription.state.defaultRoutes.values
            #expect(routes.first { $0.family == .ipv6 }?.preference == .low, "\(routes)")
            #expect(routes.first { $0.family == .ipv4 }.map { $0.preference == nil } == true, "\(routes)")
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            #expect(try kernel.defaultRoutes().first { $0.family == .ipv6 }?.preference == .low)
            try ns.ip("-6", "route", "replace", "default", "via", "fe80::1", "dev", "va", "metric", "1024", "pref", "high")
            #expect(recorder.waitFor {
                guard case .changed(let old, let new)? = $0.routeChange else { return false }
                return old.preference == .low && new.preference == .high && old.gateway == new.gateway
            }, "\(recorder.all)")
            #expect(eventually { subscription.state.defaultRoutes.values.contains { $0.preference == .high } })
            #expect(eventually { agrees(subscription.state, kernel) })
        }
    }

    @Test func routesThroughANextHopObjectFollowIt() async throws {
        try await withTestNamespace("nhobj") { ns in
            try ns.batch(TestNamespace.twoUplinks + [
                "nexthop add id 1 via 10.1.0.2 dev va", "route add default nhid 1",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            #expect(subscription.state.defaultRoutes.values.map(\.gateway) == [IPAddress("10.1.0.2")!])
            // Replaced, the object moves its routes to another link.
            try ns.ip("nexthop", "replace", "id", "1", "via", "10.2.0.2", "dev", "wa")
            #expect(try kernel.defaultRoutes().map(\.gateway) == [IPAddress("10.2.0.2")!])
            #expect(eventually { Set(subscription.state.defaultRoutes.values) == Set((try? kernel.defaultRoutes()) ?? []) },
                    "\(subscription.state.defaultRoutes)")
            // Deleted, it takes its routes with it, and the kernel tells of no route.
            try ns.ip("nexthop", "del", "id", "1")
            #expect(try kernel.defaultRoutes().isEmpty)
            #expect(eventually { subscription.state.defaultRoutes.isEmpty }, "\(subscription.state.defaultRoutes)")
        }
    }

    @Test func anIPv4ReplacementAmongRoutesOfOnePrefixIsReadBack() async throws {
        try await withTestNamespace("replace4") { ns in
            try ns.batch(TestNamespace.twoUplinks + [
                "route add default via 10.1.0.2 dev va", "route append default via 10.2.0.2 dev wa",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            #expect(subscription.state.defaultRoutes.count == 2)
            // The kernel replaces the first route of the prefix (via va), though the message
            // names the gateway of the second: afterwards both go through wa.
            try ns.ip("route", "replace", "default", "via", "10.2.0.2", "dev", "wa", "proto", "static")
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            let gateways = Set(try kernel.defaultRoutes().compactMap(\.gateway))
            #expect(gateways == [IPAddress("10.2.0.2")!])
            #expect(eventually { Set(subscription.state.defaultRoutes.values.compactMap(\.gateway)) == gateways },
                    "\(subscription.state.defaultRoutes)")
        }
    }

    @Test func anIPv6MultipathRouteKeepsItsOtherHopsWhenALinkIsDeleted() async throws {
        // With and without the deleted hop's RTM_DELROUTE (`skip_notify_on_dev_down`).
        for skipNotify in [false, true] {
            try await withTestNamespace("mp6") { ns in
                try ns.batch(TestNamespace.twoUplinkLinks + [
                    "address add 2001:db8:1::1/64 dev va nodad", "address add 2001:db8:2::1/64 dev wa nodad",
                    "route add default nexthop via 2001:db8:1::2 dev va nexthop via 2001:db8:2::2 dev wa",
                ])
                if skipNotify { _ = try ns.exec(["sysctl", "-q", "-w", "net.ipv6.route.skip_notify_on_dev_down=1"]) }
                let subscription = try NetlinkSubscription(namespace: .named(ns.name))
                let recorder = EventRecorder(subscription)
                let before = subscription.state.defaultRoutes.values.filter { $0.family == .ipv6 }
                #expect(before.map(\.nexthops.count) == [2], "\(before)")
                try ns.ip("link", "del", "wa")
                let kernel = try NetlinkConnection(namespace: .named(ns.name))
                let after = try kernel.defaultRoutes().filter { $0.family == .ipv6 }
                #expect(after.map(\.nexthops.count) == [1], "the kernel keeps the route through va: \(after)")
                #expect(eventually { Set(subscription.state.defaultRoutes.values.filter { $0.family == .ipv6 }) == Set(after) },
                        "skip_notify_on_dev_down=\(skipNotify): \(subscription.state.defaultRoutes)")
                // Never reported gone: its first hop, and so its key, stayed.
                #expect(recorder.waitFor { if case .changed(_, let r)? = $0.routeChange { return r.family == .ipv6 && r.nexthops.count == 1 } else { return false } })
                #expect(!recorder.all.contains { if case .removed(let r)? = $0.routeChange { return r.isDefault } else { return false } },
                        "\(recorder.all)")
            }
        }
    }

    @Test func removingAPreferredSourceAddressFlushesRoutesOnOtherLinks() async throws {
        try await withTestNamespace("prefsrc") { ns in
            try ns.batch([
                "link add veth0 type veth peer name veth1", "link set veth1 up", "link set veth0 up",
                "link add veth2 type veth peer name veth3", "link set veth3 up", "link set veth2 up",
                "address add 10.61.0.1/24 dev veth0", "address add 10.62.0.1/24 dev veth2",
                "route add default via 10.61.0.254 dev veth0 src 10.62.0.1",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            #expect(subscription.state.defaultRoutes.count == 1)
            try ns.ip("address", "del", "10.62.0.1/24", "dev", "veth2")
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            #expect(try kernel.defaultRoutes().isEmpty, "the kernel flushes the route that used the address")
            #expect(eventually { subscription.state.defaultRoutes.isEmpty })
        }
    }

    @Test func linkMovedToAnotherNamespaceAndBack() async throws {
        try await withTestNamespace("moveA") { a in
            try await withTestNamespace("moveB") { b in
                try a.ip("link", "add", "mover0", "type", "veth", "peer", "name", "mover1")
                let inA = EventRecorder(try NetlinkSubscription(namespace: .named(a.name)))
                let subscriptionB = try NetlinkSubscription(namespace: .named(b.name))
                let inB = EventRecorder(subscriptionB)
                try a.ip("link", "set", "mover0", "netns", b.name)
                #expect(inA.waitFor { if case .removed(let l)? = $0.linkChange { return l.name == "mover0" } else { return false } })
                #expect(inB.waitFor { if case .new(let l)? = $0.linkChange { return l.name == "mover0" } else { return false } })
                #expect(subscriptionB.state.link(named: "mover0") != nil)
                try b.ip("link", "set", "mover0", "netns", a.name)
                #expect(inA.waitFor { if case .new(let l)? = $0.linkChange { return l.name == "mover0" } else { return false } })
                #expect(inB.waitFor { if case .removed(let l)? = $0.linkChange { return l.name == "mover0" } else { return false } })
            }
        }
    }

    @Test func deletedNamespaceEndsTheSubscriptionWithATypedError() async throws {
        let ns = try TestNamespace("gone")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let recorder = EventRecorder(subscription)
        let stream = subscription.events()
        ns.delete()
        #expect(eventually { recorder.ended.withLock { $0 } == .namespaceDeleted })
        #expect(subscription.termination == .namespaceDeleted)
        await #expect(throws: NetlinkError.namespaceDeleted) {
            for try await _ in stream {}
        }
        // A new observer of an ended subscription is told at once.
        let late = EventRecorder(subscription)
        #expect(eventually { late.ended.withLock { $0 } == .namespaceDeleted })
    }

    /// A program that exits when its subscription ends (`reach events` for a deleted namespace)
    /// must not exit while the subscription's thread still frees libnl's objects: libnl-route's
    /// destructors unregister what frees a link, and a link freed after them aborts the process.
    /// So the subscription closes its sockets and frees its caches before it tells anyone.
    @Test func aSubscriptionHasLetGoOfItsSocketsWhenItSaysItEnded() throws {
        let ns = try TestNamespace("letgo")
        defer { ns.delete() }
        try ns.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1")
        let identity = try #require(NamespaceIdentity(path: ns.path))
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        #expect(identity.socketsHeld() > 0)
        let heldWhenTold = Locked<Int?>(nil)
        let observation = subscription.observeOnSubscriptionThread(onTermination: { _ in
            heldWhenTold.withLock { $0 = identity.socketsHeld() }
        }) { _ in }
        defer { observation.cancel() }
        ns.delete()
        #expect(eventually { heldWhenTold.withLock { $0 } != nil })
        #expect(heldWhenTold.withLock { $0 } == 0)
    }

    @Test func oneSharedSubscriptionPerNamespace() async throws {
        try await withTestNamespace("shared") { ns in
            let byName = try NetlinkSubscription.shared(namespace: .named(ns.name))
            let byPath = try NetlinkSubscription.shared(namespace: .path(ns.path))
            #expect(byName === byPath)
            let current = try NetlinkSubscription.shared()
            #expect(current !== byName)
            #expect(try NetlinkSubscription.shared() === current)
        }
    }

    @Test func noCallbackAfterCancelReturns() async throws {
        try await withTestNamespace("cancel") { ns in
            try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            #expect(recorder.waitFor { if case .snapshot = $0 { return true } else { return false } })
            recorder.cancel()
            let count = recorder.all.count
            for _ in 0..<5 {
                try ns.ip("link", "set", "dum0", "up")
                try ns.ip("link", "set", "dum0", "down")
            }
            let probe = EventRecorder(subscription)
            try ns.ip("link", "set", "dum0", "mtu", "1400")
            #expect(probe.waitFor { $0.linkChange?.value.mtu == 1400 })
            #expect(recorder.all.count == count)
        }
    }
}
