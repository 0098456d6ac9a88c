/// How far the network reaches past the routes, as an HTTP probe finds it: NetworkManager's and
/// GLib's connectivity states.
///
/// Ordered as GLib orders `GNetworkConnectivity`: `none < limited < portal < full`. A portal
/// answers HTTP (with its own page); a limited network does not answer at all.
public enum Connectivity: String, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// No usable route: the answer is not reachable, and nothing was probed.
    case none
    /// A route, but the probe failed: refused, timed out, no TLS, or the server closed.
    case limited
    /// An answer other than the expected one: a redirect (a captive portal's login page) or
    /// other content.
    case portal
    /// The expected answer: the network reaches the probe server.
    case full

    public static func < (lhs: Connectivity, rhs: Connectivity) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// `none`, `limited`, `portal` or `full`.
    public var description: String { rawValue }
}

/// What one connectivity probe found: the state, and what explains it.
public struct ConnectivityReport: Sendable, Hashable, CustomStringConvertible {
    /// The state.
    public var connectivity: Connectivity
    /// Where a portal redirected to (the `Location` of its answer), when it did.
    public var portalLocation: String?
    /// Why the state is not `full`: such as `HTTP 200 instead of 204` or
    /// `Failed to connect to 10.0.0.1 port 80: Connection refused`; nil for `full`.
    public var reason: String?
    /// The link the probe was bound to; nil when nothing was probed or no link was named.
    public var interfaceName: String?
    /// The HTTP status of the probe's answer, when it had one.
    public var httpStatus: Int?

    /// A report as given.
    public init(connectivity: Connectivity, portalLocation: String? = nil, reason: String? = nil,
                interfaceName: String? = nil, httpStatus: Int? = nil) {
        self.connectivity = connectivity
        self.portalLocation = portalLocation
        self.reason = reason
        self.interfaceName = interfaceName
        self.httpStatus = httpStatus
    }

    /// The report for an answer that is not reachable: `none`, nothing probed.
    public static let noRoute = ConnectivityReport(connectivity: .none, reason: "no usable route")

    /// Such as `portal (HTTP 302, location http://login.example/)`.
    public var description: String {
        var details: [String] = []
        if let reason { details.append(reason) }
        if let portalLocation { details.append("location \(portalLocation)") }
        return details.isEmpty ? connectivity.rawValue : "\(connectivity) (\(details.joined(separator: ", ")))"
    }
}
