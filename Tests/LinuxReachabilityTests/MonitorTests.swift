import Dispatch
import Foundation
import Synchronization
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability
import ReachabilityCompat

/// Collects what a monitor delivers.
final class Deliveries: Sendable {
    let answers = Locked<[ReachabilityAnswer]>([])

    /// The answers `monitor`'s callback gets, from a start of listening made here.
    static func listening(to monitor: ReachabilityMonitor) -> Deliveries {
        let deliveries = Deliveries()
        monitor.onChange = { _, answer in deliveries.append(answer) }
        monitor.startListening()
        return deliveries
    }

    var count: Int { answers.withLock { $0.count } }
    var last: ReachabilityAnswer? { answers.withLock { $0.last } }
    func append(_ answer: ReachabilityAnswer) { answers.withLock { $0.append(answer) } }
}

final class RecordingDelegate: ReachabilityDelegate {
    let deliveries = Deliveries()
    func reachability(_ reachability: ReachabilityMonitor, didChange answer: ReachabilityAnswer) { deliveries.append(answer) }
}

/// A namespace with one veth pair: 10.1.0.1/24 on va; the peer vb holds the carrier.
func wiredNamespace(_ label: String) throws -> TestNamespace {
    let ns = try TestNamespace(label)
    try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                  "address add 10.1.0.1/24 dev va", "link add vx type veth peer name vy"])
    _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
    return ns
}

/// Waits a little for deliveries that must not come (a liveness bound, not a timing assertion).
func settle() { usleep(300_000) }

@Suite("Monitors", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct MonitorTests {
    static let target = IPAddress("10.1.0.9")!

    @Test func firstTheAnswerThenOnlyRealChanges() throws {
        let ns = try wiredNamespace("mon1")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        #expect(monitor.startListening())  // harmless, and listening
        #expect(eventually { deliveries.count == 1 })
        #expect(deliveries.last?.isReachable == true)
        #expect(deliveries.last?.interface?.name == "va")
        #expect(monitor.isListening)

        // Changes that do not touch the answer: none delivered.
        try ns.batch(["address add 10.7.0.1/24 dev vx", "link set vx up", "route add 10.8.0.0/16 dev vx",
                      "address add 10.1.0.50/24 dev va"])
        settle()
        #expect(deliveries.count == 1)

        // Carrier lost, then back: exactly two deliveries, however many kernel events.
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.count == 2 })
        #expect(deliveries.last?.reason == .noCarrier)
        #expect(monitor.flags.isEmpty)
        try ns.ip("link", "set", "vb", "up")
        #expect(eventually { deliveries.count == 3 })
        settle()
        #expect(deliveries.count == 3)
        #expect(monitor.status == .reachableViaOther)

        // After stopListening returns, nothing is delivered; queries still answer.
        monitor.stopListening()
        #expect(!monitor.isListening)
        try ns.ip("link", "set", "vb", "down")
        settle()
        #expect(deliveries.count == 3)
        #expect(eventually { !monitor.isReachable })
    }

    @Test func manyMonitorsOfOneTargetShareOneEvaluation() throws {
        let ns = try wiredNamespace("mon2")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let engine = try ReachabilityEngine.shared(namespace: namespace)
        let deliveries = (0..<200).map { _ in Deliveries() }
        let monitors = try deliveries.map { collected in
            let monitor = try ReachabilityMonitor(address: Self.target, namespace: namespace)
            monitor.onChange = { _, answer in collected.append(answer) }
            monitor.startListening()
            return monitor
        }
        #expect(eventually { deliveries.allSatisfy { $0.count == 1 } })
        let before = engine.evaluationCount
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.allSatisfy { $0.count == 2 } })
        settle()
        #expect(deliveries.allSatisfy { $0.count == 2 })
        // One target, one evaluation per netlink read: a handful, not 200.
        #expect(engine.evaluationCount - before < 20)
        withExtendedLifetime(monitors) {}
    }

    @Test func everyWayOfBeingToldIsTold() async throws {
        let ns = try wiredNamespace("mon3")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        monitor.postsNotifications = true
        let delegate = RecordingDelegate()
        monitor.delegate = delegate
        typealias Posted = (status: ReachabilityStatus?, previous: ReachabilityStatus?, target: ReachabilityTarget?,
                            answer: ReachabilityAnswer?, keys: Int)
        let notified = Locked<[Posted]>([])
        // Each userInfo as posted, kept: the monitor writes the next one over its last, which
        // must not change one an observer holds.
        let kept = Locked<[[AnyHashable: Any]]>([])
        let observer = NotificationCenter.default.addObserver(forName: ReachabilityMonitor.statusDidChangeNotification,
                                                              object: monitor, queue: nil) { note in
            let info = note.userInfo ?? [:]
            let posted: Posted = (info[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus,
                                  info[ReachabilityMonitor.previousStatusUserInfoKey] as? ReachabilityStatus,
                                  info[ReachabilityMonitor.targetUserInfoKey] as? ReachabilityTarget,
                                  info[ReachabilityMonitor.answerUserInfoKey] as? ReachabilityAnswer, info.count)
            notified.withLock { $0.append(posted) }
            kept.withLock { $0.append(info) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        monitor.startListening()
        #expect(eventually { delegate.deliveries.count == 1 && notified.withLock { $0.count } == 1 })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { delegate.deliveries.count == 2 && notified.withLock { $0.count } == 2 })
        let second = notified.withLock { $0[1] }
        #expect(second.status == .notReachable)
        #expect(second.previous == .reachableViaOther)
        #expect(second.target == .address(Self.target))
        #expect(second.answer == delegate.deliveries.last && second.keys == 4)
        #expect(notified.withLock { $0[0].previous } == nil)
        #expect(notified.withLock { $0[0].keys } == 3)

        // The AsyncSequence: the current answer first, then the change.
        var iterator = monitor.updates().makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.reason == .noCarrier)
        try ns.ip("link", "set", "vb", "up")
        let next = await iterator.next()
        #expect(next?.isReachable == true)
        #expect(eventually { kept.withLock { $0.count } == 3 })
        let statuses = kept.withLock { $0.map { $0[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus } }
        #expect(statuses == [.reachableViaOther, .notReachable, .reachableViaOther])
        #expect(kept.withLock { $0[1][ReachabilityMonitor.previousStatusUserInfoKey] as? ReachabilityStatus } == .reachableViaOther)
        #expect(kept.withLock { $0[2][ReachabilityMonitor.previousStatusUserInfoKey] as? ReachabilityStatus } == .notReachable)
        monitor.stopListening()
    }

    @Test func aMonitorThatPostsNoNotificationsStillCallsBack() throws {
        let ns = try wiredNamespace("mon6")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        monitor.postsNotifications = false
        let deliveries = Deliveries()
        monitor.onChange = { _, answer in deliveries.append(answer) }
        let posted = Locked(0)
        let observer = NotificationCenter.default.addObserver(forName: ReachabilityMonitor.statusDidChangeNotification,
                                                              object: monitor, queue: nil) { _ in posted.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        monitor.startListening()
        // The first answer is read before the link goes down, or there is no change to tell.
        #expect(eventually { deliveries.count == 1 })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.count == 2 })
        monitor.postsNotifications = true
        try ns.ip("link", "set", "vb", "up")
        #expect(eventually { deliveries.count == 3 && posted.withLock { $0 } == 1 })
        monitor.stopListening()
    }

    @Test func releasingTheObjectStopsIt() throws {
        let ns = try wiredNamespace("mon4")
        defer { ns.delete() }
        let deliveries = Deliveries()
        weak var weakMonitor: ReachabilityMonitor?
        do {
            let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
            monitor.onChange = { _, answer in deliveries.append(answer) }
            monitor.startListening()
            #expect(eventually { deliveries.count == 1 })
            weakMonitor = monitor
        }
        #expect(eventually { weakMonitor == nil })
        try ns.ip("link", "set", "vb", "down")
        settle()
        #expect(deliveries.count == 1)
    }

    @Test func changingTheTargetResetsToUnknownAndTellsOnceKnown() throws {
        let ns = try wiredNamespace("mon5")
        defer { ns.delete() }
        try ns.ip("route", "add", "blackhole", "198.51.100.0/24")
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.count == 1 })
        #expect(monitor.fxStatus == .reachableViaWiFi)
        monitor.target = .address(IPAddress("198.51.100.1")!)
        #expect(eventually { deliveries.count == 2 })
        #expect(deliveries.last?.reason == .blackholeRoute)
        #expect(monitor.fxStatus == .notReachable)
        #expect(monitor.reach() == .unknown)
        #expect(monitor.connection == .unavailable)
        monitor.stopListening()
    }

    @Test func olasInstalledCallbackGetsItsStatus() throws {
        let ns = try wiredNamespace("monola")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        let statuses = Locked<[OlaStatus]>([])
        #expect(monitor.install { status in statuses.withLock { $0.append(status) } })
        #expect(eventually { statuses.withLock { $0 } == [.reachable] })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { statuses.withLock { $0.last } == .unknown })
        #expect(OlaStatus.allCases.map(\.rawValue) == [0, 1, 2])
        monitor.stopListening()
    }

    @Test func queriesAreCurrentWhileAnAnswerWaitsAndAfterAStop() throws {
        let ns = try wiredNamespace("mon5q")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: Self.target, namespace: .named(ns.name))
        let deliveries = Deliveries()
        monitor.onChange = { _, answer in deliveries.append(answer) }
        // A long coalescing window holds the change back; the flags do not wait for it.
        monitor.coalescingInterval = .seconds(60)
        monitor.startListening()
        #expect(eventually { deliveries.count == 1 })
        #expect(monitor.isReachable)
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { !monitor.isReachable }, "the flags are the current answer, not the last one delivered")
        #expect(monitor.answer.reason == .noCarrier)
        #expect(monitor.fxStatus == .notReachable)
        #expect(deliveries.count == 1)
        // Stopped, every status still follows the kernel.
        monitor.stopListening()
        try ns.ip("link", "set", "vb", "up")
        #expect(eventually { monitor.isReachable })
        #expect(monitor.fxStatus == .reachableViaWiFi)
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { monitor.fxStatus == .notReachable })
        #expect(monitor.alamofireStatus == .notReachable)
    }

    @Test func theZeroAddressIsTheInternet() throws {
        let ns = try wiredNamespace("mon0a")
        defer { ns.delete() }
        // Apple's zero address, which Reachability.swift watches for "the internet": a lookup of
        // 0.0.0.0 would find the local route and say reachable with no way out.
        for zero in [IPAddress("0.0.0.0")!, IPAddress("::")!] {
            let monitor = try ReachabilityMonitor(address: zero, namespace: .named(ns.name))
            #expect(monitor.answer.reason == .noDefaultRoute)
            #expect(!monitor.isReachable)
        }
        let monitor = try ReachabilityMonitor(address: IPAddress("0.0.0.0")!, namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.count == 1 })
        #expect(deliveries.last?.reason == .noDefaultRoute)
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        #expect(eventually { deliveries.last?.isReachable == true })
        #expect(deliveries.last?.gateway == IPAddress("10.1.0.2"))
        monitor.stopListening()
    }

    @Test func aTargetChangedToAHostIsToldOnlyOnceResolved() throws {
        let ns = try wiredNamespace("mon5h")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        // The name resolves when the test lets it, not after a delay that a busy machine's
        // scheduling could outlast.
        let resolver = GatedResolver()
        let monitor = try ReachabilityMonitor(target: .internet, namespace: .named(ns.name), resolver: resolver)
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.count == 1 })
        #expect(deliveries.last?.isReachable == true)
        monitor.target = .host("slow.example.test")
        // Unknown, and nothing told, until the name resolves (FXReachability).
        #expect(monitor.fxStatus == .unknown)
        #expect(eventually { resolver.callCount >= 1 })
        settle()
        #expect(deliveries.count == 1)
        #expect(monitor.fxStatus == .unknown)
        resolver.release(through: .max, with: [IPAddress("198.51.100.3")!])
        #expect(eventually { deliveries.count == 2 })
        #expect(deliveries.last?.reason == .blackholeRoute)
        #expect(monitor.fxStatus == .notReachable)
        monitor.stopListening()
    }

    @Test func hostNamesComeFromAnInjectedResolverOrTheNamespacesHostsFile() throws {
        let ns = try wiredNamespace("mon6")
        defer { ns.delete() }
        let resolver = StaticHostResolver(["api.example.test": [IPAddress("203.0.113.5")!, IPAddress("10.1.0.7")!]])
        let monitor = try ReachabilityMonitor(target: .host("api.example.test"), namespace: .named(ns.name), resolver: resolver)
        let deliveries = Deliveries.listening(to: monitor)
        #expect(eventually { deliveries.last?.address == IPAddress("10.1.0.7") })
        #expect(deliveries.last?.isReachable == true)
        monitor.stopListening()

        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "10.1.0.8 db.example.test\n".write(toFile: directory + "/hosts", atomically: true, encoding: .utf8)
        let fromFile = try ReachabilityMonitor(host: "db.example.test", namespace: .named(ns.name))
        let fileDeliveries = Deliveries()
        fromFile.onChange = { _, answer in fileDeliveries.append(answer) }
        fromFile.startListening()
        #expect(eventually { fileDeliveries.last?.address == IPAddress("10.1.0.8") })
        fromFile.stopListening()
    }
}

@Suite("Monitor delivery details", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct MonitorDeliveryTests {
    @Test func callbacksRunOnTheChosenQueueAndCoalescingKeepsTheLastAnswer() throws {
        let ns = try wiredNamespace("mon7")
        defer { ns.delete() }
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "test.chosen")
        queue.setSpecific(key: key, value: "chosen")
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name), queue: queue)
        let onQueue = Locked<[Bool]>([])
        let deliveries = Deliveries()
        monitor.coalescingInterval = .seconds(3)
        monitor.onChange = { _, answer in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "chosen") }
            deliveries.append(answer)
        }
        monitor.startListening()
        #expect(eventually { deliveries.count == 1 })
        // Down and up again within the window (one `ip -batch`, so that a busy machine cannot
        // stretch the gap between them past the window; the window is long enough for the
        // kernel's link watch to tell the carrier's return on a busy machine): the answer at
        // the end equals the last one delivered, so nothing is delivered.
        try ns.batch(["link set vb down", "link set vb up"])
        usleep(3_600_000)
        #expect(deliveries.count == 1)
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { deliveries.count == 2 })
        #expect(onQueue.withLock { $0 } == [true, true])
        monitor.stopListening()
    }

    /// Without a queue of their own, the monitors of a namespace call back on private queues
    /// that target its evaluation queue: their callbacks run one at a time, in the engine's
    /// order, on the thread that evaluated them (no thread woken per delivery), and a monitor
    /// with a chosen queue is not drawn in.
    @Test func defaultCallbackQueuesTargetTheNamespacesEvaluationQueue() throws {
        let ns = try wiredNamespace("mon7d")
        defer { ns.delete() }
        let engine = try ReachabilityEngine.shared(namespace: .named(ns.name))
        let key = DispatchSpecificKey<String>()
        engine.queue.setSpecific(key: key, value: "engine")
        let chosen = DispatchQueue(label: "test.chosen")
        let first = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        let second = try ReachabilityMonitor(address: IPAddress("10.1.0.10")!, namespace: .named(ns.name))
        let third = try ReachabilityMonitor(address: IPAddress("10.1.0.11")!, namespace: .named(ns.name), queue: chosen)
        // A pthread-based lock: the callbacks run on two threads (the engine's queue and the
        // chosen one), and the thread sanitizer does not see `Mutex`'s synchronization.
        let seen = Locked<[String: [String?]]>([:])
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        for (name, monitor) in [("first", first), ("second", second), ("third", third)] {
            monitor.onChange = { _, _ in
                if name != "third", running.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
                    overlapped.store(true, ordering: .relaxed)
                }
                let marker = DispatchQueue.getSpecific(key: key)
                usleep(2_000)  // long enough for a second thread to show up, if there were one
                if name != "third" { running.subtract(1, ordering: .acquiringAndReleasing) }
                seen.withLock { $0[name, default: []].append(marker) }
            }
            monitor.startListening()
        }
        #expect(eventually { seen.withLock { $0.values.map(\.count) } == [1, 1, 1] })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { seen.withLock { $0.values.allSatisfy { $0.count == 2 } } })
        let markers = seen.withLock { $0 }
        #expect(markers["first"] == ["engine", "engine"])
        #expect(markers["second"] == ["engine", "engine"])
        #expect(markers["third"] == [nil, nil], "a chosen queue runs callbacks on its own")
        let didOverlap = overlapped.load(ordering: .relaxed)
        #expect(!didOverlap, "default-queue callbacks of one namespace never overlap")
        for monitor in [first, second, third] { monitor.stopListening() }

        // The shared instance too (only read here: the process's own namespace is not changed).
        let current = try ReachabilityEngine.shared(namespace: .current)
        current.queue.setSpecific(key: key, value: "current engine")
        #expect(ReachabilityMonitor.shared.callbackQueue.sync { DispatchQueue.getSpecific(key: key) } == "current engine")
    }

    /// A monitor whose callback queue is the namespace's evaluation queue gets its changes
    /// inside the round, on the subscription's own thread (no thread woken between the kernel
    /// and the callback); when it stops, rounds go back to the queue.
    @Test func callbacksOnTheEvaluationQueueRunOnTheKernelReader() throws {
        let ns = try wiredNamespace("mon7e")
        defer { ns.delete() }
        let queue = try ReachabilityMonitor.evaluationQueue(in: .named(ns.name))
        let engine = try ReachabilityEngine.shared(namespace: .named(ns.name))
        #expect(queue === engine.queue)
        let key = DispatchSpecificKey<String>()
        engine.queue.setSpecific(key: key, value: "engine")
        let inline = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name), queue: queue)
        let byDefault = try ReachabilityMonitor(address: IPAddress("10.1.0.10")!, namespace: .named(ns.name))
        let seen = Locked<[(monitor: String, reachable: Bool, queue: String?, thread: String)]>([])
        for (name, monitor) in [("inline", inline), ("default", byDefault)] {
            monitor.onChange = { _, answer in
                let entry = (name, answer.isReachable, DispatchQueue.getSpecific(key: key), currentThreadName())
                seen.withLock { $0.append(entry) }
            }
            monitor.startListening()
        }
        #expect(engine.inlineWatcherCount == 1)
        #expect(eventually { seen.withLock { $0.count } == 2 })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { seen.withLock { $0.filter { !$0.reachable }.count } == 2 })
        let changes = seen.withLock { $0.filter { !$0.reachable } }
        let inlineChange = changes.first { $0.monitor == "inline" }
        #expect(inlineChange?.queue == "engine")
        #expect(inlineChange?.thread.hasPrefix("netlink") == true, "ran on \(inlineChange?.thread ?? "-")")
        #expect(changes.first { $0.monitor == "default" }?.queue == "engine")
        inline.stopListening()
        #expect(engine.inlineWatcherCount == 0)
        inline.stopListening()
        #expect(engine.inlineWatcherCount == 0, "stopping twice counts once")
        try ns.ip("link", "set", "vb", "up")
        #expect(eventually { seen.withLock { $0.filter { $0.monitor == "default" && $0.reachable }.count } == 2 })
        #expect(seen.withLock { $0.filter { $0.monitor == "inline" }.count } == 2, "a stopped monitor is not called")
        byDefault.stopListening()
    }

    @Test func anAddressPairFollowsSourcePolicyRules() throws {
        let ns = try wiredNamespace("mon8")
        defer { ns.delete() }
        try ns.batch(["address add 10.7.0.1/24 dev vx", "link set vx up", "link set vy up",
                      "route add 192.0.2.0/24 via 10.1.0.2 dev va",
                      "route add 192.0.2.0/24 via 10.7.0.2 dev vx table 100", "rule add from 10.7.0.1 lookup 100 pref 1000"])
        let plain = try ReachabilityMonitor(address: IPAddress("192.0.2.5")!, namespace: .named(ns.name))
        let sourced = try ReachabilityMonitor(localAddress: IPAddress("10.7.0.1")!, remoteAddress: IPAddress("192.0.2.5")!,
                                       namespace: .named(ns.name))
        #expect(eventually { plain.answer.interface?.name == "va" })
        #expect(sourced.answer.interface?.name == "vx")
        #expect(sourced.answer.gateway == IPAddress("10.7.0.2"))
    }

    @Test func pathsSupportDNSWhenTheNamespacesNameServerIsRouted() throws {
        let ns = try wiredNamespace("mon9")
        defer { ns.delete() }
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "nameserver 10.1.0.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        #expect(eventually { monitor.currentPath.status == .satisfied })
        #expect(monitor.currentPath.supportsDNS)
        try "nameserver 203.0.113.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        try ns.ip("route", "add", "unreachable", "203.0.113.0/24")
        #expect(!monitor.currentPath.supportsDNS)
        monitor.cancel()
    }

    /// A wired namespace with a default route, 203.0.113.0/24 unreachable, and no IPv6: its
    /// addresses' late changes (duplicate address detection) would start rounds of their own,
    /// and the tests that use it are about changes that come without any.
    private func nameServerNamespace(_ label: String) throws -> TestNamespace {
        let ns = try wiredNamespace(label)
        try ns.disableIPv6()
        try ns.batch(["route add default via 10.1.0.2", "route add unreachable 203.0.113.0/24"])
        return ns
    }

    @Test func aNewNameServerIsJudgedWithoutAKernelChange() throws {
        let ns = try nameServerNamespace("mon9c")
        defer { ns.delete() }
        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "nameserver 10.1.0.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let paths = Locked<[NetworkPath]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        monitor.start(queue: DispatchQueue(label: "test.dns"))
        defer { monitor.cancel() }
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == true })
        // The resolver's file alone changes (a DHCP client's rewrite, by a rename): no kernel
        // message, and the path is told that its name server is not reachable.
        try "nameserver 203.0.113.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == false })
        #expect(paths.withLock { $0.last?.status } == .satisfied)
        try "nameserver 10.1.0.54\n".write(toFile: directory + "/resolv.conf", atomically: false, encoding: .utf8)
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == true })
    }

    @Test func aNamespacesResolverFileMadeAfterTheMonitorStartedIsFollowed() throws {
        let ns = try nameServerNamespace("mon9d")
        defer { ns.delete() }
        let directory = "/etc/netns/\(ns.name)"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The machine's name servers at first, whatever they are; then the namespace's own
        // file, in a directory made after the monitor started (`mkdir -p`, as `ip netns`
        // users do), first with a name server that is not routed, then with one that is.
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let paths = Locked<[NetworkPath]>([])
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        monitor.start(queue: DispatchQueue(label: "test.dns.late"))
        defer { monitor.cancel() }
        #expect(eventually { paths.withLock { $0.last?.status } == .satisfied })
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "nameserver 203.0.113.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == false })
        try "nameserver 10.1.0.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == true })
        // Deleted and made again: followed again.
        try FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "nameserver 203.0.113.54\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        #expect(eventually { paths.withLock { $0.last?.supportsDNS } == false })
    }

    @Test func aPathSupportsDNSOnlyThroughLinksItMayUseOrALocalResolver() throws {
        let ns = try wiredNamespace("mon9b")
        defer { ns.delete() }
        try ns.batch(["link set lo up", "route add default via 10.1.0.2", "route add 192.0.2.53/32 dev lo"])
        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A name server routed through the loopback link, which a path of veths (type other)
        // may not use.
        try "nameserver 192.0.2.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let any = NetworkPathMonitor(namespace: try .named(ns.name))
        let veths = NetworkPathMonitor(namespace: try .named(ns.name), requiredInterfaceType: .other)
        defer { any.cancel(); veths.cancel() }
        #expect(eventually { any.currentPath.status == .satisfied && veths.currentPath.status == .satisfied })
        #expect(any.currentPath.supportsDNS)
        #expect(!veths.currentPath.supportsDNS)
        // A local stub resolver (systemd-resolved's address) serves every path.
        try "nameserver 127.0.0.53\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        #expect(veths.currentPath.supportsDNS)
    }
}

@Suite("One subscription per namespace", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SharedSubscriptionTests {
    @Test func hundredsOfMonitorsOpenNoSocketsOfTheirOwn() throws {
        let ns = try wiredNamespace("monfd")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let first = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: namespace)
        first.startListening()
        let paths = NetworkPathMonitor(namespace: namespace)
        paths.start(queue: DispatchQueue(label: "test.fd"))
        #expect(eventually { first.answer.isReachable })
        let identity = try #require(NamespaceIdentity(path: ns.path))
        let before = identity.socketsHeld()
        #expect(before > 0)
        let monitors = try (0..<300).map { index in
            let monitor = try ReachabilityMonitor(address: IPAddress("10.1.\(index / 250).\(index % 250 + 1)")!, namespace: namespace)
            monitor.startListening()
            return monitor
        }
        let morePaths = (0..<50).map { _ in NetworkPathMonitor(namespace: namespace) }
        for monitor in morePaths { monitor.start(queue: DispatchQueue(label: "test.fd.more")) }
        #expect(eventually { monitors.allSatisfy { $0.isListening } })
        // The subscriptions, sockets and threads are the namespace's, shared; not one per monitor.
        #expect(identity.socketsHeld() == before)
        for monitor in morePaths { monitor.cancel() }
        paths.cancel()
    }
}

@Suite("Host name answers", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct HostNameAnswerTests {
    @Test func toldOnceResolvedThenReResolvedWhenTheNetworkChanges() throws {
        let ns = try wiredNamespace("monhost")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        let resolver = GatedResolver()
        let monitor = try ReachabilityMonitor(target: .host("api.example.test"), namespace: .named(ns.name), resolver: resolver)
        let deliveries = Deliveries.listening(to: monitor)
        // While the name resolves, nothing is told: FXReachability's status is unknown, and a
        // query answers optimistically from the default route.
        #expect(monitor.fxStatus == .unknown)
        #expect(monitor.alamofireStatus == .unknown)
        #expect(monitor.isReachable)
        #expect(deliveries.count == 0)
        // The first answer told is the resolved one (blackholed), and the query agrees. The
        // query above may have started a resolution of its own before the watch's: the first
        // two calls get the first answer.
        #expect(eventually { resolver.callCount >= 1 })
        resolver.release(through: 2, with: [IPAddress("198.51.100.1")!])
        #expect(eventually { deliveries.count >= 1 })
        #expect(deliveries.answers.withLock { $0[0] }.reason == .blackholeRoute)
        #expect(deliveries.answers.withLock { $0[0] }.addresses == [IPAddress("198.51.100.1")!])
        #expect(!monitor.isReachable)
        #expect(monitor.fxStatus == .notReachable)

        // The name moves; a network change makes the monitor resolve again.
        resolver.release(through: .max, with: [IPAddress("198.51.100.1")!, IPAddress("10.1.0.7")!])
        let callsBefore = resolver.callCount
        try ns.ip("address", "add", "10.1.0.60/24", "dev", "va")
        #expect(eventually { deliveries.last?.address == IPAddress("10.1.0.7") })
        #expect(deliveries.last?.isReachable == true)
        // An earlier event's resolution may still be asleep and bring the new name first: the
        // address's own resolution starts on the resolution executor, not before the delivery.
        #expect(eventually { resolver.callCount > callsBefore })
        monitor.stopListening()
    }

    @Test func aQueriedHostIsOptimisticFirstThenAnsweredFromItsAddresses() throws {
        let ns = try wiredNamespace("monquery")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2", "route add blackhole 198.51.100.0/24"])
        let resolver = GatedResolver()
        let monitor = try ReachabilityMonitor(target: .host("db.example.test"), namespace: .named(ns.name), resolver: resolver)
        #expect(monitor.isReachable)               // optimistic: the default route
        resolver.release(through: .max, with: [IPAddress("198.51.100.2")!])
        #expect(eventually { !monitor.isReachable })  // resolved: blackholed
        #expect(monitor.answer.addresses == [IPAddress("198.51.100.2")!])
        #expect(!monitor.isListening)
    }
}

/// The name of the calling thread, as the kernel knows it (`/proc/thread-self/comm`).
func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
}
