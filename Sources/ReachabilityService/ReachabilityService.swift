#if ServiceLifecycle
import LinuxReachability
import Logging
import ServiceLifecycle

/// A `ReachabilityMonitor`'s answers as a swift-service-lifecycle `Service`:
/// `run()` hands each answer to a handler (the current one first, then every change) and
/// returns on graceful shutdown or cancellation, letting go of the monitor and, with the last
/// user, the namespace's subscription.
///
/// Built with the package's `ServiceLifecycle` trait
/// (`.package(url: ..., traits: ["ServiceLifecycle"])`), which brings swift-service-lifecycle.
public struct ReachabilityService: Service {
    /// What the service watches.
    public let target: ReachabilityTarget
    /// The namespace watched.
    public let namespace: NetworkNamespace
    private let logger: Logger
    private let handler: @Sendable (ReachabilityAnswer) async -> Void

    /// A service that watches `target` in `namespace`.
    /// - Parameters:
    ///   - target: What to watch (default: the internet).
    ///   - namespace: The network namespace (default: the current one).
    ///   - logger: Where the service and the monitor's engine log (by default, nowhere).
    ///   - handler: Called with each answer, one at a time, in order.
    public init(target: ReachabilityTarget = .internet, namespace: NetworkNamespace = .current,
                logger: Logger = ReachabilityMonitor.silentLogger,
                handler: @escaping @Sendable (ReachabilityAnswer) async -> Void) {
        self.target = target
        self.namespace = namespace
        self.logger = logger
        self.handler = handler
    }

    /// Follows the target until graceful shutdown or cancellation.
    /// - Throws: `ReachabilityError.netlink` when the namespace cannot
    ///   be watched.
    public func run() async throws {
        let monitor = try ReachabilityMonitor(target: target, namespace: namespace, logger: logger)
        logger.debug("reachability service started", metadata: ["target": "\(target)", "namespace": "\(namespace)"])
        for await answer in monitor.updates().cancelOnGracefulShutdown() {
            await handler(answer)
        }
        logger.debug("reachability service stopped", metadata: ["target": "\(target)"])
    }
}
#endif
