import Synchronization

/// The state that a subscription shares with the rest of the process, and its observers.
///
/// Publishing a batch and attaching an observer take the same lock, so every observer sees its
/// snapshot and then exactly the events that came after it. No user code runs under the lock:
/// observers only queue what they are given.
final class Publisher: Sendable {
    private struct Shared {
        var state = NetworkState()
        var sinks: [ObjectIdentifier: any EventSink] = [:]
        var termination: NetlinkError?
        var resynchronizations = 0
    }

    private let shared = Mutex(Shared())

    var state: NetworkState { shared.withLock { $0.state } }
    var termination: NetlinkError? { shared.withLock { $0.termination } }
    var resynchronizationCount: Int { shared.withLock { $0.resynchronizations } }

    func start(with state: NetworkState) { shared.withLock { $0.state = state } }

    func publish(state: NetworkState, events: [NetlinkEvent]) {
        shared.withLock {
            $0.state = state
            for sink in $0.sinks.values { sink.enqueue(events) }
        }
    }

    func countResynchronization() { shared.withLock { $0.resynchronizations += 1 } }

    /// Adds an observer and hands it the current state; an ended subscription hands it the error.
    func attach(_ sink: any EventSink) {
        let ended: NetlinkError? = shared.withLock {
            if let termination = $0.termination { return termination }
            $0.sinks[ObjectIdentifier(sink)] = sink
            sink.enqueue([.snapshot($0.state)])
            return nil
        }
        if let ended { sink.terminate(ended) }
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
        for sink in sinks { sink.terminate(error) }
    }
}
