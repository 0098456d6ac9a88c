import LinuxReachability

extension ReachabilityMonitor {
    /// Apple's sample status (`NetworkStatus`), which Nexum shares.
    public var networkStatus: NetworkStatus { NetworkStatus(flags: flags) }

    /// Alamofire's status; `.unknown` while listening has not produced an answer yet.
    public var alamofireStatus: NetworkReachabilityStatus {
        isAwaitingFirstAnswer ? .unknown : NetworkReachabilityStatus(flags: flags)
    }

    /// FXReachability's status; `.unknown` while listening has not produced an answer yet (after
    /// a start or a change of `ReachabilityMonitor.target`: for a host name, until it is
    /// resolved).
    public var fxStatus: FXReachabilityStatus {
        isAwaitingFirstAnswer ? .unknown : FXReachabilityStatus(flags: flags)
    }

    /// Ola's synchronous query.
    public func reach() -> OlaStatus { OlaStatus(flags: flags) }

    /// Reachability.swift's connection, cellular allowed (``ReachabilityCompat/Reachability`` has
    /// `allowsCellularConnection`).
    public var connection: ReachabilityConnection { ReachabilityConnection(flags: flags) }

    /// Ola's installable callback: sets `ReachabilityMonitor.onChange` to call `callback`
    /// with Ola's status (in place of any closure set before), and starts listening.
    public func listen(_ callback: @escaping @Sendable (OlaStatus) -> Void) {
        install(callback: callback)
    }

    /// Ola's `install(callback:)`: ``listen(_:)``, and whether the monitor now listens (false
    /// when its namespace cannot be watched).
    @discardableResult
    public func install(callback: @escaping @Sendable (OlaStatus) -> Void) -> Bool {
        onChange = { _, answer in callback(OlaStatus(flags: answer.flags)) }
        startListening()
        return isListening
    }
}
