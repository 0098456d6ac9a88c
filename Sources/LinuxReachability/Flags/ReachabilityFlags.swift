/// Apple's `SCNetworkReachabilityFlags`, with the same Swift names and bit values, answered from
/// the Linux kernel (see <doc:ComingFromSCNetworkReachability>).
public struct ReachabilityFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt32
    /// Flags from their raw bits (the values of `kSCNetworkReachabilityFlags*`).
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Reachable through a transient connection: PPP, or a VPN tunnel (TUN/TAP, WireGuard, IP
    /// tunnels).
    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    /// Reachable with the current configuration: the kernel routes the target (a unicast or
    /// local route) through a link that is up and has carrier.
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    /// Reachable once a connection is established: the route's link exists and is configured
    /// but waits (operstate `dormant`, such as 802.1X or a Wi-Fi handshake).
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    /// Traffic to the target starts the connection. Linux has no dial-on-traffic links; never set.
    public static let connectionOnTraffic = ReachabilityFlags(rawValue: 1 << 3)
    /// The user must act (a password, a token) before the connection comes up: set with
    /// ``connectionRequired`` for a dormant link.
    public static let interventionRequired = ReachabilityFlags(rawValue: 1 << 4)
    /// The socket APIs set the connection up on demand. Linux has no VPN on demand; never set.
    public static let connectionOnDemand = ReachabilityFlags(rawValue: 1 << 5)
    /// The target address belongs to this host (the route is of type local).
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    /// The target is on-link or local: the route has no gateway.
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    /// The route goes over a cellular (WWAN) link.
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)

    /// Apple's old name for ``connectionOnTraffic``.
    public static let connectionAutomatic = connectionOnTraffic

    static let names: [(ReachabilityFlags, String)] = [
        (.transientConnection, "transientConnection"), (.reachable, "reachable"),
        (.connectionRequired, "connectionRequired"), (.connectionOnTraffic, "connectionOnTraffic"),
        (.interventionRequired, "interventionRequired"), (.connectionOnDemand, "connectionOnDemand"),
        (.isLocalAddress, "isLocalAddress"), (.isDirect, "isDirect"), (.isWWAN, "isWWAN"),
    ]

    /// The Swift names of the flags that are set, in bit order: `["reachable", "isDirect"]`.
    package var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

    /// The set flags as `[.reachable, .isDirect]`.
    public var description: String { "[" + names.map { "." + $0 }.joined(separator: ", ") + "]" }

    /// The compact form Apple's Reachability sample logs: `W` and `R`, a space, then `t c C i D
    /// l d` (transient, connection required, on traffic, intervention, on demand, local,
    /// direct), `-` for each flag not set. For example `-R -------` or `WR t-----d`.
    public var compactDescription: String {
        // Ten ASCII bytes written in place: a small string, stored inline, nothing allocated.
        String(unsafeUninitializedCapacity: 10) { out in
            func put(_ position: Int, _ flag: ReachabilityFlags, _ letter: Unicode.Scalar) {
                out[position] = UInt8(ascii: contains(flag) ? letter : "-")
            }
            put(0, .isWWAN, "W")
            put(1, .reachable, "R")
            out[2] = UInt8(ascii: " ")
            put(3, .transientConnection, "t")
            put(4, .connectionRequired, "c")
            put(5, .connectionOnTraffic, "C")
            put(6, .interventionRequired, "i")
            put(7, .connectionOnDemand, "D")
            put(8, .isLocalAddress, "l")
            put(9, .isDirect, "d")
            return 10
        }
    }
}
