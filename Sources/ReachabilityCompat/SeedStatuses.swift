import LinuxReachability
/// The status of Apple's Reachability sample (`networkStatusForFlags:`), which Reachability.swift
/// and Nexum (`NXNetworkReachabilityStatus`) share. Ethernet counts as Wi-Fi.
public enum NetworkStatus: Int, Sendable, Hashable, CaseIterable {
    /// `NotReachable`.
    case notReachable = 0
    /// `ReachableViaWiFi` (any reachable link that is not WWAN).
    case reachableViaWiFi = 1
    /// `ReachableViaWWAN`.
    case reachableViaWWAN = 2

    /// The sample's mapping: not reachable without `reachable`; Wi-Fi when no connection is
    /// required, or when it starts on demand or on traffic without intervention; WWAN when
    /// `isWWAN` is set (checked last, so it wins even when a connection is required).
    public init(flags: ReachabilityFlags) {
        guard flags.contains(.reachable) else { self = .notReachable; return }
        var status = NetworkStatus.notReachable
        if !flags.contains(.connectionRequired) { status = .reachableViaWiFi }
        if !flags.isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic]) && !flags.contains(.interventionRequired) {
            status = .reachableViaWiFi
        }
        if flags.contains(.isWWAN) { status = .reachableViaWWAN }
        self = status
    }
}

/// Alamofire's `NetworkReachabilityManager.NetworkReachabilityStatus`.
public enum NetworkReachabilityStatus: Sendable, Hashable {
    /// No answer yet.
    case unknown
    /// Not reachable.
    case notReachable
    /// Reachable over this kind of connection.
    case reachable(ConnectionType)

    /// Alamofire's two connection types.
    public enum ConnectionType: Sendable, Hashable {
        /// Ethernet or Wi-Fi (anything but cellular).
        case ethernetOrWiFi
        /// Cellular.
        case cellular
    }

    /// Alamofire's mapping: reachable only when `ReachabilityFlags.isActuallyReachable`
    /// (so WWAN that requires a connection is `.notReachable`, unlike Apple's sample), then
    /// `isWWAN` picks `.cellular`.
    public init(flags: ReachabilityFlags) {
        guard flags.isActuallyReachable else { self = .notReachable; return }
        self = .reachable(flags.contains(.isWWAN) ? .cellular : .ethernetOrWiFi)
    }
}

/// FXReachability's `FXReachabilityStatus`.
public enum FXReachabilityStatus: Int, Sendable, Hashable, CaseIterable {
    /// No answer yet (`FXReachabilityStatusUnknown`).
    case unknown = -1
    /// `FXReachabilityStatusNotReachable`.
    case notReachable = 0
    /// `FXReachabilityStatusReachableViaWWAN`.
    case reachableViaWWAN = 1
    /// `FXReachabilityStatusReachableViaWiFi`.
    case reachableViaWiFi = 2

    /// FXReachability's mapping: not reachable without `reachable` or with `connectionRequired`;
    /// WWAN when `isWWAN`; else Wi-Fi.
    public init(flags: ReachabilityFlags) {
        if !flags.contains(.reachable) || flags.contains(.connectionRequired) { self = .notReachable }
        else if flags.contains(.isWWAN) { self = .reachableViaWWAN }
        else { self = .reachableViaWiFi }
    }

    /// FXReachability's optimistic `isReachable`: true unless the status is not reachable, so
    /// also while it is still unknown.
    public var isReachable: Bool { self != .notReachable }
}

/// Ola's `OlaStatus`.
public enum OlaStatus: Int, Sendable, Hashable, CaseIterable {
    /// Not known to be reachable.
    case unknown
    /// Reachable (not over cellular).
    case reachable
    /// Reachable over cellular.
    case cellular

    /// Ola's mapping: `isWWAN` gives `.cellular` (checked first), `reachable` gives `.reachable`,
    /// anything else `.unknown`.
    public init(flags: ReachabilityFlags) {
        if flags.contains(.isWWAN) { self = .cellular }
        else if flags.contains(.reachable) { self = .reachable }
        else { self = .unknown }
    }
}

/// Reachability.swift's `Reachability.Connection`.
public enum ReachabilityConnection: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not reachable (or cellular while cellular is not allowed).
    case unavailable
    /// Reachable over anything but cellular (Ethernet included, as in Reachability.swift).
    case wifi
    /// Reachable over cellular.
    case cellular

    /// Reachability.swift's mapping: unavailable without `reachable`; Wi-Fi when no connection is
    /// required, or when it starts on traffic or demand without intervention; cellular when
    /// `isWWAN` (checked last); cellular becomes unavailable unless `allowsCellularConnection`.
    public init(flags: ReachabilityFlags, allowsCellularConnection: Bool = true) {
        guard flags.contains(.reachable) else { self = .unavailable; return }
        var connection = ReachabilityConnection.unavailable
        if !flags.contains(.connectionRequired) { connection = .wifi }
        if !flags.isDisjoint(with: [.connectionOnTraffic, .connectionOnDemand]) && !flags.contains(.interventionRequired) {
            connection = .wifi
        }
        if flags.contains(.isWWAN) { connection = allowsCellularConnection ? .cellular : .unavailable }
        self = connection
    }

    /// `unavailable`, `wifi` ("WiFi" in Reachability.swift), `cellular`.
    public var description: String {
        switch self {
        case .unavailable: return "No Connection"
        case .wifi: return "WiFi"
        case .cellular: return "Cellular"
        }
    }
}
