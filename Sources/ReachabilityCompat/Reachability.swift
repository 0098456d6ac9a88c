import Dispatch
import Foundation
import LinuxReachability
import Netlink

/// Reachability.swift's `Reachability`, on a `ReachabilityMonitor`: `whenReachable`,
/// `whenUnreachable`, `connection`, `allowsCellularConnection`, `startNotifier()` and the
/// `.reachabilityChanged` notification, always posted.
///
/// The callbacks and the notification run on the monitor's callback queue (a private serial
/// queue, not the main queue that Reachability.swift uses by default), once with the current
/// connection after ``startNotifier()``, then on every change of the answer.
public final class Reachability: Sendable, CustomStringConvertible {
    /// Reachability.swift's `Reachability.Connection`.
    public typealias Connection = ReachabilityConnection
    /// What `whenReachable` and `whenUnreachable` are called with.
    public typealias NetworkReachable = @Sendable (Reachability) -> Void

    private struct State {
        var whenReachable: NetworkReachable?
        var whenUnreachable: NetworkReachable?
        var allowsCellularConnection = true
        var notificationCenter: NotificationCenter = .default
    }

    /// The monitor underneath, for what this dialect does not say (the answer's reason, its
    /// interface).
    public let monitor: ReachabilityMonitor
    private let state = Locked(State())

    /// The internet, as Reachability.swift's `init()` (which watches the zero address) does.
    /// - Throws: `ReachabilityError.netlink(_:)` when the namespace cannot be watched.
    public convenience init(namespace: NetworkNamespace = .current) throws(ReachabilityError) {
        self.init(monitor: try ReachabilityMonitor(target: .internet, namespace: namespace))
    }

    /// A host name, as Reachability.swift's `init(hostname:)`.
    /// - Throws: `ReachabilityError.invalidTarget(_:)` for a malformed name.
    public convenience init(hostname: String, namespace: NetworkNamespace = .current) throws(ReachabilityError) {
        self.init(monitor: try ReachabilityMonitor(host: hostname, namespace: namespace))
    }

    /// Reachability.swift's calls on `monitor`, whose `onChange` this object takes.
    public init(monitor: ReachabilityMonitor) {
        self.monitor = monitor
        weak let reachability = self
        monitor.onChange = { _, answer in reachability?.changed(answer) }
    }

    deinit { monitor.stopListening() }

    /// Called on the callback queue when the connection is not ``ReachabilityConnection/unavailable``.
    public var whenReachable: NetworkReachable? {
        get { state.withLock { $0.whenReachable } }
        set { state.withLock { $0.whenReachable = newValue } }
    }

    /// Called on the callback queue when the connection is ``ReachabilityConnection/unavailable``.
    public var whenUnreachable: NetworkReachable? {
        get { state.withLock { $0.whenUnreachable } }
        set { state.withLock { $0.whenUnreachable = newValue } }
    }

    /// Whether ``connection`` may be ``ReachabilityConnection/cellular``; when `false`, cellular is
    /// ``ReachabilityConnection/unavailable``.
    public var allowsCellularConnection: Bool {
        get { state.withLock { $0.allowsCellularConnection } }
        set { state.withLock { $0.allowsCellularConnection = newValue } }
    }

    /// Where `.reachabilityChanged` is posted (default: `.default`).
    public var notificationCenter: NotificationCenter {
        get { state.withLock { $0.notificationCenter } }
        set { state.withLock { $0.notificationCenter = newValue } }
    }

    /// The connection now.
    public var connection: Connection { connection(of: monitor.answer) }

    /// The connection that `answer` gives, with ``allowsCellularConnection``.
    private func connection(of answer: ReachabilityAnswer) -> Connection {
        ReachabilityConnection(flags: answer.flags, allowsCellularConnection: allowsCellularConnection)
    }

    /// The flags now.
    public var flags: ReachabilityFlags { monitor.flags }

    /// Starts telling of changes: the current connection first.
    /// - Throws: `ReachabilityError.netlink(_:)` when the namespace cannot be watched, where
    ///   Reachability.swift throws `unableToSetCallback`.
    public func startNotifier() throws(ReachabilityError) {
        guard monitor.startListening() else { throw .netlink(.failure) }
    }

    /// Stops telling of changes; after it returns no callback runs (unless it is called from
    /// one).
    public func stopNotifier() { monitor.stopListening() }

    public var description: String { "\(connection)" }

    /// Tells of the answer the monitor delivered (not a fresh query, which may already be a
    /// later one).
    private func changed(_ answer: ReachabilityAnswer) {
        let (reachable, unreachable, center) = state.withLock { ($0.whenReachable, $0.whenUnreachable, $0.notificationCenter) }
        if connection(of: answer) == .unavailable { unreachable?(self) } else { reachable?(self) }
        center.post(name: .reachabilityChanged, object: self)
    }
}

extension Notification.Name {
    /// Posted by ``Reachability`` on every change, `object` the ``Reachability``
    /// (Reachability.swift's name).
    public static let reachabilityChanged = Notification.Name("reachabilityChanged")
}
