/// An entry of the kernel's neighbour table (ARP for IPv4, NDP for IPv6; `ip neigh`), as
/// ``SubscriptionOptions/followsNeighbors`` asks a subscription to follow them: the building
/// block of a monitor of a gateway's reachability on its link.
public struct Neighbor: Sendable, Hashable, CustomStringConvertible {
    /// The link the neighbour is on.
    public var linkIndex: Int32
    /// The neighbour's IP address.
    public var address: IPAddress
    /// Its link-layer address; nil while unresolved (incomplete or failed).
    public var linkLayerAddress: HardwareAddress?
    /// The state of the entry (NUD, neighbour unreachability detection).
    public var state: NeighborState
    /// Whether the neighbour said it is a router (IPv6 `NTF_ROUTER`).
    public var isRouter: Bool

    /// Creates a neighbour value. The library fills these from the kernel.
    public init(linkIndex: Int32, address: IPAddress, linkLayerAddress: HardwareAddress? = nil,
                state: NeighborState, isRouter: Bool = false) {
        self.linkIndex = linkIndex
        self.address = address
        self.linkLayerAddress = linkLayerAddress
        self.state = state
        self.isRouter = isRouter
    }

    /// What identifies an entry: its link and address.
    public var key: Key { Key(linkIndex: linkIndex, address: address) }

    /// The identity of a neighbour entry.
    public struct Key: Sendable, Hashable {
        /// The link.
        public var linkIndex: Int32
        /// The neighbour's address.
        public var address: IPAddress

        /// Creates the key of the entry for `address` on link `linkIndex`.
        public init(linkIndex: Int32, address: IPAddress) {
            self.linkIndex = linkIndex
            self.address = address
        }
    }

    public var description: String {
        "\(address) link \(linkIndex) \(linkLayerAddress.map { "lladdr \($0)" } ?? "-") \(state)\(isRouter ? " router" : "")"
    }
}

/// The state of a neighbour entry (`NUD_*`).
public struct NeighborState: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Resolution in progress. The corresponding C constant is `NUD_INCOMPLETE`.
    public static let incomplete = NeighborState(rawValue: 0x01)
    /// Confirmed reachable recently. The corresponding C constant is `NUD_REACHABLE`.
    public static let reachable = NeighborState(rawValue: 0x02)
    /// Known, not confirmed recently. The corresponding C constant is `NUD_STALE`.
    public static let stale = NeighborState(rawValue: 0x04)
    /// Waiting before a probe. The corresponding C constant is `NUD_DELAY`.
    public static let delay = NeighborState(rawValue: 0x08)
    /// Being probed. The corresponding C constant is `NUD_PROBE`.
    public static let probe = NeighborState(rawValue: 0x10)
    /// Resolution failed: the neighbour did not answer. The corresponding C constant is `NUD_FAILED`.
    public static let failed = NeighborState(rawValue: 0x20)
    /// No resolution needed on this link. The corresponding C constant is `NUD_NOARP`.
    public static let noARP = NeighborState(rawValue: 0x40)
    /// Set by hand, never expires. The corresponding C constant is `NUD_PERMANENT`.
    public static let permanent = NeighborState(rawValue: 0x80)

    private static let names: [(NeighborState, String)] = [
        (.incomplete, "INCOMPLETE"), (.reachable, "REACHABLE"), (.stale, "STALE"), (.delay, "DELAY"),
        (.probe, "PROBE"), (.failed, "FAILED"), (.noARP, "NOARP"), (.permanent, "PERMANENT"),
    ]

    public var description: String {
        let named = Self.names.filter { contains($0.0) }.map(\.1)
        return named.isEmpty ? "NONE" : named.joined(separator: ",")
    }
}
