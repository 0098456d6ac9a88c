import CNetlink
import Glibc

/// libnl sockets for requests in one namespace: dumps, lookups and libnl's own cache re-reads.
/// Every request is built with libnl's message API (`nlmsg_alloc_simple`, `nla_put_*`) and every
/// answer is read by `nl_recvmsgs` and parsed by libnl.
///
/// Two sockets: ``handle`` for everything read to its end, and one for IPv4 default-route dumps,
/// which stop early (see ``forEachDefaultRoute(family:filter:_:)``): closing a socket is the
/// only way to end a netlink dump, so that one is replaced after a dump it stopped.
///
/// Not thread-safe: its owner serialises every use (``NetlinkConnection`` with a lock, the
/// subscription engine by owning it on its thread).
final class RequestSocket {
    /// The socket of lookups, link, address, rule and next-hop requests, full route dumps and
    /// libnl's cache re-reads (`nl_cache_resync`).
    let handle: OpaquePointer
    /// Whether the kernel knows strict dump checking (Linux 4.20+), which lets it filter dumps.
    let strictChecking: Bool
    /// The socket of IPv4 default-route dumps; nil after a dump it stopped, until the next.
    private var dumpSocket: OpaquePointer?
    /// How many IPv4 dump sockets were opened: the first, and one after each dump stopped while
    /// the kernel was still dumping (for tests).
    private(set) var dumpSocketsOpened = 0
    /// The namespace the sockets live in, held open (-1 for the current namespace): a new dump
    /// socket is opened in that very namespace, even once its name is gone.
    private let namespaceDescriptor: Int32
    private let namespace: NetworkNamespace
    /// The soonest expiry of a default route the dumps read since ``takeSoonestExpiry()``.
    private var soonestExpiry: ContinuousClock.Instant?
    /// How many lookups may be in flight at once. Each answer takes a few KiB of the receive
    /// buffer until it is read; if the buffer overflows anyway, the window halves and the
    /// unanswered lookups are sent again.
    private var lookupWindow = 64

    /// Opens the sockets. Call it on a thread that is inside `namespace` (or with a namespace
    /// that is the current one).
    init(namespace: NetworkNamespace) throws(NetlinkError) {
        self.namespace = namespace
        var descriptor: Int32 = -1
        if !namespace.isCurrent {
            descriptor = DescriptorCreation.serialized { open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC) }
            guard descriptor >= 0 else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "open own namespace")
            }
        }
        let socket: OpaquePointer
        do {
            // Batched lookup answers wait in the receive buffer until read.
            socket = try Self.openSocket(receiveBuffer: 1 << 20)
        } catch {
            if descriptor >= 0 { close(descriptor) }
            throw error
        }
        handle = socket
        namespaceDescriptor = descriptor
        strictChecking = Self.setStrictChecking(of: socket, false)
    }

    deinit {
        nl_socket_free(handle)
        if let dumpSocket { nl_socket_free(dumpSocket) }
        if namespaceDescriptor >= 0 { close(namespaceDescriptor) }
    }

    /// A connected libnl socket in the calling thread's namespace: no automatic
    /// acknowledgements (a lookup's would be read as the next request's answer), no sequence
    /// check of libnl's (answers are matched to their requests here, several may be in
    /// flight), and reads of 32 KiB, the most a dump datagram holds (see ``withPeeking(_:)``
    /// for the link messages that can be larger).
    private static func openSocket(receiveBuffer: Int) throws(NetlinkError) -> OpaquePointer {
        guard let socket = nl_socket_alloc() else { throw .noMemory }
        let rc = DescriptorCreation.serialized { nl_connect(socket, NETLINK_ROUTE) }
        if rc < 0 {
            // libnl's code for a failed socket(2) is "unspecific": errno says why (EMFILE, ...).
            let reason = errno
            nl_socket_free(socket)
            throw NetlinkError(code: abs(rc), systemErrno: reason, context: "connect netlink socket")
        }
        nl_socket_disable_auto_ack(socket)
        nl_socket_disable_seq_check(socket)
        setReceiveBuffer(of: nl_socket_get_fd(socket), to: receiveBuffer)
        do {
            try raiseDumpDatagramSize(of: socket)
        } catch {
            nl_socket_free(socket)
            throw error
        }
        return socket
    }

    /// Makes the kernel fill this socket's dump datagrams to the largest size from the first one
    /// on. The kernel sizes a dump's datagrams by the largest read the socket has done so far,
    /// and a new socket has done none: the first datagram of its first dump holds about 3.7 KiB
    /// (`NLMSG_GOODSIZE`), and a first route larger than that (a multipath route of some 230
    /// IPv4 next hops) ends the dump at once, as if the table were empty. So libnl reads with 32
    /// KiB from the start, and one acknowledged no-op is read before any dump.
    private static func raiseDumpDatagramSize(of socket: OpaquePointer) throws(NetlinkError) {
        nl_socket_set_msg_buf_size(socket, 32 * 1024)
        // One read per datagram: peeking at each one's size first costs a lookup a third
        // system call (lookups took 2.8x the bare-C floor with it; BENCHMARKS.md).
        nl_socket_disable_msg_peek(socket)
        try nlCheck(nl_send_simple(socket, Int32(NLMSG_NOOP), NLM_F_ACK, nil, 0), "send netlink no-op")
        try nlCheck(nl_wait_for_ack(socket), "read netlink no-op acknowledgement")
    }

    /// The IPv4 dump socket, opened again in the namespace after a dump it stopped.
    private func ipv4DumpSocket() throws(NetlinkError) -> OpaquePointer {
        if let dumpSocket { return dumpSocket }
        // Its receive buffer holds less than one dump datagram, so the kernel fills a dump's
        // next datagram only once the last one is taken: a dump stopped early leaves the kernel
        // with no more to fill.
        let opened: UnsafeTransfer<OpaquePointer>
        if namespaceDescriptor < 0 {
            opened = UnsafeTransfer(try Self.openSocket(receiveBuffer: 1))
        } else {
            opened = try NetworkNamespace.perform(in: namespaceDescriptor, description: namespace.description) {
                () throws(NetlinkError) in UnsafeTransfer(try Self.openSocket(receiveBuffer: 1))
            }
        }
        // Strict checking, so that the kernel dumps only the table asked for (or refuses a
        // table that does not exist); without it (before Linux 4.20) every table is read.
        Self.setStrictChecking(of: opened.value, true)
        dumpSocket = opened.value
        dumpSocketsOpened += 1
        return opened.value
    }

    /// Runs `body` with libnl peeking at each datagram's size before it reads it, so that a
    /// datagram larger than 32 KiB is read whole: a link message with hundreds of alternative
    /// names, in link requests and dumps and in libnl's re-read of its link cache.
    func withPeeking<T>(_ body: (OpaquePointer) throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        nl_socket_enable_msg_peek(handle)
        defer { nl_socket_disable_msg_peek(handle) }
        return try body(handle)
    }

    // MARK: Sending and receiving

    /// Sends `message` (freeing it) and returns its sequence number.
    private func send(_ message: OpaquePointer, on socket: OpaquePointer, context: @autoclosure () -> String) throws(NetlinkError) -> UInt32 {
        defer { nlmsg_free(message) }
        try nlCheck(nl_send_auto(socket, message), "send \(context())")
        return nlmsg_hdr(message).pointee.nlmsg_seq
    }

    /// A request of `type` with `header` as its payload, and room for its attributes.
    private func request<Header: BitwiseCopyable>(_ type: Int32, flags: Int32 = 0, header: Header) throws(NetlinkError) -> OpaquePointer {
        // `nlmsg_alloc_simple` clears a page for every message: that was a third of a lookup's
        // instructions, and a request needs a few hundred bytes (a name, two addresses).
        guard let message = nlmsg_alloc_size(512) else { throw .noMemory }
        guard nlmsg_put(message, UInt32(NL_AUTO_PORT), UInt32(NL_AUTO_SEQ), type, 0, flags | NLM_F_REQUEST) != nil else {
            nlmsg_free(message)
            throw .noMemory
        }
        var header = header
        guard nlmsg_append(message, &header, MemoryLayout<Header>.size, Int32(NLMSG_ALIGNTO)) >= 0 else {
            nlmsg_free(message)
            throw .noMemory
        }
        return message
    }

    /// Reads answers on `socket` with `nl_recvmsgs` until `handle` returns `.stop`, the dump's
    /// `NLMSG_DONE`, or, for an answer that is not a dump, the end of its datagram. `handle` gets
    /// each message and each error reply; a failure of the read itself is thrown.
    ///
    /// - Returns: Whether the kernel marked the dump interrupted (`NLM_F_DUMP_INTR`), and whether
    ///   its end was read (if not, the dump may still be running).
    @discardableResult
    private func receive(on socket: OpaquePointer, context: @autoclosure () -> String,
                         _ handle: (Answer) throws(NetlinkError) -> Reading) throws(NetlinkError) -> (interrupted: Bool, ended: Bool) {
        try withoutActuallyEscaping(handle) { (handle) throws(NetlinkError) in
            let receiver = Receiver(handle)
            guard let callbacks = nl_cb_alloc(NL_CB_DEFAULT) else { throw .noMemory }
            defer { nl_cb_put(callbacks) }
            let me = Unmanaged.passUnretained(receiver).toOpaque()
            nl_cb_set(callbacks, NL_CB_VALID, NL_CB_CUSTOM, { message, argument in
                Unmanaged<Receiver>.fromOpaque(argument!).takeUnretainedValue().deliver(.message(message!))
            }, me)
            nl_cb_set(callbacks, NL_CB_FINISH, NL_CB_CUSTOM, { message, argument in
                let receiver = Unmanaged<Receiver>.fromOpaque(argument!).takeUnretainedValue()
                receiver.ended = true
                // A dump the kernel refused at its start (a table that does not exist) ends
                // with its errno in `NLMSG_DONE`, which libnl does not read.
                let header = nlmsg_hdr(message)!
                if Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<Int32>.size {
                    let code = nlmsg_data(header)!.loadUnaligned(as: Int32.self)
                    if code < 0 { _ = receiver.deliver(.error(sequence: header.pointee.nlmsg_seq, errno: -code)) }
                }
                return Int32(NL_STOP.rawValue)
            }, me)
            nl_cb_set(callbacks, NL_CB_DUMP_INTR, NL_CB_CUSTOM, { _, argument in
                Unmanaged<Receiver>.fromOpaque(argument!).takeUnretainedValue().interrupted = true
                return Int32(NL_OK.rawValue)
            }, me)
            nl_cb_err(callbacks, NL_CB_CUSTOM, { _, error, argument in
                let receiver = Unmanaged<Receiver>.fromOpaque(argument!).takeUnretainedValue()
                return receiver.deliver(.error(sequence: error!.pointee.msg.nlmsg_seq, errno: -error!.pointee.error))
            }, me)
            let rc = withExtendedLifetime(receiver) { nl_recvmsgs(socket, callbacks) }
            if let failure = receiver.failure { throw failure }
            if rc < 0 { throw NetlinkError(libnlCode: rc, context: context()) }
            return (receiver.interrupted, receiver.ended)
        }
    }

    /// One message of an answer, or an error reply.
    private enum Answer {
        case message(OpaquePointer)
        case error(sequence: UInt32, errno: Int32)
    }

    /// Whether to read on after a message.
    private enum Reading { case next, stop }

    /// What libnl's callbacks of one ``receive(on:context:_:)`` share.
    private final class Receiver {
        let handle: (Answer) throws(NetlinkError) -> Reading
        var interrupted = false
        var ended = false
        var failure: NetlinkError?

        init(_ handle: @escaping (Answer) throws(NetlinkError) -> Reading) { self.handle = handle }

        /// Hands `answer` to the handler. An error reply is skipped rather than stopped at:
        /// libnl turns a stop there into a failure of the whole read; the answer it belongs to
        /// ends with its datagram anyway.
        func deliver(_ answer: Answer) -> Int32 {
            do {
                let reading = try handle(answer)
                if case .error = answer { return Int32(NL_SKIP.rawValue) }
                return reading == .next ? Int32(NL_OK.rawValue) : Int32(NL_STOP.rawValue)
            } catch {
                failure = error
                return Int32(NL_STOP.rawValue)
            }
        }
    }

    /// Sends a dump request and hands `body` each message of the answer (of type `answer`).
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump, for the
    ///   caller to ask again; or the kernel's error.
    private func dump(_ message: OpaquePointer, answer: Int32, context: @autoclosure () -> String,
                      _ body: (OpaquePointer) throws(NetlinkError) -> Void) throws(NetlinkError) {
        let sequence = try send(message, on: handle, context: context())
        let outcome = try receive(on: handle, context: context()) { (answered) throws(NetlinkError) -> Reading in
            switch answered {
            case .message(let message):
                let header = nlmsg_hdr(message)!
                if header.pointee.nlmsg_seq == sequence, Int32(header.pointee.nlmsg_type) == answer { try body(message) }
            case .error(let seq, let code):
                guard seq == sequence else { return .next }
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context())
            }
            return .next
        }
        if outcome.interrupted { throw .dumpInterrupted }
    }

    // MARK: Links and addresses

    /// The `IFLA_EXT_MASK` of link requests: `RTEXT_FILTER_SKIP_STATS` (Linux 4.20; an older
    /// kernel ignores it), so that the kernel leaves out the statistics, which no ``Link``
    /// holds.
    private static let linkExtensionMask: UInt32 = 1 << 3

    /// The links of the namespace, or only the ports of link `master` (a dump the kernel
    /// filters by `IFLA_MASTER`, Linux 4.4+; the filter is applied here as well), sorted by
    /// index, asked again while a change interrupts the dump.
    func links(master: Int32? = nil) throws(NetlinkError) -> [Link] {
        var links: [Link] = []
        try forEachLinkMessage(master: master, restart: { links.removeAll() }) { message in
            if let link = Link(message: message), master == nil || link.masterIndex == master { links.append(link) }
        }
        return links.sorted { $0.index < $1.index }
    }

    /// Dumps the links, or the ports of link `master`, and hands `body` each link message;
    /// asked again, after `restart`, while a change interrupts the dump.
    private func forEachLinkMessage(master: Int32? = nil, restart: () -> Void,
                                    _ body: (OpaquePointer) -> Void) throws(NetlinkError) {
        try repeatingInterruptedDumps(restart: restart) { () throws(NetlinkError) in
            let message = try request(Int32(RTM_GETLINK), flags: NLM_F_DUMP, header: ifinfomsg())
            nla_put_u32(message, Int32(IFLA_EXT_MASK), Self.linkExtensionMask)
            if let master { nla_put_u32(message, Int32(IFLA_MASTER), UInt32(bitPattern: master)) }
            try withPeeking { _ throws(NetlinkError) in
                try dump(message, answer: Int32(RTM_NEWLINK), context: master == nil ? "link dump" : "dump of link \(master!)'s ports") { body($0) }
            }
        }
    }

    /// The alternative names of every link that has some, by index: what libnl 3.7's link
    /// cache does not hold (see ``CacheManager``). Only the names are read: libnl's cache holds
    /// the rest, and its parse of every link message is not done a second time.
    func alternativeNames() throws(NetlinkError) -> [Int32: [String]] {
        var names: [Int32: [String]] = [:]
        try forEachLinkMessage(restart: { names.removeAll() }) { message in
            guard let header = nlmsg_hdr(message), let link = Link.header(of: header), link.ifi_family == AF_UNSPEC,
                  case let found = Link.alternativeNames(message: header), !found.isEmpty else { return }
            names[link.ifi_index] = found
        }
        return names
    }

    /// The link with index `index` now (`RTM_GETLINK` for it), or nil when there is none.
    func link(index: Int32) throws(NetlinkError) -> Link? {
        // No link has an index of 0 or less (the kernel answers such a request with EINVAL).
        guard index > 0 else { return nil }
        var header = ifinfomsg()
        header.ifi_index = index
        return try askLink(try request(Int32(RTM_GETLINK), header: header), context: "link \(index)")
    }

    /// The link that `name` names now, its name or one of its alternative names, as the kernel
    /// finds it (`IFLA_IFNAME`, or `IFLA_ALT_IFNAME` for a name longer than a link's name can
    /// be, Linux 5.5+), or nil when no link has that name. A name that no link can have (empty,
    /// over 127 bytes, with a NUL) is not asked for.
    func link(named name: String) throws(NetlinkError) -> Link? {
        let length = name.utf8.count
        guard length > 0, length <= Link.longestAlternativeName, !name.utf8.contains(0) else { return nil }
        let message = try request(Int32(RTM_GETLINK), header: ifinfomsg())
        nla_put_string(message, Int32(length > Link.longestName ? IFLA_ALT_IFNAME : IFLA_IFNAME), name)
        do {
            return try askLink(message, context: "link \(name)")
        } catch where length > Link.longestName && error.systemErrno == EINVAL {
            // A kernel before alternative names does not know `IFLA_ALT_IFNAME`, and no link
            // there has a name that long.
            return nil
        }
    }

    /// Sends the link request `message` and reads its answer: the link, or nil for `ENODEV`.
    private func askLink(_ message: OpaquePointer, context: @autoclosure () -> String) throws(NetlinkError) -> Link? {
        nla_put_u32(message, Int32(IFLA_EXT_MASK), Self.linkExtensionMask)
        let sequence = try send(message, on: handle, context: context())
        var link: Link?
        var answered = false
        nl_socket_enable_msg_peek(handle)
        defer { nl_socket_disable_msg_peek(handle) }
        while !answered {
            try receive(on: handle, context: context()) { (answer) throws(NetlinkError) -> Reading in
                switch answer {
                case .message(let message):
                    guard nlmsg_hdr(message).pointee.nlmsg_seq == sequence,
                          Int32(nlmsg_hdr(message).pointee.nlmsg_type) == Int32(RTM_NEWLINK) else { return .next }
                    guard let read = Link(message: message) else { throw NetlinkError(code: Int32(NLE_PARSE_ERR), context: context()) }
                    link = read
                case .error(let seq, let code):
                    guard seq == sequence else { return .next }
                    guard code == ENODEV else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context()) }
                }
                answered = true
                return .stop
            }
        }
        return link
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

    // MARK: Policy rules and next-hop objects

    /// The policy rules of each family, in the kernel's order. A family whose kernel has no
    /// policy routing (no `CONFIG_IP_MULTIPLE_TABLES`) has no entry.
    func rules() throws(NetlinkError) -> [AddressFamily: [PolicyRule]] {
        var rules: [AddressFamily: [PolicyRule]] = [:]
        for family in AddressFamily.allCases {
            do {
                rules[family] = try self.rules(family: family)
            } catch where error.systemErrno == EOPNOTSUPP || error.systemErrno == EAFNOSUPPORT {
                continue
            }
        }
        return rules
    }

    /// The policy rules of `family`, in the kernel's order (by priority), as libnl's rule
    /// objects.
    func rules(family: AddressFamily) throws(NetlinkError) -> [PolicyRule] {
        var rules: [PolicyRule] = []
        try repeatingInterruptedDumps(restart: { rules.removeAll() }) { () throws(NetlinkError) in
            var header = fib_rule_hdr()
            header.family = family.rawValue
            let message = try request(Int32(RTM_GETRULE), flags: NLM_F_DUMP, header: header)
            try dump(message, answer: Int32(RTM_NEWRULE), context: "rule dump") { message in
                if let rule = PolicyRule(message: message), rule.family == family { rules.append(rule) }
            }
        }
        return rules
    }

    /// A summary of the policy rules of `family`: a fingerprint of the rule set (it changes
    /// when a rule is added, removed or changed in what ``PolicyRule`` holds), and whether any
    /// rule has `suppress_ifgroup`, which rejects a table's answer by the group of its output
    /// link, so that two lookups that end at the same table entry can fare differently.
    func policyRules(family: AddressFamily) throws(NetlinkError) -> PolicyRuleSummary {
        let rules = try rules(family: family)
        var hasher = Hasher()
        hasher.combine(rules)
        return PolicyRuleSummary(fingerprint: hasher.finalize(),
                                 suppressesByInterfaceGroup: rules.contains { $0.suppressInterfaceGroup != nil })
    }

    /// The namespace's next-hop objects by id (none before Linux 5.3).
    func nexthopObjects() throws(NetlinkError) -> [UInt32: NexthopObject] {
        var objects: [UInt32: NexthopObject] = [:]
        do {
            try repeatingInterruptedDumps(restart: { objects.removeAll() }) { () throws(NetlinkError) in
                let message = try request(Int32(RTM_GETNEXTHOP), flags: NLM_F_DUMP, header: nhmsg())
                try dump(message, answer: Int32(RTM_NEWNEXTHOP), context: "next-hop dump") { message in
                    if let object = NexthopObject(message: nlmsg_hdr(message)) { objects[object.id] = object }
                }
            }
        } catch where error.systemErrno == EOPNOTSUPP {
            return [:]
        }
        return objects
    }

    // MARK: Routes

    /// Streams the routes that match `filter`, one family at a time, keeping nothing. A dump
    /// interrupted by a change (`NLM_F_DUMP_INTR`) is started again, after `restart` tells the
    /// caller to drop what it has seen.
    ///
    /// Default-route dumps (``RouteFilter/defaultOnly``) parse only default routes and stop an
    /// IPv4 dump once the main table's defaults are past (see
    /// ``forEachDefaultRoute(family:filter:_:)``).
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
                    try forEachDefaultRoute(family: family, filter: filter, sort)
                } else {
                    try dumpRoutes(family: family, filter: filter, sort)
                }
            }
            guard !lacking.isEmpty else { continue }
            var resolved = lacking
            var allResolved = objects != nil
            if let known = objects {
                for index in resolved.indices where !resolved[index].takeNexthops(from: known) { allResolved = false }
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

    /// A whole dump of the routes of `family` that `filter` selects: with strict checking the
    /// kernel applies the table, type, protocol and output link itself; the filter is applied
    /// here as well.
    private func dumpRoutes(family: AddressFamily, filter: RouteFilter, _ body: (Route) -> Void) throws(NetlinkError) {
        let message = try routeDumpRequest(strictChecking ? filter : RouteFilter(), family: family)
        try withStrictChecking { () throws(NetlinkError) in
            try dump(message, answer: Int32(RTM_NEWROUTE), context: "route dump") { message in
                if let route = Route(message: nlmsg_hdr(message)), filter.admits(route) { body(route) }
            }
        }
    }

    /// Turns strict checking on for the duration of `body`. It stays off otherwise, because
    /// libnl's own cache requests (an address dump with a bare `rtgenmsg` header) fail under it.
    private func withStrictChecking<T>(_ body: () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        guard strictChecking else { return try body() }
        Self.setStrictChecking(of: handle, true)
        defer { Self.setStrictChecking(of: handle, false) }
        return try body()
    }

    /// Turns the kernel's strict checking of requests on `socket` on or off
    /// (`NETLINK_GET_STRICT_CHK`, Linux 4.20+). Returns whether the kernel knows it.
    @discardableResult
    private static func setStrictChecking(of socket: OpaquePointer, _ on: Bool) -> Bool {
        cnetlink_setsockopt_int(nl_socket_get_fd(socket), cnetlink_sol_netlink(), cnetlink_netlink_get_strict_chk(), on ? 1 : 0) == 0
    }

    /// A dump request for the routes of `family` with the filters the kernel applies (see
    /// ``RouteFilter/dumpRequest(family:)``).
    private func routeDumpRequest(_ filter: RouteFilter, family: AddressFamily) throws(NetlinkError) -> OpaquePointer {
        let request = filter.dumpRequest(family: family)
        let message = try self.request(Int32(RTM_GETROUTE), flags: NLM_F_DUMP, header: request.header)
        for attribute in request.attributes { nla_put_u32(message, Int32(attribute.type), attribute.value) }
        return message
    }

    /// Streams the default routes of `family` that `filter` selects, with the halves of the
    /// address space (see ``Route/isDefaultOrHalf``).
    ///
    /// An IPv4 dump stops early: the kernel dumps each IPv4 table in ascending key order, tables
    /// in the order of their hash bucket (table id modulo 256, the oldest table of a bucket
    /// last), so once a route of the main table (254) with a non-zero destination arrives, every
    /// default route of the main table and of every table in the buckets before it has been
    /// seen (`0.0.0.0/1` shares the default route's key, and comes just before it). Only bucket
    /// 255 is left unread: the local table, and any table whose id is 255 modulo 256 (511,
    /// 767, ...), which the policy rules name when routing uses it; each of those is then
    /// dumped by name. A dump of one named table stops at that table's first other route. On a
    /// host with a full Internet table this reads one datagram instead of a million routes. So
    /// an IPv4 request names at most the table, and the rest of `filter` is applied here: a
    /// filter the kernel applies makes it walk on past the routes it leaves out. When the table
    /// where the dump would stop holds `0.0.0.0/1`, the dump goes on to its other half,
    /// `128.0.0.0/1`, past every route of a lower key (half of a full Internet table).
    ///
    /// The IPv4 routes get their ``Route/tieOrder`` from the dump, which lists the routes of one
    /// prefix part in the kernel's order, whatever `filter` leaves out.
    ///
    /// IPv6 dumps walk their tree children first, so the default route comes last and the dump
    /// is read to its end; there the kernel applies the whole filter.
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump (the caller
    ///   starts again), or the kernel's error.
    func forEachDefaultRoute(family: AddressFamily, filter: RouteFilter, _ body: (Route) -> Void) throws(NetlinkError) {
        // A request for table 0 (unspecified) dumps every table, as one without a table.
        let namedTable = filter.table == .unspecified ? nil : filter.table
        let socket = family == .ipv4 ? try ipv4DumpSocket() : handle
        let requested = family == .ipv4 ? RouteFilter(family: family, table: filter.table) : filter
        let stopTable = (namedTable ?? .main).rawValue
        let message = try routeDumpRequest(requested, family: family)
        let sequence = try send(message, on: socket, context: "default route dump")
        var stopped = false
        // The stop table's routes past this destination (host order) are past the kept ones.
        var keptUpTo: UInt32 = 0
        var tiePositions: [Route.Key: Int] = [:]
        func dumped() throws(NetlinkError) -> (interrupted: Bool, ended: Bool) {
            try self.receive(on: socket, context: "default route dump") { (answer) throws(NetlinkError) -> Reading in
                switch answer {
                case .message(let message):
                    let header = nlmsg_hdr(message)!
                    guard header.pointee.nlmsg_seq == sequence, Int32(header.pointee.nlmsg_type) == Int32(RTM_NEWROUTE) else { return .next }
                    switch Self.classify(header, family: family, stopTable: stopTable, keptUpTo: keptUpTo) {
                    case .keptRoute:
                        guard let (parsed, remainingLifetime) = Route.parse(message: header) else { return .next }
                        var route = parsed
                        if family == .ipv4 {
                            route.tieOrder = tiePositions[route.key.prefixPart, default: 0]
                            tiePositions[route.key.prefixPart] = route.tieOrder + 1
                            if route.table.rawValue == stopTable, route.destination == .lowerIPv4Half {
                                keptUpTo = IPv4Address(128, 0, 0, 0).rawValue
                            }
                        }
                        if filter.admits(route) {
                            if let lifetime = remainingLifetime {
                                // Expired: the kernel's lookups pass it over; its deletion comes later.
                                guard lifetime > .zero else { return .next }
                                self.soonestExpiry.keepEarliest(.now + lifetime)
                            }
                            body(route)
                        }
                    case .other:
                        break
                    case .pastKeptRoutes:
                        stopped = true
                        return .stop
                    }
                case .error(let seq, let code):
                    guard seq == sequence else { return .next }
                    throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: "default route dump")
                }
                return .next
            }
        }
        let outcome: (interrupted: Bool, ended: Bool)
        do {
            outcome = try strictChecking && family == .ipv6 ? withStrictChecking(dumped) : dumped()
        } catch {
            if socket != handle { abandonDumpSocket() }
            throw error
        }
        // A dump stopped early may still be running in the kernel: its socket goes.
        if !outcome.ended, socket != handle { abandonDumpSocket() }
        if outcome.interrupted { throw .dumpInterrupted }
        // Stopped in the main table of a dump of every table: the tables after it, by name.
        guard stopped, namedTable == nil else { return }
        for rule in try rules(family: family)
        where rule.table.rawValue % 256 == 255 && rule.table != .local && rule.table != .unspecified {
            var byName = filter
            byName.table = rule.table
            try forEachDefaultRoute(family: family, filter: byName, body)
        }
    }

    private func abandonDumpSocket() {
        if let dumpSocket { nl_socket_free(dumpSocket) }
        dumpSocket = nil
    }

    private enum RouteMessageKind { case keptRoute, other, pastKeptRoutes }

    /// Reads only the header, table and destination of a route message (libnl's attribute
    /// parser): is it a default route or a half of the address space, or an IPv4 route of
    /// `stopTable` (the main table, or the one table dumped) whose destination is past
    /// `keptUpTo` (host order), so past that table's kept routes?
    private static func classify(_ header: UnsafeMutablePointer<nlmsghdr>, family: AddressFamily,
                                 stopTable: UInt32, keptUpTo: UInt32) -> RouteMessageKind {
        guard Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<rtmsg>.size,
              let attributes = AttributeTable(message: header, headerSize: MemoryLayout<rtmsg>.size,
                                              policy: classifyingAttributes) else { return .other }
        let message = nlmsg_data(header)!.loadUnaligned(as: rtmsg.self)
        if message.rtm_dst_len <= 1 { return .keptRoute }
        guard family == .ipv4 else { return .other }
        let table = attributes.u32(RTA_TABLE.rawValue) ?? UInt32(message.rtm_table)
        let destination = attributes.u32(RTA_DST.rawValue).map { UInt32(bigEndian: $0) } ?? 0
        return table == stopTable && destination > keptUpTo ? .pastKeptRoutes : .other
    }

    private static let classifyingAttributes = AttributePolicy(maxType: Int32(RTA_TABLE.rawValue), [
        Int32(RTA_TABLE.rawValue): (.u32, 4),
        Int32(RTA_DST.rawValue): (.u32, 4),
    ])

    /// The soonest expiry of a default route read by a dump since the last call, if any
    /// expires; the next call starts afresh.
    func takeSoonestExpiry() -> ContinuousClock.Instant? {
        defer { soonestExpiry = nil }
        return soonestExpiry
    }

    // MARK: Lookups

    /// An `RTM_GETROUTE` request for `destination`, as `ip route get` sends it.
    private func lookupRequest(to destination: IPAddress, from source: IPAddress?, outputLinkIndex: Int32?,
                               mark: UInt32?, fibMatch: Bool) throws(NetlinkError) -> OpaquePointer {
        var header = rtmsg()
        header.rtm_family = destination.family.rawValue
        header.rtm_dst_len = destination.family.bitWidth
        if let source { header.rtm_src_len = source.family.bitWidth }
        // IPv4 names the table of its answer only when asked; IPv6 always does, and refuses the
        // flag under strict checking.
        if destination.family == .ipv4 { header.rtm_flags = UInt32(RTM_F_LOOKUP_TABLE) }
        if fibMatch { header.rtm_flags |= UInt32(RTM_F_FIB_MATCH) }
        let message = try request(Int32(RTM_GETROUTE), header: header)
        func put(_ type: UInt32, _ address: IPAddress) {
            let octets = address.octets
            octets.withUnsafeBytes { _ = nla_put(message, Int32(type), Int32($0.count), $0.baseAddress) }
        }
        put(RTA_DST.rawValue, destination)
        if let source { put(RTA_SRC.rawValue, source) }
        if let outputLinkIndex { nla_put_u32(message, Int32(RTA_OIF.rawValue), UInt32(bitPattern: outputLinkIndex)) }
        if let mark { nla_put_u32(message, Int32(RTA_MARK.rawValue), mark) }
        return message
    }

    /// Asks the kernel how it would route a packet to `destination` (as `ip route get`; policy
    /// rules apply).
    func lookupRoute(to destination: IPAddress, from source: IPAddress?, outputLinkIndex: Int32?,
                     mark: UInt32?) throws(NetlinkError) -> RouteLookupResult {
        if let source, source.family != destination.family {
            throw NetlinkError(code: NetlinkError.invalidAddress.code, context: "source \(source) and destination \(destination) differ in family")
        }
        let message = try lookupRequest(to: destination, from: source, outputLinkIndex: outputLinkIndex, mark: mark, fibMatch: false)
        let sequence = try send(message, on: handle, context: "route lookup \(destination)")
        var result: RouteLookupResult?
        while result == nil {
            try receive(on: handle, context: "route lookup \(destination)") { (answer) throws(NetlinkError) -> Reading in
                guard let answered = try Self.lookupAnswer(answer, sequence: sequence, context: "route lookup \(destination)")
                else { return .next }
                result = answered
                return .stop
            }
        }
        return result!
    }

    /// Asks the kernel how it would route a packet to each destination, as
    /// ``lookupRoute(to:from:outputLinkIndex:mark:)`` does without a source, link or mark, with
    /// up to a window of requests in flight, reading the answers as they come.
    ///
    /// With `fibMatch`, each answer is the FIB entry that matched (`RTM_F_FIB_MATCH`, as
    /// `ip route get fibmatch`): its own prefix and table, and every next hop of a multipath
    /// entry, rather than the route resolved for the one destination. A FIB entry that names a
    /// next-hop object without its next hops is given them from a dump of the objects.
    func lookupRoutes(to destinations: [IPAddress], fibMatch: Bool) throws(NetlinkError) -> [RouteLookupResult] {
        var results = [RouteLookupResult?](repeating: nil, count: destinations.count)
        var cursor = 0
        while cursor < destinations.count {
            var sent: [UInt32: Int] = [:]
            var last = cursor
            for index in cursor..<destinations.count where results[index] == nil {
                let message = try lookupRequest(to: destinations[index], from: nil, outputLinkIndex: nil, mark: nil, fibMatch: fibMatch)
                sent[try send(message, on: handle, context: "route lookups")] = index
                last = index
                if sent.count == lookupWindow { break }
            }
            guard !sent.isEmpty else { break }
            var pending = sent.count
            receiving: while pending > 0 {
                do {
                    try receive(on: handle, context: "route lookups") { (answer) throws(NetlinkError) -> Reading in
                        let sequence: UInt32
                        switch answer {
                        case .message(let message): sequence = nlmsg_hdr(message).pointee.nlmsg_seq
                        case .error(let seq, _): sequence = seq
                        }
                        guard let index = sent[sequence], results[index] == nil,
                              let answered = try Self.lookupAnswer(answer, sequence: sequence,
                                                                   context: "route lookup \(destinations[index])")
                        else { return .next }
                        results[index] = answered
                        pending -= 1
                        return .next
                    }
                } catch where error.code == NetlinkError.noMemory.code && lookupWindow > 1 {
                    // The kernel dropped answers (its ENOBUFS): fewer at a time, and the
                    // unanswered ones again.
                    lookupWindow /= 2
                    break receiving
                }
            }
            if pending == 0 { cursor = last + 1 }
        }
        var answers = results.map { $0! }
        guard answers.contains(where: { if case .route(let route) = $0 { route.lacksObjectNexthops } else { false } })
        else { return answers }
        let objects = try nexthopObjects()
        for index in answers.indices {
            if case .route(var route) = answers[index], route.lacksObjectNexthops {
                route.takeNexthops(from: objects)
                answers[index] = .route(route)
            }
        }
        return answers
    }

    /// The answer a lookup reply of `sequence` stands for: a route, or the reason an error reply
    /// gives; nil for a message that is not that answer.
    private static func lookupAnswer(_ answer: Answer, sequence: UInt32, context: @autoclosure () -> String) throws(NetlinkError) -> RouteLookupResult? {
        switch answer {
        case .message(let message):
            let header = nlmsg_hdr(message)!
            guard header.pointee.nlmsg_seq == sequence, Int32(header.pointee.nlmsg_type) == Int32(RTM_NEWROUTE) else { return nil }
            guard let route = Route(message: header) else { throw NetlinkError(code: Int32(NLE_PARSE_ERR), context: context()) }
            return .route(route)
        case .error(let seq, let code):
            guard seq == sequence else { return nil }
            guard let answer = RouteLookupResult(lookupErrno: code) else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context())
            }
            return answer
        }
    }
}

/// Runs `dump` until no change interrupts it (``NetlinkError/dumpInterrupted``, the kernel's
/// `NLM_F_DUMP_INTR`), calling `restart` before each new attempt so that the caller drops what
/// the interrupted one gave; after 50 new attempts, the interruption is thrown.
func repeatingInterruptedDumps(restart: () -> Void, _ dump: () throws(NetlinkError) -> Void) throws(NetlinkError) {
    var attempts = 0
    while true {
        do {
            try dump()
            return
        } catch NetlinkError.dumpInterrupted where attempts < 50 {
            attempts += 1
            restart()
        }
    }
}

/// Gives the socket `fd` a receive buffer of `size` bytes: with `SO_RCVBUFFORCE`, which needs
/// `CAP_NET_ADMIN` and may exceed `net.core.rmem_max`, else quietly with `SO_RCVBUF`, which the
/// kernel caps at `rmem_max`.
func setReceiveBuffer(of fd: Int32, to size: Int) {
    if cnetlink_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, Int32(clamping: size)) != 0 {
        _ = cnetlink_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: size))
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
