import Foundation
import Synchronization

/// Lets callbacks through while open; ``close()`` shuts it and waits for running callbacks,
/// so that after `stopListening()` or `cancel()` returns no callback runs, except when it is
/// called from inside a callback (which would otherwise wait for itself).
final class CallbackGate: Sendable {
    private struct State {
        var generation = 0
        var running = 0
        var runningThread: pthread_t?
    }
    private let state = Mutex(State())
    private let condition = NSCondition()

    /// The generation to pass to ``run(generation:_:)``; a later ``close()`` invalidates it.
    var generation: Int { state.withLock { $0.generation } }

    /// Opens a new generation (on start) and returns it.
    func open() -> Int { state.withLock { $0.generation += 1; return $0.generation } }

    /// Runs `body` if `generation` is still current, and returns whether it ran.
    @discardableResult
    func run(generation: Int, _ body: () -> Void) -> Bool {
        let admitted = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.running += 1
            state.runningThread = pthread_self()
            return true
        }
        guard admitted else { return false }
        defer {
            condition.lock()
            state.withLock { state in
                state.running -= 1
                if state.running == 0 { state.runningThread = nil }
            }
            condition.broadcast()
            condition.unlock()
        }
        body()
        return true
    }

    /// Invalidates the current generation and waits until no callback runs (unless called
    /// from the thread that runs one).
    func close() {
        state.withLock { $0.generation += 1 }
        condition.lock()
        while state.withLock({ $0.running > 0 && ($0.runningThread.map { pthread_equal($0, pthread_self()) == 0 } ?? false) }) {
            condition.wait()
        }
        condition.unlock()
    }
}
