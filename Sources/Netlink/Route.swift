/// A route of the kernel's routing tables (rtnetlink `RTM_NEWROUTE`), as an immutable value.
public struct Route: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public var family: AddressFamily
    /// The routing table the route lives in.
    public var table: RouteTable
    /// The destination prefix; a zero-length prefix is a default route.
    public var destination: IPNetwork
    /// The source prefix (IPv6 source-specific routes); nil when the route has none.
    public var sourcePrefix: IPNetwork?
    /// The route type.
    public var type: RouteType
    /// Who installed the route.
    public var routeProtocol: RouteProtocol
    /// The scope of the route.
    public var scope: Scope
    /// The metric (`RTA_PRIORITY`); lower wins.
    public var metric: UInt32
    /// The preference of an IPv6 route's router (`RTA_PREF`, RFC 4191): what a router
    /// advertisement says, or `ip -6 route add ... pref high`. Among IPv6 routes with the same
    /// metric the kernel takes the one with the higher preference. The kernel reports it for
    /// every IPv6 route (medium unless set); nil for IPv4 routes. A subscription sees a change
    /// of preference when the kernel sends a message for it (`ip -6 route replace`, and a
    /// default router's new advertisement on recent kernels); one that the kernel makes in
    /// place without a message (as for the routes of an advertisement's Route Information
    /// Option) stays unseen until that route changes again or the state is read anew.
    public var preference: RoutePreference?
    /// The type of service (IPv4) or traffic class the route matches.
    public var tos: UInt8
    /// The preferred source address (`RTA_PREFSRC`).
    public var preferredSource: IPAddress?
    /// The route's flags, together with the flags of its next hop when it has only one.
    public var flags: RouteFlags
    /// The next hops. One for an ordinary route, several for a multipath route, none for
    /// blackhole, unreachable and prohibit routes. For a route that names a next-hop object
    /// (``nexthopID``), the object's: the kernel lists them in the route itself only in its
    /// compatibility mode, and the library fills them in from the object otherwise.
    public var nexthops: [Nexthop]
    /// The next-hop object the route uses (`RTA_NH_ID`, `ip route add ... nhid 7`), or nil for a
    /// route with next hops of its own.
    ///
    /// A next-hop object (`ip nexthop`, Linux 5.3+) is a gateway and link, or a group of such
    /// objects with weights, that many routes share. With `net.ipv4.nexthop_compat_mode=0`
    /// (for IPv4 and IPv6 alike) the kernel's route messages carry only this id; the library
    /// reads the objects (`RTM_GETNEXTHOP`) and fills ``nexthops`` from them, in dumps,
    /// lookups of FIB entries and subscriptions, as the compatibility mode lists them: a group
    /// of one as a single next hop of weight 1. Two differences remain: the compatibility mode
    /// writes a weight in one byte (300 reads 44), where the object gives it whole; and a route
    /// whose object is a blackhole, which the kernel reports as a ``RouteType/blackhole`` route
    /// in both modes, has a next hop through the loopback link in the compatibility mode and
    /// none here.
    public var nexthopID: UInt32?
    /// The IPv4 route's place, from 0, in the kernel's order among its ties.
    ///
    /// Its ties are the routes of its table with the same destination, type of service and
    /// metric (its key's prefix part): `ip route prepend` puts a route first, `ip route append`
    /// last. The kernel's lookup takes the first of them whose next hops are not all dead
    /// (unless the neighbour entry of the first one's router has failed: see the README). Set
    /// for the routes that a subscription keeps and that ``NetlinkConnection/defaultRoutes()``
    /// reads; 0 in other routes.
    public var tieOrder = 0

    /// Creates a route value. The library fills these from the kernel.
    public init(family: AddressFamily, table: RouteTable = .main, destination: IPNetwork,
                sourcePrefix: IPNetwork? = nil, type: RouteType = .unicast,
                routeProtocol: RouteProtocol = .boot, scope: Scope = .universe, metric: UInt32 = 0,
                preference: RoutePreference? = nil, tos: UInt8 = 0, preferredSource: IPAddress? = nil, flags: RouteFlags = [],
                nexthops: [Nexthop] = [], nexthopID: UInt32? = nil) {
        self.family = family
        self.table = table
        self.destination = destination
        self.sourcePrefix = sourcePrefix
        self.type = type
        self.routeProtocol = routeProtocol
        self.scope = scope
        self.metric = metric
        self.preference = preference
        self.tos = tos
        self.preferredSource = preferredSource
        self.flags = flags
        self.nexthops = nexthops
        self.nexthopID = nexthopID
    }

    /// The gateway of the first next hop; nil for an on-link route.
    public var gateway: IPAddress? { nexthops.first?.gateway }
    /// The output link of the first next hop.
    public var outputLinkIndex: Int32? { nexthops.first?.linkIndex }
    /// True for a zero-length destination.
    public var isDefault: Bool { destination.isDefault }
    /// True for a default route and for a route to either half of the address space.
    ///
    /// The halves (`0.0.0.0/1`, `128.0.0.0/1`, `::/1`, `8000::/1`) are what VPNs add to take
    /// the internet without replacing the default route (OpenVPN's `redirect-gateway def1`, a
    /// WireGuard peer whose allowed IPs are split in two). These are the routes a subscription
    /// keeps.
    public var isDefaultOrHalf: Bool { destination.prefixLength <= 1 }
    /// True when any next hop goes out through `linkIndex`.
    public func uses(linkIndex: Int32) -> Bool { nexthops.contains { $0.linkIndex == linkIndex } }

    /// What identifies a route in the kernel. The prefix part (family, table, destination,
    /// source, TOS, metric) is what `ip route replace` matches; the first next hop is part of the
    /// key too, because `ip route append` keeps several routes with the same prefix part apart.
    /// For a route that names a next-hop object, the object's id stands for the next hop: the
    /// object's gateway and link can change under the same route. An IPv4 route's type,
    /// protocol, scope, preferred source and whole list of next hops (with their `onlink` and
    /// `pervasive` flags, not the ones the kernel sets as links come and go) are part of it as
    /// well: `ip route append` keeps two IPv4 routes apart that differ only in those (the
    /// kernel's `fib_info` differs), where it refuses an IPv6 one (`EEXIST`) or joins it to a
    /// multipath route. Two IPv4 routes that differ only in what ``Route`` does not carry (their
    /// metrics such as `mtu`, their realms) share a key.
    public var key: Key {
        let ipv4 = family == .ipv4
        return Key(family: family, table: table, destination: destination, sourcePrefix: sourcePrefix,
                   tos: tos, metric: metric, gateway: nexthopID == nil ? nexthops.first?.gateway : nil,
                   outputLinkIndex: nexthopID == nil ? nexthops.first?.linkIndex : nil, nexthopID: nexthopID,
                   type: ipv4 ? type : nil, routeProtocol: ipv4 ? routeProtocol : nil, scope: ipv4 ? scope : nil,
                   preferredSource: ipv4 ? preferredSource : nil, nexthops: ipv4 ? keyNexthops : nil)
    }

    /// The next hops as an IPv4 route's key holds them (see ``key``): nil for the usual single
    /// hop without `onlink` or `pervasive`, which the first hop's gateway and link tell.
    private var keyNexthops: [Nexthop]? {
        guard nexthopID == nil else { return nil }
        let configured: RouteFlags = [.onlink, .pervasive]
        // A single hop's flags are the route's.
        let single = nexthops.count <= 1
        if single, flags.union(nexthops.first?.flags ?? []).isDisjoint(with: configured) { return nil }
        return nexthops.map { hop in
            var hop = hop
            hop.flags = hop.flags.union(single ? flags : []).intersection(configured)
            return hop
        }
    }

    /// The identity of a route: its prefix part and its first next hop (and an IPv4 route's
    /// type, protocol, scope and preferred source).
    public struct Key: Sendable, Hashable {
        /// The address family.
        public var family: AddressFamily
        /// The table.
        public var table: RouteTable
        /// The destination prefix.
        public var destination: IPNetwork
        /// The source prefix.
        public var sourcePrefix: IPNetwork?
        /// The type of service.
        public var tos: UInt8
        /// The metric.
        public var metric: UInt32
        /// The first next hop's gateway.
        public var gateway: IPAddress?
        /// The first next hop's output link.
        public var outputLinkIndex: Int32?
        /// The next-hop object the route uses; then ``gateway`` and ``outputLinkIndex`` are nil.
        public var nexthopID: UInt32? = nil
        /// An IPv4 route's type; nil for IPv6.
        public var type: RouteType? = nil
        /// An IPv4 route's protocol; nil for IPv6.
        public var routeProtocol: RouteProtocol? = nil
        /// An IPv4 route's scope; nil for IPv6.
        public var scope: Scope? = nil
        /// An IPv4 route's preferred source; nil for IPv6 and when it has none.
        public var preferredSource: IPAddress? = nil
        /// An IPv4 route's next hops with their `onlink` and `pervasive` flags, when it has
        /// several or such a flag; nil otherwise (the first hop's gateway and link then tell it).
        public var nexthops: [Nexthop]? = nil

        /// The key without the next hop and the route's other attributes: what `ip route
        /// replace` matches.
        package var prefixPart: Key {
            Key(family: family, table: table, destination: destination, sourcePrefix: sourcePrefix,
                tos: tos, metric: metric, gateway: nil, outputLinkIndex: nil, nexthopID: nil)
        }
    }

    public var description: String { description { _ in nil } }

    /// The route as ``description`` gives it, its output link named by `linkName` where it
    /// knows the index (`dev eth0` rather than `dev #2`).
    func description(linkName: (Int32) -> String?) -> String {
        var text = type == .unicast ? "" : "\(type) "
        text += destination.isDefault ? "default" : destination.description
        if let nexthopID { text += " nhid \(nexthopID)" }
        if let gateway { text += " via \(gateway)" }
        if let index = outputLinkIndex { text += " dev " + (linkName(index) ?? "#\(index)") }
        text += " table \(table) proto \(routeProtocol) scope \(scope)"
        if metric != 0 { text += " metric \(metric)" }
        if let preference, preference != .medium { text += " pref \(preference)" }
        if let preferredSource { text += " src \(preferredSource)" }
        if !flags.isEmpty { text += " \(flags)" }
        return text
    }
}

/// One next hop of a route.
public struct Nexthop: Sendable, Hashable {
    /// The gateway; nil for an on-link next hop.
    public var gateway: IPAddress?
    /// The output link.
    public var linkIndex: Int32?
    /// The weight in a multipath route, as configured and as `ip route` prints it (1 for
    /// ordinary routes).
    public var weight: UInt16
    /// The next hop's own flags (`RTNH_F_*`).
    public var flags: RouteFlags

    /// Creates a next hop.
    public init(gateway: IPAddress? = nil, linkIndex: Int32?, weight: UInt16 = 1, flags: RouteFlags = []) {
        self.gateway = gateway
        self.linkIndex = linkIndex
        self.weight = weight
        self.flags = flags
    }
}

/// A routing table id.
public struct RouteTable: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Unspecified. The corresponding C constant is `RT_TABLE_UNSPEC`.
    public static let unspecified = RouteTable(rawValue: 0)
    /// The default table. The corresponding C constant is `RT_TABLE_DEFAULT`.
    public static let `default` = RouteTable(rawValue: 253)
    /// The main table, where `ip route` works. The corresponding C constant is `RT_TABLE_MAIN`.
    public static let main = RouteTable(rawValue: 254)
    /// The local table (local and broadcast routes). The corresponding C constant is `RT_TABLE_LOCAL`.
    public static let local = RouteTable(rawValue: 255)

    /// `main`, `local`, `default`, or the number.
    public var description: String {
        switch rawValue {
        case 253: return "default"
        case 254: return "main"
        case 255: return "local"
        default: return String(rawValue)
        }
    }
}

/// The type of a route (`RTN_*`).
public struct RouteType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Unknown. The corresponding C constant is `RTN_UNSPEC`.
    public static let unspecified = RouteType(rawValue: 0)
    /// A gateway or direct route. The corresponding C constant is `RTN_UNICAST`.
    public static let unicast = RouteType(rawValue: 1)
    /// Accept locally: the destination is this host. The corresponding C constant is `RTN_LOCAL`.
    public static let local = RouteType(rawValue: 2)
    /// Accept locally as broadcast, send as broadcast. The corresponding C constant is `RTN_BROADCAST`.
    public static let broadcast = RouteType(rawValue: 3)
    /// Accept locally as broadcast, send as unicast. The corresponding C constant is `RTN_ANYCAST`.
    public static let anycast = RouteType(rawValue: 4)
    /// A multicast route. The corresponding C constant is `RTN_MULTICAST`.
    public static let multicast = RouteType(rawValue: 5)
    /// Drop silently. The corresponding C constant is `RTN_BLACKHOLE`.
    public static let blackhole = RouteType(rawValue: 6)
    /// The destination is unreachable. The corresponding C constant is `RTN_UNREACHABLE`.
    public static let unreachable = RouteType(rawValue: 7)
    /// Administratively prohibited. The corresponding C constant is `RTN_PROHIBIT`.
    public static let prohibit = RouteType(rawValue: 8)
    /// Go on with the next routing rule. The corresponding C constant is `RTN_THROW`.
    public static let `throw` = RouteType(rawValue: 9)
    /// Translate the address. The corresponding C constant is `RTN_NAT`.
    public static let nat = RouteType(rawValue: 10)
    /// Use an external resolver. The corresponding C constant is `RTN_XRESOLVE`.
    public static let externalResolve = RouteType(rawValue: 11)

    static let names = ["unspecified", "unicast", "local", "broadcast", "anycast", "multicast",
                        "blackhole", "unreachable", "prohibit", "throw", "nat", "xresolve"]

    /// The name as `ip route` prints it (`unicast`, `local`, `blackhole`, ...), or the number.
    public var description: String {
        Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : String(rawValue)
    }
}

/// The preference of an IPv6 router, and of the routes it advertises (RFC 4191; `RTA_PREF`,
/// `ICMPV6_ROUTER_PREF_*`). Ordered as the kernel ranks them (`IPV6_DECODE_PREF`): the
/// reserved value below low, then low, medium, high.
public struct RoutePreference: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The two-bit value of the router advertisement's field.
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Low. The corresponding C constant is `ICMPV6_ROUTER_PREF_LOW`.
    public static let low = RoutePreference(rawValue: 3)
    /// Medium, the default. The corresponding C constant is `ICMPV6_ROUTER_PREF_MEDIUM`.
    public static let medium = RoutePreference(rawValue: 0)
    /// High. The corresponding C constant is `ICMPV6_ROUTER_PREF_HIGH`.
    public static let high = RoutePreference(rawValue: 1)
    /// The reserved value, which the kernel never keeps (it takes medium instead). The
    /// corresponding C constant is `ICMPV6_ROUTER_PREF_INVALID`.
    public static let invalid = RoutePreference(rawValue: 2)

    /// The kernel's rank (`IPV6_DECODE_PREF`): 0 reserved, 1 low, 2 medium, 3 high.
    var rank: UInt8 { (rawValue & 3) ^ 2 }

    /// Whether `a` ranks below `b`: low < medium < high.
    public static func < (a: RoutePreference, b: RoutePreference) -> Bool { a.rank < b.rank }

    /// `low`, `medium` or `high`, as `ip route` prints it, or the number.
    public var description: String {
        switch self {
        case .low: return "low"
        case .medium: return "medium"
        case .high: return "high"
        default: return String(rawValue)
        }
    }
}

/// Who installed a route (`RTPROT_*`).
public struct RouteProtocol: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Unknown. The corresponding C constant is `RTPROT_UNSPEC`.
    public static let unspecified = RouteProtocol(rawValue: 0)
    /// An ICMP redirect. The corresponding C constant is `RTPROT_REDIRECT`.
    public static let redirect = RouteProtocol(rawValue: 1)
    /// The kernel (prefix routes of addresses). The corresponding C constant is `RTPROT_KERNEL`.
    public static let kernel = RouteProtocol(rawValue: 2)
    /// Boot time or `ip route` without `proto`. The corresponding C constant is `RTPROT_BOOT`.
    public static let boot = RouteProtocol(rawValue: 3)
    /// Static, set by an administrator. The corresponding C constant is `RTPROT_STATIC`.
    public static let `static` = RouteProtocol(rawValue: 4)
    /// IPv6 router advertisement. The corresponding C constant is `RTPROT_RA`.
    public static let routerAdvertisement = RouteProtocol(rawValue: 9)
    /// DHCP. The corresponding C constant is `RTPROT_DHCP`.
    public static let dhcp = RouteProtocol(rawValue: 16)

    static let names: [UInt8: String] = [
        0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 8: "gated", 9: "ra",
        10: "mrt", 11: "zebra", 12: "bird", 13: "dnrouted", 14: "xorp", 15: "ntk", 16: "dhcp",
        17: "mrouted", 18: "keepalived", 42: "babel", 99: "openr", 186: "bgp", 187: "isis",
        188: "ospf", 189: "rip", 192: "eigrp",
    ]

    /// The name as `ip route` prints it (`kernel`, `boot`, `static`, `dhcp`, ...), or the number.
    public var description: String { Self.names[rawValue] ?? String(rawValue) }
}

/// Flags of a route or a next hop (`RTNH_F_*` in the low byte, `RTM_F_*` above).
public struct RouteFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The next hop is dead. The corresponding C constant is `RTNH_F_DEAD`.
    public static let dead = RouteFlags(rawValue: 1)
    /// Pervasive. The corresponding C constant is `RTNH_F_PERVASIVE`.
    public static let pervasive = RouteFlags(rawValue: 2)
    /// The gateway is on-link even without a matching prefix. The corresponding C constant is
    /// `RTNH_F_ONLINK`.
    public static let onlink = RouteFlags(rawValue: 4)
    /// Offloaded to hardware. The corresponding C constant is `RTNH_F_OFFLOAD`.
    public static let offload = RouteFlags(rawValue: 8)
    /// The output link has no carrier. The corresponding C constant is `RTNH_F_LINKDOWN`.
    public static let linkDown = RouteFlags(rawValue: 16)
    /// The gateway's neighbour entry is unresolved. The corresponding C constant is
    /// `RTNH_F_UNRESOLVED`.
    public static let unresolved = RouteFlags(rawValue: 32)
    /// Trapped by hardware. The corresponding C constant is `RTNH_F_TRAP`.
    public static let trap = RouteFlags(rawValue: 64)
    /// Notify the user of changes. The corresponding C constant is `RTM_F_NOTIFY`.
    public static let notify = RouteFlags(rawValue: 0x100)
    /// A cloned (cached) route. The corresponding C constant is `RTM_F_CLONED`.
    public static let cloned = RouteFlags(rawValue: 0x200)
    /// A prefix route of an address (`RTM_F_PREFIX`).
    public static let prefix = RouteFlags(rawValue: 0x800)
    /// In a lookup answer: the kernel would send an ICMP redirect. The corresponding C constant
    /// is `RTCF_DOREDIRECT`.
    public static let redirectCache = RouteFlags(rawValue: 0x0100_0000)
    /// In a lookup answer: the destination is a broadcast address. The corresponding C constant
    /// is `RTCF_BROADCAST`.
    public static let broadcastCache = RouteFlags(rawValue: 0x1000_0000)
    /// In a lookup answer: the destination is a multicast address. The corresponding C constant
    /// is `RTCF_MULTICAST`.
    public static let multicastCache = RouteFlags(rawValue: 0x2000_0000)
    /// In a lookup answer: the destination is this host. The corresponding C constant is
    /// `RTCF_LOCAL`.
    public static let localCache = RouteFlags(rawValue: 0x8000_0000)

    static let names: [(RouteFlags, String)] = [
        (.dead, "dead"), (.pervasive, "pervasive"), (.onlink, "onlink"), (.offload, "offload"),
        (.linkDown, "linkdown"), (.unresolved, "unresolved"), (.trap, "trap"), (.notify, "notify"),
        (.cloned, "cloned"), (.prefix, "prefix"), (.redirectCache, "redirect"),
        (.broadcastCache, "broadcast"), (.multicastCache, "multicast"), (.localCache, "local"),
    ]

    /// The names of the flags that are set, as `ip route` prints them (`linkdown`, `onlink`).
    public var names: [String] { describeOptions(self, Self.names) }
    /// The set flags as `[.linkdown]`.
    public var description: String { "[" + names.map { "." + $0 }.joined(separator: ", ") + "]" }
}
