import Glibc
import Netlink

/// Lets callbacks through while open; ``close()`` shuts it and waits for running callbacks,
/// so that after `stopListening()` or `cancel()` returns no callback runs, except the one it is
/// called from (which would otherwise wait for itself).
///
/// Callbacks may run on several threads at once (a user's concurrent queue): the gate keeps
/// every running callback's thread, and a close from inside one waits for those on the others.
final class CallbackGate: @unchecked Sendable {
    // @unchecked Sendable: every stored variable is read and written only with `condition`
    // locked.
    private let condition = ConditionLock()
    private var currentGeneration = 0
    /// The running callbacks' threads: the usual single one (and how many callbacks it runs,
    /// one inside another's synchronous call), then those of callbacks that run on other threads
    /// at the same time (a user's concurrent queue), one entry per callback. The common case
    /// touches no array: the gate is on the path of every callback, 10 000 per change with as
    /// many monitors.
    private var primaryThread: pthread_t?
    private var primaryDepth = 0
    private var otherThreads: [pthread_t] = []
    /// The threads inside ``close()``: a callback that ends wakes them only when there are any,
    /// and a close does not wait for a callback whose thread is closing too.
    private var closers: [pthread_t] = []

    /// The generation to pass to ``run(generation:_:)``; a later ``close()`` invalidates it.
    var generation: Int {
        condition.withLock { currentGeneration }
    }

    /// Opens a new generation (on start) and returns it.
    func open() -> Int {
        condition.withLock {
            currentGeneration += 1
            return currentGeneration
        }
    }

    /// Runs `body` if `generation` is still current, and returns whether it ran.
    @discardableResult
    func run(generation: Int, _ body: () -> Void) -> Bool {
        let thread = pthread_self()
        let entered = condition.withLock { () -> Bool in
            guard currentGeneration == generation else { return false }
            enter(thread)
            return true
        }
        guard entered else { return false }
        defer {
            condition.withLock {
                leave(thread)
                if !closers.isEmpty { condition.broadcast() }
            }
        }
        body()
        return true
    }

    /// Invalidates the current generation and waits until no callback runs on another thread,
    /// except one whose thread is closing too (two callbacks that both stop, on a concurrent
    /// queue, would otherwise wait for each other forever). One running on the caller's thread
    /// is the caller's own.
    func close() {
        let me = pthread_self()
        condition.withLock {
            currentGeneration += 1
            closers.append(me)
            condition.broadcast()  // a close waiting for this thread's callback need not any more
            defer { closers.remove(at: closers.lastIndex { pthread_equal($0, me) != 0 }!) }
            func waitsFor(_ thread: pthread_t) -> Bool {
                pthread_equal(thread, me) == 0 && !closers.contains { pthread_equal($0, thread) != 0 }
            }
            while primaryThread.map(waitsFor) == true || otherThreads.contains(where: waitsFor) {
                condition.wait()
            }
        }
    }

    /// Notes a callback starting on `thread`; call with the lock held.
    private func enter(_ thread: pthread_t) {
        if let primary = primaryThread {
            if pthread_equal(primary, thread) != 0 { primaryDepth += 1 } else { otherThreads.append(thread) }
        } else {
            primaryThread = thread
            primaryDepth = 1
        }
    }

    /// Notes a callback on `thread` ending; call with the lock held.
    private func leave(_ thread: pthread_t) {
        if let primary = primaryThread, pthread_equal(primary, thread) != 0 {
            primaryDepth -= 1
            if primaryDepth == 0 {
                primaryThread = otherThreads.popLast()
                primaryDepth = primaryThread == nil ? 0 : 1
            }
        } else if let index = otherThreads.lastIndex(where: { pthread_equal($0, thread) != 0 }) {
            otherThreads.remove(at: index)
        }
    }
}
