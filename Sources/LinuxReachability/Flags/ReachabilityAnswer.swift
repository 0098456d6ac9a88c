import Netlink

/// The full answer for one target at one moment: the flags, the link and gateway the kernel
/// would use, the boiled-down status, and why the target is not reachable when it is not.
public struct ReachabilityAnswer: Sendable, Hashable, CustomStringConvertible {
    /// The parts of an answer, kept in one shared box: an answer travels from the engine to
    /// every monitor's lock, queue and callbacks, and copying it is then one reference count
    /// instead of some 300 bytes and a count for each of its strings and arrays. A change to a
    /// copy copies the box first (copy on write).
    private struct Parts: Sendable, Hashable {
        var flags: ReachabilityFlags
        var interface: NetworkInterface?
        var gateway: IPAddress?
        var address: IPAddress?
        var addresses = AddressList.none
        var route: Route?
        var reason: UnreachableReason?
    }

    /// ``addresses`` as kept: one address (an address target, the common case: 10 000 of
    /// them answered at once after a route change) without an array of its own, which would be
    /// one more allocation per answer. Always in its shortest form, so that the synthesized
    /// equality and hash of ``Parts`` agree with the arrays'.
    private enum AddressList: Sendable, Hashable {
        case none
        case one(IPAddress)
        case many([IPAddress])

        init(_ addresses: [IPAddress]) {
            switch addresses.count {
            case 0: self = .none
            case 1: self = .one(addresses[0])
            default: self = .many(addresses)
            }
        }

        var array: [IPAddress] {
            switch self {
            case .none: []
            case .one(let address): [address]
            case .many(let addresses): addresses
            }
        }
    }

    private final class Box: @unchecked Sendable {
        // @unchecked Sendable: `parts` is only written through `ReachabilityAnswer.modify`,
        // when this box is known to be referenced by that one answer alone; a shared box is
        // only read.
        var parts: Parts
        init(_ parts: Parts) { self.parts = parts }
    }

    private var box: Box
    /// The IPv4 address of a group member that shares `box` with its group (``forMember(_:)``):
    /// it stands for the box's address, addresses and route destination (narrowed to it).
    /// 10 000 address targets answered by one shared lookup then share one box, where each
    /// used to copy the parts (and count a reference for each of their strings and arrays)
    /// into a box of its own. Four bytes and a tag: an answer still fits in an `Any`'s inline
    /// buffer (a notification's userInfo) without an allocation.
    private var member: IPv4Address?

    /// The parts as they read: the box's, with the member's address applied.
    private var parts: Parts {
        guard let member else { return box.parts }
        var parts = box.parts
        Self.narrow(&parts, to: .v4(member))
        return parts
    }

    /// Sets the parts' address, addresses and route destination to one member address.
    private static func narrow(_ parts: inout Parts, to address: IPAddress) {
        parts.address = address
        parts.addresses = .one(address)
        if let destination = IPNetwork(address: address, prefixLength: address.family.bitWidth) {
            parts.route?.destination = destination
        }
    }

    /// Changes the parts, copying the box first if another answer shares it (or if this is a
    /// member, whose address then moves into its own box).
    private mutating func modify(_ change: (inout Parts) -> Void) {
        if member != nil || !isKnownUniquelyReferenced(&box) {
            box = Box(parts)
            member = nil
        }
        change(&box.parts)
    }

    /// The flags, as `SCNetworkReachabilityFlags` would have them.
    public var flags: ReachabilityFlags {
        get { box.parts.flags }
        set { modify { $0.flags = newValue } }
    }
    /// The link the kernel would send through, when a route matched.
    public var interface: NetworkInterface? {
        get { box.parts.interface }
        set { modify { $0.interface = newValue } }
    }
    /// The next-hop gateway, or `nil` when the target is on-link, local or not routed.
    public var gateway: IPAddress? {
        get { box.parts.gateway }
        set { modify { $0.gateway = newValue } }
    }
    /// The address the answer is for (for a host name: the best of its addresses).
    public var address: IPAddress? {
        get { member.map(IPAddress.v4) ?? box.parts.address }
        set { modify { $0.address = newValue } }
    }
    /// Every address considered: the target's, or a host name's resolved addresses in the
    /// resolver's order; empty for the internet and for a name not resolved yet.
    public var addresses: [IPAddress] {
        get { member.map { [.v4($0)] } ?? box.parts.addresses.array }
        set { modify { $0.addresses = AddressList(newValue) } }
    }
    /// The route that matched, when one did.
    public var route: Route? {
        get { member == nil ? box.parts.route : parts.route }
        set { modify { $0.route = newValue } }
    }
    /// Why the target is not reachable (or waits for a connection); `nil` when it is reachable.
    public var reason: UnreachableReason? {
        get { box.parts.reason }
        set { modify { $0.reason = newValue } }
    }

    /// This answer for `address`, one of a group of addresses that shared one kernel lookup:
    /// the same flags, link and gateway, with ``address`` and ``addresses`` set to it and the
    /// matched route's destination narrowed to it. An IPv4 member shares this answer's box
    /// (nothing is allocated or copied); an IPv6 member gets a box of its own.
    func forMember(_ address: IPAddress) -> ReachabilityAnswer {
        if case .v4(let v4) = address { return ReachabilityAnswer(box: box, member: v4) }
        var parts = box.parts
        Self.narrow(&parts, to: address)
        return ReachabilityAnswer(box: Box(parts), member: nil)
    }

    /// The same answer with storage of its own: nothing it is copied to later shares a
    /// reference count with this answer's copies.
    func inOwnBox() -> ReachabilityAnswer { ReachabilityAnswer(box: Box(box.parts), member: member) }

    private init(box: Box, member: IPv4Address?) {
        self.box = box
        self.member = member
    }

    /// Sets ``addresses`` to the one address of an address target, without an array.
    mutating func setAddresses(to address: IPAddress) {
        modify { $0.addresses = .one(address) }
    }

    /// An answer as given.
    public init(flags: ReachabilityFlags, interface: NetworkInterface? = nil, gateway: IPAddress? = nil,
                address: IPAddress? = nil, route: Route? = nil, reason: UnreachableReason? = nil) {
        box = Box(Parts(flags: flags, interface: interface, gateway: gateway, address: address, route: route, reason: reason))
    }

    public static func == (lhs: ReachabilityAnswer, rhs: ReachabilityAnswer) -> Bool {
        lhs.box === rhs.box && lhs.member == rhs.member || lhs.parts == rhs.parts
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(parts) }

    /// Whether two answers say the same to a user: flags, link (and its classification),
    /// gateway, address and reason. Route details such as metrics or flags are not compared.
    ///
    /// Every monitor's new answer is compared with its previous one, twice per change, so the
    /// parts are read in place and the cheap ones first: a shared box, then the flags, the
    /// gateway and the address (what a route change usually changes), the reason, and the link
    /// last (its name and classification are the dearest to compare).
    func isSameAnswer(as other: ReachabilityAnswer) -> Bool {
        let (mine, theirs) = (box, other.box)
        if mine === theirs && member == other.member { return true }
        return mine.parts.flags == theirs.parts.flags && mine.parts.gateway == theirs.parts.gateway
            && address == other.address && mine.parts.reason == theirs.parts.reason
            && mine.parts.interface?.index == theirs.parts.interface?.index
            && mine.parts.interface == theirs.parts.interface
    }

    /// Not reachable, for `reason`.
    package static func notReachable(_ reason: UnreachableReason, address: IPAddress? = nil) -> ReachabilityAnswer {
        ReachabilityAnswer(flags: [], address: address, reason: reason)
    }

    /// Whether the flags say reachable without a connection to establish first (the test every
    /// status mapping starts with).
    public var isReachable: Bool { flags.isActuallyReachable }

    /// This library's status: Wi-Fi, wired, WWAN or other, from the flags and the link's type.
    public var status: ReachabilityStatus { ReachabilityStatus(flags: flags, interfaceType: interface?.type) }

    /// Such as `reachableViaWired -R ------d dev eth0 (wiredEthernet)`.
    public var description: String {
        var text = "\(status) \(flags.compactDescription)"
        if let interface { text += " dev \(interface.name) (\(interface.type))" }
        if let gateway { text += " via \(gateway)" }
        if let reason { text += " (\(reason))" }
        return text
    }
}

/// Why a target is not reachable, or waits.
public enum UnreachableReason: Sendable, Hashable, CustomStringConvertible {
    /// No route matched (or a `throw` route ended the lookup).
    case noRoute
    /// An `unreachable` route matched.
    case unreachableRoute
    /// A `prohibit` route matched.
    case prohibitedRoute
    /// A `blackhole` route matched.
    case blackholeRoute
    /// The route's type cannot carry traffic to a host (broadcast, multicast, NAT, ...).
    case unusableRouteType(RouteType)
    /// The route's link is administratively down.
    case linkDown
    /// The route's link is up but has no carrier (the cable is out, the radio not associated).
    case noCarrier
    /// The route's link is dormant: it waits for authentication (802.1X, a Wi-Fi handshake).
    case dormant
    /// The route's link is not among the namespace's links (it went away meanwhile), or a
    /// scoped address names a link the namespace does not have.
    case linkMissing
    /// An IPv6 address that needs a link (link-local, or multicast of link or interface scope)
    /// without one (`fe80::1` rather than `fe80::1%eth0`): the
    /// kernel refuses to send to it (`EINVAL`), as it could leave through any link. Use
    /// ``ReachabilityTarget/scopedAddress(_:interface:)``.
    case scopeRequired
    /// No default route goes through a usable link (for "the internet").
    case noDefaultRoute
    /// The host name resolved to no address.
    case unresolved
    /// Resolving the host name failed, or gave no answer in time (15 seconds unless the monitor
    /// or probe was given another `resolutionTimeout`).
    case resolutionFailed(ReachabilityError)
    /// The kernel lookup failed for another reason.
    case lookupFailed(NetlinkError)
    /// Nothing more can be known: the namespace's subscription ended (the namespace was
    /// deleted, `NetlinkError.namespaceDeleted`). This is a monitor's last answer.
    case monitoringEnded(NetlinkError)

    /// Such as `no route`, `no carrier`.
    public var description: String {
        switch self {
        case .noRoute: return "no route"
        case .unreachableRoute: return "unreachable route"
        case .prohibitedRoute: return "prohibited route"
        case .blackholeRoute: return "blackhole route"
        case .unusableRouteType(let type): return "\(type) route"
        case .linkDown: return "link down"
        case .noCarrier: return "no carrier"
        case .dormant: return "link dormant"
        case .linkMissing: return "link missing"
        case .scopeRequired: return "link-local address without a link (scope)"
        case .noDefaultRoute: return "no default route"
        case .unresolved: return "name not resolved"
        case .resolutionFailed(let error): return error.description
        case .lookupFailed(let error): return "lookup failed: \(error)"
        case .monitoringEnded(let error): return "monitoring ended: \(error)"
        }
    }
}
