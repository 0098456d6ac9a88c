import Foundation
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
@testable import LinuxReachability

/// The size of the storm: the CI run's by default, the issue's full size with
/// `REACH_STORM=full` (`scripts/stress.sh`).
struct StormSize: CustomStringConvertible {
    /// Route additions plus removals.
    var routeChanges: Int
    /// Additions plus removals of one address.
    var addressFlaps: Int
    /// Links created and deleted.
    var linkCycles: Int

    /// `REACH_STORM`: unset for CI's size, `full`, or `ROUTES,FLAPS,LINKS` to try one part.
    static var current: StormSize {
        let setting = ProcessInfo.processInfo.environment["REACH_STORM"] ?? ""
        let parts = setting.split(separator: ",").compactMap { Int($0) }
        if parts.count == 3 { return StormSize(routeChanges: parts[0], addressFlaps: parts[1], linkCycles: parts[2]) }
        return setting == "full"
            ? StormSize(routeChanges: 100_000, addressFlaps: 10_000, linkCycles: 1_000)
            : StormSize(routeChanges: 20_000, addressFlaps: 2_000, linkCycles: 200)
    }

    var description: String { "\(routeChanges) route changes, \(addressFlaps) address flaps, \(linkCycles) link cycles" }
}

/// What the kernel says of one destination: `ip route get`'s output link and gateway.
private struct KernelRoute: Equatable, CustomStringConvertible {
    var device: String?
    var gateway: String?
    var description: String { "\(device ?? "-") via \(gateway ?? "-")" }
}

/// The storm and overflow scenario of RELIABILITY.md: with every notification socket forced
/// to the kernel's smallest receive buffer, a burst of route, address and link changes runs
/// while a `ReachabilityMonitor` monitor per target, a `NetworkPathMonitor`, `reach watch` and
/// `reach events` follow it. Afterwards every answer must equal the kernel's, every stream must
/// still be alive, and the overflow must have been reported.
@Suite("Storms and overflow", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct StormTests {
    /// Destinations whose answers the storm moves: covered by a churned prefix at the end, in a
    /// churned prefix that ends absent, on the flapping address's subnet, behind the default route.
    private let targets = ["11.0.0.1", "11.0.7.9", "10.202.0.9", "12.0.0.1"]

    private func kernelRoute(_ ns: TestNamespace, _ target: String) throws -> KernelRoute {
        let route = try ns.ipJSON("route", "get", target).first
        return KernelRoute(device: route?["dev"] as? String, gateway: route?["gateway"] as? String)
    }

    /// The storm's commands: the default route moved first, then route additions and removals
    /// of 11.x.y.0/24 through `ch0`, interleaved with flaps of 10.202.0.1/24 on `fl0` and links
    /// created and deleted. It ends with 11.0.0.0/24 added and the flapping address present:
    /// only a correct re-read after the overflow tells the monitors of that last route.
    private func storm(_ size: StormSize) -> [String] {
        var lines = ["route replace default via 10.200.0.3 dev up0"]
        let prefixes = size.routeChanges / 2
        let chunks = max(1, size.linkCycles)
        let routesPerChunk = (prefixes + chunks - 1) / chunks
        let flapsPerChunk = (size.addressFlaps / 2 + chunks - 1) / chunks
        var added = 0
        var flapped = 0
        for chunk in 0..<chunks {
            let upper = min(prefixes, added + routesPerChunk)
            // 11.0.0.0/24 itself is left for the end.
            for i in added..<upper { lines.append("route add 11.\((i + 1) / 250).\((i + 1) % 250).0/24 via 10.201.0.2 dev ch0") }
            for i in added..<upper { lines.append("route del 11.\((i + 1) / 250).\((i + 1) % 250).0/24 via 10.201.0.2 dev ch0") }
            added = upper
            for _ in 0..<flapsPerChunk where flapped < size.addressFlaps / 2 {
                lines.append("address del 10.202.0.1/24 dev fl0")
                lines.append("address add 10.202.0.1/24 dev fl0")
                flapped += 1
            }
            lines.append("link add lk\(chunk) type veth peer name lk\(chunk)p")
            lines.append("link del lk\(chunk)")
        }
        lines.append("route add 11.0.0.0/24 via 10.201.0.2 dev ch0")
        return lines
    }

    @Test func everyAnswerIsTheKernelsAfterAStormAndEveryStreamLives() throws {
        let size = StormSize.current
        let ns = try TestNamespace("storm")
        defer { ns.delete() }
        // No IPv6: its addresses finish duplicate detection a moment after links come up, and
        // those changes, found by the re-read, would re-evaluate everything by themselves and
        // hide a re-read that the monitors ignore.
        try ns.disableIPv6()
        try ns.batch([
            "link add up0 type veth peer name up1", "link set up0 up", "link set up1 up",
            "address add 10.200.0.1/24 dev up0", "route add default via 10.200.0.2 dev up0",
            "link add ch0 type veth peer name ch1", "link set ch0 up", "link set ch1 up",
            "address add 10.201.0.1/24 dev ch0",
            "link add fl0 type veth peer name fl1", "link set fl0 up", "link set fl1 up",
            "address add 10.202.0.1/24 dev fl0",
        ])
        #expect(eventually { ["up0", "ch0", "fl0"].allSatisfy { link in
            (try? ns.ipJSON("link", "show", "dev", link).first?["flags"] as? [String])?.contains("LOWER_UP") == true
        } })
        let namespace = try NetworkNamespace.named(ns.name)

        // The smallest buffer the kernel allows (it rounds 1 byte up to a few notifications),
        // for the process's one subscription of this namespace, which the monitors share.
        let subscription = try NetlinkSubscription.shared(namespace: namespace, options: SubscriptionOptions(receiveBufferSize: 1))
        let resynchronizations = Locked(0)
        // Whether the subscription told of the last step's deletion, for that step's message.
        let toldOfDeletion = Locked(false)
        let observation = subscription.observe { event in
            if case .resynchronized = event { resynchronizations.withLock { $0 += 1 } }
            if case .route(.removed(let route)) = event, route.destination.description == "11.0.0.0/24" {
                toldOfDeletion.withLock { $0 = true }
            }
        }
        defer { observation.cancel() }
        // Hold the subscription's thread from the storm's first route change until the storm
        // is over, so that this process's subscription overflows on any machine and the last
        // word on every change comes from the re-read.
        let stormOver = DispatchSemaphore(value: 0)
        let stalled = Locked(false)
        let staller = subscription.observeOnSubscriptionThread { event in
            guard case .route(let change) = event, change.route.destination.description.hasPrefix("11."),
                  !stalled.withLock({ $0 }) else { return }
            stalled.withLock { $0 = true }
            _ = stormOver.wait(timeout: .now() + 60)
        }
        defer { staller.cancel() }

        let answers = Locked<[String: ReachabilityAnswer]>([:])
        let monitors = try targets.map { target in
            let monitor = try ReachabilityMonitor(address: IPAddress(target)!, namespace: namespace)
            monitor.onChange = { _, answer in answers.withLock { $0[target] = answer } }
            monitor.startListening()
            return monitor
        }
        defer { for monitor in monitors { monitor.stopListening() } }
        let paths = NetworkPathMonitor(namespace: namespace)
        let lastPath = Locked<NetworkPath?>(nil)
        paths.pathUpdateHandler = { path in lastPath.withLock { $0 = path } }
        _ = paths.start(queue: DispatchQueue(label: "storm.paths"))
        defer { paths.cancel() }
        let watch = try ReachProcess(["watch", "--json", "--receive-buffer", "1", "--netns", ns.name] + targets)
        defer { watch.stop() }
        let events = try ReachProcess(["events", "--json", "--receive-buffer", "1", "--netns", ns.name])
        defer { events.stop() }
        #expect(watch.waitForLine(containing: "\"12.0.0.1\""), "reach watch starts")
        #expect(events.waitForLine(containing: "\"synchronized\""), "reach events starts")
        #expect(eventually { answers.withLock { $0.count } == targets.count }, "every monitor answers")

        do {
            defer { stormOver.signal() }
            try ns.batch(storm(size))
        }
        let stormEnded = ContinuousClock.now

        // Liveness bounds only (no timing is asserted here): scripts/stress.sh measures how long
        // convergence takes and RELIABILITY.md reports it.
        let expected = try Dictionary(uniqueKeysWithValues: targets.map { ($0, try kernelRoute(ns, $0)) })
        #expect(expected["11.0.0.1"] == KernelRoute(device: "ch0", gateway: "10.201.0.2"))
        #expect(expected["12.0.0.1"] == KernelRoute(device: "up0", gateway: "10.200.0.3"))
        func monitorsAgree() -> [String] {
            answers.withLock { answers in
                targets.filter { target in
                    let answer = answers[target]
                    return !(answer?.isReachable == true
                             && KernelRoute(device: answer?.interface?.name, gateway: answer?.gateway?.description) == expected[target])
                }
            }
        }
        #expect(eventually { monitorsAgree().isEmpty }, "monitors that disagree with the kernel: \(monitorsAgree())")
        #expect(eventually { lastPath.withLock { path in
            path?.status == .satisfied && path?.gateways.map(\.description) == ["10.200.0.3"]
                && path?.availableInterfaces.first?.name == "up0"
        } }, "the path follows the moved default route: \(String(describing: lastPath.withLock { $0 }))")
        let kernel = try NetlinkConnection(namespace: namespace)
        #expect(eventually { agreesWithTheKernel(subscription.state, kernel) }, "the subscription's state is the kernel's")
        #expect(Set(subscription.state.links.values.map(\.name)) == Set(try ns.ipJSON("link").compactMap { $0["ifname"] as? String }))
        func watchAgrees() -> [String] {
            targets.filter { target in
                guard let line = watch.lines.withLock({ $0.last { $0.contains("\"target\":\"\(target)\"") } }),
                      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return true }
                let device = (object["interface"] as? [String: Any])?["name"] as? String
                return !(object["reachable"] as? Bool == true
                         && KernelRoute(device: device, gateway: object["gateway"] as? String) == expected[target])
            }
        }
        #expect(eventually { watchAgrees().isEmpty }, "reach watch's last lines that disagree with the kernel: \(watchAgrees())")
        // For scripts/stress.sh and RELIABILITY.md; not a test of speed.
        print("storm (\(size)): every answer equal to the kernel's \(ContinuousClock.now - stormEnded) after the storm's end")

        // The overflow happened and was reported by every stream.
        #expect(subscription.resynchronizationCount > 0, "\(size) must overflow the smallest buffer")
        #expect(eventually { resynchronizations.withLock { $0 } > 0 }, "observers were told .resynchronized")
        #expect(events.waitForLine(containing: "\"resynchronized\""), "reach events printed a resynchronized line")

        // Every stream is still alive: one more change reaches all of them.
        let resynchronizationsBefore = subscription.resynchronizationCount
        try ns.batch(["route del 11.0.0.0/24"])
        #expect(eventually { answers.withLock { $0["11.0.0.1"]?.gateway?.description } == "10.200.0.3" },
                """
                the monitor follows (its answer: \(String(describing: answers.withLock { $0["11.0.0.1"] })); the \
                subscription told of the deletion: \(toldOfDeletion.withLock { $0 }); re-reads since: \
                \(subscription.resynchronizationCount - resynchronizationsBefore); the kernel's route: \
                \(String(describing: try? kernelRoute(ns, "11.0.0.1"))))
                """)
        #expect(watch.waitForLine(containing: "\"11.0.0.1\"", "\"10.200.0.3\""), "reach watch follows")
        #expect(events.waitForLine(containing: "\"removed\"", "\"11.0.0.0/24\""), "reach events follows")
        #expect(subscription.termination == nil)
    }
}

/// Whether a subscription's state equals a fresh read of the kernel: links, address keys and
/// default routes.
func agreesWithTheKernel(_ state: NetworkState, _ kernel: NetlinkConnection) -> Bool {
    guard let truth = try? kernel.snapshot() else { return false }
    return Set(state.addresses.keys) == Set(truth.addresses.keys)
        && state.links == truth.links && state.defaultRoutes == truth.defaultRoutes
}
