/// The kernel's answer to "how would a packet to this address leave?" (`ip route get`).
public enum RouteLookupResult: Sendable, Hashable, CustomStringConvertible {
    /// A route matched: unicast (through a gateway or on-link), local (the address is this
    /// host's), broadcast, multicast or anycast. The route carries the output link, the gateway,
    /// the preferred source and, for this lookup, the table that answered.
    case route(Route)
    /// An `unreachable` route matched (the kernel answers `EHOSTUNREACH`).
    case unreachable
    /// A `prohibit` route matched (`EACCES`).
    case prohibited
    /// A `blackhole` route matched (`EINVAL`).
    case blackhole
    /// No route matched, or a `throw` route sent the lookup on and nothing else matched
    /// (`ENETUNREACH`).
    case noRoute

    /// The matched route, when there is one.
    public var route: Route? {
        if case .route(let r) = self { return r }
        return nil
    }

    public var description: String {
        switch self {
        case .route(let r): return r.description
        case .unreachable: return "unreachable"
        case .prohibited: return "prohibited"
        case .blackhole: return "blackhole"
        case .noRoute: return "no route"
        }
    }
}

/// Which routes a dump returns. Every field left nil matches everything.
///
/// The kernel filters by table, type, protocol and output link itself (strict dump checking,
/// Linux 4.20 and later), so a filtered dump of a million-route table sends only the matches;
/// ``defaultOnly`` is applied as the routes arrive. With ``defaultOnly``, an IPv4 dump asks the
/// kernel for the table alone and stops after that table's default routes, which it dumps first
/// (a filter the kernel applies would make it walk the rest of the table for more matches);
/// the other fields are applied here. IPv6 dumps its default routes last, so there every route
/// of the table is walked, by the kernel, which skips the ones the filter leaves out.
public struct RouteFilter: Sendable, Hashable {
    /// Only this family.
    public var family: AddressFamily?
    /// Only this table.
    public var table: RouteTable?
    /// Only this route type.
    public var type: RouteType?
    /// Only routes installed by this protocol.
    public var routeProtocol: RouteProtocol?
    /// Only routes with a next hop through this link.
    public var outputLinkIndex: Int32?
    /// Only default routes (zero-length destination), and the halves of the address space that
    /// stand in for them (see ``Route/isDefaultOrHalf``).
    public var defaultOnly: Bool

    /// Creates a filter.
    public init(family: AddressFamily? = nil, table: RouteTable? = nil, type: RouteType? = nil,
                routeProtocol: RouteProtocol? = nil, outputLinkIndex: Int32? = nil, defaultOnly: Bool = false) {
        self.family = family
        self.table = table
        self.type = type
        self.routeProtocol = routeProtocol
        self.outputLinkIndex = outputLinkIndex
        self.defaultOnly = defaultOnly
    }

    /// Every route of every table.
    public static let all = RouteFilter()
    /// The main table, which `ip route` shows.
    public static let mainTable = RouteFilter(table: .main)
    /// Default routes of every table, with the halves of the address space.
    public static let defaultRoutes = RouteFilter(defaultOnly: true)

    /// Whether a route passes the filter (the same test the kernel applies, plus ``defaultOnly``).
    public func matches(_ route: Route) -> Bool {
        if let family, route.family != family { return false }
        if let table, route.table != table { return false }
        if let type, route.type != type { return false }
        if let routeProtocol, route.routeProtocol != routeProtocol { return false }
        if let outputLinkIndex, !route.uses(linkIndex: outputLinkIndex) { return false }
        if defaultOnly, !route.isDefaultOrHalf { return false }
        if route.flags.contains(.cloned) { return false }
        return true
    }

    /// Whether a route read from a dump is passed on: it ``matches(_:)``, or it names a
    /// next-hop object whose next hops are still to be filled in and matches but for the
    /// output link, which those next hops decide.
    func admits(_ route: Route) -> Bool {
        guard route.lacksObjectNexthops, outputLinkIndex != nil else { return matches(route) }
        var withoutLink = self
        withoutLink.outputLinkIndex = nil
        return withoutLink.matches(route)
    }
}
