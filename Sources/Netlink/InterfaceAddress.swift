/// An address assigned to an interface (rtnetlink `RTM_NEWADDR`), as an immutable value.
public struct InterfaceAddress: Sendable, Hashable, CustomStringConvertible {
    /// The index of the link the address is on.
    public var linkIndex: Int32
    /// The local address (`IFA_LOCAL`, or `IFA_ADDRESS` when there is no local one).
    public var address: IPAddress
    /// The prefix length.
    public var prefixLength: UInt8
    /// The peer of a point-to-point address, when it differs from ``address``.
    public var peer: IPAddress?
    /// The IPv4 broadcast address, when set.
    public var broadcast: IPAddress?
    /// The scope of the address.
    public var scope: Scope
    /// The address flags (`IFA_F_*`).
    public var flags: AddressFlags
    /// How long the address stays valid.
    public var validLifetime: Lifetime
    /// How long the address stays preferred for new connections.
    public var preferredLifetime: Lifetime
    /// The IPv4 label (`eth0:1`), when set.
    public var label: String?

    /// Creates an address value. The library fills these from the kernel.
    public init(linkIndex: Int32, address: IPAddress, prefixLength: UInt8, peer: IPAddress? = nil,
                broadcast: IPAddress? = nil, scope: Scope = .universe, flags: AddressFlags = [],
                validLifetime: Lifetime = .forever, preferredLifetime: Lifetime = .forever,
                label: String? = nil) {
        self.linkIndex = linkIndex
        self.address = address
        self.prefixLength = prefixLength
        self.peer = peer
        self.broadcast = broadcast
        self.scope = scope
        self.flags = flags
        self.validLifetime = validLifetime
        self.preferredLifetime = preferredLifetime
        self.label = label
    }

    /// The family of the address.
    public var family: AddressFamily { address.family }

    /// Whether this is a global IPv6 address that duplicate address detection let through (not
    /// tentative, not failed): one the kernel may choose as a source.
    package var isSettledGlobalIPv6: Bool {
        family == .ipv6 && scope == .universe && flags.isDisjoint(with: [.tentative, .dadFailed])
    }

    /// The address and prefix length, as `ip addr` prints them: `10.0.0.2/24`.
    public var cidr: String { "\(address)/\(prefixLength)" }

    /// What identifies this address on its link (the kernel's key: link, address, prefix, peer).
    public var key: Key { Key(linkIndex: linkIndex, address: address, prefixLength: prefixLength, peer: peer) }

    /// The identity of an interface address.
    public struct Key: Sendable, Hashable {
        /// The link index.
        public var linkIndex: Int32
        /// The local address.
        public var address: IPAddress
        /// The prefix length.
        public var prefixLength: UInt8
        /// The peer address of a point-to-point address.
        public var peer: IPAddress?
    }

    public var description: String {
        "\(cidr) link \(linkIndex) scope \(scope) \(flags)"
    }
}

/// The lifetime of an address.
public enum Lifetime: Sendable, Hashable, CustomStringConvertible {
    /// The address never expires (the kernel's `INFINITY_LIFE_TIME`, `0xFFFFFFFF`).
    case forever
    /// Seconds left, as of the moment the kernel reported it.
    case seconds(UInt32)

    /// Creates a lifetime from the kernel's value (`0xFFFFFFFF` means forever).
    public init(kernelValue: UInt32) {
        self = kernelValue == UInt32.max ? .forever : .seconds(kernelValue)
    }

    public var description: String {
        switch self {
        case .forever: return "forever"
        case .seconds(let s): return "\(s)s"
        }
    }
}

/// The scope of an address or a route (`RT_SCOPE_*`).
public struct Scope: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Global. The corresponding C constant is `RT_SCOPE_UNIVERSE`.
    public static let universe = Scope(rawValue: 0)
    /// Site-local. The corresponding C constant is `RT_SCOPE_SITE`.
    public static let site = Scope(rawValue: 200)
    /// Valid on this link only. The corresponding C constant is `RT_SCOPE_LINK`.
    public static let link = Scope(rawValue: 253)
    /// Valid on this host only. The corresponding C constant is `RT_SCOPE_HOST`.
    public static let host = Scope(rawValue: 254)
    /// Nowhere. The corresponding C constant is `RT_SCOPE_NOWHERE`.
    public static let nowhere = Scope(rawValue: 255)

    /// `global`, `site`, `link`, `host`, `nowhere` (as `ip` prints them), or the number.
    public var description: String {
        switch rawValue {
        case 0: return "global"
        case 200: return "site"
        case 253: return "link"
        case 254: return "host"
        case 255: return "nowhere"
        default: return String(rawValue)
        }
    }
}

/// The flags of an interface address (`IFA_F_*`).
public struct AddressFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A secondary (alias) IPv4 address; IPv6 temporary. The corresponding C constant is
    /// `IFA_F_SECONDARY`.
    public static let secondary = AddressFlags(rawValue: 0x01)
    /// No duplicate address detection. The corresponding C constant is `IFA_F_NODAD`.
    public static let noDAD = AddressFlags(rawValue: 0x02)
    /// Optimistic DAD. The corresponding C constant is `IFA_F_OPTIMISTIC`.
    public static let optimistic = AddressFlags(rawValue: 0x04)
    /// Duplicate address detection failed. The corresponding C constant is `IFA_F_DADFAILED`.
    public static let dadFailed = AddressFlags(rawValue: 0x08)
    /// Mobile IPv6 home address. The corresponding C constant is `IFA_F_HOMEADDRESS`.
    public static let homeAddress = AddressFlags(rawValue: 0x10)
    /// Preferred lifetime over. The corresponding C constant is `IFA_F_DEPRECATED`.
    public static let deprecated = AddressFlags(rawValue: 0x20)
    /// Duplicate address detection still running. The corresponding C constant is `IFA_F_TENTATIVE`.
    public static let tentative = AddressFlags(rawValue: 0x40)
    /// Configured, not learned. The corresponding C constant is `IFA_F_PERMANENT`.
    public static let permanent = AddressFlags(rawValue: 0x80)
    /// Manages temporary addresses. The corresponding C constant is `IFA_F_MANAGETEMPADDR`.
    public static let manageTemporaryAddresses = AddressFlags(rawValue: 0x100)
    /// No prefix route. The corresponding C constant is `IFA_F_NOPREFIXROUTE`.
    public static let noPrefixRoute = AddressFlags(rawValue: 0x200)
    /// Joins multicast automatically. The corresponding C constant is `IFA_F_MCAUTOJOIN`.
    public static let multicastAutoJoin = AddressFlags(rawValue: 0x400)
    /// Stable privacy address. The corresponding C constant is `IFA_F_STABLE_PRIVACY`.
    public static let stablePrivacy = AddressFlags(rawValue: 0x800)

    static let names: [(AddressFlags, String)] = [
        (.secondary, "secondary"), (.noDAD, "noDAD"), (.optimistic, "optimistic"),
        (.dadFailed, "dadFailed"), (.homeAddress, "homeAddress"), (.deprecated, "deprecated"),
        (.tentative, "tentative"), (.permanent, "permanent"),
        (.manageTemporaryAddresses, "manageTemporaryAddresses"), (.noPrefixRoute, "noPrefixRoute"),
        (.multicastAutoJoin, "multicastAutoJoin"), (.stablePrivacy, "stablePrivacy"),
    ]

    /// The names of the flags that are set, such as `["permanent"]`.
    public var names: [String] { describeOptions(self, Self.names) }
    /// The set flags as `[.permanent]`.
    public var description: String { "[" + names.map { "." + $0 }.joined(separator: ", ") + "]" }
}
