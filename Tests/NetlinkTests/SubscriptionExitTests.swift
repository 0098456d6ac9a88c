import Dispatch
import Glibc
@testable import Netlink
import NetnsTestSupport
import Synchronization
import Testing

/// What the process's exit does to running subscriptions (``ExitCoordinator``): it ends each
/// loop before libnl-route's destructors run (a loop that frees a link after them makes libnl
/// abort), without telling the observers that their subscription ended, and starts no loop
/// after it began. A loop is on the coordinator's list from its start to the end of its
/// teardown, and not after, so an ended subscription is neither kept alive nor waited for.
@Suite("Subscriptions at the process's exit", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SubscriptionExitTests {
    @Test func aLoopIsListedForTheExitFromItsStartToItsEnd() throws {
        let ns = try TestNamespace("atexit")
        defer { ns.delete() }
        let engine = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(), publisher: Publisher())
        #expect(ExitCoordinator.process.isRegistered(engine))
        engine.stop()
        #expect(!ExitCoordinator.process.isRegistered(engine))

        // A loop that ends by itself (its namespace deleted) leaves the list too.
        let ns2 = try TestNamespace("atexit2")
        let ended = try SubscriptionEngine.start(namespace: .named(ns2.name), options: SubscriptionOptions(), publisher: Publisher())
        ns2.delete()
        #expect(eventually { !ExitCoordinator.process.isRegistered(ended) })
        ended.stop()
    }

    @Test func theExitEndsTheLoopsWithoutTellingTheirObserversAndStartsNoMore() throws {
        let ns = try TestNamespace("atexit3")
        defer { ns.delete() }
        let coordinator = ExitCoordinator(waitSeconds: 5)
        let publisher = Publisher()
        let told = Atomic<Int>(0)
        publisher.attach(CallbackObserver(queue: nil, handler: { _ in }, onTermination: { _ in told.add(1, ordering: .relaxed) }))
        let engine = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(),
                                                  publisher: publisher, exitCoordinator: coordinator)
        #expect(coordinator.isRegistered(engine))

        coordinator.endRunningLoops()
        // The loop has freed everything: waiting until now returns at once.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        #expect(engine.waitUntilFinished(until: now))
        #expect(!coordinator.isRegistered(engine))
        #expect(coordinator.isExiting)
        #expect(publisher.termination == nil)
        #expect(told.load(ordering: .relaxed) == 0)

        var refusal: NetlinkError?
        do {
            _ = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(),
                                             publisher: Publisher(), exitCoordinator: coordinator)
        } catch {
            refusal = error
        }
        #expect(refusal?.systemErrno == ESHUTDOWN)
        engine.stop()

        // Stopped otherwise, a loop tells its observers.
        let other = Publisher()
        let toldOther = Atomic<Int>(0)
        other.attach(CallbackObserver(queue: nil, handler: { _ in }, onTermination: { _ in toldOther.add(1, ordering: .relaxed) }))
        let stopped = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(),
                                                   publisher: other, exitCoordinator: ExitCoordinator(waitSeconds: 5))
        stopped.stop()
        #expect(other.termination != nil)
        #expect(toldOther.load(ordering: .relaxed) == 1)
    }

    /// `exit` from a callback on `ReachabilityMonitor`'s evaluation queue, whose rounds run inside the
    /// subscription's observer with `queue.sync`: the loop waits for the exiting block, which
    /// never ends, so the exit leaves it there instead of waiting for it (which took the whole
    /// wait, a second, before). An exit from a block of another queue that the loop's
    /// observers wait for (another engine's, on one shared subscription) still waits for the
    /// loop, which is not held up by that block.
    @Test func anExitFromABlockThatALoopsObserverWaitsForLeavesThatLoop() throws {
        let ns = try TestNamespace("atexit4")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb"])
        let (engine, coordinator, queue, _) = try loopWaitingFor(ns)
        let left = Locked<Int?>(nil)
        queue.sync {
            // A change: the loop's observer now waits for this block.
            _ = try? ns.ip("link", "set", "va", "up")
            _ = eventually { engine.isObserverWaiting(for: Self.identity(of: queue)) }
            left.withLock { $0 = coordinator.endRunningLoops() }
        }
        #expect(left.withLock { $0 } == 1)
        // Its block done, the loop goes on and ends.
        #expect(engine.waitUntilFinished(until: Self.seconds(30)))
        engine.stop()
    }

    @Test func anExitFromAnotherWaitedQueueWaitsForTheLoop() throws {
        let ns = try TestNamespace("atexit5")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb"])
        let (engine, coordinator, queue, other) = try loopWaitingFor(ns, holding: 300_000)
        let left = Locked<Int?>(nil)
        // The observer waits for a slow block of `queue`, not for this one of `other`.
        _ = try? ns.ip("link", "set", "va", "up")
        #expect(eventually { engine.isObserverWaiting(for: Self.identity(of: queue)) })
        other.sync { left.withLock { $0 = coordinator.endRunningLoops() } }
        #expect(left.withLock { $0 } == 0)
        #expect(engine.waitUntilFinished(until: Self.seconds(0)), "the exit waited for the loop to end")
        engine.stop()
    }

    /// A loop whose observer waits (`sync`) for a block of `queue`, each `holding`
    /// microseconds; `queue` and `other` are both noted as queues its observers wait for.
    private func loopWaitingFor(_ ns: TestNamespace, holding: UInt32 = 0) throws
        -> (SubscriptionEngine, ExitCoordinator, DispatchQueue, DispatchQueue) {
        let coordinator = ExitCoordinator(waitSeconds: 5)
        let queue = DispatchQueue(label: "test.evaluation")
        let other = DispatchQueue(label: "test.evaluation.other")
        let publisher = Publisher()
        // Weakly: the engine holds the publisher, which holds this observer.
        let started = Locked(WeakEngine())
        publisher.attach(CallbackObserver(queue: nil, handler: { _ in
            _ = started.withLock { $0.engine }?.whileObserverWaits(for: Self.identity(of: queue)) { queue.sync { usleep(holding) } }
        }, onTermination: { _ in }))
        let engine = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(),
                                                  publisher: publisher, exitCoordinator: coordinator)
        started.withLock { $0.engine = engine }
        for waited in [queue, other] {
            waited.setSpecific(key: ExitCoordinator.queueWaitedForByObservers,
                               value: ExitCoordinator.WaitedQueue(loop: ObjectIdentifier(engine), queue: Self.identity(of: waited)))
        }
        return (engine, coordinator, queue, other)
    }

    private static func identity(of queue: DispatchQueue) -> UInt { UInt(bitPattern: ObjectIdentifier(queue)) }

    private struct WeakEngine {
        weak var engine: SubscriptionEngine?
    }

    private static func seconds(_ count: Int) -> timespec {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += count
        return deadline
    }

    @Test func aChildProcessLeavesItsParentsLoopsAlone() throws {
        let ns = try TestNamespace("atexit4")
        defer { ns.delete() }
        let coordinator = ExitCoordinator(waitSeconds: 5)
        let engine = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(),
                                                  publisher: Publisher(), exitCoordinator: coordinator)
        defer { engine.stop() }
        // A child inherits the list, not the threads: its exit neither waits for them nor
        // marks the coordinator exiting. `_exit` keeps the child from running this process's
        // other exit handlers and the test runner's state.
        let child = fork()
        if child == 0 {
            coordinator.endRunningLoops()
            _exit(coordinator.isExiting ? 1 : 0)
        }
        #expect(child > 0)
        var status: Int32 = 0
        #expect(waitpid(child, &status, 0) == child)
        #expect(status == 0)
        #expect(coordinator.isRegistered(engine))
    }
}
