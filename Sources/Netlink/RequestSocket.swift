import CNetlink
import Glibc

/// One libnl socket for requests (dumps and lookups) in one namespace.
///
/// Not thread-safe: its owner serialises every use (``NetlinkConnection`` with a mutex, the
/// subscription engine by owning it on its thread).
final class RequestSocket {
    let handle: OpaquePointer
    /// Whether the kernel knows strict dump checking (Linux 4.20+), which lets it filter dumps.
    let strictChecking: Bool

    /// A bare socket for route lookups, early-stopping default-route dumps, rules, next-hop
    /// objects and links.
    private let raw: RawRouteSocket

    /// Opens and connects a NETLINK_ROUTE socket in the calling thread's namespace, which must
    /// be `namespace`.
    init(namespace: NetworkNamespace) throws(NetlinkError) {
        raw = try RawRouteSocket(namespace: namespace)
        guard let socket = nl_socket_alloc() else { throw .noMemory }
        let rc = nl_connect(socket, NETLINK_ROUTE)
        if rc < 0 {
            // libnl's code for a failed socket(2) is "unspecific": errno says why (EMFILE, ...).
            let reason = errno
            nl_socket_free(socket)
            throw NetlinkError(code: abs(rc), systemErrno: reason, context: "connect netlink socket")
        }
        // Without this, libnl asks for an ACK after every request; a successful lookup's ACK
        // would then wait in the socket and be read as the answer to the next request. Dumps end
        // with NLMSG_DONE and errors come as NLMSG_ERROR either way.
        nl_socket_disable_auto_ack(socket)
        let strict = cnetlink_setsockopt_int(nl_socket_get_fd(socket), cnetlink_sol_netlink(),
                                             cnetlink_netlink_get_strict_chk(), 0) == 0
        // Full route dumps go through this socket: a large first route must not end one empty.
        // Done before the properties are set: once they all are, a throw runs `deinit`, which
        // would free the socket a second time.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: largestDumpDatagram, alignment: 8)
        defer { buffer.deallocate() }
        do {
            try raiseDumpDatagramSize(of: nl_socket_get_fd(socket), using: buffer)
        } catch {
            nl_socket_free(socket)
            throw error
        }
        handle = socket
        strictChecking = strict
    }

    /// Turns strict checking on for the duration of `body`. It stays off otherwise, because
    /// libnl's own cache requests (an address dump with a bare `rtgenmsg` header) fail under it.
    private func withStrictChecking<T>(_ body: () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        guard strictChecking else { return try body() }
        let fd = nl_socket_get_fd(handle)
        _ = cnetlink_setsockopt_int(fd, cnetlink_sol_netlink(), cnetlink_netlink_get_strict_chk(), 1)
        defer { _ = cnetlink_setsockopt_int(fd, cnetlink_sol_netlink(), cnetlink_netlink_get_strict_chk(), 0) }
        return try body()
    }

    deinit { nl_socket_free(handle) }

    /// The links of the namespace, or only the ports of link `master` (a dump the kernel
    /// filters), sorted by index: a dump read from the kernel's bytes
    /// (``RawRouteSocket/forEachLink(master:_:)``), asked again while a change interrupts it.
    func links(master: Int32? = nil) throws(NetlinkError) -> [Link] {
        var links: [Link] = []
        try repeatingInterruptedDumps(restart: { links.removeAll() }) { () throws(NetlinkError) in
            try raw.forEachLink(master: master) { links.append($0) }
        }
        return links.sorted { $0.index < $1.index }
    }

    /// The alternative names of every link that has some, by index: what libnl 3.7's link
    /// cache does not hold (see ``CacheManager``).
    func alternativeNames() throws(NetlinkError) -> [Int32: [String]] {
        var names: [Int32: [String]] = [:]
        for link in try links() where !link.alternativeNames.isEmpty { names[link.index] = link.alternativeNames }
        return names
    }

    /// The link with index `index` now (`RTM_GETLINK` for it), or nil when there is none.
    func link(index: Int32) throws(NetlinkError) -> Link? {
        try raw.link(index: index)
    }

    /// The link that `name` names now (see ``RawRouteSocket/link(named:)``).
    func link(named name: String) throws(NetlinkError) -> Link? {
        try raw.link(named: name)
    }

    /// The interface addresses of the namespace, through a libnl address cache.
    func addresses() throws(NetlinkError) -> [InterfaceAddress] {
        var cache: OpaquePointer?
        try nlCheck(rtnl_addr_alloc_cache(handle, &cache), "dump addresses")
        defer { nl_cache_free(cache) }
        var addresses: [InterfaceAddress] = []
        forEachObject(in: cache!) { if let address = InterfaceAddress(libnl: $0) { addresses.append(address) } }
        return addresses
    }

    /// Streams the routes that match `filter`, one family at a time, parsing each message with
    /// libnl's route parser and keeping nothing. A dump interrupted by a change
    /// (`NLM_F_DUMP_INTR`) is started again, after `restart` tells the caller to drop what it
    /// has seen.
    ///
    /// Default-route dumps (``RouteFilter/defaultOnly``) go through ``RawRouteSocket``, which
    /// parses only default routes and stops an IPv4 dump once the main table's defaults are past.
    ///
    /// Routes that name a next-hop object without carrying its next hops (outside the kernel's
    /// `nexthop_compat_mode`) are given them from `nexthopObjects`, or, when it is nil or lacks
    /// an object such a route names, from a dump of the objects, which `objectsRead` is given;
    /// they follow the family's other routes, because the objects can be asked for only once
    /// the route dump has ended.
    func forEachRoute(_ filter: RouteFilter, nexthopObjects: [UInt32: NexthopObject]? = nil,
                      objectsRead: ([UInt32: NexthopObject]) -> Void = { _ in },
                      restart: () -> Void = {}, _ body: (Route) -> Void) throws(NetlinkError) {
        var objects = nexthopObjects
        var objectsAreFresh = false
        for family in filter.family.map({ [$0] }) ?? AddressFamily.allCases {
            var lacking: [Route] = []
            func sort(_ route: Route) {
                if route.lacksObjectNexthops { lacking.append(route) } else { body(route) }
            }
            try repeatingInterruptedDumps(restart: {
                lacking.removeAll()
                restart()
            }) { () throws(NetlinkError) in
                if filter.defaultOnly {
                    try raw.forEachDefaultRoute(family: family, filter: filter, sort)
                } else {
                    try withStrictChecking { () throws(NetlinkError) in try dumpRoutes(family: family, filter: filter, sort) }
                }
            }
            guard !lacking.isEmpty else { continue }
            var resolved = lacking
            var allResolved = objects != nil
            if let known = objects {
                for index in resolved.indices {
                    if !resolved[index].takeNexthops(from: known) { allResolved = false }
                }
            }
            if !allResolved, !objectsAreFresh {
                // Objects the caller's table does not have yet (or no table): read them now,
                // and take every route's from them.
                let fresh = try self.nexthopObjects()
                objects = fresh
                objectsAreFresh = true
                objectsRead(fresh)
                resolved = lacking
                for index in resolved.indices { resolved[index].takeNexthops(from: fresh) }
            }
            for route in resolved where filter.matches(route) { body(route) }
        }
    }

    /// The namespace's next-hop objects by id (none before Linux 5.3).
    func nexthopObjects() throws(NetlinkError) -> [UInt32: NexthopObject] {
        var objects: [UInt32: NexthopObject] = [:]
        try repeatingInterruptedDumps(restart: { objects.removeAll() }) { () throws(NetlinkError) in
            try raw.forEachNexthopObject { objects[$0.id] = $0 }
        }
        return objects
    }

    private func dumpRoutes(family: AddressFamily, filter: RouteFilter, _ body: (Route) -> Void) throws(NetlinkError) {
        guard let message = nlmsg_alloc_simple(Int32(RTM_GETROUTE), NLM_F_DUMP) else { throw .noMemory }
        defer { nlmsg_free(message) }
        // Without strict checking the kernel reads only the family; the filter applies here.
        let request = (strictChecking ? filter : RouteFilter()).dumpRequest(family: family)
        var header = request.header
        try nlCheck(nlmsg_append(message, &header, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO)), "build route dump")
        for attribute in request.attributes {
            try nlCheck(nla_put_u32(message, Int32(attribute.type), attribute.value), "build route dump")
        }
        try nlCheck(nl_send_auto(handle, message), "send route dump")
        // The kernel fills dump datagrams up to 32 KiB once it has seen a reader that large: one
        // recvmsg per datagram into a 64 KiB buffer, instead of libnl's MSG_PEEK round trip.
        nl_socket_set_msg_buf_size(handle, 64 * 1024)
        defer { nl_socket_set_msg_buf_size(handle, 0) }
        try withoutActuallyEscaping(body) { (escapable) throws(NetlinkError) in
            try RouteReceiver(filter: filter, body: escapable).receive(on: handle, context: "route dump")
        }
    }

    /// The soonest expiry of a default route that a dump read since the last call, if any
    /// expires (see ``RawRouteSocket/takeSoonestExpiry()``).
    func takeSoonestExpiry() -> ContinuousClock.Instant? { raw.takeSoonestExpiry() }

    /// The kernel's route for each destination, asked in batches (see ``RawRouteSocket``).
    ///
    /// A FIB entry (`fibMatch`) that names a next-hop object without its next hops is given
    /// them from a dump of the objects.
    func lookupRoutes(to destinations: [IPAddress], fibMatch: Bool) throws(NetlinkError) -> [RouteLookupResult] {
        var results = try raw.lookupRoutes(to: destinations, fibMatch: fibMatch)
        guard results.contains(where: { if case .route(let route) = $0 { route.lacksObjectNexthops } else { false } })
        else { return results }
        let objects = try nexthopObjects()
        for index in results.indices {
            if case .route(var route) = results[index], route.lacksObjectNexthops {
                route.takeNexthops(from: objects)
                results[index] = .route(route)
            }
        }
        return results
    }

    /// A summary of the policy rules of `family`.
    func policyRules(family: AddressFamily) throws(NetlinkError) -> PolicyRuleSummary {
        try raw.policyRules(family: family)
    }

    /// The policy rules of each family, in the kernel's order. A family whose kernel has no
    /// policy routing (no `CONFIG_IP_MULTIPLE_TABLES`) has no entry.
    func rules() throws(NetlinkError) -> [AddressFamily: [PolicyRule]] {
        var rules: [AddressFamily: [PolicyRule]] = [:]
        for family in AddressFamily.allCases {
            do {
                rules[family] = try raw.rules(family: family)
            } catch where error.systemErrno == EOPNOTSUPP || error.systemErrno == EAFNOSUPPORT {
                continue
            }
        }
        return rules
    }

    /// Asks the kernel how it would route a packet to `destination` (RTM_GETROUTE, as
    /// `ip route get`; policy rules apply), on the bare socket: one datagram each way.
    func lookupRoute(to destination: IPAddress, from source: IPAddress?, outputLinkIndex: Int32?,
                     mark: UInt32?) throws(NetlinkError) -> RouteLookupResult {
        if let source, source.family != destination.family {
            throw NetlinkError(code: NetlinkError.invalidAddress.code, context: "source \(source) and destination \(destination) differ in family")
        }
        return try raw.lookupRoute(to: destination, from: source, outputLinkIndex: outputLinkIndex, mark: mark)
    }
}

/// Receives the answer to one request on a libnl socket, turning route messages into values and
/// keeping the kernel's own `errno` of an error reply.
private final class RouteReceiver {
    let filter: RouteFilter
    let body: (Route) -> Void
    var kernelErrno: Int32 = 0
    var interrupted = false

    init(filter: RouteFilter, body: @escaping (Route) -> Void) {
        self.filter = filter
        self.body = body
    }

    func receive(on socket: OpaquePointer, context: String) throws(NetlinkError) {
        guard let callbacks = nl_cb_alloc(NL_CB_DEFAULT) else { throw .noMemory }
        defer { nl_cb_put(callbacks) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        nl_cb_set(callbacks, NL_CB_VALID, NL_CB_CUSTOM, { message, argument in
            let receiver = Unmanaged<RouteReceiver>.fromOpaque(argument!).takeUnretainedValue()
            let header = nlmsg_hdr(message)!
            let type = Int32(header.pointee.nlmsg_type)
            guard type == RTM_NEWROUTE, let route = Route(message: header) else { return Int32(NL_SKIP.rawValue) }
            if receiver.filter.admits(route) { receiver.body(route) }
            return Int32(NL_OK.rawValue)
        }, me)
        nl_cb_set(callbacks, NL_CB_DUMP_INTR, NL_CB_CUSTOM, { _, argument in
            Unmanaged<RouteReceiver>.fromOpaque(argument!).takeUnretainedValue().interrupted = true
            return Int32(NL_OK.rawValue)
        }, me)
        nl_cb_err(callbacks, NL_CB_CUSTOM, { _, error, argument in
            Unmanaged<RouteReceiver>.fromOpaque(argument!).takeUnretainedValue().kernelErrno = -error!.pointee.error
            return Int32(NL_STOP.rawValue)
        }, me)
        let rc = withExtendedLifetime(self) { nl_recvmsgs(socket, callbacks) }
        // A reply cut short (an error before NLMSG_DONE) must not be read as the next request's.
        if rc < 0 || kernelErrno != 0 || interrupted { drainDescriptor(nl_socket_get_fd(socket)) }
        if kernelErrno != 0 {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: kernelErrno, context: context)
        }
        if rc < 0 { throw NetlinkError(libnlCode: rc, context: context) }
        if interrupted { throw NetlinkError(code: NetlinkError.dumpInterrupted.code, context: context) }
    }
}

/// Reads and throws away whatever waits on a netlink socket, without blocking. A pending
/// ENOBUFS is consumed too (the caller is about to re-read the state anyway).
func drainDescriptor(_ fd: Int32) {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if n > 0 || (n < 0 && (errno == EINTR || errno == ENOBUFS)) { continue }
        return
    }
}
