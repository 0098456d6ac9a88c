import Foundation

/// Lets callbacks through while open; ``close()`` shuts it and waits for running callbacks,
/// so that after `stopListening()` or `cancel()` returns no callback runs, except the one it is
/// called from (which would otherwise wait for itself).
///
/// Callbacks may run on several threads at once (a user's concurrent queue): the gate keeps
/// every running callback's thread, and a close from inside one waits for those on the others.
final class CallbackGate: @unchecked Sendable {
    // @unchecked Sendable: every stored variable is read and written only with `condition`
    // locked, which is also the exclusive access that run-time checks would verify on every
    // callback: they are left out (`@exclusivity(unchecked)`).
    private let condition = NSCondition()
    @exclusivity(unchecked) private var currentGeneration = 0
    /// The thread of each running callback (one entry per callback: a thread can run one
    /// inside another's synchronous call).
    @exclusivity(unchecked) private var runningThreads: [pthread_t] = []
    /// The threads inside ``close()``: a callback that ends wakes them only when there are any,
    /// and a close does not wait for a callback whose thread is closing too.
    @exclusivity(unchecked) private var closers: [pthread_t] = []

    /// The generation to pass to ``run(generation:_:)``; a later ``close()`` invalidates it.
    var generation: Int {
        condition.lock()
        defer { condition.unlock() }
        return currentGeneration
    }

    /// Opens a new generation (on start) and returns it.
    func open() -> Int {
        condition.lock()
        defer { condition.unlock() }
        currentGeneration += 1
        return currentGeneration
    }

    /// Runs `body` if `generation` is still current, and returns whether it ran.
    @discardableResult
    func run(generation: Int, _ body: () -> Void) -> Bool {
        condition.lock()
        guard currentGeneration == generation else {
            condition.unlock()
            return false
        }
        let thread = pthread_self()
        runningThreads.append(thread)
        condition.unlock()
        defer {
            condition.lock()
            if let index = runningThreads.lastIndex(where: { pthread_equal($0, thread) != 0 }) {
                runningThreads.remove(at: index)
            }
            if !closers.isEmpty { condition.broadcast() }
            condition.unlock()
        }
        body()
        return true
    }

    /// Invalidates the current generation and waits until no callback runs on another thread,
    /// except one whose thread is closing too (two callbacks that both stop, on a concurrent
    /// queue, would otherwise wait for each other forever). One running on the caller's thread
    /// is the caller's own.
    func close() {
        condition.lock()
        defer { condition.unlock() }
        currentGeneration += 1
        let me = pthread_self()
        closers.append(me)
        condition.broadcast()  // a close waiting for this thread's callback need not any more
        defer { closers.remove(at: closers.lastIndex { pthread_equal($0, me) != 0 }!) }
        while runningThreads.contains(where: { thread in
            pthread_equal(thread, me) == 0 && !closers.contains { pthread_equal($0, thread) != 0 }
        }) {
            condition.wait()
        }
    }
}
