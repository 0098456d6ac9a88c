import Dispatch
import Glibc

/// The subscription loops that a process's exit must end before it runs the shared libraries'
/// destructors.
///
/// libnl-route's destructors unregister the operations that parse and free links and caches,
/// and a loop that re-reads a cache or tears one down after them makes libnl abort (`BUG()` in
/// `do_foreach_af` or `nl_cache_mngt_unprovide`): a program that exits while a subscription
/// ends (its namespace deleted, its last reference dropped on another thread) would die of
/// SIGABRT. ``process`` installs an `atexit` handler that ends every registered loop first:
/// glibc runs `atexit` handlers in the reverse order of their registration, and the dynamic
/// linker registered the one that runs the destructors before `main`.
///
/// At the exit, no loop may start any more (a thread that still runs could open one, and it
/// would fill its caches while the destructors run), and the observers of the loops it ends are
/// not told that their subscription ended: a monitor would otherwise report "not reachable,
/// monitoring ended" on its way out, which is not true of the network.
final class ExitCoordinator: Sendable {
    private struct State {
        /// The engines whose loop thread runs or is starting (the thread's closure keeps each
        /// alive until it ends; it unregisters its engine last).
        var loops: [ObjectIdentifier: SubscriptionEngine] = [:]
        /// Set once the exit began: no loop starts after it.
        var exiting = false
    }

    private let state = Locked(State())

    /// The process whose coordinator this is: a child made by `fork` inherits the list but not
    /// the threads, and its own exit leaves its parent's loops alone.
    private let processIdentifier: pid_t

    /// How long the exit waits for the loops, in all: one that an observer's callback holds up
    /// past it is left running rather than holding the process.
    let waitSeconds: Int

    /// The process's coordinator, whose first use installs the `atexit` handler.
    static let process: ExitCoordinator = {
        let coordinator = ExitCoordinator(waitSeconds: 1)
        atexit { ExitCoordinator.process.endRunningLoops() }
        return coordinator
    }()

    /// A coordinator that nothing ends but a call of ``endRunningLoops()`` (for tests).
    init(waitSeconds: Int) {
        self.waitSeconds = waitSeconds
        processIdentifier = getpid()
    }

    /// Lists `engine`'s loop, which is about to start; false once the exit has begun.
    func register(_ engine: SubscriptionEngine) -> Bool {
        state.withLock { state in
            guard !state.exiting else { return false }
            state.loops[ObjectIdentifier(engine)] = engine
            return true
        }
    }

    /// Takes `engine`'s loop off the list: it has freed its libnl objects.
    func unregister(_ engine: SubscriptionEngine) {
        state.withLock { _ = $0.loops.removeValue(forKey: ObjectIdentifier(engine)) }
    }

    /// Whether `engine`'s loop is on the list that the exit ends.
    func isRegistered(_ engine: SubscriptionEngine) -> Bool {
        state.withLock { $0.loops[ObjectIdentifier(engine)] != nil }
    }

    /// Whether the exit has begun, after which no loop starts.
    var isExiting: Bool { state.withLock { $0.exiting } }

    /// Refuses new loops, asks every running one to end without telling its observers, and
    /// waits until each has freed its libnl objects (or until ``waitSeconds`` have passed). The
    /// loop of the calling thread itself, if an observer on it called `exit`, ends with the
    /// process. Does nothing in a child process that inherited the coordinator.
    ///
    /// An exit from a block on a queue that a loop's observer waits for (`sync`: the
    /// evaluation queue of `ReachabilityMonitor`, whose rounds run inside the subscription's
    /// observer; see ``NetlinkSubscription/noteObserversWait(for:)``) waits for that loop only
    /// until its observer waits for the queue: it then waits for this block, which never ends,
    /// and runs no libnl code; waiting for it would only spend ``waitSeconds``.
    /// - Returns: How many loops it left waiting for the exiting block.
    @discardableResult
    func endRunningLoops() -> Int {
        guard getpid() == processIdentifier else { return 0 }
        let engines = state.withLock { state in
            state.exiting = true
            return Array(state.loops.values)
        }
        for engine in engines { engine.requestStopAtExit() }
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += waitSeconds
        let thisQueue = DispatchQueue.getSpecific(key: Self.queueWaitedForByObservers)
        var leftWaiting = 0
        for engine in engines where !engine.isLoopThread {
            if let thisQueue, thisQueue.loop == ObjectIdentifier(engine) {
                if Self.waitUntilFinishedOrWaiting(engine, for: thisQueue.queue, until: deadline) == .waitingForThisBlock {
                    leftWaiting += 1
                }
            } else {
                _ = engine.waitUntilFinished(until: deadline)
            }
        }
        return leftWaiting
    }

    /// Waits, in steps of a few milliseconds, until `engine`'s loop has ended or its observer
    /// waits for `queue`, the exiting block's, or until `deadline`.
    private static func waitUntilFinishedOrWaiting(_ engine: SubscriptionEngine, for queue: UInt,
                                                   until deadline: timespec) -> LoopAtExit {
        while true {
            var step = timespec()
            clock_gettime(CLOCK_REALTIME, &step)
            let past = step.tv_sec > deadline.tv_sec || step.tv_sec == deadline.tv_sec && step.tv_nsec >= deadline.tv_nsec
            step.tv_nsec += 5_000_000
            if step.tv_nsec >= 1_000_000_000 { step.tv_sec += 1; step.tv_nsec -= 1_000_000_000 }
            if engine.waitUntilFinished(until: step) { return .finished }
            if engine.isObserverWaiting(for: queue) { return .waitingForThisBlock }
            if past { return .timedOut }
        }
    }

    /// Where a loop was when the exit stopped waiting for it.
    private enum LoopAtExit {
        case finished, waitingForThisBlock, timedOut
    }

    /// The key of the value that ``NetlinkSubscription/noteObserversWait(for:)`` sets on a
    /// queue: the loop whose observers wait for the queue's blocks, and the queue. (A block of a
    /// queue that targets it reads the same value, and holds it up too.)
    static let queueWaitedForByObservers = DispatchSpecificKey<WaitedQueue>()

    /// A queue that a loop's observers wait for: the loop, and the queue's identity. One loop
    /// (a namespace's shared subscription) can serve several such queues.
    struct WaitedQueue {
        let loop: ObjectIdentifier
        let queue: UInt
    }
}
