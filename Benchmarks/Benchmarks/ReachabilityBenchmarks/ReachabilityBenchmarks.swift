import Benchmark
import Dispatch
import Foundation
import Netlink
import LinuxReachability
import ReachabilityCompat
import Synchronization

// The library's figures for BENCHMARKS.md. Each benchmark builds its own namespace (root is
// needed) and the floor and the peers are measured beside it by ../compare.sh.

/// The small namespace shared by the cheap benchmarks, built on first use.
nonisolated(unsafe) private var small: BenchNamespace!

private func smallNamespace() throws -> BenchNamespace {
    if small == nil { small = try BenchNamespace("small") }
    return small
}

/// Waits for a condition that another thread makes true, without polling. A benchmark whose
/// awaited callback never comes stops with a message instead of hanging.
private final class Signal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func fire() { semaphore.signal() }
    func wait(_ what: String = #function) {
        guard semaphore.wait(timeout: .now() + .seconds(60)) == .success else { fatalError("no callback within 60 s: \(what)") }
    }
}

/// Alternates between two states across iterations (and across the warm-up, whose iteration
/// numbers start again at 0).
private let toggle = Atomic<Int>(0)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal, .cpuTotal],
                                           warmupIterations: 3, maxDuration: .seconds(5), maxIterations: 100_000)

    // 1. The answer of a watched target, read from the monitor: no kernel call.
    nonisolated(unsafe) var cached: ReachabilityMonitor!
    Benchmark("Cached answer", configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(cached.answer) }
    } setup: {
        let ns = try smallNamespace()
        let ready = Signal()
        cached = try ReachabilityMonitor(address: IPAddress("10.200.0.2")!, namespace: ns.namespace)
        cached.onChange = { _, _ in ready.fire() }
        cached.startListening()
        ready.wait()
    } teardown: {
        cached.stopListening()
        cached = nil
    }

    // 2. A fresh kernel route lookup (RTM_GETROUTE), one at a time and in batches of 1000. One
    //    at a time is measured in runs of 1000 (the figure is per lookup), as raw_lookup's loop
    //    is, so that the harness's own clock reads are not counted 1000 times.
    nonisolated(unsafe) var connection: NetlinkConnection!
    Benchmark("Fresh lookup", configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
        let destination = IPAddress("198.18.0.1")!
        for _ in benchmark.scaledIterations { blackHole(try? connection.lookupRoute(to: destination)) }
    } setup: {
        connection = try NetlinkConnection(namespace: try smallNamespace().namespace)
    }
    Benchmark("Fresh lookup, batch of 1000", configuration: .init(metrics: [.wallClock, .mallocCountTotal, .cpuTotal])) { benchmark in
        let destinations = benchmarkAddresses(1000)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try? connection.lookupRoutes(to: destinations)) }
    } setup: {
        connection = try NetlinkConnection(namespace: try smallNamespace().namespace)
    }

    // 3. 10 000 monitored addresses, one default-route change: every answer changes (its
    //    gateway), all are re-evaluated and every monitor is notified, through its closure
    //    only, and through its closure and a posted notification (the default).
    let notified = Atomic<Int>(0)
    let allNotified = Signal()
    let monitorCount = 10_000
    for postsNotifications in [false, true] {
        nonisolated(unsafe) var tenThousand: (ns: BenchNamespace, ip: IPCoprocess, monitors: [ReachabilityMonitor])!
        let name = postsNotifications ? "10000 monitors posting notifications, one route change" : "10000 monitors, one route change"
        Benchmark(name, configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 1, maxIterations: 20)) { benchmark in
            for _ in benchmark.scaledIterations {
                notified.store(0, ordering: .relaxed)
                let gateway = toggle.add(1, ordering: .relaxed).newValue % 2 == 0 ? 2 : 3
                benchmark.startMeasurement()
                tenThousand.ip.send("route replace default via 10.200.0.\(gateway) dev vb0")
                allNotified.wait()
                benchmark.stopMeasurement()
            }
        } setup: {
            let ns = try BenchNamespace(postsNotifications ? "tenkn" : "tenk")
            let queue = DispatchQueue(label: "bench.monitors")
            let monitors = try benchmarkAddresses(monitorCount).map { address in
                let monitor = try ReachabilityMonitor(address: address, namespace: ns.namespace, queue: queue)
                monitor.postsNotifications = postsNotifications
                monitor.onChange = { _, _ in
                    if notified.add(1, ordering: .relaxed).newValue == monitorCount { allNotified.fire() }
                }
                return monitor
            }
            notified.store(0, ordering: .relaxed)
            for monitor in monitors { monitor.startListening() }
            allNotified.wait()  // every first answer
            tenThousand = (ns, try IPCoprocess(namespace: ns.name), monitors)
        } teardown: {
            for monitor in tenThousand.monitors { monitor.stopListening() }
            tenThousand = nil
        }
    }

    // 3b. The floor of the notification channel, without the library: 10 000 posts of
    //     `statusDidChangeNotification` with the userInfo a monitor posts (status, answer,
    //     target, previous status), from 10 000 objects, with nobody observing. The userInfo
    //     dictionaries are built before the clock starts: this is Foundation's posting alone,
    //     what the "posting notifications" figure above adds to the closures-only one at least.
    nonisolated(unsafe) var posting: [(object: ReachabilityMonitor, userInfo: [AnyHashable: Any])]!
    Benchmark("10000 NotificationCenter posts with a monitor's userInfo",
              configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 1, maxIterations: 50)) { benchmark in
        for _ in benchmark.scaledIterations {
            for (object, userInfo) in posting {
                NotificationCenter.default.post(name: ReachabilityMonitor.statusDidChangeNotification, object: object, userInfo: userInfo)
            }
        }
    } setup: {
        let namespace = try smallNamespace().namespace
        let objects = try benchmarkAddresses(monitorCount).map { try ReachabilityMonitor(address: $0, namespace: namespace) }
        let answer = objects[0].answer
        posting = objects.map { object in
            let userInfo: [AnyHashable: Any] = [ReachabilityMonitor.statusUserInfoKey: answer.status, ReachabilityMonitor.answerUserInfoKey: answer,
                                                ReachabilityMonitor.targetUserInfoKey: object.target,
                                                ReachabilityMonitor.previousStatusUserInfoKey: answer.status]
            return (object, userInfo)
        }
    } teardown: {
        posting = nil
    }

    // 4. Start-up with 1 000 000 IPv4 routes and 1 000 links: a monitor of the internet, from
    //    its creation (the namespace's subscription reads its initial state) to its first answer.
    nonisolated(unsafe) var big: BenchNamespace!
    Benchmark("Start-up, 1M routes and 1000 links",
              configuration: .init(metrics: [.wallClock, .peakMemoryResidentDelta, .mallocCountTotal], warmupIterations: 1, maxIterations: 10)) { benchmark in
        for _ in benchmark.scaledIterations {
            let answered = Signal()
            let monitor = try! ReachabilityMonitor(target: .internet, namespace: big.namespace)
            monitor.onChange = { _, answer in
                precondition(answer.isReachable)
                answered.fire()
            }
            monitor.startListening()
            answered.wait()
            monitor.stopListening()
        }
    } setup: {
        big = try BenchNamespace("big")
        try big.batch((0..<500).map { "link add bl\($0) type veth peer name br\($0)" }.joined(separator: "\n"))
        let file = NSTemporaryDirectory() + "rbench-\(getpid())-routes.batch"
        try writeRouteBatch(1_000_000, command: "add", to: file, prefixLength: 24)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try big.batch(file: file)
    } teardown: {
        try? Shell.run("ip", "netns", "del", big.name)
        big = nil
    }

    // 5. Following a churn of 100 000 route additions and removals: the process's CPU time while
    //    its subscription and one watched target keep up. A sentinel route ends each round.
    nonisolated(unsafe) var churn: (ns: BenchNamespace, subscription: NetlinkSubscription, observation: NetlinkObservation,
                                    monitor: ReachabilityMonitor, addFile: String, deleteFile: String)!
    let sentinelSeen = Signal()
    Benchmark("Route churn, 100000 changes",
              configuration: .init(metrics: [.cpuTotal, .wallClock, .mallocCountTotal], warmupIterations: 0, maxIterations: 5)) { benchmark in
        for _ in benchmark.scaledIterations {
            try! churn.ns.batch(file: churn.addFile)
            try! churn.ns.batch(file: churn.deleteFile)
            try! churn.ns.batch("route add 203.0.113.99/32 via 10.200.0.2\nroute del 203.0.113.99/32 via 10.200.0.2")
            sentinelSeen.wait()
        }
    } setup: {
        let ns = try BenchNamespace("churn")
        let subscription = try NetlinkSubscription.shared(namespace: ns.namespace)
        let sentinel = IPNetwork("203.0.113.99/32")!
        let observation = subscription.observe { event in
            if case .route(.removed(let route)) = event, route.destination == sentinel { sentinelSeen.fire() }
        }
        let monitor = try ReachabilityMonitor(address: IPAddress("11.0.0.1")!, namespace: ns.namespace)
        monitor.startListening()
        let add = NSTemporaryDirectory() + "rbench-\(getpid())-churn-add.batch"
        let delete = NSTemporaryDirectory() + "rbench-\(getpid())-churn-del.batch"
        try writeRouteBatch(50_000, command: "add", to: add)
        try writeRouteBatch(50_000, command: "del", to: delete)
        churn = (ns, subscription, observation, monitor, add, delete)
    } teardown: {
        churn.monitor.stopListening()
        churn.observation.cancel()
        try? FileManager.default.removeItem(atPath: churn.addFile)
        try? FileManager.default.removeItem(atPath: churn.deleteFile)
        churn = nil
    }

    // 6. Event latency: a link flip requested through `ip -batch -` to the observer's callback.
    nonisolated(unsafe) var flip: (ns: BenchNamespace, ip: IPCoprocess, observation: NetlinkObservation)!
    let flipSeen = Signal()
    let wantUp = Atomic<Bool>(false)
    Benchmark("Event latency, link flip to callback",
              configuration: .init(metrics: [.wallClock], warmupIterations: 5, maxDuration: .seconds(10), maxIterations: 500)) { benchmark in
        for _ in benchmark.scaledIterations {
            let up = !wantUp.load(ordering: .relaxed)
            wantUp.store(up, ordering: .relaxed)
            benchmark.startMeasurement()
            flip.ip.send("link set vb0 \(up ? "up" : "down")")
            flipSeen.wait()
            benchmark.stopMeasurement()
        }
    } setup: {
        let ns = try BenchNamespace("flip")
        try ns.batch("link set vb0 down")
        let subscription = try NetlinkSubscription.shared(namespace: ns.namespace)
        let observation = subscription.observe { event in
            if case .link(.changed(let old, let new)) = event, new.name == "vb0", old.isUp != new.isUp,
               new.isUp == wantUp.load(ordering: .relaxed) {
                flipSeen.fire()
            }
        }
        flip = (ns, try IPCoprocess(namespace: ns.name), observation)
    } teardown: {
        flip.observation.cancel()
        flip = nil
    }
}
