import Foundation

/// Lets callbacks through while open; ``close()`` shuts it and waits for running callbacks,
/// so that after `stopListening()` or `cancel()` returns no callback runs, except when it is
/// called from inside a callback (which would otherwise wait for itself).
final class CallbackGate: @unchecked Sendable {
    // @unchecked Sendable: every stored variable is read and written only with `condition`
    // locked, which is also the exclusive access that run-time checks would verify on every
    // callback: they are left out (`@exclusivity(unchecked)`).
    private let condition = NSCondition()
    @exclusivity(unchecked) private var currentGeneration = 0
    @exclusivity(unchecked) private var running = 0
    @exclusivity(unchecked) private var runningThread: pthread_t?
    /// Threads waiting in ``close()``: a callback that ends wakes them only when there are any.
    @exclusivity(unchecked) private var closers = 0

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
        running += 1
        runningThread = pthread_self()
        condition.unlock()
        defer {
            condition.lock()
            running -= 1
            if running == 0 { runningThread = nil }
            if closers > 0 { condition.broadcast() }
            condition.unlock()
        }
        body()
        return true
    }

    /// Invalidates the current generation and waits until no callback runs (unless called
    /// from the thread that runs one).
    func close() {
        condition.lock()
        defer { condition.unlock() }
        currentGeneration += 1
        while running > 0, let thread = runningThread, pthread_equal(thread, pthread_self()) == 0 {
            closers += 1
            condition.wait()
            closers -= 1
        }
    }
}
