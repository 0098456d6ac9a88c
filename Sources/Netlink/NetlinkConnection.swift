import CNetlink
import Glibc
import Synchronization

/// A connection to the kernel's routing service in one namespace, for one-off questions:
/// the current links, addresses and routes, and route lookups.
///
/// Thread-safe: calls are serialised on one socket. Open one per namespace and keep it; the
/// socket was opened inside the namespace and keeps working there.
///
/// ```swift
/// let kernel = try NetlinkConnection(namespace: .named("blue"))
/// if case .route(let route) = try kernel.lookupRoute(to: IPAddress("192.0.2.1")!) {
///     print(route.outputLinkIndex, route.gateway)
/// }
/// ```
public final class NetlinkConnection: @unchecked Sendable {
    // @unchecked Sendable: `socket` is only used inside `lock.withLock` (`withSocket`), so one thread at a time
    // talks on it; `namespace` is immutable.

    /// The namespace this connection reads.
    public let namespace: NetworkNamespace
    private let lock = ConditionLock()
    /// The thread whose ``forEachRoute(_:restart:_:)`` is calling its closures (0: none). A call
    /// on this connection from inside them would wait for the lock that thread holds; it throws
    /// ``NetlinkError/busy`` instead (the socket is in the middle of the dump).
    private let streamingThread = Atomic<UInt>(0)
    private let socket: RequestSocket

    /// Opens a connection in `namespace`.
    ///
    /// - Throws: ``NetlinkError/namespaceNotFound``, ``NetlinkError/notANetworkNamespace`` or
    ///   ``NetlinkError/namespacePermissionDenied`` for a namespace that cannot be entered.
    public init(namespace: NetworkNamespace = .current) throws(NetlinkError) {
        self.namespace = namespace
        let opened = try namespace.perform { () throws(NetlinkError) in UnsafeTransfer(try RequestSocket(namespace: namespace)) }
        socket = opened.value
    }

    /// The links, sorted by index: a dump parsed by libnl, alternative names included
    /// (``Link/alternativeNames``).
    public func links() throws(NetlinkError) -> [Link] {
        try withSocket { () throws(NetlinkError) in try socket.links() }
    }

    /// The ports of link `master` now (the links whose ``Link/masterIndex`` it is: a bridge's,
    /// bond's or VRF's), sorted by index: a dump that the kernel filters, which carries only
    /// them however many links the namespace has.
    public func links(masteredBy master: Int32) throws(NetlinkError) -> [Link] {
        try withSocket { () throws(NetlinkError) in try socket.links(master: master) }
    }

    /// The link with index `index` now, or nil when there is none (and for an index of 0 or
    /// less, which no link has): one `RTM_GETLINK` request, however many links the namespace
    /// has.
    public func link(index: Int32) throws(NetlinkError) -> Link? {
        try withSocket { () throws(NetlinkError) in try socket.link(index: index) }
    }

    /// The link that `name` names now, by its name or one of its alternative names, as the
    /// kernel finds it (`ip link show dev NAME`): one `RTM_GETLINK` request, however many
    /// links the namespace has. Nil when no link has that name, or none can (empty, over 127
    /// bytes).
    public func link(named name: String) throws(NetlinkError) -> Link? {
        try withSocket { () throws(NetlinkError) in try socket.link(named: name) }
    }

    /// The interface addresses, read through a libnl address cache.
    public func addresses() throws(NetlinkError) -> [InterfaceAddress] {
        try withSocket { () throws(NetlinkError) in try socket.addresses() }
    }

    /// The default routes of every table and family, with the routes to either half of the
    /// address space (see ``Route/isDefaultOrHalf``).
    ///
    /// The IPv4 part reads the tables up to the main table's default routes and stops there
    /// (one datagram even with a full Internet table, see ``RouteFilter``). The tables the kernel
    /// dumps after the main one share the local table's hash bucket: ids 255 modulo 256 (511,
    /// 767, 1023, ...). Those that a policy rule looks up are then read by name, but for the
    /// local table itself (its local and broadcast routes share the main table's tree until a
    /// rule of one's own is added, and reading it by name walks that tree); the default routes
    /// of such a table that no rule names (unused by routing, or a VRF's own table), and those
    /// of the local table, are not read here. Ask for one by its table in a ``RouteFilter`` to read it. Expired routes,
    /// which the kernel lists until it collects them but no longer routes by, are left out.
    public func defaultRoutes() throws(NetlinkError) -> [Route] {
        try routes(.defaultRoutes)
    }

    /// The policy-routing rules (`ip rule`) of each family, in the kernel's order (by
    /// priority). A family whose kernel has no policy routing has no entry.
    public func rules() throws(NetlinkError) -> [AddressFamily: [PolicyRule]] {
        try withSocket { () throws(NetlinkError) in try socket.rules() }
    }

    /// The links, addresses, default routes and policy rules, read one after the other. Unlike a
    /// subscription's ``NetlinkSubscription/state``, the parts may be a few microseconds apart.
    public func snapshot() throws(NetlinkError) -> NetworkState {
        var state = NetworkState(links: try links(), addresses: try addresses(), defaultRoutes: try defaultRoutes())
        state.policyRules = try rules()
        return state
    }

    /// The routes that match `filter`, in the kernel's order (except that routes through a
    /// next-hop object that the kernel sent without its next hops, outside its
    /// `nexthop_compat_mode`, follow their family's others: see ``Route/nexthopID``). On a host
    /// with a full Internet table, prefer a filter (or ``forEachRoute(_:restart:_:)``) to
    /// holding every route in memory.
    public func routes(_ filter: RouteFilter = .all) throws(NetlinkError) -> [Route] {
        var routes: [Route] = []
        try forEachRoute(filter, restart: { routes.removeAll() }) { routes.append($0) }
        return routes
    }

    /// Streams the routes that match `filter` to `body` without keeping them.
    ///
    /// - Parameters:
    ///   - filter: Which routes to stream.
    ///   - restart: Called when the kernel interrupted the dump with a change
    ///     (`NLM_F_DUMP_INTR`); the dump starts again and `body` sees every route again.
    ///   - body: Called with each matching route.
    ///
    /// `restart` and `body` run while the connection is in use by the dump: calls on this
    /// connection from other threads wait until it ends, and a call on it from inside them
    /// throws ``NetlinkError/busy`` (use another connection, or collect what you need first).
    public func forEachRoute(_ filter: RouteFilter = .all, restart: () -> Void = {},
                             _ body: (Route) -> Void) throws(NetlinkError) {
        try withSocket { () throws(NetlinkError) in
            streamingThread.store(UInt(pthread_self()), ordering: .relaxed)
            defer { streamingThread.store(0, ordering: .relaxed) }
            try socket.forEachRoute(filter, restart: restart, body)
        }
    }

    /// Asks the kernel how it would route a packet to each of `destinations`, as
    /// ``lookupRoute(to:from:outputLinkIndex:mark:)`` does for one, but with many requests in
    /// each datagram: 10 000 lookups cost a few hundred system calls instead of 20 000.
    ///
    /// - Returns: One result per destination, in the same order.
    public func lookupRoutes(to destinations: [IPAddress]) throws(NetlinkError) -> [RouteLookupResult] {
        guard !destinations.isEmpty else { return [] }
        return try withSocket { () throws(NetlinkError) in try socket.lookupRoutes(to: destinations, fibMatch: false) }
    }

    /// The FIB entry that matched each destination (`RTM_F_FIB_MATCH`, as
    /// `ip route get fibmatch`), asked in batches like ``lookupRoutes(to:)``: each route carries
    /// the entry's own prefix and table and every next hop of a multipath entry, where a plain
    /// lookup answers with the route resolved for the destination alone.
    ///
    /// - Returns: One result per destination, in the same order; errors (unreachable,
    ///   prohibited, blackhole, no route) as for a plain lookup.
    public func lookupFIBEntries(to destinations: [IPAddress]) throws(NetlinkError) -> [RouteLookupResult] {
        guard !destinations.isEmpty else { return [] }
        return try withSocket { () throws(NetlinkError) in try socket.lookupRoutes(to: destinations, fibMatch: true) }
    }

    /// Runs `body` with the socket to itself; throws ``NetlinkError/busy`` on the thread that is
    /// inside a ``forEachRoute(_:restart:_:)`` of this connection.
    private func withSocket<T>(_ body: () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        if streamingThread.load(ordering: .relaxed) == UInt(pthread_self()) {
            throw NetlinkError(code: NetlinkError.busy.code, context: "a call on the connection from inside its own forEachRoute")
        }
        return try lock.withLock(body)
    }

    /// A summary of the policy rules of `family`: a fingerprint that changes with any rule,
    /// and whether a rule has `suppress_ifgroup`.
    package func policyRules(family: AddressFamily) throws(NetlinkError) -> PolicyRuleSummary {
        try withSocket { () throws(NetlinkError) in try socket.policyRules(family: family) }
    }


    /// Asks the kernel how it would route a packet to `destination`, the same question as
    /// `ip route get`: policy rules, marks and the source address all count.
    ///
    /// - Parameters:
    ///   - destination: the target address.
    ///   - source: the source address the packet would carry, if fixed.
    ///   - outputLinkIndex: the link the packet must leave through, if fixed.
    ///   - mark: the firewall mark the packet would carry, for rules that match marks.
    /// - Returns: the matched route, or why there is none.
    public func lookupRoute(to destination: IPAddress, from source: IPAddress? = nil,
                            outputLinkIndex: Int32? = nil, mark: UInt32? = nil) throws(NetlinkError) -> RouteLookupResult {
        try withSocket { () throws(NetlinkError) in
            try socket.lookupRoute(to: destination, from: source, outputLinkIndex: outputLinkIndex, mark: mark)
        }
    }
}


/// What the library needs to know of a family's policy rules (`ip rule`) to tell whether
/// lookups that ended at the same table entry stay alike.
package struct PolicyRuleSummary: Sendable, Hashable {
    /// A hash of every rule's bytes: equal summaries mean, with overwhelming likelihood, an
    /// unchanged rule set.
    package var fingerprint: Int
    /// Whether any rule has `suppress_ifgroup`, which accepts or rejects a table's answer by
    /// the group of its output link.
    package var suppressesByInterfaceGroup: Bool
}
