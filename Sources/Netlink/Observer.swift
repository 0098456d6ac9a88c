import Synchronization
import Dispatch
import Glibc

/// Something a ``NetlinkSubscription`` hands its events to.
protocol EventSink: AnyObject, Sendable {
    /// Takes a batch of events; called in order from the subscription's loop thread, never
    /// blocking. `settled` is false when the subscription re-reads, right after this batch,
    /// what the kernel may have changed without a message (see
    /// ``NetlinkSubscription/observeSettledBatchesOnSubscriptionThread(onTermination:_:)``).
    func enqueue(_ events: [NetlinkEvent], settled: Bool)
    /// ``enqueue(_:settled:)`` with the state after the batch, for a sink that keeps it.
    func enqueue(_ events: [NetlinkEvent], settled: Bool, state: NetworkState)
    /// Whether the sink is told that a re-read ended without a change, by an empty settled
    /// batch.
    var wantsSettledMarkers: Bool { get }
    /// Takes the error that ended the subscription; nothing is enqueued after it.
    func terminate(_ error: NetlinkError)
    /// Whether the subscription's own thread delivers what the sink was given, by calling
    /// ``deliverOnSubscriptionThread()`` (rather than a queue of the sink's).
    var deliversOnSubscriptionThread: Bool { get }
    /// Delivers what was enqueued; called on the subscription's thread (or, once the
    /// subscription has ended, by whoever attaches).
    func deliverOnSubscriptionThread()
}

extension EventSink {
    func enqueue(_ events: [NetlinkEvent], settled: Bool, state: NetworkState) { enqueue(events, settled: settled) }
    var wantsSettledMarkers: Bool { false }
    var deliversOnSubscriptionThread: Bool { false }
    func deliverOnSubscriptionThread() {}
}

/// An observer that calls a closure on a serial queue, or on the subscription's own thread.
///
/// Events are batched: the subscription appends to `pending` and schedules one drain per batch,
/// so a storm costs one dispatch per netlink read, not one per event. Without a queue, the
/// subscription's thread drains right after it publishes: no dispatch at all. `cancel()` returns
/// only when no callback is running (except when called from inside the callback itself), and
/// no callback starts after it.
final class CallbackObserver: EventSink, @unchecked Sendable {
    // @unchecked Sendable: `pending`, `scheduled`, `cancelled` and `runningThread` are only read
    // or written while `lock` is held (and `spare` by the one drain that runs at a time);
    // `queue`, `handler` and `onTermination` are immutable.
    private let lock = ConditionLock()
    private var pending: [Item] = []
    /// The buffer `drain` swaps with `pending`, empty between drains (only `drain` uses it, and
    /// one drain runs at a time): taking a copy of `pending` and emptying it would allocate a
    /// new buffer for every batch.
    private var spare: [Item] = []
    private var scheduled = false
    private var cancelled = false
    private var runningThread: pthread_t?
    private let queue: DispatchQueue?
    private let handler: Handler
    private let onTermination: (@Sendable (NetlinkError) -> Void)?

    /// What the observer is called with: each event, or each published batch at once.
    enum Handler {
        case each(@Sendable (NetlinkEvent) -> Void)
        case batch(@Sendable ([NetlinkEvent]) -> Void)
        /// Each batch with whether the state is settled; also empty batches that end a re-read.
        case settledBatch(@Sendable ([NetlinkEvent], Bool) -> Void)
    }

    /// What waits for the handler: a published batch is kept as the array it came in.
    private enum Item {
        case batch([NetlinkEvent], settled: Bool)
        case terminated(NetlinkError)
    }

    /// - Parameter queue: where the handler runs; nil for the subscription's own thread.
    init(queue: DispatchQueue?, handler: @escaping @Sendable (NetlinkEvent) -> Void,
         onTermination: (@Sendable (NetlinkError) -> Void)?) {
        self.queue = queue
        self.handler = .each(handler)
        self.onTermination = onTermination
    }

    /// An observer called once per published batch; `queue` as above.
    init(queue: DispatchQueue?, batchHandler: @escaping @Sendable ([NetlinkEvent]) -> Void,
         onTermination: (@Sendable (NetlinkError) -> Void)?) {
        self.queue = queue
        self.handler = .batch(batchHandler)
        self.onTermination = onTermination
    }

    /// An observer called once per published batch with whether the state is settled, on the
    /// subscription's thread.
    init(settledBatchHandler: @escaping @Sendable ([NetlinkEvent], Bool) -> Void,
         onTermination: (@Sendable (NetlinkError) -> Void)?) {
        self.queue = nil
        self.handler = .settledBatch(settledBatchHandler)
        self.onTermination = onTermination
    }

    func enqueue(_ events: [NetlinkEvent], settled: Bool) { append(.batch(events, settled: settled)) }

    var wantsSettledMarkers: Bool {
        if case .settledBatch = handler { return true }
        return false
    }

    func terminate(_ error: NetlinkError) { append(.terminated(error)) }

    var deliversOnSubscriptionThread: Bool { queue == nil }

    func deliverOnSubscriptionThread() {
        if queue == nil { drain() }
    }

    private func append(_ item: Item) {
        let schedule: Bool = lock.withLock {
            guard !cancelled else { return false }
            pending.append(item)
            defer { scheduled = true }
            return !scheduled
        }
        if schedule, let queue { queue.async { self.drain() } }
    }

    private func drain() {
        while true {
            var batch: [Item] = []
            swap(&batch, &spare)
            lock.withLock {
                swap(&batch, &pending)
                if batch.isEmpty { scheduled = false }
            }
            defer {
                batch.removeAll(keepingCapacity: true)
                swap(&batch, &spare)
            }
            if batch.isEmpty { return }
            for item in batch {
                switch (item, handler) {
                case (.batch(let events, _), .each(let handler)):
                    for event in events {
                        guard call({ handler(event) }) else { return }
                    }
                case (.batch(let events, _), .batch(let handler)):
                    guard call({ handler(events) }) else { return }
                case (.batch(let events, let settled), .settledBatch(let handler)):
                    guard call({ handler(events, settled) }) else { return }
                case (.terminated(let error), _):
                    guard call({ onTermination?(error) }) else { return }
                }
            }
        }
    }

    /// Runs one callback unless the observer was cancelled (false then), marked as running so
    /// that `cancel()` can wait for it.
    private func call(_ callback: () -> Void) -> Bool {
        let go: Bool = lock.withLock {
            guard !cancelled else { return false }
            runningThread = pthread_self()
            return true
        }
        guard go else { return false }
        callback()
        lock.withLock {
            runningThread = nil
            lock.broadcast()
        }
        return true
    }

    /// Stops delivery. Waits for a callback running on another thread to return.
    func cancel() {
        lock.withLock {
            cancelled = true
            pending.removeAll()
            while let thread = runningThread, pthread_equal(thread, pthread_self()) == 0 {
                lock.wait()
            }
        }
    }
}

/// An observer that feeds an `AsyncThrowingStream`.
///
/// It holds at most about `limit` events that the consumer has not taken. When a batch would
/// pass that, the sink drops it and every later one, keeping only the state they led to; once
/// the consumer has taken most of what waits, it hands over the differences between the state
/// its events ended at and the latest one, then `.resynchronized(.overflow)`: what a kernel
/// overflow does, one level up. The state is kept only from half the limit on, so that a
/// consumer that keeps up never makes the subscription copy its state.
final class StreamObserver: EventSink, Sendable {
    let continuation: AsyncThrowingStream<NetlinkEvent, any Error>.Continuation
    private let limit: Int
    /// Events handed to the stream and not yet taken by the consumer.
    private let waiting = Atomic<Int>(0)
    private let backlog = Locked(Backlog())

    private struct Backlog {
        /// The state after the last batch the consumer was given (kept under pressure only).
        var given: NetworkState?
        /// The state after the last batch dropped: set while the sink is overflowing.
        var latest: NetworkState?
    }

    init(continuation: AsyncThrowingStream<NetlinkEvent, any Error>.Continuation, limit: Int) {
        self.continuation = continuation
        self.limit = max(limit, 1)
    }

    /// The snapshot, when the sink is attached.
    func enqueue(_ events: [NetlinkEvent], settled: Bool) {
        backlog.withLock { _ in give(events) }
    }

    func enqueue(_ events: [NetlinkEvent], settled: Bool, state: NetworkState) {
        guard !events.isEmpty else { return }
        backlog.withLock { backlog in
            if backlog.latest != nil {  // overflowing
                backlog.latest = state
                return
            }
            let waitingNow = waiting.load(ordering: .acquiring)
            // A batch into an empty stream always goes: the limit bounds what waits, not a batch.
            if waitingNow > 0, waitingNow + events.count > limit, backlog.given != nil {
                backlog.latest = state
                return
            }
            give(events)
            backlog.given = waitingNow + events.count >= limit / 2 ? state : nil
        }
    }

    /// Called by the iterator for each event it hands to the consumer.
    func taken() {
        let left = waiting.subtract(1, ordering: .acquiringAndReleasing).newValue
        // Whether the sink overflows is read under the lock that sets it: read before, a batch
        // that overflows while the consumer takes the last waiting event would leave nothing to
        // take, and so no later call here to hand over the differences.
        guard left <= limit / 4 else { return }
        backlog.withLock { backlog in
            guard let given = backlog.given, let latest = backlog.latest else { return }
            give(latest.changes(since: given) + [.resynchronized(.overflow)])
            backlog.given = nil
            backlog.latest = nil
        }
    }

    private func give(_ events: [NetlinkEvent]) {
        waiting.add(events.count, ordering: .acquiringAndReleasing)
        for event in events { continuation.yield(event) }
    }

    func terminate(_ error: NetlinkError) { continuation.finish(throwing: error) }
}

/// A mutex with a condition variable, for the few places that must wait for another thread.
package final class ConditionLock: @unchecked Sendable {
    // @unchecked Sendable: the pthread objects are designed for use from many threads; they are
    // allocated once, never moved, and destroyed in deinit when no thread can hold a reference.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits on the condition; call with the lock held.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits on the condition until `deadline` (on `CLOCK_REALTIME`, the condition's clock);
    /// call with the lock held. Returns false once the deadline has passed.
    package func wait(until deadline: timespec) -> Bool {
        var deadline = deadline
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    /// Wakes every waiter; call with the lock held.
    package func broadcast() { pthread_cond_broadcast(condition) }
}
