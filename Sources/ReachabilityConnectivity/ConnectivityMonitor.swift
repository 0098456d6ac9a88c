import Dispatch
import LinuxReachability
import Netlink

/// A reachability answer with the connectivity found behind it.
public struct ConnectivityUpdate: Sendable, Hashable, CustomStringConvertible {
    /// The reachability answer (routes and links) the probe was made for.
    public var answer: ReachabilityAnswer
    /// What the probe found through the answer's link (``ConnectivityReport/noRoute`` when the
    /// answer is not reachable).
    public var report: ConnectivityReport

    /// An update as given.
    public init(answer: ReachabilityAnswer, report: ConnectivityReport) {
        self.answer = answer
        self.report = report
    }

    /// The state: `none`, `limited`, `portal` or `full`.
    public var connectivity: Connectivity { report.connectivity }

    /// Such as `reachableViaWired -R ------d dev eth0 (wiredEthernet); connectivity full`.
    public var description: String { "\(answer); connectivity \(report)" }

    /// Whether the answer says that monitoring ended (the namespace went away).
    var endsMonitoring: Bool {
        if case .monitoringEnded = answer.reason { true } else { false }
    }
}

/// A `ReachabilityMonitor` that probes the connectivity behind each answer: the answer and
/// what an HTTP probe through its link found, delivered together.
///
/// The probe runs on every change of the answer, event-driven: a link, route or address that
/// changes the answer starts one, inside the namespace, bound to the answer's link. An answer
/// that is not reachable is delivered at once as `none`, with nothing probed. With
/// ``ConnectivityProbe/interval`` set, a reachable answer is probed again that often, and a
/// changed result is delivered (a portal that lets the user through, a server that stops
/// answering); without it the monitor has no timer and costs nothing while nothing changes.
///
/// ```swift
/// let probe = try ConnectivityProbe(url: "http://192.0.2.1/generate_204")
/// let monitor = try ConnectivityMonitor(probe: probe)
/// for await update in monitor.updates() {
///     print(update.connectivity, update.report.portalLocation ?? "")
/// }
/// ```
public final class ConnectivityMonitor: Sendable, CustomStringConvertible {
    /// The probe.
    public let probe: ConnectivityProbe
    /// The namespace watched and probed.
    public let namespace: NetworkNamespace
    /// The queue that runs ``onChange`` and feeds ``updates()``.
    public let callbackQueue: DispatchQueue

    private let monitor: ReachabilityMonitor
    /// Probes run here, one at a time, off the queue the answers come on.
    private let probeQueue = DispatchQueue(label: "ConnectivityMonitor.probe")
    private let state = Locked(State())
    /// Orders ``startListening()`` and ``stopListening()`` against each other, and with them the
    /// inner monitor's start and stop.
    private let lifecycle = Locked(())
    /// Set on ``callbackQueue`` for this monitor alone (other monitors may share the queue).
    private let callbackQueueKey = DispatchSpecificKey<Void>()

    private struct State {
        /// Counts answers, starts and stops: a probe result for an older count is stale.
        var generation = 0
        var isListening = false
        /// The last update handed to the callbacks' queue.
        var delivered: ConnectivityUpdate?
        /// The last update the callbacks ran with (written on the callbacks' queue), which a
        /// new sequence starts with.
        var told: ConnectivityUpdate?
        var onChange: (@Sendable (ConnectivityUpdate) -> Void)?
        var onProbeStart: (@Sendable (ReachabilityAnswer) -> Void)?
        var continuations: [Int: AsyncStream<ConnectivityUpdate>.Continuation] = [:]
        /// Sequences made but not yet registered on the callbacks' queue.
        var registering: Set<Int> = []
        var nextContinuation = 0
    }

    /// A monitor of `target` in `namespace`, probed with `probe`.
    /// - Parameters:
    ///   - target: What the answers are for (default: the internet).
    ///   - namespace: Where to watch and probe (default: the current namespace).
    ///   - probe: The HTTP probe.
    ///   - queue: Where ``onChange`` runs (default: a private serial queue).
    /// - Throws: What `ReachabilityMonitor(target:namespace:)` throws for the namespace.
    public init(target: ReachabilityTarget = .internet, namespace: NetworkNamespace = .current,
                probe: ConnectivityProbe, queue: DispatchQueue? = nil) throws(ReachabilityError) {
        self.probe = probe
        self.namespace = namespace
        self.callbackQueue = queue ?? DispatchQueue(label: "ConnectivityMonitor.callbacks")
        self.monitor = try ReachabilityMonitor(target: target, namespace: namespace)
        callbackQueue.setSpecific(key: callbackQueueKey, value: ())
    }

    deinit {
        monitor.stopListening()
        callbackQueue.setSpecific(key: callbackQueueKey, value: nil)
        for continuation in state.withLock({ $0.continuations.values }) { continuation.finish() }
    }

    /// The target.
    public var target: ReachabilityTarget { monitor.target }

    /// The last update delivered; nil before the first probe finished or while not listening.
    public var latest: ConnectivityUpdate? { state.withLock { $0.delivered } }

    /// A closure called on ``callbackQueue`` with every change of the answer or of what the
    /// probe found.
    public var onChange: (@Sendable (ConnectivityUpdate) -> Void)? {
        get { state.withLock { $0.onChange } }
        set {
            var replaced = newValue
            state.withLock { swap(&$0.onChange, &replaced) }
        }
    }

    /// A closure called on ``callbackQueue`` when a reachable answer's probe starts.
    ///
    /// It runs in order with ``onChange``: until the probe's update comes, the last update's
    /// connectivity was found for another answer (`reach wait` must not take it for this one's).
    package var onProbeStart: (@Sendable (ReachabilityAnswer) -> Void)? {
        get { state.withLock { $0.onProbeStart } }
        set {
            var replaced = newValue
            state.withLock { swap(&$0.onProbeStart, &replaced) }
        }
    }

    /// Starts listening: the current answer and its probe first, then every change. Starting
    /// twice is harmless.
    public func startListening() {
        lifecycle.withLock { _ in
            let start = state.withLock { state -> Bool in
                guard !state.isListening else { return false }
                state.isListening = true
                state.generation += 1
                state.delivered = nil
                state.told = nil
                return true
            }
            guard start else { return }
            weak let connectivityMonitor = self
            monitor.onChange = { _, answer in connectivityMonitor?.answerChanged(answer) }
            monitor.startListening()
        }
    }

    /// Stops listening and probing. After it returns no callback starts, and one running on
    /// another thread has finished; a probe under way is let finish and its result dropped.
    public func stopListening() {
        lifecycle.withLock { _ in
            state.withLock { state in
                state.isListening = false
                state.generation += 1
                state.delivered = nil
                state.told = nil
            }
            monitor.stopListening()
        }
        if DispatchQueue.getSpecific(key: callbackQueueKey) == nil { callbackQueue.sync {} }
    }

    /// Every update as an asynchronous sequence: the latest one first, if any, then each change.
    /// Starts listening if the monitor does not yet. The sequence keeps the monitor while it is
    /// iterated. It ends when the iterating task is cancelled, and after the update whose
    /// answer says `UnreachableReason.monitoringEnded` (the namespace went away).
    public func updates() -> AsyncStream<ConnectivityUpdate> {
        let (stream, continuation) = AsyncStream<ConnectivityUpdate>.makeStream()
        let id = state.withLock { state -> Int in
            defer { state.nextContinuation += 1 }
            state.registering.insert(state.nextContinuation)
            return state.nextContinuation
        }
        // A strong reference, released when the sequence ends.
        continuation.onTermination = { _ in
            self.state.withLock { state in
                state.registering.remove(id)
                state.continuations[id] = nil
            }
        }
        // Registered on the callbacks' queue, in order with the deliveries: the sequence gets
        // the last update told, then exactly the ones after it.
        callbackQueue.async {
            let latest = self.state.withLock { state -> ConnectivityUpdate?? in
                guard state.registering.remove(id) != nil else { return .none }
                state.continuations[id] = continuation
                return .some(state.told)
            }
            guard case .some(let told) = latest, let told else { return }
            continuation.yield(told)
            if told.endsMonitoring { continuation.finish() }
        }
        startListening()
        return stream
    }

    public var description: String { "ConnectivityMonitor(\(monitor.target), \(probe.url))" }

    // MARK: - Answers and probes

    /// A new answer: `none` at once when it is not reachable, else a probe through its link.
    private func answerChanged(_ answer: ReachabilityAnswer) {
        let generation = state.withLock { state -> Int? in
            guard state.isListening else { return nil }
            state.generation += 1
            if answer.isReachable, state.onProbeStart != nil {
                // Queued under the lock, in order with the deliveries.
                let generation = state.generation
                callbackQueue.async { [weak self] in self?.tellProbeStart(answer, generation: generation) }
            }
            return state.generation
        }
        guard let generation else { return }
        guard answer.isReachable else {
            deliver(ConnectivityUpdate(answer: answer, report: .noRoute), generation: generation)
            return
        }
        probeQueue.async { [weak self] in self?.runProbe(for: answer, generation: generation) }
    }

    /// Probes for `answer` unless a newer answer came meanwhile, delivers what it found, and
    /// sets the next probe when an interval is asked for.
    private func runProbe(for answer: ReachabilityAnswer, generation: Int) {
        guard state.withLock({ $0.generation == generation }) else { return }
        let report = probe.check(answer, in: namespace)
        deliver(ConnectivityUpdate(answer: answer, report: report), generation: generation)
        guard let interval = probe.interval else { return }
        let (seconds, attoseconds) = interval.components
        let delay = DispatchTimeInterval.nanoseconds(Int(min(Double(seconds) * 1e9 + Double(attoseconds) / 1e9, Double(Int.max / 2))))
        probeQueue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.runProbe(for: answer, generation: generation) }
    }

    /// Hands `update` to the callbacks if it is still current and tells something new: another
    /// answer, or another state, portal location or link than the last update's.
    private func deliver(_ update: ConnectivityUpdate, generation: Int) {
        state.withLock { state in
            guard state.generation == generation, state.isListening else { return }
            if let delivered = state.delivered, delivered.answer == update.answer,
               delivered.report.connectivity == update.report.connectivity,
               delivered.report.portalLocation == update.report.portalLocation,
               delivered.report.interfaceName == update.report.interfaceName { return }
            state.delivered = update
            // Queued under the lock, so that deliveries keep their order; run after it.
            callbackQueue.async { [weak self] in self?.run(update) }
        }
    }

    /// Runs ``onProbeStart`` for `answer`, unless another answer came or the monitor stopped
    /// since it was queued.
    private func tellProbeStart(_ answer: ReachabilityAnswer, generation: Int) {
        let onProbeStart = state.withLock { $0.isListening && $0.generation == generation ? $0.onProbeStart : nil }
        onProbeStart?(answer)
    }

    /// Runs the callbacks for `update`, unless the monitor stopped since it was queued.
    private func run(_ update: ConnectivityUpdate) {
        let found = state.withLock { state -> (onChange: (@Sendable (ConnectivityUpdate) -> Void)?, [AsyncStream<ConnectivityUpdate>.Continuation])? in
            guard state.isListening, state.delivered == update else { return nil }
            state.told = update
            return (state.onChange, Array(state.continuations.values))
        }
        guard let (onChange, continuations) = found else { return }
        onChange?(update)
        for continuation in continuations {
            continuation.yield(update)
            if update.endsMonitoring { continuation.finish() }
        }
    }
}
