import Dispatch
import Glibc
import Logging
import Netlink

/// A monitor of the way out of this host, in NWPathMonitor's style.
///
/// ``start(queue:)`` delivers the current path at once, then every change, to
/// ``pathUpdateHandler`` on that queue; `for await path in monitor` does the same without a
/// handler, and both can be used together. Every monitor of a namespace shares its one kernel
/// subscription. After ``cancel()`` returns no handler runs (unless it is called from the
/// handler); a cancelled monitor cannot be restarted, and says so: ``start(queue:)`` returns
/// `false`, ``isCancelled`` is `true`, and its sequences end. When the namespace is deleted, the
/// path becomes unsatisfied, ``error`` says why, and the sequences end after that path.
public final class NetworkPathMonitor: Sendable, AsyncSequence {
    public typealias Element = NetworkPath

    /// Only links of this type may carry the path.
    public let requiredInterfaceType: InterfaceType?
    /// Links of these types may not carry the path.
    public let prohibitedInterfaceTypes: Set<InterfaceType>
    /// The namespace watched.
    public let namespace: NetworkNamespace

    private struct State {
        var current: NetworkPath?
        var handler: (@Sendable (NetworkPath) -> Void)?
        var queue: DispatchQueue?
        /// A serial queue targeting ``queue``: the handler runs on the user's queue, one path
        /// at a time and in order, even when that queue is concurrent.
        var deliveryQueue: DispatchQueue?
        /// The callback gate's generation that ``start(queue:)`` opened: nil until then.
        var generation: Int?
        var cancelled = false
        /// The engine's rounds are observed (by a start or an iteration), and the observer.
        var observing = false
        /// The namespace was deleted: the last path was delivered, and sequences end.
        var ended = false
        var roundObserver: UInt64?
        var streams: [UInt64: AsyncStream<NetworkPath>.Continuation] = [:]
        var nextStream: UInt64 = 0
        /// The namespace's engine, held until the monitor is cancelled.
        var engine: ReachabilityEngine?
        /// Why the engine's subscription ended, kept once the engine is let go.
        var termination: NetlinkError?
    }
    private let state: Locked<State>
    private let gate = CallbackGate()
    private let startError: ReachabilityError?
    /// Why the namespace cannot be watched (it could not be entered, or it was deleted while
    /// watched), if so; the path is then unsatisfied.
    public var error: ReachabilityError? {
        startError ?? state.withLock { $0.engine?.termination ?? $0.termination }.map(ReachabilityError.netlink)
    }

    /// The engine, unless the monitor was cancelled (or the namespace could not be watched).
    private var engine: ReachabilityEngine? { state.withLock { $0.engine } }

    /// A monitor of `namespace`, optionally restricted to or excluding link types.
    /// - Parameters:
    ///   - namespace: The network namespace (default: the current one).
    ///   - requiredInterfaceType: Only links of this type may carry the path.
    ///   - prohibitedInterfaceTypes: Links of these types may not carry the path.
    ///   - logger: Where the namespace's engine logs, if this monitor starts it (see
    ///     ``ReachabilityMonitor/init(target:namespace:queue:resolver:resolutionTimeout:logger:)``).
    public init(namespace: NetworkNamespace = .current, requiredInterfaceType: InterfaceType? = nil,
                prohibitedInterfaceTypes: [InterfaceType] = [], logger: Logger = ReachabilityMonitor.silentLogger) {
        self.namespace = namespace
        self.requiredInterfaceType = requiredInterfaceType
        self.prohibitedInterfaceTypes = Set(prohibitedInterfaceTypes)
        var initial = State()
        do {
            initial.engine = try ReachabilityEngine.shared(namespace: namespace, logger: logger)
            startError = nil
        } catch {
            startError = .netlink(error)
        }
        state = Locked(initial)
    }

    /// A monitor of paths over links of one type only.
    public convenience init(requiredInterfaceType: InterfaceType) {
        self.init(namespace: .current, requiredInterfaceType: requiredInterfaceType)
    }

    /// A monitor of paths over links of any type but these.
    public convenience init(prohibitedInterfaceTypes: [InterfaceType]) {
        self.init(namespace: .current, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
    }

    deinit {
        cancel()
    }

    /// The handler of path updates, called on the start queue.
    public var pathUpdateHandler: (@Sendable (NetworkPath) -> Void)? {
        get { state.withLock { $0.handler } }
        set {
            var replaced = newValue
            state.withLock { swap(&$0.handler, &replaced) }
            // The handler replaced is released here, after the lock: it may hold the last
            // reference to an object whose deinit uses this monitor, which would lock again.
        }
    }

    /// The path now (evaluated at once if the monitor has not delivered one yet).
    public var currentPath: NetworkPath {
        state.withLock { $0.current } ?? evaluate()
    }

    /// The queue given to ``start(queue:)``.
    public var queue: DispatchQueue? { state.withLock { $0.queue } }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Starts delivering paths to ``pathUpdateHandler`` on `queue`, the current one first (also
    /// when a sequence started following paths before). The handler runs one path at a time and
    /// in order, even on a concurrent queue (the paths go through a serial queue that targets
    /// `queue`). Starting twice is harmless: the first queue stays.
    /// - Returns: `false` if the monitor was cancelled (it cannot be restarted), else `true`.
    @discardableResult
    public func start(queue: DispatchQueue) -> Bool {
        // The gate's generation is opened under the lock that marks the monitor as started: a
        // `cancel()` on another thread then closes it, or comes first and is seen here. The
        // current path, if rounds are observed already, is queued to the handler under the same
        // lock that a later path's delivery takes, so it comes first.
        let started = state.withLock { state -> Bool? in
            if state.cancelled { return nil }
            guard state.generation == nil else { return false }
            state.queue = queue
            let deliveryQueue = DispatchQueue(label: "NetworkPathMonitor.delivery", target: queue)
            state.deliveryQueue = deliveryQueue
            let generation = gate.open()
            state.generation = generation
            if let current = state.current { schedule(current, on: deliveryQueue, generation: generation) }
            return true
        }
        guard let started else { return false }
        if started { observeRounds() }
        return true
    }

    /// Judges paths in the engine's rounds (once per netlink read, on the snapshot the host
    /// monitors of the namespace were judged on) from now on, if nothing did yet.
    private func observeRounds() {
        guard state.withLock({ state in
            defer { state.observing = true }
            return !state.observing && !state.cancelled
        }) else { return }
        guard let engine else {
            deliver(NetworkPath(status: .unsatisfied), ended: true)
            return
        }
        // A constant weak reference, read without the run-time exclusivity check that a
        // `[weak self]` capture (a variable) costs on every round.
        weak let monitor = self
        let observer = engine.observeRounds { snapshot in
            guard let monitor else { return }
            monitor.deliver(monitor.evaluate(in: snapshot, engine: engine), ended: snapshot.ended != nil)
        }
        // A `cancel()` since the lock above found no observer to remove, or the end of the
        // sequence that asked for paths: this start removes it.
        let unwanted = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if state.streams.isEmpty, state.generation == nil {
                state.observing = false
                return true
            }
            state.roundObserver = observer
            return false
        }
        if unwanted { engine.stopObservingRounds(observer) }
    }

    /// Stops the monitor for good. After it returns no handler runs, and the monitor has let go
    /// of ``pathUpdateHandler`` (as NWPathMonitor releases its handler on cancel), so a handler
    /// that holds the monitor makes no cycle once it is cancelled. Unlike NWPathMonitor's, it
    /// waits for a handler running on another thread: never call it from a thread that the
    /// handler waits for (the main thread, while the handler does `DispatchQueue.main.sync`).
    public func cancel() {
        let (observer, streams, engine) = state.withLock { state in
            state.cancelled = true
            // The engine is let go (the namespace's subscription ends with its last user); what
            // ended its subscription, if anything, stays for ``error``.
            state.termination = state.engine?.termination
            defer { state.roundObserver = nil; state.streams = [:]; state.engine = nil }
            return (state.roundObserver, Array(state.streams.values), state.engine)
        }
        if let observer { engine?.stopObservingRounds(observer) }
        gate.close()
        pathUpdateHandler = nil
        for stream in streams { stream.finish() }
    }

    /// Paths as an asynchronous sequence: the current one first, then every change. Iterating
    /// follows paths from then on if the monitor was not started (without starting its
    /// handler: a later ``start(queue:)`` still delivers to it on that queue); the sequence
    /// ends when the monitor is cancelled, when the namespace is deleted (after the unsatisfied
    /// path that says so; ``error`` tells why), when the iterating task is cancelled or when
    /// the loop is left.
    ///
    /// The iteration keeps the monitor alive, as NWPathMonitor's does: `for await path in
    /// NetworkPathMonitor()` follows paths without another reference to the monitor, which is
    /// released (and cancelled) once the loop ends.
    public func makeAsyncIterator() -> AsyncStream<NetworkPath>.Iterator {
        let (stream, continuation) = AsyncStream<NetworkPath>.makeStream()
        // Registered and given the current path under the lock that publishing takes, so the
        // stream sees that path and exactly the changes after it.
        let id = state.withLock { state -> UInt64? in
            if state.cancelled { return nil }
            // A namespace that is gone: its last path, then the end.
            if let current = state.current { continuation.yield(current) }
            if state.ended { return nil }
            state.nextStream += 1
            state.streams[state.nextStream] = continuation
            return state.nextStream
        }
        guard let id else { continuation.finish(); return stream.makeAsyncIterator() }
        // A strong reference, held by the stream until it ends (then the closure is released).
        // The Swift runtime calls it under the cancelled task's own lock, which a path handed to
        // the stream under this monitor's lock waits for: the stream is forgotten off that lock.
        continuation.onTermination = { _ in DispatchQueue.global().async { self.streamEnded(id) } }
        observeRounds()
        return stream.makeAsyncIterator()
    }

    /// A sequence ended (its task was cancelled, or its loop left). When it was the last and
    /// the monitor was not started, nothing needs paths any more: the rounds are no longer
    /// observed (a later start or iteration observes them again).
    private func streamEnded(_ id: UInt64) {
        let observer = state.withLock { state -> UInt64? in
            state.streams[id] = nil
            guard state.streams.isEmpty, state.generation == nil, let observer = state.roundObserver else { return nil }
            state.roundObserver = nil
            state.observing = false
            state.current = nil
            return observer
        }
        if let observer { engine?.stopObservingRounds(observer) }
    }

    // MARK: - Evaluation

    /// Publishes `path` if it differs from the current one: to the streams at once, to the
    /// handler on the start queue. The last path (`ended`: the namespace was deleted, or it
    /// could not be watched) ends the streams.
    private func deliver(_ path: NetworkPath, ended: Bool) {
        let finished = state.withLock { state -> [AsyncStream<NetworkPath>.Continuation] in
            if state.current != path {
                state.current = path
                for stream in state.streams.values { stream.yield(path) }
                if let queue = state.deliveryQueue, let generation = state.generation {
                    schedule(path, on: queue, generation: generation)
                }
            }
            guard ended, !state.ended else { return [] }
            state.ended = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in finished { stream.finish() }
    }

    /// Queues `path` to the handler, which gets it unless the monitor was cancelled meanwhile.
    private func schedule(_ path: NetworkPath, on queue: DispatchQueue, generation: Int) {
        queue.async { [weak self] in
            guard let self else { return }
            self.gate.run(generation: generation) {
                self.state.withLock { $0.handler }?(path)
            }
        }
    }

    private func evaluate() -> NetworkPath {
        guard let engine else { return NetworkPath(status: .unsatisfied) }
        return evaluate(in: engine.snapshot(), engine: engine)
    }

    /// The path of one snapshot; its name server check sees the same links as the path.
    private func evaluate(in snapshot: ReachabilityEngine.Snapshot, engine: ReachabilityEngine) -> NetworkPath {
        // A namespace no longer watched (it was deleted) carries no traffic that we know of.
        guard snapshot.ended == nil else { return NetworkPath(status: .unsatisfied) }
        // A server is of use to the path when the kernel routes it through a link the path may
        // use, or it is this host's own (a local stub resolver, such as systemd-resolved's).
        let nameServerReachable = NameServers.configured(for: namespace).contains { server in
            let answer = engine.answer(for: server, in: snapshot)
            guard answer.isReachable else { return false }
            if answer.flags.contains(.isLocalAddress) { return true }
            guard let type = answer.interface?.type else { return false }
            return NetworkPath.allows(type, required: requiredInterfaceType, prohibited: prohibitedInterfaceTypes)
        }
        return NetworkPath.evaluate(snapshot.network, classifications: snapshot.defaultRouteClassifications, required: requiredInterfaceType,
                                    prohibited: prohibitedInterfaceTypes, nameServerReachable: nameServerReachable)
    }
}

/// The name servers of a namespace's resolver configuration.
enum NameServers {
    /// `nameserver` addresses of `/etc/netns/NAME/resolv.conf` for a named namespace that has
    /// one (the file `ip netns exec` would use), else of `/etc/resolv.conf`.
    static func configured(for namespace: NetworkNamespace) -> [ReachabilityTarget] {
        var paths = ["/etc/resolv.conf"]
        if let own = namespace.ownConfiguration { paths.insert(own + "/resolv.conf", at: 0) }
        for path in paths {
            // Read each round, and when the file is being replaced: the project's own reader.
            guard let text = SysfsReader.readSmallFile(path, limit: 1 << 20) else { continue }
            return parse(text)
        }
        return []
    }

    /// The name servers as targets: an address (an IPv4-mapped one as the IPv4 address the
    /// resolver's socket sends to; `0.0.0.0` stays this host, not the internet), or a link-local
    /// address with its link (`fe80::1%eth0`, which the resolver reaches through that link).
    static func parse(_ text: String) -> [ReachabilityTarget] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0] == "nameserver",
                  let target = try? ReachabilityTarget(parsing: String(fields[1])) else { return nil }
            switch target {
            case .address(let address): return .address(address.unmapped)
            case .scopedAddress: return target
            case .internet, .host, .addressPair: return nil
            }
        }
    }
}
