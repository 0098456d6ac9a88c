import Dispatch
import Foundation
import Synchronization
import Testing
import Netlink
import NetnsTestSupport
import LinuxReachability
import ReachabilityCompat

/// Paths, pure and live, and the middleware's reducer.
@Suite("Paths")
struct PathTests {
    private func link(_ index: Int32, _ name: String, flags: InterfaceFlags = [.up, .running, .lowerUp]) -> Link {
        Link(index: index, name: name, arphrdType: .ether, flags: flags, operState: .up, mtu: 1500)
    }

    private func defaultRoute(dev index: Int32, via gateway: String, metric: UInt32, v6: Bool = false) -> Route {
        Route(family: v6 ? .ipv6 : .ipv4, destination: IPNetwork(v6 ? "::/0" : "0.0.0.0/0")!, metric: metric,
              nexthops: [Nexthop(gateway: IPAddress(gateway)!, linkIndex: index)])
    }

    private let types: [Int32: LinkClassification] = [
        2: LinkClassification(type: .wiredEthernet, kind: .ethernet, evidence: .none),
        3: LinkClassification(type: .wifi, kind: .wifi, evidence: .none),
        4: LinkClassification(type: .cellular, kind: .wwan, isExpensive: true, isConstrained: true, evidence: .none),
    ]

    @Test func pathsFollowUsableDefaultRoutesInOrderOfPreference() {
        let state = NetworkState(links: [link(2, "eth0"), link(3, "wlan0"), link(4, "wwan0")], addresses: [], defaultRoutes: [
            defaultRoute(dev: 3, via: "10.3.0.1", metric: 600), defaultRoute(dev: 2, via: "10.2.0.1", metric: 100),
            defaultRoute(dev: 4, via: "10.4.0.1", metric: 700), defaultRoute(dev: 2, via: "fe80::1", metric: 100, v6: true),
            defaultRoute(dev: 3, via: "fe80::1", metric: 600, v6: true),
        ])
        let path = NetworkPath.evaluate(state, classifications: types, nameServerReachable: true)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["eth0", "wlan0", "wwan0"])
        #expect(path.gateways == [IPAddress("10.2.0.1")!, IPAddress("fe80::1")!, IPAddress("10.3.0.1")!, IPAddress("10.4.0.1")!])
        // The two links' routers share fe80::1: one gateway, two scoped ones.
        #expect(path.scopedGateways.map(\.description)
            == ["10.2.0.1%eth0", "fe80::1%eth0", "10.3.0.1%wlan0", "fe80::1%wlan0", "10.4.0.1%wwan0"])
        #expect(path.scopedGateways.map(\.interface.index) == [2, 2, 3, 3, 4])
        #expect(path.supportsIPv4 && path.supportsIPv6 && path.supportsDNS)
        // The path uses its preferred link, not every available one.
        #expect(path.usesInterfaceType(.wiredEthernet) && !path.usesInterfaceType(.wifi) && !path.usesInterfaceType(.loopback))
        #expect(!path.isExpensive && !path.isConstrained)

        let cellularOnly = NetworkPath.evaluate(state, classifications: types, required: .cellular)
        #expect(cellularOnly.availableInterfaces.map(\.name) == ["wwan0"])
        #expect(cellularOnly.isExpensive && cellularOnly.isConstrained && !cellularOnly.supportsDNS)
        let noCellular = NetworkPath.evaluate(state, classifications: types, prohibited: [.cellular, .wiredEthernet])
        #expect(noCellular.availableInterfaces.map(\.name) == ["wlan0"])

        var offline = state
        offline.links[2] = link(2, "eth0", flags: [])
        offline.links[3] = link(3, "wlan0", flags: [])
        let deniedCellular = NetworkPath.evaluate(offline, classifications: types, prohibited: [.cellular])
        #expect(deniedCellular.status == .unsatisfied)
        #expect(deniedCellular.unsatisfiedReason == .cellularDenied)
        #expect(NetworkPath.evaluate(NetworkState(), classifications: [:]).status == .unsatisfied)
        var dormant = offline
        dormant.links[4] = Link(index: 4, name: "wwan0", arphrdType: .none, flags: [.up, .lowerUp, .dormant], operState: .dormant, mtu: 1500)
        #expect(NetworkPath.evaluate(dormant, classifications: types).status == .requiresConnection)
    }

    @Test func theReducerTellsOnlyWhatChanged() {
        let wifi = NetworkPath(status: .satisfied, availableInterfaces: [
            NetworkInterface(name: "wlan0", index: 3, classification: LinkClassification(type: .wifi, kind: .wifi, evidence: .none))])
        let cellular = NetworkPath(status: .satisfied, availableInterfaces: [
            NetworkInterface(name: "wwan0", index: 4, classification: LinkClassification(
                type: .cellular, kind: .wwan, isExpensive: true, isConstrained: true, evidence: .none))])
        let tunnel = NetworkPath(status: .satisfied, availableInterfaces: [
            NetworkInterface(name: "wg0", index: 5, classification: LinkClassification(type: .other, kind: .wireguard, evidence: .none))])
        var state = ReachabilityReducer.reduce(.initial, event: .startMonitoring)
        var events: [ReachabilityEvent]
        (state, events) = ReachabilityReducer.reduce(state, path: wifi)
        #expect(events == [.connectedToWifi])
        (state, events) = ReachabilityReducer.reduce(state, path: wifi)
        #expect(events.isEmpty)
        (state, events) = ReachabilityReducer.reduce(state, path: cellular)
        #expect(events == [.connectedToCellular, .becameExpensive, .becameConstrained])
        #expect(state == ReachabilityState(isMonitoring: true, connectivity: .cellular, isExpensive: true, isConstrained: true))
        (state, events) = ReachabilityReducer.reduce(state, path: NetworkPath(status: .unsatisfied))
        #expect(events == [.gotOffline, .becameCheap, .becameUnconstrained])
        (state, events) = ReachabilityReducer.reduce(state, path: tunnel)
        #expect(events == [.connectedToWired])
        #expect(ReachabilityReducer.reduce(state, event: .stopMonitoring).isMonitoring == false)
    }

    @Test func theReducerReadsThePreferredLinkAndForgetsThePathWhenStopped() {
        func interface(_ name: String, _ index: Int32, _ type: InterfaceType, expensive: Bool = false) -> NetworkInterface {
            NetworkInterface(name: name, index: index, classification: LinkClassification(
                type: type, kind: type == .wifi ? .wifi : type == .cellular ? .wwan : .ethernet, isExpensive: expensive, evidence: .none))
        }
        let eth = interface("eth0", 2, .wiredEthernet)
        let wlan = interface("wlan0", 3, .wifi)
        let wwan = interface("wwan0", 4, .cellular, expensive: true)
        // Ethernet preferred, Wi-Fi a fallback: the connection goes through Ethernet.
        #expect(ReachabilityReducer.connectivity(of: NetworkPath(status: .satisfied, availableInterfaces: [eth, wlan])) == .wired)
        // Cellular preferred: cellular and expensive, not Wi-Fi and expensive.
        let (state, events) = ReachabilityReducer.reduce(.initial, path: NetworkPath(status: .satisfied, availableInterfaces: [wwan, wlan]))
        #expect(events == [.connectedToCellular, .becameExpensive])
        #expect(state == ReachabilityState(connectivity: .cellular, isExpensive: true))
        #expect(ReachabilityReducer.connectivity(of: NetworkPath(status: .satisfied)) == .wired)
        // Stopping forgets the path: the next start reports it again.
        let stopped = ReachabilityReducer.reduce(ReachabilityState(isMonitoring: true, connectivity: .wifi, isExpensive: true),
                                                 event: .stopMonitoring)
        #expect(stopped == .initial)
        let restarted = ReachabilityReducer.reduce(ReachabilityReducer.reduce(stopped, event: .startMonitoring),
                                                   path: NetworkPath(status: .satisfied, availableInterfaces: [wlan]))
        #expect(restarted.1 == [.connectedToWifi])
    }

    @Test func eachFamilyGoesThroughItsFirstRouteAsTheKernelDoes() {
        // Ethernet (metric 100) lost its carrier; its route is not dead (no
        // `ignore_routes_with_linkdown`), so the kernel still sends IPv4 through it.
        var state = NetworkState(links: [link(2, "eth0", flags: [.up]), link(3, "wlan0"), link(4, "wwan0")], addresses: [],
                                 defaultRoutes: [defaultRoute(dev: 2, via: "10.2.0.1", metric: 100),
                                                 defaultRoute(dev: 3, via: "10.3.0.1", metric: 600)])
        var path = NetworkPath.evaluate(state, classifications: types)
        #expect(path.status == .unsatisfied)
        #expect(path.availableInterfaces.isEmpty)
        // Only Wi-Fi allowed: a socket bound to it would go through its route.
        path = NetworkPath.evaluate(state, classifications: types, required: .wifi)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["wlan0"])
        // The kernel marks the route dead (`ignore_routes_with_linkdown`): Wi-Fi carries IPv4.
        var dead = state.defaultRoutes.values.first { $0.outputLinkIndex == 2 }!
        dead.nexthops[0].flags.insert(.dead)
        state.defaultRoutes[dead.key] = dead
        path = NetworkPath.evaluate(state, classifications: types)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["wlan0"])
        // IPv6 through another link is its own family: a usable IPv6 route satisfies the path
        // while IPv4's first route has no carrier.
        var noCarrier = dead
        noCarrier.nexthops[0].flags.remove(.dead)
        state.defaultRoutes[noCarrier.key] = noCarrier
        let v6 = defaultRoute(dev: 4, via: "fe80::1", metric: 1024, v6: true)
        state.defaultRoutes[v6.key] = v6
        path = NetworkPath.evaluate(state, classifications: types)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["wwan0"])
        #expect(path.supportsIPv6 && !path.supportsIPv4)
    }

    @Test func aTestSourceDrivesTheMiddlewareWithoutAKernel() async {
        let (source, paths) = NetworkPathSource.forTests()
        let wifi = NetworkPath(status: .satisfied, availableInterfaces: [
            NetworkInterface(name: "wlan0", index: 3, classification: LinkClassification(type: .wifi, kind: .wifi, evidence: .none))])
        paths.yield(wifi)
        paths.yield(wifi)
        paths.yield(NetworkPath(status: .unsatisfied))
        paths.finish()
        var seen: [ReachabilityEvent] = []
        for await (event, _) in source.events() { seen.append(event) }
        #expect(seen == [.startMonitoring, .connectedToWifi, .gotOffline, .stopMonitoring])
    }

    @Test func eachLiveNexthopOfAMultipathDefaultRouteIsAPath() {
        var multipath = defaultRoute(dev: 2, via: "10.2.0.1", metric: 100)
        multipath.nexthops.append(Nexthop(gateway: IPAddress("10.3.0.1")!, linkIndex: 3))
        let state = NetworkState(links: [link(2, "eth0"), link(3, "wlan0")], addresses: [], defaultRoutes: [multipath])
        let both = NetworkPath.evaluate(state, classifications: types)
        #expect(both.availableInterfaces.map(\.name) == ["eth0", "wlan0"])
        #expect(both.gateways == [IPAddress("10.2.0.1")!, IPAddress("10.3.0.1")!])
        // The first hop's link goes down: the kernel marks that hop dead and sends through the other.
        var down = state
        down.links[2] = link(2, "eth0", flags: [])
        down.defaultRoutes = [:]
        var degraded = multipath
        degraded.nexthops[0].flags = [.dead, .linkDown]
        down.defaultRoutes[degraded.key] = degraded
        let one = NetworkPath.evaluate(down, classifications: types)
        #expect(one.status == .satisfied)
        #expect(one.availableInterfaces.map(\.name) == ["wlan0"])
        #expect(one.gateways == [IPAddress("10.3.0.1")!])
        let internet = ReachabilityEvaluator.evaluateInternet(down, classifications: types)
        #expect(internet.status == .reachableViaWiFi)
        #expect(internet.gateway == IPAddress("10.3.0.1")!)
        #expect(internet.route == degraded)
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func aMultipathDefaultRouteKeepsThePathThroughItsLiveHop() async throws {
        let ns = try TestNamespace("pathmp")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + ["route add default nexthop via 10.1.0.2 dev va nexthop via 10.2.0.2 dev wa"])
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let paths = Locked<[NetworkPath]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        defer { monitor.cancel() }
        #expect(monitor.start(queue: DispatchQueue(label: "test.pathmp")))
        #expect(eventually { paths.withLock { $0.last?.availableInterfaces.map(\.name) } == ["va", "wa"] },
                "\(paths.withLock { $0 })")
        // Down, the first hop's link is dead to the kernel, which keeps the route and sends through
        // the other hop without a message; the subscription re-reads the route.
        try ns.ip("link", "set", "va", "down")
        #expect(eventually { paths.withLock { $0.last?.availableInterfaces.map(\.name) } == ["wa"] },
                "\(paths.withLock { $0 })")
        #expect(paths.withLock { $0.allSatisfy { $0.status == .satisfied } }, "\(paths.withLock { $0 })")
        try ns.ip("link", "set", "va", "up")
        #expect(eventually { paths.withLock { $0.last?.availableInterfaces.map(\.name) } == ["va", "wa"] },
                "\(paths.withLock { $0 })")
    }

    /// A namespace with two uplinks, va and wa, each with a router (`vaRouter`, `waRouter`)
    /// whose neighbour entry is permanent, and an IPv6 default route of metric 1024 through
    /// each, by next-hop objects 1 and 2: va's of low preference, wa's of high.
    static func twoRouterNamespace(_ label: String, vaRouter: String, waRouter: String) throws -> TestNamespace {
        let ns = try TestNamespace(label)
        do {
            try ns.batch(TestNamespace.twoUplinkLinks + [
                "nexthop add id 1 via \(vaRouter) dev va", "nexthop add id 2 via \(waRouter) dev wa",
                "neigh add \(vaRouter) lladdr 02:00:00:00:00:01 dev va nud permanent",
                "neigh add \(waRouter) lladdr 02:00:00:00:00:02 dev wa nud permanent",
                "route add ::/0 nhid 1 metric 1024 pref low", "route append ::/0 nhid 2 metric 1024 pref high",
            ])
        } catch {
            ns.delete()
            throw error
        }
        return ns
    }

    /// A started path monitor of `ns` and the paths it delivered, in order.
    static func recordingPathMonitor(_ ns: TestNamespace) throws -> (NetworkPathMonitor, Locked<[NetworkPath]>) {
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let paths = Locked<[NetworkPath]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        #expect(monitor.start(queue: DispatchQueue(label: "test.\(ns.name)")))
        return (monitor, paths)
    }

    /// Two routers' IPv6 default routes of one metric, as router advertisements give them: the
    /// path's links and gateways, and the internet's answer, follow the kernel's choice (`ip -6
    /// route get`), the router with the higher preference, also when only a preference changes.
    /// The routes go through next-hop objects, which the kernel keeps apart as it keeps routers'
    /// routes apart (static IPv6 routes with gateways would join one multipath route); both
    /// routers' neighbour entries are permanent, as the kernel also scores a router whose entry
    /// failed below the others.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func ipv6RoutesOfOneMetricFollowTheKernelsChoiceByPreference() async throws {
        let ns = try Self.twoRouterNamespace("pathpref", vaRouter: "fe80::1", waRouter: "fe80::2")
        defer { ns.delete() }
        let (monitor, paths) = try Self.recordingPathMonitor(ns)
        defer { monitor.cancel() }
        let internet = try ReachabilityMonitor(target: .internet, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: internet)
        defer { internet.stopListening() }
        // `replace` changes the first of the two routes, nhid 1's: high ties with wa's (the
        // links' order then, and the kernel's order of insertion: va), low makes wa's win again.
        for (change, kernelsLink) in [(nil, "wa"), ("high", "va"), ("low", "wa")] {
            if let change {
                try ns.ip("-6", "route", "replace", "default", "nhid", "1", "metric", "1024", "pref", change)
            }
            let answer = try #require(try ns.ipJSON("-6", "route", "get", "2001:db8::1").first)
            #expect(answer["dev"] as? String == kernelsLink, "the kernel's choice after \(change ?? "adding")")
            let gateway = try #require((answer["gateway"] as? String).flatMap(IPAddress.init))
            let other = gateway == IPAddress("fe80::1")! ? IPAddress("fe80::2")! : IPAddress("fe80::1")!
            #expect(eventually {
                paths.withLock { $0.last?.availableInterfaces.first?.name == kernelsLink && $0.last?.gateways == [gateway, other] }
            }, "after \(change ?? "adding"): \(paths.withLock { $0.last.map { "\($0) \($0.gateways)" } ?? "none" })")
            #expect(eventually { deliveries.last?.gateway == gateway && deliveries.last?.interface?.name == kernelsLink },
                    "after \(change ?? "adding"): \(deliveries.last.map { "\($0)" } ?? "none")")
        }
    }

    /// Two links whose routers both have the link-local address fe80::1, as home routers often
    /// do: the path names the gateway once in ``NetworkPath/gateways`` and once per link, in the
    /// kernel's order, in ``NetworkPath/scopedGateways``; when one link's route goes, so does its
    /// scoped gateway, and the address stays.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func routersThatShareALinkLocalAddressAreTwoScopedGateways() async throws {
        let ns = try Self.twoRouterNamespace("pathscope", vaRouter: "fe80::1", waRouter: "fe80::1")
        defer { ns.delete() }
        let (monitor, paths) = try Self.recordingPathMonitor(ns)
        defer { monitor.cancel() }
        let kernelsLink = try #require(try ns.ipJSON("-6", "route", "get", "2001:db8::1").first?["dev"] as? String)
        #expect(kernelsLink == "wa", "the router with the higher preference")
        #expect(eventually { paths.withLock { $0.last?.scopedGateways.map(\.description) } == ["fe80::1%wa", "fe80::1%va"] },
                "\(paths.withLock { $0.last.map { "\($0.scopedGateways)" } ?? "none" })")
        #expect(paths.withLock { $0.last?.gateways } == [IPAddress("fe80::1")!])
        #expect(paths.withLock { $0.last?.scopedGateways.map(\.interface.index) } == [try ns.index(of: "wa"), try ns.index(of: "va")])

        try ns.ip("-6", "route", "del", "default", "nhid", "2")
        #expect(eventually { paths.withLock { $0.last?.scopedGateways.map(\.description) } == ["fe80::1%va"] },
                "\(paths.withLock { $0.last.map { "\($0.scopedGateways)" } ?? "none" })")
        #expect(paths.withLock { $0.last?.gateways } == [IPAddress("fe80::1")!])
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func theMonitorDeliversTheFirstPathThenChangesAndStopsWhenCancelled() async throws {
        let ns = try TestNamespace("path")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va"])
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let paths = Locked<[NetworkPath]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        #expect(monitor.start(queue: DispatchQueue(label: "test.path")))
        #expect(monitor.start(queue: DispatchQueue(label: "test.path2")))  // harmless
        #expect(eventually { paths.withLock { $0.count } == 1 })
        #expect(paths.withLock { $0[0].status } == .unsatisfied)

        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        #expect(eventually { paths.withLock { $0.count } == 2 })
        let satisfied = paths.withLock { $0[1] }
        #expect(satisfied.status == .satisfied)
        #expect(satisfied.availableInterfaces.map(\.name) == ["va"])
        #expect(satisfied.gateways == [IPAddress("10.1.0.2")!])
        #expect(satisfied.supportsIPv4 && !satisfied.supportsIPv6)
        #expect(monitor.currentPath == satisfied)

        // The sequence: the current path first, then the change.
        var iterator = monitor.makeAsyncIterator()
        #expect(await iterator.next() == satisfied)
        try ns.ip("link", "set", "vb", "down")
        let afterCarrierLoss = await iterator.next()
        #expect(afterCarrierLoss?.status == .unsatisfied, "\(String(describing: afterCarrierLoss)) after \(paths.withLock { $0 })")
        #expect(eventually { paths.withLock { $0.count } == 3 }, "\(paths.withLock { $0 })")

        monitor.cancel()
        #expect(monitor.isCancelled)
        #expect(!monitor.start(queue: DispatchQueue(label: "test.path3")))
        #expect(await iterator.next() == nil)
        // A sequence begun after the cancel ends at once, with no path.
        var late = monitor.makeAsyncIterator()
        #expect(await late.next() == nil)
        try ns.ip("link", "set", "vb", "up")
        usleep(300_000)
        #expect(paths.withLock { $0.count } == 3)
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func aHandlerStartedAfterASequenceGetsTheCurrentPathOnItsQueue() async throws {
        let ns = try wiredNamespace("pathseq")
        defer { ns.delete() }
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        defer { monitor.cancel() }
        var iterator = monitor.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.status == .satisfied)
        // The handler's queue, told by a value only that queue carries.
        let queue = DispatchQueue(label: "test.pathseq")
        let marker = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: marker, value: true)
        let paths = Locked<[(path: NetworkPath, onItsQueue: Bool)]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append((path, DispatchQueue.getSpecific(key: marker) == true)) } }
        #expect(monitor.start(queue: queue))
        #expect(monitor.queue === queue)
        #expect(eventually { paths.withLock { $0.count } == 1 })
        #expect(paths.withLock { $0.first?.path } == first && paths.withLock { $0.first?.onItsQueue } == true)
        try ns.ip("link", "set", "vb", "down")
        #expect(await iterator.next()?.status == .unsatisfied)
        #expect(eventually { paths.withLock { $0.count } == 2 })
        #expect(paths.withLock { $0.last?.path.status } == .unsatisfied && paths.withLock { $0.last?.onItsQueue } == true)
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func pathSequencesEndWhenTheNamespaceIsDeleted() async throws {
        let ns = try wiredNamespace("pathdel")
        defer { ns.delete() }
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        let namespace = try NetworkNamespace.named(ns.name)
        // Iterated here, not in tasks polled with deadlines: parallel tests can hold the
        // cooperative pool's threads (two on this machine) for seconds.
        var paths = NetworkPathMonitor(namespace: namespace).makeAsyncIterator()
        #expect(await paths.next()?.status == .satisfied)
        var events = NetworkPathSource.production(namespace: namespace).events().makeAsyncIterator()
        #expect(await events.next()?.0 == .startMonitoring)
        #expect(await events.next() != nil)
        ns.delete()
        // Each sequence to its end, boundedly: a watchdog cancels the wait after 60 s.
        let rest = await Self.untilEnd(of: paths)
        #expect(!rest.timedOut)
        #expect(rest.elements.last?.status == .unsatisfied, "\(rest.elements)")
        let restOfEvents = await Self.untilEnd(of: events)
        #expect(!restOfEvents.timedOut)
        #expect(restOfEvents.elements.last?.0 == .stopMonitoring)
        // A monitor made for a namespace that is gone gives its one unsatisfied path and ends.
        let late = await Self.untilEnd(of: NetworkPathMonitor(namespace: namespace).makeAsyncIterator())
        #expect(!late.timedOut)
        #expect(late.elements.map(\.status) == [.unsatisfied])
    }

    /// The rest of a sequence, and whether it had not ended after `seconds` (then it was
    /// cancelled).
    private static func untilEnd<Iterator: AsyncIteratorProtocol & SendableMetatype>(
        of iterator: sending Iterator, seconds: Int = 60
    ) async -> (elements: [Iterator.Element], timedOut: Bool) where Iterator.Element: Sendable {
        let consumer = Task {
            var iterator = iterator
            var elements: [Iterator.Element] = []
            while let element = try? await iterator.next() { elements.append(element) }
            return (elements, Task.isCancelled)
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(seconds))
            consumer.cancel()
        }
        defer { watchdog.cancel() }
        return await consumer.value
    }
}
