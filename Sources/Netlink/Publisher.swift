
/// The state that a subscription shares with the rest of the process, and its observers.
///
/// Publishing a batch and attaching an observer take the same lock, so every observer sees its
/// snapshot and then exactly the events that came after it. No user code runs under the lock,
/// and observers are handed their events outside it.
final class Publisher: Sendable {
    private struct Shared {
        var state = NetworkState()
        var sinks: [ObjectIdentifier: any EventSink] = [:]
        var termination: NetlinkError?
        var resynchronizations = 0
        /// Whether `state` is settled: false from an unsettled batch until the batch (or the
        /// empty settled batch) that ends its re-read.
        var isSettled = true
        /// Wakes the subscription's thread (so that it delivers to a new observer of its own).
        var wake: (@Sendable () -> Void)?
    }

    private let shared = Locked(Shared())

    var state: NetworkState { shared.withLock { $0.state } }
    /// The state and whether it is settled (see ``publish(state:events:settled:)``), read
    /// together.
    var settledState: (state: NetworkState, isSettled: Bool) { shared.withLock { ($0.state, $0.isSettled) } }
    var termination: NetlinkError? { shared.withLock { $0.termination } }
    var resynchronizationCount: Int { shared.withLock { $0.resynchronizations } }

    /// Sets the initial state, and how to wake the subscription's thread.
    func start(with state: NetworkState, wake: @escaping @Sendable () -> Void) {
        shared.withLock {
            $0.state = state
            $0.wake = wake
        }
    }

    /// Publishes the state after a batch and hands the batch to every observer. Only the
    /// subscription's loop thread publishes, one batch after the other, so each observer gets
    /// the batches in order; the observers are handed the batch outside the lock, so that a
    /// reader of ``state`` never waits for them. An observer attached between the two steps got
    /// the new state as its snapshot and does not get the batch, which that state already holds.
    ///
    /// The shared state catches up with `state` entry by entry (`catchUp(with:through:)`), so
    /// that it and the subscription's own state never share storage: each is changed in place,
    /// in O(changes), unless a reader still holds a copy.
    ///
    /// `settled` is false when the subscription re-reads, right after this batch, what the
    /// kernel may have changed without a message; it ends such a re-read with a settled batch,
    /// or, when the re-read changed nothing, with ``publishSettled()``.
    func publish(state: NetworkState, events: [NetlinkEvent], settled: Bool = true) {
        let sinks = shared.withLock { shared -> [any EventSink] in
            shared.state.catchUp(with: state, through: events)
            shared.isSettled = settled
            return Array(shared.sinks.values)
        }
        for sink in sinks { sink.enqueue(events, settled: settled, state: state) }
        deliverOnSubscriptionThread(to: sinks)
    }

    /// Tells the observers that asked for it that a re-read ended without a change: an empty
    /// settled batch. The others are not woken for nothing.
    func publishSettled() {
        let sinks = shared.withLock { shared in
            shared.isSettled = true
            return shared.sinks.values.filter(\.wantsSettledMarkers)
        }
        for sink in sinks { sink.enqueue([], settled: true) }
        deliverOnSubscriptionThread(to: sinks)
    }

    /// Delivers what waits for the observers that run on the subscription's thread (a new
    /// observer's snapshot); called on that thread when it is woken.
    func deliverOnSubscriptionThread() {
        deliverOnSubscriptionThread(to: shared.withLock { Array($0.sinks.values) })
    }

    private func deliverOnSubscriptionThread(to sinks: [any EventSink]) {
        for sink in sinks where sink.deliversOnSubscriptionThread { sink.deliverOnSubscriptionThread() }
    }

    func countResynchronization() { shared.withLock { $0.resynchronizations += 1 } }

    /// Adds an observer and hands it the current state; an ended subscription hands it the error.
    ///
    /// An observer of the subscription's own thread gets its snapshot from that thread, which
    /// is woken for it (under the lock: while the subscription has not ended, its thread and its
    /// wake-up descriptor exist). Once the subscription has ended, the caller delivers instead.
    func attach(_ sink: any EventSink) {
        let ended: NetlinkError? = shared.withLock {
            if let termination = $0.termination { return termination }
            $0.sinks[ObjectIdentifier(sink)] = sink
            // Attached while a re-read runs, the observer gets its end like the others.
            sink.enqueue([.snapshot($0.state)], settled: $0.isSettled)
            if sink.deliversOnSubscriptionThread { $0.wake?() }
            return nil
        }
        if let ended {
            sink.terminate(ended)
            sink.deliverOnSubscriptionThread()
        }
    }

    func detach(_ sink: any EventSink) {
        _ = shared.withLock { $0.sinks.removeValue(forKey: ObjectIdentifier(sink)) }
    }

    /// Ends the subscription for every observer. The sinks are told outside the lock, because
    /// finishing a stream runs its termination handler, which detaches.
    func terminate(_ error: NetlinkError) {
        let sinks: [any EventSink] = shared.withLock { shared in
            guard shared.termination == nil else { return [] }
            shared.termination = error
            let sinks = Array(shared.sinks.values)
            shared.sinks.removeAll()
            return sinks
        }
        for sink in sinks {
            sink.terminate(error)
            sink.deliverOnSubscriptionThread()
        }
    }
}
