/// A network interface as the kernel reports it (rtnetlink `RTM_NEWLINK`), as an immutable value.
public struct Link: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The interface index, unique within its namespace.
    public var index: Int32
    /// The interface name, such as `eth0`.
    public var name: String
    /// The link's alternative names (`IFLA_ALT_IFNAME` in `IFLA_PROP_LIST`; `ip link property
    /// add dev eth0 altname enp0s31f6`, and udev's predictable names since systemd 245), in the
    /// kernel's order; empty when it has none. The kernel finds a link by any of its names
    /// (`ip link show`, `SIOCGIFINDEX`), and no two links share one: see ``isNamed(_:)``. Up to
    /// 127 bytes each, where a name has at most 15; glibc's `if_nametoindex`, and so
    /// `getaddrinfo`'s scopes (`fe80::1%name`), take names of up to 15 bytes only.
    ///
    /// The kernel tells of a change of alternative names only for a link that is up: for one
    /// that is down it sends no message (`netdev_state_change`), and the change shows with
    /// the link's next message, at the latest when it goes up.
    public var alternativeNames: [String]
    /// The link-layer type.
    public var arphrdType: ARPHRDType
    /// The rtnetlink kind (`IFLA_INFO_KIND`: `veth`, `bridge`, `tun`, `wireguard`, `wwan`, ...);
    /// nil for devices without one, such as most physical NICs and the loopback.
    public var kind: String?
    /// The interface flags (`IFF_*`).
    public var flags: InterfaceFlags
    /// The operational state (RFC 2863) that the kernel reports.
    public var operState: OperState
    /// Whether the link has a carrier (`IFLA_CARRIER`, the kernel's `netif_carrier_ok`). The
    /// kernel reports it in every message of every link, so the values the library reads always
    /// have it (a message without it would read as no carrier, as libnl reads it); nil only in a
    /// value made by hand without one.
    public var carrier: Bool?
    /// The maximum transmission unit, in bytes.
    public var mtu: UInt32
    /// The link-layer address; nil when the link has none.
    public var hardwareAddress: HardwareAddress?
    /// The index of the master device (bridge, bond, VRF) this link is enslaved to.
    public var masterIndex: Int32?
    /// The index of the lower link (`IFLA_LINK`): a VLAN's parent, a veth's peer, ...
    /// When ``linkNamespaceID`` is set, the index is in that other namespace.
    public var lowerLinkIndex: Int32?
    /// The namespace id (`IFLA_LINK_NETNSID`) of the namespace that holds the lower link,
    /// when it is another namespace (for example the peer of a veth pair).
    public var linkNamespaceID: Int32?
    /// The interface group (`IFLA_GROUP`, `ip link set ... group`): 0, the default group,
    /// unless one was set. A policy rule's `suppress_ifgroup` names one.
    public var group: UInt32

    /// Creates a link value. The library fills these from the kernel; tests and fixtures may too.
    public init(index: Int32, name: String, arphrdType: ARPHRDType, kind: String? = nil,
                flags: InterfaceFlags, operState: OperState, carrier: Bool? = nil, mtu: UInt32,
                hardwareAddress: HardwareAddress? = nil, masterIndex: Int32? = nil,
                lowerLinkIndex: Int32? = nil, linkNamespaceID: Int32? = nil, group: UInt32 = 0,
                alternativeNames: [String] = []) {
        self.index = index
        self.name = name
        self.alternativeNames = alternativeNames
        self.arphrdType = arphrdType
        self.kind = kind
        self.flags = flags
        self.operState = operState
        self.carrier = carrier
        self.mtu = mtu
        self.hardwareAddress = hardwareAddress
        self.masterIndex = masterIndex
        self.lowerLinkIndex = lowerLinkIndex
        self.linkNamespaceID = linkNamespaceID
        self.group = group
    }

    /// The interface index.
    public var id: Int32 { index }
    /// Whether `name` is this link's name or one of its ``alternativeNames``: what the kernel's
    /// lookups by name (`dev_get_by_name`, behind `SIOCGIFINDEX` and netlink's `IFLA_IFNAME`)
    /// match, so that `fe80::1%enp0s31f6` and `fe80::1%eth0` name the same link.
    public func isNamed(_ name: String) -> Bool { self.name == name || alternativeNames.contains(name) }
    /// Administratively up (`IFF_UP`).
    public var isUp: Bool { flags.contains(.up) }
    /// Up and with a carrier (`IFF_RUNNING`, which the kernel sets from the operational state).
    public var isRunning: Bool { flags.contains(.running) }

    public var description: String {
        "\(index): \(name) \(arphrdType) \(kind ?? "-") \(flags) \(operState) mtu \(mtu)"
    }

    /// The longest name a link can have, in bytes (`IFNAMSIZ` less its NUL).
    package static let longestName = 15
    /// The longest alternative name a link can have, in bytes (`ALTIFNAMSIZ` less its NUL).
    package static let longestAlternativeName = 127

    /// The link that `name` names among `links`: the link of that name, else one that has it
    /// among its ``alternativeNames``, one that is up first, then the lowest index. The kernel
    /// gives each name to one link, but it tells of no change of a down link's alternative
    /// names: one that such a link lost, and another link took, is held by both here, and the
    /// link whose message told of it is up.
    package static func named(_ name: String, in links: some Collection<Link>) -> Link? {
        if let link = links.first(where: { $0.name == name }) { return link }
        return links.filter { $0.alternativeNames.contains(name) }
            .min { ($0.isUp ? 0 : 1, $0.index) < ($1.isUp ? 0 : 1, $1.index) }
    }

    /// The flags that say what state a link is in rather than what it is: up, running, lower
    /// layer up, dormant.
    package static let stateFlags: InterfaceFlags = [.up, .running, .lowerUp, .dormant]

    /// Whether this link and `other` differ, if at all, only in their state: the
    /// ``stateFlags``, the operational state and the carrier. A link going up or down, or
    /// losing its carrier, is the same link; a rename, a new master or a new MTU is not.
    package func differsOnlyInState(from other: Link) -> Bool {
        var this = self
        this.flags = this.flags.subtracting(Self.stateFlags).union(other.flags.intersection(Self.stateFlags))
        this.operState = other.operState
        this.carrier = other.carrier
        return this == other
    }
}

/// The flags of a network interface.
public struct InterfaceFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Administratively up. The corresponding C constant is `IFF_UP`.
    public static let up = InterfaceFlags(rawValue: 0x1)
    /// Has a valid broadcast address. The corresponding C constant is `IFF_BROADCAST`.
    public static let broadcast = InterfaceFlags(rawValue: 0x2)
    /// Debugging on. The corresponding C constant is `IFF_DEBUG`.
    public static let debug = InterfaceFlags(rawValue: 0x4)
    /// A loopback device. The corresponding C constant is `IFF_LOOPBACK`.
    public static let loopback = InterfaceFlags(rawValue: 0x8)
    /// A point-to-point link. The corresponding C constant is `IFF_POINTOPOINT`.
    public static let pointToPoint = InterfaceFlags(rawValue: 0x10)
    /// Avoid trailers. The corresponding C constant is `IFF_NOTRAILERS`.
    public static let noTrailers = InterfaceFlags(rawValue: 0x20)
    /// Operationally up (RFC 2863 `up`). The corresponding C constant is `IFF_RUNNING`.
    public static let running = InterfaceFlags(rawValue: 0x40)
    /// No ARP. The corresponding C constant is `IFF_NOARP`.
    public static let noARP = InterfaceFlags(rawValue: 0x80)
    /// Receives all packets. The corresponding C constant is `IFF_PROMISC`.
    public static let promiscuous = InterfaceFlags(rawValue: 0x100)
    /// Receives all multicast packets. The corresponding C constant is `IFF_ALLMULTI`.
    public static let allMulticast = InterfaceFlags(rawValue: 0x200)
    /// Master of a load balancer. The corresponding C constant is `IFF_MASTER`.
    public static let master = InterfaceFlags(rawValue: 0x400)
    /// Slave of a load balancer. The corresponding C constant is `IFF_SLAVE`.
    public static let slave = InterfaceFlags(rawValue: 0x800)
    /// Supports multicast. The corresponding C constant is `IFF_MULTICAST`.
    public static let multicast = InterfaceFlags(rawValue: 0x1000)
    /// Can set media type. The corresponding C constant is `IFF_PORTSEL`.
    public static let portSelect = InterfaceFlags(rawValue: 0x2000)
    /// Auto media select active. The corresponding C constant is `IFF_AUTOMEDIA`.
    public static let autoMedia = InterfaceFlags(rawValue: 0x4000)
    /// Addresses are lost when the interface goes down. The corresponding C constant is `IFF_DYNAMIC`.
    public static let dynamic = InterfaceFlags(rawValue: 0x8000)
    /// The driver signals layer 1 up (a carrier). The corresponding C constant is `IFF_LOWER_UP`.
    public static let lowerUp = InterfaceFlags(rawValue: 0x10000)
    /// The driver signals dormant. The corresponding C constant is `IFF_DORMANT`.
    public static let dormant = InterfaceFlags(rawValue: 0x20000)
    /// Echoes sent packets. The corresponding C constant is `IFF_ECHO`.
    public static let echo = InterfaceFlags(rawValue: 0x40000)

    static let names: [(InterfaceFlags, String)] = [
        (.up, "up"), (.broadcast, "broadcast"), (.debug, "debug"), (.loopback, "loopback"),
        (.pointToPoint, "pointToPoint"), (.noTrailers, "noTrailers"), (.running, "running"),
        (.noARP, "noARP"), (.promiscuous, "promiscuous"), (.allMulticast, "allMulticast"),
        (.master, "master"), (.slave, "slave"), (.multicast, "multicast"),
        (.portSelect, "portSelect"), (.autoMedia, "autoMedia"), (.dynamic, "dynamic"),
        (.lowerUp, "lowerUp"), (.dormant, "dormant"), (.echo, "echo"),
    ]

    /// The names of the flags that are set, in bit order, such as `["up", "running"]`.
    public var names: [String] { describeOptions(self, Self.names) }
    /// The set flags as `[.up, .running]`.
    public var description: String { "[" + names.map { "." + $0 }.joined(separator: ", ") + "]" }
}

/// A link-layer (hardware) type, from `<linux/if_arp.h>`.
public struct ARPHRDType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Ethernet. The corresponding C constant is `ARPHRD_ETHER`.
    public static let ether = ARPHRDType(rawValue: 1)
    /// InfiniBand. The corresponding C constant is `ARPHRD_INFINIBAND`.
    public static let infiniband = ARPHRDType(rawValue: 32)
    /// Controller Area Network. The corresponding C constant is `ARPHRD_CAN`.
    public static let can = ARPHRDType(rawValue: 280)
    /// PPP. The corresponding C constant is `ARPHRD_PPP`.
    public static let ppp = ARPHRDType(rawValue: 512)
    /// Raw IP (modems in raw-IP mode). The corresponding C constant is `ARPHRD_RAWIP`.
    public static let rawIP = ARPHRDType(rawValue: 519)
    /// IP-in-IP tunnel. The corresponding C constant is `ARPHRD_TUNNEL`.
    public static let ipipTunnel = ARPHRDType(rawValue: 768)
    /// IPv6-in-IPv6 tunnel. The corresponding C constant is `ARPHRD_TUNNEL6`.
    public static let ipv6Tunnel = ARPHRDType(rawValue: 769)
    /// Loopback. The corresponding C constant is `ARPHRD_LOOPBACK`.
    public static let loopback = ARPHRDType(rawValue: 772)
    /// IPv6-in-IPv4 (sit). The corresponding C constant is `ARPHRD_SIT`.
    public static let sit = ARPHRDType(rawValue: 776)
    /// GRE over IP. The corresponding C constant is `ARPHRD_IPGRE`.
    public static let ipGRE = ARPHRDType(rawValue: 778)
    /// Raw 802.11 frames. The corresponding C constant is `ARPHRD_IEEE80211`.
    public static let ieee80211 = ARPHRDType(rawValue: 801)
    /// 802.11 with a Prism header (old monitor mode). The corresponding C constant is
    /// `ARPHRD_IEEE80211_PRISM`.
    public static let ieee80211Prism = ARPHRDType(rawValue: 802)
    /// 802.11 with a radiotap header (monitor mode). The corresponding C constant is
    /// `ARPHRD_IEEE80211_RADIOTAP`.
    public static let ieee80211Radiotap = ARPHRDType(rawValue: 803)
    /// GRE over IPv6. The corresponding C constant is `ARPHRD_IP6GRE`.
    public static let ip6GRE = ARPHRDType(rawValue: 823)
    /// No link-layer header (tun, WireGuard, raw-IP modems). The corresponding C constant is
    /// `ARPHRD_NONE`.
    public static let none = ARPHRDType(rawValue: 65534)
    /// Void type, nothing is known. The corresponding C constant is `ARPHRD_VOID`.
    public static let void = ARPHRDType(rawValue: 0xFFFF)

    static let names: [UInt16: String] = [
        1: "ether", 32: "infiniband", 280: "can", 512: "ppp", 519: "rawip", 768: "ipip",
        769: "tunnel6", 772: "loopback", 776: "sit", 778: "gre", 801: "ieee802.11", 802: "ieee802.11/prism", 803: "ieee802.11/radiotap",
        823: "ip6gre", 65534: "none", 0xFFFF: "void",
    ]

    /// A short name as `ip link` prints it (`ether`, `loopback`, `none`), or the number.
    public var description: String { Self.names[rawValue] ?? String(rawValue) }
}

/// The operational state of a link (RFC 2863, `IFLA_OPERSTATE`).
public struct OperState: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Unknown (many virtual devices). The corresponding C constant is `IF_OPER_UNKNOWN`.
    public static let unknown = OperState(rawValue: 0)
    /// Not present. The corresponding C constant is `IF_OPER_NOTPRESENT`.
    public static let notPresent = OperState(rawValue: 1)
    /// Down. The corresponding C constant is `IF_OPER_DOWN`.
    public static let down = OperState(rawValue: 2)
    /// Down because a lower layer is down. The corresponding C constant is `IF_OPER_LOWERLAYERDOWN`.
    public static let lowerLayerDown = OperState(rawValue: 3)
    /// In test mode. The corresponding C constant is `IF_OPER_TESTING`.
    public static let testing = OperState(rawValue: 4)
    /// Waiting for an external event (802.1X, a Wi-Fi handshake). The corresponding C constant is
    /// `IF_OPER_DORMANT`.
    public static let dormant = OperState(rawValue: 5)
    /// Up. The corresponding C constant is `IF_OPER_UP`.
    public static let up = OperState(rawValue: 6)

    static let names = ["unknown", "notPresent", "down", "lowerLayerDown", "testing", "dormant", "up"]

    /// The Swift name (`up`, `lowerLayerDown`, ...), or the number when unknown to this library.
    public var description: String {
        Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : String(rawValue)
    }
}

/// The names of the options in `set`, in table order.
func describeOptions<T: OptionSet>(_ set: T, _ table: [(T, String)]) -> [String]
where T.RawValue: FixedWidthInteger, T.Element == T {
    var names: [String] = []
    // One allocation: appended one by one, a link's five flags grew the array three times.
    names.reserveCapacity(set.rawValue.nonzeroBitCount)
    var rest = set.rawValue
    for (flag, name) in table where set.contains(flag) {
        names.append(name)
        rest &= ~flag.rawValue
    }
    if rest != 0 { names.append("0x" + String(rest, radix: 16)) }
    return names
}
