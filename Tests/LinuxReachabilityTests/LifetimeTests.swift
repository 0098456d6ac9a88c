import Foundation
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
@testable import LinuxReachability

/// How many monitors the churn creates: 2 000 in CI, the 10 000 with `REACH_STORM=full`.
private let monitorCycles = ProcessInfo.processInfo.environment["REACH_STORM"] == "full" ? 10_000 : 2_000

/// A namespace whose link `va` carries 10.1.0.1/24 and a default route through 10.1.0.2.
private func flappingNamespace(_ label: String) throws -> TestNamespace {
    let ns = try TestNamespace(label)
    try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                  "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2"])
    _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
    return ns
}

/// One monitor's record: callbacks, and callbacks that came after `stopListening()` returned.
private final class MonitorRecord: Sendable {
    let stopped = Atomic<Bool>(false)
    let callbacks = Atomic<Int>(0)
    let lateCallbacks = Atomic<Int>(0)

    func called() {
        callbacks.add(1, ordering: .relaxed)
        if stopped.load(ordering: .acquiring) { lateCallbacks.add(1, ordering: .relaxed) }
    }
}

/// Lifetimes under load: monitors created and destroyed while the kernel keeps changing, a
/// monitor released from inside its own callback, a monitor stopped from another thread while
/// its callback runs. Run under `--sanitize=address` and `--sanitize=thread` by `.ci/run`.
@Suite("Lifetimes", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct LifetimeTests {
    @Test func monitorsCreatedAndDestroyedWhileEventsFlowLeaveNothingBehind() throws {
        let ns = try flappingNamespace("life1")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let engine = try ReachabilityEngine.shared(namespace: namespace)
        // The carrier of `va` flips all along (two flips a round).
        let flapper = RepeatedBatch(ns, ["link set vb down", "link set vb up"])
        defer { flapper.stop() }
        let queue = DispatchQueue(label: "lifetimes")
        var records: [MonitorRecord] = []
        var weakMonitors: [WeakReachability] = []
        var kept: [ReachabilityMonitor] = []
        for cycle in 0..<monitorCycles {
            if cycle % 100 == 0 {
                // Pace the churn to the flips, so that creation, release and delivery overlap
                // all along (a liveness bound only).
                _ = eventually { flapper.rounds.load(ordering: .relaxed) >= cycle / 100 }
            }
            let record = MonitorRecord()
            records.append(record)
            let monitor = try ReachabilityMonitor(address: IPAddress("10.1.\(cycle % 2).\(cycle % 250 + 1)")!, namespace: namespace, queue: queue)
            monitor.onChange = { _, _ in record.called() }
            monitor.startListening()
            weakMonitors.append(WeakReachability(monitor))
            if cycle % 3 == 0 {
                // A third live through the churn and are released at its end, while the link
                // still flaps.
                kept.append(monitor)
            } else if cycle % 3 == 1 {
                monitor.stopListening()
                record.stopped.store(true, ordering: .releasing)
            }
            // The rest are released here, with their watch still on.
        }
        #expect(eventually { records.contains { $0.callbacks.load(ordering: .relaxed) > 1 } }, "kept monitors were told of changes")
        kept.removeAll()
        flapper.stop()
        #expect(flapper.rounds.load(ordering: .relaxed) > 0, "events flowed during the churn")
        #expect(eventually { engine.watcherCount == 0 }, "every watch was removed: \(engine.watcherCount) left")
        #expect(eventually { weakMonitors.allSatisfy { $0.value == nil } }, "every monitor was freed")
        let late = records.reduce(0) { $0 + $1.lateCallbacks.load(ordering: .relaxed) }
        #expect(late == 0, "\(late) callbacks came after stopListening() returned")
    }

    @Test func aMonitorReleasedFromInsideItsOwnCallbackStops() throws {
        let ns = try flappingNamespace("life2")
        defer { ns.delete() }
        final class Holder: @unchecked Sendable {
            // Written once before start, then only on the monitor's callback queue.
            var monitor: ReachabilityMonitor?
        }
        let holder = Holder()
        let callbacks = Atomic<Int>(0)
        weak var weakMonitor: ReachabilityMonitor?
        do {
            let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
            weakMonitor = monitor
            monitor.onChange = { _, _ in
                callbacks.add(1, ordering: .relaxed)
                holder.monitor = nil  // the last strong reference, dropped inside the callback
            }
            holder.monitor = monitor
            monitor.startListening()
        }
        #expect(eventually { callbacks.load(ordering: .relaxed) == 1 })
        #expect(eventually { weakMonitor == nil }, "the monitor is freed after its callback returns")
        try ns.batch(["link set vb down", "link set vb up", "link set vb down"])
        usleep(300_000)  // a liveness bound for callbacks that must not come
        #expect(callbacks.load(ordering: .relaxed) == 1)
    }

    @Test func aCancelledPathMonitorLetsGoOfAHandlerThatHoldsIt() throws {
        let ns = try flappingNamespace("life2p")
        defer { ns.delete() }
        let paths = Atomic<Int>(0)
        weak var weakMonitor: NetworkPathMonitor?
        do {
            let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
            weakMonitor = monitor
            // The handler holds the monitor: a cycle until cancel() lets go of the handler.
            monitor.pathUpdateHandler = { _ in
                withExtendedLifetime(monitor) { _ = paths.add(1, ordering: .relaxed) }
            }
            monitor.start(queue: DispatchQueue(label: "test.cycle"))
            #expect(eventually { paths.load(ordering: .relaxed) >= 1 })
            monitor.cancel()
            #expect(monitor.pathUpdateHandler == nil)
        }
        #expect(eventually { weakMonitor == nil }, "the cancelled monitor is freed")
    }

    @Test func stopFromAnotherThreadWaitsForTheCallbackInFlight() throws {
        let ns = try flappingNamespace("life3")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        let inCallback = DispatchSemaphore(value: 0)
        let callbackFinished = Atomic<Bool>(false)
        let record = MonitorRecord()
        let first = Atomic<Bool>(true)
        monitor.onChange = { _, _ in
            record.called()
            guard !first.exchange(false, ordering: .acquiringAndReleasing) else { return }
            // The change's callback: hold it while another thread stops the monitor.
            inCallback.signal()
            usleep(300_000)
            callbackFinished.store(true, ordering: .releasing)
        }
        monitor.startListening()
        #expect(eventually { record.callbacks.load(ordering: .relaxed) == 1 })
        try ns.ip("link", "set", "vb", "down")
        #expect(inCallback.wait(timeout: .now() + 10) == .success, "the change was delivered")
        let stopper = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            monitor.stopListening()
            // stopListening returned: the callback in flight has finished.
            let finished = callbackFinished.load(ordering: .acquiring)
            #expect(finished, "stopListening() returned during a callback")
            record.stopped.store(true, ordering: .releasing)
            stopper.signal()
        }
        #expect(stopper.wait(timeout: .now() + 10) == .success, "stopListening() returned")
        try ns.batch(["link set vb up", "link set vb down", "link set vb up"])
        usleep(300_000)  // a liveness bound for callbacks that must not come
        #expect(record.lateCallbacks.load(ordering: .relaxed) == 0)
    }

    @Test func stoppingFromInsideTheCallbackDoesNotDeadlock() throws {
        let ns = try flappingNamespace("life4")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: IPAddress("10.1.0.9")!, namespace: .named(ns.name))
        let stopped = DispatchSemaphore(value: 0)
        let callbacks = Atomic<Int>(0)
        monitor.onChange = { monitor, _ in
            callbacks.add(1, ordering: .relaxed)
            monitor.stopListening()
            stopped.signal()
        }
        monitor.startListening()
        #expect(stopped.wait(timeout: .now() + 10) == .success, "stopListening() inside the callback returned")
        try ns.batch(["link set vb down", "link set vb up"])
        usleep(300_000)  // a liveness bound for callbacks that must not come
        #expect(callbacks.load(ordering: .relaxed) == 1)
        #expect(!monitor.isListening)
    }
}

/// A weak reference, to see that a monitor was freed.
private struct WeakReachability: @unchecked Sendable {
    // Set once at creation; reading a weak reference is thread-safe.
    weak var value: ReachabilityMonitor?
    init(_ value: ReachabilityMonitor) { self.value = value }
}
