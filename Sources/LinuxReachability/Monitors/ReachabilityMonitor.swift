import Dispatch
import Logging
import Netlink

/// Tells a delegate about reachability changes (Nexum's `NXNetworkDelegate`).
public protocol ReachabilityDelegate: AnyObject, Sendable {
    /// The answer for `reachability`'s target changed (or, first, became known).
    func reachability(_ reachability: ReachabilityMonitor, didChange answer: ReachabilityAnswer)
}

/// A reachability monitor for one target, in the style of Nexum, FXReachability, Ola and
/// Reachability.swift: a shared instance for the internet, one object per host or address,
/// listening versus querying, and three ways of being told (delegate, closure,
/// `AsyncSequence`).
///
/// ``flags`` and ``status`` are correct at any time, listening or not. While listening, the
/// object gets the current answer first, then only real changes; however many objects watch
/// the same target, it is evaluated once per kernel change, on one subscription per namespace.
/// Callbacks run on ``callbackQueue``; after ``stopListening()`` (or deinit) returns, none
/// runs, unless it is called from inside a callback. Releasing the object stops it.
public final class ReachabilityMonitor: Sendable, CustomStringConvertible, BatchedAnswerRecipient {
    /// The internet in the current namespace; call ``startListening()`` to be told of changes.
    ///
    /// It holds the namespace's engine (its subscription, thread and sockets) only while it
    /// listens. A query while it does not listen uses the engine that another monitor holds,
    /// or starts one for the query alone: for repeated queries, listen, keep a monitor of
    /// your own, or ask a ``ReachabilityProbe``.
    public static let shared: ReachabilityMonitor = ReachabilityMonitor(
        target: .internet,
        engineQueue: (try? NetworkNamespace.current.identity()).map { ReachabilityEngine.evaluationQueue(of: $0, namespace: .current) },
        engine: { try? ReachabilityEngine.shared(namespace: .current) })

    private struct State {
        var target: ReachabilityTarget
        var token: ReachabilityEngine.Token?
        /// The engine that `token` watches, held while listening.
        var listeningEngine: ReachabilityEngine?
        /// The last answer delivered (or being delivered) to the callbacks.
        var answer: ReachabilityAnswer?
        /// The engine's newest answer for the target while listening, stored as the round that
        /// judged it hands it over, before any callback queue or coalescing window: what
        /// ``ReachabilityMonitor/answer`` returns, with one lock.
        var latest: ReachabilityAnswer?
        /// The listening generation that `latest` may come from.
        var generation = 0
        weak var delegate: (any ReachabilityDelegate)?
        var onChange: (@Sendable (ReachabilityMonitor, ReachabilityAnswer) -> Void)?
        var coalescingInterval: DispatchTimeInterval?
        /// What a module of this package adds to every delivery (see `setDeliveryHook(_:)`).
        var deliveryHook: (@Sendable (ReachabilityMonitor, ReachabilityAnswer, ReachabilityStatus?) -> Void)?
        /// The newest answer waiting for the end of a coalescing window, if one is open, and
        /// the listening generation it belongs to: a window opened before a stop must not take
        /// the answers of the next start (its timer delivers to a closed generation).
        var pendingAnswer: ReachabilityAnswer?
        var pendingGeneration = 0
    }

    private let state: Locked<State>
    private let engineProvider: @Sendable () -> ReachabilityEngine?
    private let gate = CallbackGate()
    /// The queue callbacks and the delegate run on: the one given at creation,
    /// or a private serial queue that targets the namespace's evaluation queue (see
    /// ``init(target:namespace:queue:resolver:resolutionTimeout:logger:)`` and
    /// ``evaluationQueue(in:)``).
    public let callbackQueue: DispatchQueue
    /// The evaluation queue the default callback queue targets, held: libdispatch holds a
    /// queue's target, not its Swift object, and the namespace keeps its queue only while that
    /// object lives (see ``evaluationQueue(in:)``).
    private let engineQueue: DispatchQueue?

    /// `engineQueue`, when known, is the target of the default callback queue: a delivery then
    /// joins the engine's queue instead of waking a thread of its own.
    private init(target: ReachabilityTarget, queue: DispatchQueue? = nil, engineQueue: DispatchQueue? = nil,
                 engine: @escaping @Sendable () -> ReachabilityEngine?) {
        state = Locked(State(target: target))
        engineProvider = engine
        self.engineQueue = engineQueue
        callbackQueue = queue ?? DispatchQueue(label: "ReachabilityMonitor.callbacks", target: engineQueue)
    }

    /// A monitor of any target in `namespace`.
    /// - Parameters:
    ///   - target: What to watch.
    ///   - namespace: The network namespace (default: the current one).
    ///   - queue: Where callbacks and the delegate run (a serial queue: on a
    ///     concurrent one, the callbacks of two rounds may run at once and finish out of order;
    ///     `stopListening()` from inside one then waits for the others to return, except those
    ///     that are stopping too). By
    ///     default, a private serial queue that targets the namespace's evaluation queue: each
    ///     callback runs right after the evaluation round that produced it and before the next
    ///     round, on the same thread, with no thread woken for it. A callback that blocks there
    ///     holds up the namespace's next evaluation; pass a queue of your own for long work. The
    ///     default queues of a namespace share that one serial target: from inside such a
    ///     callback, `sync` onto another monitor's default queue would wait for itself. For the
    ///     lowest latency, pass ``evaluationQueue(in:)`` itself: callbacks then run inside the
    ///     round, on the thread that read the kernel's message.
    ///   - resolver: Resolves host names. By default the process-wide engine of the namespace
    ///     resolves with `getaddrinfo` inside the namespace; with a resolver of its own the monitor gets an
    ///     engine of its own (still on the namespace's one kernel subscription).
    ///   - resolutionTimeout: How long `resolver` may take before the answer says the name could
    ///     not be resolved (``UnreachableReason/resolutionFailed(_:)``); used with `resolver` only,
    ///     the shared engine waits 15 seconds.
    ///   - logger: Where the namespace's engine logs, if this monitor starts it (one running
    ///     already keeps the logger it started with): its start at `debug`, a host name that
    ///     could not be resolved at `warning`, a namespace that went away at `notice`, and,
    ///     through the kernel subscription it opens, re-reads after lost notifications at
    ///     `notice`. By default nothing is logged.
    /// - Throws: ``ReachabilityError/netlink(_:)`` when the namespace cannot be watched.
    public convenience init(target: ReachabilityTarget, namespace: NetworkNamespace = .current,
                            queue: DispatchQueue? = nil, resolver: (any HostResolver)? = nil,
                            resolutionTimeout: Duration = BoundedResolution.defaultTimeout,
                            logger: Logger = ReachabilityMonitor.silentLogger) throws(ReachabilityError) {
        let engine: ReachabilityEngine
        do {
            if let resolver {
                engine = try ReachabilityEngine(namespace: namespace, policy: (try? ConstrainedLinkPolicy.system()) ?? .none,
                                                resolver: resolver, resolutionTimeout: resolutionTimeout, logger: logger)
                engine.start()
            } else {
                engine = try ReachabilityEngine.shared(namespace: namespace, logger: logger)
            }
        } catch { throw .netlink(error) }
        self.init(target: target, queue: queue, engineQueue: engine.queue, engine: { engine })
    }

    /// The default logger of monitors: labelled `LinuxReachability`, logging nothing.
    @usableFromInline package static let silentLogger = Logger(label: "LinuxReachability", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The serial queue on which the evaluation rounds of `namespace` run, shared by the
    /// monitors that have no resolver of their own; the target of their default callback
    /// queues.
    ///
    /// Passed as the `queue` of such a monitor, it makes the monitor's callbacks (its
    /// delegate and `onChange`) run inside the evaluation round that produced
    /// them. While such a monitor listens, a round that a kernel event starts runs on the
    /// namespace's kernel reader thread, in a `sync` block of this queue: the change reaches the
    /// callback with no thread woken on the way, as fast as a callback on the kernel reader
    /// itself (BENCHMARKS.md). The price: while such a monitor listens, anything that runs on
    /// this queue or on a queue that targets it (every default callback queue of the
    /// namespace) holds up the kernel reader too, and with it every observer of the
    /// namespace's `NetlinkSubscription`. Keep those callbacks short and never block in them:
    /// should the kernel's buffer fill meanwhile, the subscription re-reads the state and every
    /// answer is judged again, the changes in between folded into one.
    ///
    /// The queue is the namespace's for as long as anyone holds it, across the engines that
    /// its monitors start and end.
    /// - Throws: ``ReachabilityError/netlink(_:)`` when the namespace cannot be opened.
    public static func evaluationQueue(in namespace: NetworkNamespace = .current) throws(ReachabilityError) -> DispatchQueue {
        do {
            return ReachabilityEngine.evaluationQueue(of: try namespace.identity(), namespace: namespace)
        } catch {
            throw .netlink(error)
        }
    }

    /// A monitor of a host name (resolved in the namespace; re-resolved when the network changes).
    /// - Throws: ``ReachabilityError/invalidTarget(_:)`` for a malformed name.
    public convenience init(host: String, namespace: NetworkNamespace = .current, queue: DispatchQueue? = nil) throws(ReachabilityError) {
        let target = try ReachabilityTarget(parsing: host)
        try self.init(target: target, namespace: namespace, queue: queue)
    }

    /// A monitor of one address.
    public convenience init(address: IPAddress, namespace: NetworkNamespace = .current, queue: DispatchQueue? = nil) throws(ReachabilityError) {
        try self.init(target: .address(address), namespace: namespace, queue: queue)
    }

    /// A monitor of a remote address reached from a local one (source policy rules apply).
    public convenience init(localAddress: IPAddress, remoteAddress: IPAddress, namespace: NetworkNamespace = .current,
                            queue: DispatchQueue? = nil) throws(ReachabilityError) {
        try self.init(target: .addressPair(local: localAddress, remote: remoteAddress), namespace: namespace, queue: queue)
    }

    deinit {
        stopListening()
    }

    // MARK: - Querying

    /// The target. Setting it while listening resets the listening answer to unknown
    /// (``isAwaitingFirstAnswer`` is `true`) and tells the callbacks only once the new
    /// target's answer is known: for a host name, once it has been resolved (FXReachability).
    /// No answer of the old target is delivered after the setter returns.
    public var target: ReachabilityTarget {
        get { state.withLock { $0.target } }
        set {
            // Stopped first, so that no answer of the old target passes the gate under the new
            // one's name; started again with the new target.
            let listening = isListening
            if listening { stopListening() }
            state.withLock { state in
                state.target = newValue
                state.answer = nil
            }
            if listening { startListening() }
        }
    }

    /// The full answer now, listening or not: while the target is watched (by this monitor or
    /// another of the namespace) the engine's current answer, which each kernel change updates
    /// before any callback runs, else a fresh evaluation. It can be newer than the last answer
    /// delivered, which waits for its callback queue or a ``coalescingInterval``. A host name
    /// not resolved yet is answered optimistically from the default routes (as Apple's
    /// unscheduled queries are).
    public var answer: ReachabilityAnswer {
        if let latest = state.withLock({ $0.token != nil ? $0.latest : nil }) { return latest }
        guard let engine = engineProvider() else { return .notReachable(.lookupFailed(.failure)) }
        return engine.currentAnswer(for: target)
    }

    /// The flags now.
    public var flags: ReachabilityFlags { answer.flags }
    /// This library's status now (Ethernet is not Wi-Fi).
    public var status: ReachabilityStatus { answer.status }
    /// Whether the target is reachable now.
    public var isReachable: Bool { answer.isReachable }
    /// Whether the monitor listens and has not delivered an answer yet (after a start, or a
    /// change of ``target``: for a host name, until it is resolved). The statuses of libraries
    /// that report "unknown" until then are built on it.
    public var isAwaitingFirstAnswer: Bool { state.withLock { $0.token != nil && $0.answer == nil } }

    // MARK: - Being told

    /// The delegate (held weakly), told on ``callbackQueue``.
    public var delegate: (any ReachabilityDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// A closure called on ``callbackQueue`` with every change.
    public var onChange: (@Sendable (ReachabilityMonitor, ReachabilityAnswer) -> Void)? {
        get { state.withLock { $0.onChange } }
        set {
            var replaced = newValue
            state.withLock { swap(&$0.onChange, &replaced) }
            // The closure replaced is released here, after the lock: it may hold the last
            // reference to an object whose deinit uses this monitor, which would lock again.
        }
    }

    /// Sets what a module of this package (the seed libraries' dialects) adds to every
    /// delivery, after the delegate and ``onChange``, with the answer and the previous status
    /// (nil for the first answer).
    package func setDeliveryHook(_ hook: (@Sendable (ReachabilityMonitor, ReachabilityAnswer, ReachabilityStatus?) -> Void)?) {
        var replaced = hook
        state.withLock { swap(&$0.deliveryHook, &replaced) }
    }

    /// Whether a delivery hook is set.
    package var hasDeliveryHook: Bool { state.withLock { $0.deliveryHook != nil } }

    /// Waits this long after a change and delivers only the answer then, if it still differs
    /// from the last one delivered (default: `nil`, every change at once).
    public var coalescingInterval: DispatchTimeInterval? {
        get { state.withLock { $0.coalescingInterval } }
        set { state.withLock { $0.coalescingInterval = newValue } }
    }

    /// Whether the monitor is listening.
    public var isListening: Bool { state.withLock { $0.token != nil } }

    /// Starts listening: the current answer is delivered first (for a host name never resolved
    /// yet, once it is: the optimistic guess of ``answer`` is not told), then every change. Starting
    /// twice is harmless; starting again after ``stopListening()`` delivers the current answer
    /// first again, even if it is the one delivered before the stop.
    /// - Returns: Whether the monitor listens: `false` only when its namespace cannot be
    ///   watched (``shared``, whose current namespace could not be opened: descriptors or
    ///   threads ran out), where Reachability.swift's `startNotifier()` throws. The other
    ///   monitors' initializers throw instead.
    @discardableResult
    public func startListening() -> Bool {
        guard let engine = engineProvider() else { return false }
        let placeholder = ReachabilityEngine.Token(id: 0, target: .internet)
        // The gate's generation is opened under the lock that marks the monitor as listening:
        // a `stopListening()` on another thread then either comes first (and this start opens
        // a generation after its close) or takes this placeholder and closes this generation.
        // Opened after the lock, a stop could close the gate before this start opened it, and
        // the first answer would pass the new generation after that stop returned.
        let started = state.withLock { state -> (target: ReachabilityTarget, generation: Int)? in
            guard state.token == nil else { return nil }
            state.token = placeholder
            // A new start tells the current answer first: the kept one and an answer waiting
            // in a coalescing window belong to the listening that ended.
            state.answer = nil
            state.latest = nil
            state.pendingAnswer = nil
            state.generation = gate.open()
            return (state.target, state.generation)
        }
        guard let (target, generation) = started else { return true }
        // A `weak let`, not `[weak self]`: a weak capture is a variable, checked for exclusive
        // access on every answer; a constant is not.
        weak let monitor = self
        let token = engine.watch(target, inline: callbackQueue === engine.queue) { answer, batch in
            monitor?.received(answer, generation: generation, batch: batch)
        }
        let superseded = state.withLock { state -> Bool in
            guard state.token === placeholder, gate.generation == generation else { return true }
            state.token = token
            state.listeningEngine = engine
            return false
        }
        if superseded { engine.unwatch(token) }
        return true
    }

    /// Stops listening. After it returns no callback runs (unless it is called from one): it
    /// waits for a callback running on another thread, so never call it from a thread that a
    /// running callback waits for (the main thread, while the callback does
    /// `DispatchQueue.main.sync`); the two would wait for each other.
    public func stopListening() {
        let (token, engine) = state.withLock { state -> (ReachabilityEngine.Token?, ReachabilityEngine?) in
            defer {
                state.token = nil
                state.listeningEngine = nil
                state.latest = nil
                state.pendingAnswer = nil
            }
            return (state.token, state.listeningEngine)
        }
        if let token, let engine { engine.unwatch(token) }
        gate.close()
    }

    /// Every answer as an asynchronous sequence: the current one first (for a host name never
    /// resolved yet, the resolved one), then each change.
    ///
    /// The sequence holds its own watch of the target, apart from ``startListening()`` and
    /// ``stopListening()`` and from the monitor's lifetime (`for await answer in
    /// ReachabilityMonitor(host: ...).updates()` works without keeping the monitor). It ends when the
    /// iterating task is cancelled or the loop is left, and after the answer
    /// ``UnreachableReason/monitoringEnded(_:)`` when the namespace goes away: nothing follows
    /// that answer.
    public func updates() -> AsyncStream<ReachabilityAnswer> {
        let (stream, continuation) = AsyncStream<ReachabilityAnswer>.makeStream()
        guard let engine = engineProvider() else { continuation.finish(); return stream }
        let token = engine.watch(target) { answer, _ in
            continuation.yield(answer)
            if case .monitoringEnded = answer.reason { continuation.finish() }
        }
        continuation.onTermination = { _ in engine.unwatch(token) }
        return stream
    }

    public var description: String { "ReachabilityMonitor(\(target))" }

    // MARK: - Delivery

    /// Takes an answer on the engine's queue; its delivery joins the round's `batch`.
    private func received(_ answer: ReachabilityAnswer, generation: Int, batch: DeliveryBatch) {
        // A stopped monitor's answers are dropped in `deliver`, by the gate: checking here too
        // would cost one more lock per answer.
        // The first answer is never held back; only changes are coalesced.
        let (interval, first) = state.withLock { state in
            // The newest answer, for queries, before it waits for its delivery.
            if generation == state.generation { state.latest = answer }
            // Only whether there is an answer: `state.answer == nil` would copy the answer out.
            if case .none = state.answer { return (state.coalescingInterval, true) }
            return (state.coalescingInterval, false)
        }
        if let coalescing = interval, !first {
            let windowOpen = state.withLock { state -> Bool in
                // An ended listening's answer (a round took its watch before the stop) does not
                // replace the new listening's: its generation is closed and older.
                if state.pendingAnswer != nil, state.pendingGeneration > generation { return true }
                defer {
                    state.pendingAnswer = answer
                    state.pendingGeneration = generation
                }
                return state.pendingAnswer != nil && state.pendingGeneration == generation
            }
            if !windowOpen {
                callbackQueue.asyncAfter(deadline: .now() + coalescing) { [weak self] in
                    guard let self else { return }
                    // Only this window's answer: after a stop and a start, the answer waiting
                    // is the new listening's, whose own timer delivers it.
                    let latest = self.state.withLock { state -> ReachabilityAnswer? in
                        guard state.pendingGeneration == generation else { return nil }
                        defer { state.pendingAnswer = nil }
                        return state.pendingAnswer
                    }
                    if let latest { self.deliver(latest, generation: generation) }
                }
            }
        } else {
            batch.add(answer, generation: generation, to: self, on: callbackQueue)
        }
    }

    /// The batch's delivery of an answer, on ``callbackQueue``.
    func deliverBatched(_ answer: ReachabilityAnswer, generation: Int) {
        deliver(answer, generation: generation)
    }

    /// What a delivery takes out of the lock. A struct, not a tuple: `withLock` returns a
    /// generic result, and a closure inside a tuple would be wrapped in a reabstraction thunk
    /// (an allocation) on its way out of the lock.
    private struct Callbacks {
        let previousStatus: ReachabilityStatus?
        let delegate: (any ReachabilityDelegate)?
        let onChange: (@Sendable (ReachabilityMonitor, ReachabilityAnswer) -> Void)?
        let hook: (@Sendable (ReachabilityMonitor, ReachabilityAnswer, ReachabilityStatus?) -> Void)?
    }

    private func deliver(_ answer: ReachabilityAnswer, generation: Int) {
        gate.run(generation: generation) {
            // Only the previous status leaves the lock: copying the previous answer out would cost
            // more than the rest of a delivery.
            let callbacks = state.withLock { state -> Callbacks? in
                var previousStatus: ReachabilityStatus?
                if let previous = state.answer {
                    if previous.isSameAnswer(as: answer) { return nil }
                    previousStatus = previous.status
                }
                state.answer = answer
                return Callbacks(previousStatus: previousStatus, delegate: state.delegate, onChange: state.onChange,
                                 hook: state.deliveryHook)
            }
            guard let callbacks else { return }
            callbacks.delegate?.reachability(self, didChange: answer)
            callbacks.onChange?(self, answer)
            callbacks.hook?(self, answer, callbacks.previousStatus)
        }
    }
}
