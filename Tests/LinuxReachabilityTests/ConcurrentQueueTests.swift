import Dispatch
import Foundation
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
@testable import LinuxReachability

/// Monitors given a concurrent queue (`DispatchQueue.global()`, a common choice with
/// NWPathMonitor and Reachability.swift): no stop from inside a callback waits for itself, and
/// a path monitor's handler sees one path at a time, in order.
@Suite(.serialized) struct ConcurrentQueueTests {
    /// Waits for `semaphore` a bounded time, so that a hang fails the test instead of the run.
    private func signalled(_ semaphore: DispatchSemaphore, within seconds: Int = 10) -> Bool {
        semaphore.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    @Test func aCloseFromInsideACallbackWaitsOnlyForTheOthers() {
        let gate = CallbackGate()
        let generation = gate.open()
        let firstRunning = DispatchSemaphore(value: 0), secondRan = DispatchSemaphore(value: 0)
        let secondMayEnd = DispatchSemaphore(value: 0), closed = DispatchSemaphore(value: 0)
        let secondEnded = Atomic<Bool>(false)
        // The first callback enters, a second enters and leaves on another thread, then the
        // first closes the gate: the gate once kept only the last thread to enter, so the
        // first waited for itself forever.
        Thread.detachNewThread {
            gate.run(generation: generation) {
                firstRunning.signal()
                _ = secondRan.wait(timeout: .now() + .seconds(10))
                gate.close()
                closed.signal()
            }
        }
        #expect(signalled(firstRunning))
        Thread.detachNewThread {
            gate.run(generation: generation) {}
            secondRan.signal()
        }
        #expect(signalled(closed), "a close from inside a callback returned")
        #expect(!gate.run(generation: generation) {}, "closed")

        // A close from inside a callback still waits for one running on another thread.
        let next = gate.open()
        let otherRunning = DispatchSemaphore(value: 0), closedAgain = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            gate.run(generation: next) {
                otherRunning.signal()
                _ = secondMayEnd.wait(timeout: .now() + .seconds(10))
                secondEnded.store(true, ordering: .releasing)
            }
        }
        #expect(signalled(otherRunning))
        Thread.detachNewThread {
            gate.run(generation: next) {
                gate.close()
                let waited = secondEnded.load(ordering: .acquiring)
                #expect(waited, "close waited for the callback on the other thread")
                closedAgain.signal()
            }
        }
        usleep(100_000)
        secondMayEnd.signal()
        #expect(signalled(closedAgain))
    }

    @Test func twoCallbacksThatBothCloseDoNotWaitForEachOther() {
        // On a concurrent queue two rounds' callbacks may both stop the monitor
        // (`whenReachable = { $0.stopListening() }`): each close once waited for the other.
        let gate = CallbackGate()
        let generation = gate.open()
        let inside = DispatchGroup(), closed = DispatchSemaphore(value: 0)
        for _ in 0..<2 { inside.enter() }
        for _ in 0..<2 {
            Thread.detachNewThread {
                gate.run(generation: generation) {
                    inside.leave()
                    _ = inside.wait(timeout: .now() + .seconds(10))  // both are inside
                    gate.close()
                    closed.signal()
                }
            }
        }
        #expect(signalled(closed) && signalled(closed), "both closes returned")
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func aPathHandlerOnAConcurrentQueueRunsOnePathAtATimeAndCanCancel() throws {
        let ns = try wiredNamespace("conc1")
        defer { ns.delete() }
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        let running = Atomic<Int>(0), mostAtOnce = Atomic<Int>(0)
        let statuses = Locked<[NetworkPath.Status]>([])
        let cancelled = DispatchSemaphore(value: 0)
        let cancelNow = Atomic<Bool>(false)
        monitor.pathUpdateHandler = { path in
            let now = running.add(1, ordering: .acquiringAndReleasing).newValue
            _ = mostAtOnce.max(now, ordering: .relaxed)
            usleep(150_000)  // long enough for the next paths to arrive meanwhile
            statuses.withLock { $0.append(path.status) }
            running.subtract(1, ordering: .acquiringAndReleasing)
            if cancelNow.load(ordering: .acquiring) {
                monitor.cancel()
                cancelled.signal()
            }
        }
        monitor.start(queue: .global())
        #expect(eventually { statuses.withLock { $0.last } == .unsatisfied })
        for _ in 0..<3 {
            try ns.ip("route", "add", "default", "via", "10.1.0.2")
            try ns.ip("route", "del", "default", "via", "10.1.0.2")
        }
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        // Once the handler is idle, the last path it handled is the current one: handled out of
        // order, an older path could have come last.
        #expect(eventually {
            running.load(ordering: .acquiring) == 0 && monitor.currentPath.status == .satisfied
                && statuses.withLock { $0.last } == .satisfied
        }, "the last path handled is the current one")
        #expect(mostAtOnce.load(ordering: .relaxed) == 1, "one path at a time")
        cancelNow.store(true, ordering: .releasing)
        try ns.ip("route", "del", "default", "via", "10.1.0.2")
        #expect(signalled(cancelled), "cancel() from inside the handler returned")
        #expect(monitor.isCancelled)
    }
}
