import LinuxReachability

// ReachabilityMiddleware's vocabulary (SwiftRex) without its framework: a state, events, a
// pure reducer, and an injectable source of paths.

/// The link the connection goes through, in the middleware's four words.
public enum ConnectedInterface: String, Sendable, Hashable, CaseIterable, Codable {
    /// Cellular.
    case cellular
    /// Wi-Fi.
    case wifi
    /// Wired Ethernet, and any other satisfied path (a VPN, a veth, InfiniBand): not a radio.
    case wired
    /// Disconnected.
    case none
}

/// The middleware's state.
public struct ReachabilityState: Sendable, Hashable, Codable {
    /// Whether paths are being observed.
    public var isMonitoring: Bool
    /// The latest known link type, or `.none` when offline.
    public var connectivity: ConnectedInterface
    /// Whether the path is expensive.
    public var isExpensive: Bool
    /// Whether the path is constrained.
    public var isConstrained: Bool

    /// A state as given.
    public init(isMonitoring: Bool = false, connectivity: ConnectedInterface = .none, isExpensive: Bool = false,
                isConstrained: Bool = false) {
        self.isMonitoring = isMonitoring
        self.connectivity = connectivity
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
    }

    /// Not monitoring, offline, cheap, unconstrained.
    public static let initial = ReachabilityState()
}

/// The middleware's actions and events.
public enum ReachabilityEvent: String, Sendable, Hashable, CaseIterable, Codable {
    /// Start observing paths.
    case startMonitoring
    /// Stop observing paths.
    case stopMonitoring
    /// The connection now goes through Wi-Fi.
    case connectedToWifi
    /// The connection now goes through wired Ethernet (or another non-radio link).
    case connectedToWired
    /// The connection now goes through cellular.
    case connectedToCellular
    /// The connection was lost.
    case gotOffline
    /// The path became expensive.
    case becameExpensive
    /// The path became cheap.
    case becameCheap
    /// The path became constrained.
    case becameConstrained
    /// The path became unconstrained.
    case becameUnconstrained
}

/// The pure reducer.
public enum ReachabilityReducer {
    /// The events a new path causes against `state`, and the state after them. Only what
    /// differs from `state` is an event: an unchanged path gives none.
    public static func reduce(_ state: ReachabilityState, path: NetworkPath) -> (ReachabilityState, [ReachabilityEvent]) {
        var events: [ReachabilityEvent] = []
        let connectivity = connectivity(of: path)
        if connectivity != state.connectivity {
            switch connectivity {
            case .wifi: events.append(.connectedToWifi)
            case .wired: events.append(.connectedToWired)
            case .cellular: events.append(.connectedToCellular)
            case .none: events.append(.gotOffline)
            }
        }
        if path.isExpensive != state.isExpensive { events.append(path.isExpensive ? .becameExpensive : .becameCheap) }
        if path.isConstrained != state.isConstrained { events.append(path.isConstrained ? .becameConstrained : .becameUnconstrained) }
        var next = state
        for event in events { next = reduce(next, event: event) }
        return (next, events)
    }

    /// The state after one action or event.
    public static func reduce(_ state: ReachabilityState, event: ReachabilityEvent) -> ReachabilityState {
        var next = state
        switch event {
        case .startMonitoring: next.isMonitoring = true
        // As SwiftRex's reducer: what was known of the path is forgotten, so that the next
        // start reports the path it finds, even one equal to the last.
        case .stopMonitoring: next = .initial
        case .connectedToWifi: next.connectivity = .wifi
        case .connectedToWired: next.connectivity = .wired
        case .connectedToCellular: next.connectivity = .cellular
        case .gotOffline: next.connectivity = .none
        case .becameExpensive: next.isExpensive = true
        case .becameCheap: next.isExpensive = false
        case .becameConstrained: next.isConstrained = true
        case .becameUnconstrained: next.isConstrained = false
        }
        return next
    }

    /// The middleware's reading of a path: offline unless satisfied; then Wi-Fi, wired or
    /// cellular by the link the traffic goes through, the path's preferred one (the one its
    /// `NetworkPath.isExpensive` and `NetworkPath.isConstrained` describe); any other
    /// satisfied path is wired (not a radio).
    public static func connectivity(of path: NetworkPath) -> ConnectedInterface {
        guard path.status == .satisfied else { return .none }
        switch path.availableInterfaces.first?.type {
        case .wifi?: return .wifi
        case .cellular?: return .cellular
        default: return .wired
        }
    }
}

/// Where paths come from: the kernel in production, a test's hand in tests
/// (ReachabilityMiddlewareDependencies).
public struct NetworkPathSource: Sendable {
    /// A new sequence of paths.
    public let paths: @Sendable () -> AsyncStream<NetworkPath>

    /// A source from any sequence maker.
    public init(paths: @escaping @Sendable () -> AsyncStream<NetworkPath>) {
        self.paths = paths
    }

    /// Paths from a `NetworkPathMonitor` of `namespace` (one monitor per sequence).
    public static func production(namespace: NetworkNamespace = .current, requiredInterfaceType: InterfaceType? = nil,
                                  prohibitedInterfaceTypes: [InterfaceType] = []) -> NetworkPathSource {
        NetworkPathSource {
            let monitor = NetworkPathMonitor(namespace: namespace, requiredInterfaceType: requiredInterfaceType,
                                             prohibitedInterfaceTypes: prohibitedInterfaceTypes)
            let (stream, continuation) = AsyncStream<NetworkPath>.makeStream()
            let task = Task {
                for await path in monitor { continuation.yield(path) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel(); monitor.cancel() }
            return stream
        }
    }

    /// A source that a test drives: yield paths into the continuation. Its paths form one
    /// sequence, which one ``events(from:)`` (one call of ``paths``) consumes; make a source
    /// per consumer.
    public static func forTests() -> (NetworkPathSource, AsyncStream<NetworkPath>.Continuation) {
        let (stream, continuation) = AsyncStream<NetworkPath>.makeStream()
        return (NetworkPathSource { stream }, continuation)
    }

    /// Runs the reducer over the source's paths: `startMonitoring` first, then every event a
    /// path causes, with the state after it.
    public func events(from state: ReachabilityState = .initial) -> AsyncStream<(ReachabilityEvent, ReachabilityState)> {
        let paths = self.paths
        return AsyncStream { continuation in
            let task = Task {
                var current = ReachabilityReducer.reduce(state, event: .startMonitoring)
                continuation.yield((.startMonitoring, current))
                for await path in paths() {
                    let (next, events) = ReachabilityReducer.reduce(current, path: path)
                    var step = current
                    for event in events {
                        step = ReachabilityReducer.reduce(step, event: event)
                        continuation.yield((event, step))
                    }
                    current = next
                }
                continuation.yield((.stopMonitoring, ReachabilityReducer.reduce(current, event: .stopMonitoring)))
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
