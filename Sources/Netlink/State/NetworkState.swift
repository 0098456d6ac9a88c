/// What a namespace looks like at one moment: its links, their addresses, its default routes and
/// its policy-routing rules.
///
/// This is the always-on state that a ``NetlinkSubscription`` keeps. It deliberately leaves out
/// the rest of the routing table, which on a router holds a million routes; ask
/// ``NetlinkConnection/routes(_:)`` for those, or ``NetlinkConnection/lookupRoute(to:from:outputLinkIndex:mark:)``
/// for the kernel's answer for one destination.
public struct NetworkState: Sendable, Hashable {
    /// The links, by interface index.
    public var links: [Int32: Link]
    /// The interface addresses, by their identity.
    public var addresses: [InterfaceAddress.Key: InterfaceAddress]
    /// The default routes (zero-length destination) of every table and family, by their identity,
    /// with the routes to either half of the address space, which VPNs add in their place (see
    /// ``Route/isDefaultOrHalf``). A subscription reads them at its start as
    /// ``NetlinkConnection/defaultRoutes()`` does (an IPv4 table whose id is 255 modulo 256 and
    /// that no policy rule names, and the local table, are not read then) and follows every change
    /// the kernel announces afterwards, in every table; once a message has told of a default route
    /// in such a table, re-reads read that table by name too. The deletion of a route it never read
    /// is not reported. A route that has expired (an IPv6 route of a router advertisement whose
    /// lifetime ran out), which the kernel's lookups pass over at once but deletes with a message
    /// only at its next garbage collection, up to 30 s later, is not kept: a subscription reads the
    /// routes again at the soonest expiry (a timer only while such a route exists) and reports it
    /// removed.
    public var defaultRoutes: [Route.Key: Route]
    /// The policy-routing rules (`ip rule`) of each family whose rules were read, in the
    /// kernel's order (by priority). A family without an entry (in a state built by hand, or
    /// on a kernel without policy routing for it) is routed by its main table; one with an
    /// empty list routes nothing, as the kernel does once every rule is deleted.
    public var policyRules: [AddressFamily: [PolicyRule]] = [:]
    /// The IP configuration (netconf) of each link and the namespace-wide ones, by family and
    /// scope, as libnl's netconf cache holds them.
    public var configurations: [InterfaceConfiguration.Key: InterfaceConfiguration] = [:]
    /// The neighbour table, when the subscription follows it
    /// (``SubscriptionOptions/followsNeighbors``); empty otherwise.
    public var neighbors: [Neighbor.Key: Neighbor] = [:]
    /// Changes whenever a link is added or removed, or changes what it is rather than what state
    /// it is in (see ``Link/differsOnlyInState(from:)``). A subscription sets it, from one
    /// counter for the whole process, so equal revisions mean links that differ at most in their
    /// state; `nil` for a state built any other way. Not part of equality. What the link
    /// classification cache checks in every evaluation round instead of comparing every link.
    package var linkRevision: UInt64?

    /// Creates a state from its parts.
    public init(links: [Int32: Link] = [:], addresses: [InterfaceAddress.Key: InterfaceAddress] = [:],
                defaultRoutes: [Route.Key: Route] = [:]) {
        self.links = links
        self.addresses = addresses
        self.defaultRoutes = defaultRoutes
    }

    /// Creates a state from lists.
    public init(links: [Link], addresses: [InterfaceAddress], defaultRoutes: [Route]) {
        self.init(
            links: Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last }),
            addresses: Dictionary(addresses.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last }),
            defaultRoutes: Dictionary(defaultRoutes.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last }))
    }

    /// Whether two states hold the same links, addresses, default routes and policy rules.
    public static func == (lhs: NetworkState, rhs: NetworkState) -> Bool {
        lhs.links == rhs.links && lhs.addresses == rhs.addresses && lhs.defaultRoutes == rhs.defaultRoutes
            && lhs.policyRules == rhs.policyRules && lhs.configurations == rhs.configurations
            && lhs.neighbors == rhs.neighbors
    }

    /// Hashes the links, addresses, default routes and policy rules.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(links)
        hasher.combine(addresses)
        hasher.combine(defaultRoutes)
        hasher.combine(policyRules)
        hasher.combine(configurations)
        hasher.combine(neighbors)
    }

    /// The events that turn `old` into this state: links that appeared or changed, then
    /// addresses and default routes that went away, appeared or changed, then links that went
    /// away, and ``NetlinkEvent/rulesChanged(_:)`` for each family whose policy rules differ.
    /// What an event stream hands a consumer that fell behind.
    public func changes(since old: NetworkState) -> [NetlinkEvent] {
        var events: [NetlinkEvent] = []
        for link in sortedLinks {
            if let before = old.links[link.index] {
                if before != link { events.append(.link(.changed(old: before, new: link))) }
            } else {
                events.append(.link(.new(link)))
            }
        }
        events += Self.changes(from: old.addresses, to: addresses).map { .address($0) }
        events += Self.changes(from: old.defaultRoutes, to: defaultRoutes).map { .route(RouteChange($0)) }
        events += Self.changes(from: old.configurations, to: configurations).map { .configuration($0) }
        events += Self.changes(from: old.neighbors, to: neighbors).map { .neighbor($0) }
        for link in old.sortedLinks where links[link.index] == nil { events.append(.link(.removed(link))) }
        for family in AddressFamily.allCases where policyRules[family] != old.policyRules[family] {
            events.append(.rulesChanged(family))
        }
        return events
    }

    /// What went away from `old`, then what appeared in or changed to `new`.
    private static func changes<Key, Value: Equatable>(from old: [Key: Value], to new: [Key: Value]) -> [Change<Value>] {
        var changes: [Change<Value>] = old.compactMap { key, value in new[key] == nil ? .removed(value) : nil }
        for (key, value) in new {
            if let before = old[key] {
                if before != value { changes.append(.changed(old: before, new: value)) }
            } else {
                changes.append(.new(value))
            }
        }
        return changes
    }

    /// The links, sorted by index.
    public var sortedLinks: [Link] { links.values.sorted { $0.index < $1.index } }

    /// The link with this name, else the one with this alternative name, if any. The kernel
    /// gives each name to one link, but it does not tell of an alternative name that a link
    /// lost while down (see ``Link/alternativeNames``): a link's own name wins, then a link
    /// that is up, then the lowest index.
    public func link(named name: String) -> Link? { Link.named(name, in: links.values) }

    /// The addresses of one link, IPv4 first, then IPv6, each sorted by address.
    public func addresses(ofLink index: Int32) -> [InterfaceAddress] {
        addresses.values.filter { $0.linkIndex == index }.sorted(by: InterfaceAddress.displayOrder)
    }

    /// The default routes, sorted by family, then metric, then table.
    public var sortedDefaultRoutes: [Route] {
        defaultRoutes.values.sorted {
            ($0.family.rawValue, $0.metric, $0.table.rawValue) < ($1.family.rawValue, $1.metric, $1.table.rawValue)
        }
    }
}

extension NetworkState: CustomStringConvertible {
    /// One line per link (with its addresses), then one per default route and the number of
    /// policy rules per family, as `print(state)` shows them; the default routes name their
    /// links.
    public var description: String {
        var lines: [String] = []
        for link in sortedLinks {
            let addresses = addresses(ofLink: link.index).map { "\($0.address)/\($0.prefixLength)" }
            lines.append("\(link)" + (addresses.isEmpty ? "" : " " + addresses.joined(separator: " ")))
        }
        for route in sortedDefaultRoutes {
            lines.append(route.description { links[$0]?.name })
        }
        let rules = AddressFamily.allCases.compactMap { family in policyRules[family].map { "\(family) \($0.count)" } }
        if !rules.isEmpty { lines.append("rules: " + rules.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }
}

extension NetworkState {
    /// Makes this state equal to `newer`, of which it is an earlier version, when `events` are
    /// everything that happened in between, by copying only the entries the events name:
    /// O(changes), where assigning `newer` would leave two states sharing storage and the next
    /// change to either copying every link, address and default route. The subscription's
    /// events are a complete account of its changes, so the two states end equal; debug builds
    /// check it.
    mutating func catchUp(with newer: NetworkState, through events: [NetlinkEvent]) {
        for event in events {
            switch event {
            case .link(let change):
                // A link keeps its index: old and new versions share the key, and the
                // subscription stores the very value it reports (see `upsert`).
                switch change {
                case .new(let link), .changed(_, let link): links[link.index] = link
                case .removed(let link): links[link.index] = nil
                }
            case .address(let change):
                change.forEachVersion { addresses[$0.key] = newer.addresses[$0.key] }
            case .route(let change):
                // Only default routes and halves are kept: the others (a churn's hundred
                // thousand) need no lookup in either state.
                change.forEachVersion { route in
                    guard route.isDefaultOrHalf else { return }
                    defaultRoutes[route.key] = newer.defaultRoutes[route.key]
                }
            case .configuration(let change):
                change.forEachVersion { configurations[$0.key] = newer.configurations[$0.key] }
            case .neighbor(let change):
                change.forEachVersion { neighbors[$0.key] = newer.neighbors[$0.key] }
            case .snapshot:
                self = newer
                return
            case .rulesChanged, .resynchronized:
                policyRules = newer.policyRules
            }
        }
        linkRevision = newer.linkRevision
        assert(self == newer, "a batch's events did not account for every change of the state")
    }
}

extension Change {
    /// Calls `body` with each version the change names: one, or both for
    /// ``changed(old:new:)``. (Not an array: this runs for every event of every publication.)
    func forEachVersion(_ body: (Value) -> Void) {
        switch self {
        case .new(let value), .removed(let value): body(value)
        case .changed(let old, let new): body(old); body(new)
        }
    }
}

extension RouteChange {
    /// Calls `body` with each version the change names: one, or both for
    /// ``changed(old:new:)`` (whose keys differ when a replacement changed the route's identity).
    func forEachVersion(_ body: (Route) -> Void) {
        switch self {
        case .new(let route), .replaced(let route), .removed(let route): body(route)
        case .changed(let old, let new): body(old); body(new)
        }
    }
}

extension InterfaceAddress {
    /// IPv4 before IPv6, then by address, then by prefix length.
    static func displayOrder(_ a: InterfaceAddress, _ b: InterfaceAddress) -> Bool {
        (a.address, a.prefixLength) < (b.address, b.prefixLength)
    }
}
