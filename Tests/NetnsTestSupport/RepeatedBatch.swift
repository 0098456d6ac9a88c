import Foundation
import Synchronization

/// Feeds `ip -n NAME -batch -` the same commands again and again, on a thread of its own, until
/// stopped: changes that keep flowing while a test does something else.
public final class RepeatedBatch: Sendable {
    private let running = Atomic<Bool>(true)
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// How many times the whole batch has run.
    public let rounds = Atomic<Int>(0)

    /// Starts feeding `lines` to `ns`.
    public init(_ ns: TestNamespace, _ lines: [String]) {
        Thread.detachNewThread { [self] in
            while running.load(ordering: .acquiring) {
                try? ns.batch(lines)
                rounds.add(1, ordering: .relaxed)
            }
            done.signal()
        }
    }

    /// Stops and waits for the batch that is running; safe to call twice.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        running.store(false, ordering: .releasing)
        done.wait()
    }
}
