import CNetlink
import Glibc

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

/// Bare NETLINK_ROUTE sockets for the requests where libnl's one-message-at-a-time machinery
/// costs more than the kernel's work, or where libnl does not read what is asked: default-route
/// dumps that stop early, route lookups sent in batches, rules, next-hop objects, and links
/// (libnl 3.7 does not read alternative names). Messages are parsed from the kernel's bytes
/// (`Route(message:)`, `Link(message:)`, ...), and only the ones that matter.
///
/// Two sockets: one for lookups, link, rule and next-hop dumps and other dumps read to their
/// end, and one for IPv4 default-route dumps, which stop early (see
/// ``forEachDefaultRoute(family:filter:_:)``).
///
/// Not thread-safe: its owner serialises every use, like ``RequestSocket``. That serialisation
/// is the exclusive access that run-time checks would verify on each lookup, so its stored
/// variables are not checked (`@exclusivity(unchecked)`).
final class RawRouteSocket {
    /// The soonest expiry of a default route the dumps read since ``takeSoonestExpiry()``
    /// (see ``Route/remainingLifetime(message:)``).
    private var soonestExpiry: ContinuousClock.Instant?

    private func noteExpiry(after lifetime: Duration) {
        soonestExpiry.keepEarliest(.now + lifetime)
    }

    /// The soonest expiry of a default route read by a dump since the last call, if any
    /// expires; the next call starts afresh.
    func takeSoonestExpiry() -> ContinuousClock.Instant? {
        defer { soonestExpiry = nil }
        return soonestExpiry
    }

    /// The namespace the sockets live in; a socket whose dump was abandoned is replaced by a
    /// new one opened there.
    private let namespace: NetworkNamespace
    /// The namespace the sockets were opened in, held open (-1 for the current namespace): a
    /// replacement socket is opened in that very namespace. Opened again by the namespace's
    /// path, it would be refused once the name was deleted (the namespace lives on while its
    /// sockets do), or opened in another namespace made under the same name or process id.
    private let namespaceDescriptor: Int32
    /// The socket of lookups, rule dumps and IPv6 default-route dumps.
    @exclusivity(unchecked) private var descriptor: Int32 = -1
    /// The socket of IPv4 default-route dumps, made for dumps that stop early: what the kernel
    /// fills past the stop is thrown away. Its receive buffer holds less than one dump
    /// datagram, so the kernel fills a dump's next datagram only once the last one is taken:
    /// each datagram is peeked first, and one that the dump stops in is never taken (the kernel
    /// would fill the next one inside the `recv` that takes it). And it is not made to get
    /// large datagrams (see `raiseDumpDatagramSize`): the first datagram of a new socket's first
    /// dump holds 3.7 KiB, an eighth of a large one, which is all that a stop early in a full
    /// table costs the kernel, since such a stop leaves the socket behind. A dump there that
    /// reads nothing (an empty table, or a first route larger than that datagram) is asked
    /// again on the request socket.
    @exclusivity(unchecked) private var dumpDescriptor: Int32 = -1
    /// Whether the dump socket has read nothing yet: its first dump's first datagram is small.
    @exclusivity(unchecked) private var dumpSocketIsNew = false
    /// How many request sockets were opened: the first, and one after each failed read (for tests).
    private(set) var socketsOpened = 0
    /// How many IPv4 dump sockets were opened: the first, and one after each dump stopped while
    /// the kernel was still dumping (for tests).
    private(set) var dumpSocketsOpened = 0
    @exclusivity(unchecked) private var sequence: UInt32 = 0
    @exclusivity(unchecked) private var buffer: UnsafeMutableRawBufferPointer
    /// The request being built; its storage is kept from one request to the next.
    @exclusivity(unchecked) private var request = RequestBuilder()

    /// The size of the receive buffer at first: the kernel fills dump datagrams up to 32 KiB,
    /// and a link dump's up to the size of its largest link message (see `receive`, which
    /// grows the buffer for a larger one).
    private static let bufferSize = 64 * 1024

    /// At least what the first datagram of a new socket's first dump holds: `NLMSG_GOODSIZE`,
    /// a page (at most 8 KiB) less the kernel's bookkeeping.
    private static let newSocketDatagram = min(Int(sysconf(Int32(_SC_PAGESIZE))), 8192)

    /// What the dump socket asks for as its receive buffer (`SO_RCVBUF`): the least, which the
    /// kernel raises to its minimum (`SOCK_MIN_RCVBUF`, about 2.3 KiB). The kernel fills a
    /// dump's next datagram while the queue holds at most half of the buffer, and a queued dump
    /// datagram counts its whole allocation, 4 KiB or more.
    private static let dumpReceiveBuffer = 1

    /// Opens the socket. Call it on a thread that is inside `namespace` (or with a namespace
    /// that is the current one); later replacements are opened in the same namespace, held by
    /// ``namespaceDescriptor``.
    init(namespace: NetworkNamespace) throws(NetlinkError) {
        self.namespace = namespace
        if namespace.isCurrent {
            namespaceDescriptor = -1
        } else {
            namespaceDescriptor = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
            guard namespaceDescriptor >= 0 else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "open own namespace")
            }
        }
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 8)
        descriptor = try Self.primed(Self.openDescriptor(receiveBuffer: nil), buffer: buffer)
        socketsOpened = 1
        dumpDescriptor = try Self.openDescriptor(receiveBuffer: Self.dumpReceiveBuffer)
        dumpSocketsOpened = 1
        dumpSocketIsNew = true
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if dumpDescriptor >= 0 { close(dumpDescriptor) }
        if namespaceDescriptor >= 0 { close(namespaceDescriptor) }
        buffer.deallocate()
    }

    /// Runs `body` inside the namespace the sockets were opened in: on this thread for the
    /// current namespace, else on a short-lived thread that enters ``namespaceDescriptor``.
    private func inOwnNamespace(_ body: @escaping @Sendable () throws(NetlinkError) -> Int32) throws(NetlinkError) -> Int32 {
        if namespaceDescriptor < 0 { return try body() }
        return try NetworkNamespace.perform(in: namespaceDescriptor, description: namespace.description, body)
    }

    /// A bound socket connected to the kernel, with strict checking, and `receiveBuffer` bytes
    /// of receive buffer (nil: as much as lookups need). Connected, it receives nothing but the
    /// kernel's datagrams: another process's are refused (`ECONNREFUSED` for the sender), so
    /// none can be read as an answer or grow the buffer (see `receive`).
    private static func openDescriptor(receiveBuffer: Int?) throws(NetlinkError) -> Int32 {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        guard fd >= 0 else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "open netlink socket") }
        // Port 0 and no groups: bound, a port the kernel picks; connected, the kernel.
        var portZero = sockaddr_nl()
        portZero.nl_family = sa_family_t(AF_NETLINK)
        for (call, name) in [(bind, "bind"), (connect, "connect")] as [((Int32, UnsafePointer<sockaddr>?, socklen_t) -> Int32, String)] {
            let done = withUnsafePointer(to: &portZero) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
            }
            guard done == 0 else {
                let code = errno
                close(fd)
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: "\(name) netlink socket")
            }
        }
        if let receiveBuffer {
            _ = cnetlink_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, Int32(receiveBuffer))
        } else if cnetlink_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, 1 << 20) != 0 {
            // Batched lookup answers wait here until read: ask for 1 MiB (SO_RCVBUFFORCE needs
            // CAP_NET_ADMIN; SO_RCVBUF is capped at net.core.rmem_max).
            _ = cnetlink_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, 1 << 20)
        }
        // Strict checking lets the kernel filter dumps by table and output link (Linux 4.20+);
        // without it the filter is applied here, on every route.
        _ = cnetlink_setsockopt_int(fd, cnetlink_sol_netlink(), cnetlink_netlink_get_strict_chk(), 1)
        return fd
    }

    /// `fd`, once the kernel fills its dump datagrams to the largest size (see
    /// `raiseDumpDatagramSize`); closed if that fails.
    private static func primed(_ fd: Int32, buffer: UnsafeMutableRawBufferPointer) throws(NetlinkError) -> Int32 {
        do {
            try raiseDumpDatagramSize(of: fd, using: buffer)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// The request socket, reopened in the namespace if it was abandoned.
    private func socketDescriptor() throws(NetlinkError) -> Int32 {
        if descriptor >= 0 { return descriptor }
        descriptor = try Self.primed(inOwnNamespace { () throws(NetlinkError) in try Self.openDescriptor(receiveBuffer: nil) },
                                     buffer: buffer)
        socketsOpened += 1
        return descriptor
    }

    /// The IPv4 dump socket, reopened in the namespace if the last dump was abandoned.
    private func dumpSocketDescriptor() throws(NetlinkError) -> Int32 {
        if dumpDescriptor >= 0 { return dumpDescriptor }
        dumpDescriptor = try inOwnNamespace { () throws(NetlinkError) in
            try Self.openDescriptor(receiveBuffer: Self.dumpReceiveBuffer)
        }
        dumpSocketsOpened += 1
        dumpSocketIsNew = true
        return dumpDescriptor
    }

    /// Drops `fd` with a dump still running on it (closing it is the only way to end a netlink
    /// dump early), or after a failed read. The next request opens a new one.
    private func abandon(_ fd: Int32) {
        close(fd)
        if fd == descriptor { descriptor = -1 }
        if fd == dumpDescriptor { dumpDescriptor = -1 }
    }

    // MARK: Default routes

    /// Streams the default routes of `family` that `filter` selects.
    ///
    /// Only default-route messages are parsed; the others are skipped by their header. An IPv4
    /// dump also stops early: the kernel dumps each IPv4 table in ascending key order, tables in
    /// the order of their hash bucket (table id modulo 256, the oldest table of a bucket last),
    /// so once a route of the main table (254) with a non-zero destination arrives, every
    /// default route of the main table and of every table in the buckets before it has been
    /// seen. Only bucket 255 is left unread: the local table (local and broadcast routes), and
    /// any table whose id is 255 modulo 256 (511, 767, 1023, ...), which the policy rules name
    /// when routing uses it; each of those is then dumped by name. A dump of one named table
    /// stops at that table's first other route. On a host with a full Internet table this reads
    /// one datagram instead of a million routes.
    ///
    /// So an IPv4 request names at most the table, and the rest of `filter` (the output link,
    /// the type, the protocol) is applied here: a filter the kernel applies makes it walk on
    /// past the routes it leaves out, and with a full table through another link a dump of one
    /// link's default routes walked a million routes (70–135 ms in the kernel per carrier change
    /// of the uplink) where the early stop reads one datagram.
    ///
    /// IPv4 dumps go through the dump socket, whose datagrams are peeked: a dump stopped in a
    /// full datagram leaves the kernel at that one (see `dumpDescriptor`).
    ///
    /// IPv6 dumps walk their tree children first, so the default route comes last and the dump
    /// is read to its end; there the kernel applies the whole filter, which spares it filling a
    /// message for every route it leaves out.
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump (the caller
    ///   starts again), or the kernel's error.
    func forEachDefaultRoute(family: AddressFamily, filter: RouteFilter, _ body: (Route) -> Void) throws(NetlinkError) {
        // A request for table 0 (unspecified) dumps every table, as one without a table.
        let namedTable = filter.table == .unspecified ? nil : filter.table
        var outcome: (stopped: Bool, readNothing: Bool)
        if family == .ipv4 {
            let fd = try dumpSocketDescriptor()
            let reading = DumpReading.peeking(firstCapacity: dumpSocketIsNew ? Self.newSocketDatagram : largestDumpDatagram)
            dumpSocketIsNew = false
            outcome = try dumpDefaultRoutes(family: family, filter: filter, on: fd, reading: reading, body)
            // An empty table, or a first route too large for a new socket's first datagram,
            // which the kernel reports as an empty dump: asked again where datagrams are large.
            if outcome.readNothing {
                outcome = try dumpDefaultRoutes(family: family, filter: filter, on: socketDescriptor(), reading: .taking, body)
            }
        } else {
            outcome = try dumpDefaultRoutes(family: family, filter: filter, on: socketDescriptor(), reading: .taking, body)
        }
        // Stopped in the main table of a dump of every table: the tables after it, by name.
        guard outcome.stopped, namedTable == nil else { return }
        for table in try ruleTables(family: family) where table % 256 == 255 && table != RouteTable.local.rawValue {
            var byName = filter
            byName.table = RouteTable(rawValue: table)
            try forEachDefaultRoute(family: family, filter: byName, body)
        }
    }

    /// One dump of the default routes of `family` on `fd` (see ``forEachDefaultRoute(family:filter:_:)``).
    /// - Returns: Whether an IPv4 dump stopped at its stop table's first other route, and whether
    ///   it ended without a single message.
    private func dumpDefaultRoutes(family: AddressFamily, filter: RouteFilter, on fd: Int32, reading: DumpReading,
                                   _ body: (Route) -> Void) throws(NetlinkError) -> (stopped: Bool, readNothing: Bool) {
        sequence &+= 1
        let seq = sequence
        let request = family == .ipv4 ? RouteFilter(family: family, table: filter.table) : filter
        let stopTable = (filter.table == .unspecified ? .main : filter.table ?? .main).rawValue
        try sendDumpRequest(fd: fd, family: family, filter: request, sequence: seq)
        var stopped = false
        var messages = 0
        let outcome = try readDump(on: fd, sequence: seq, reading: reading, context: "default route dump") { (header) throws(NetlinkError) -> Bool in
            messages += 1
            guard Int32(header.pointee.nlmsg_type) == Int32(RTM_NEWROUTE) else { return true }
            switch classify(header, family: family, stopTable: stopTable) {
            case .defaultRoute:
                if let route = Route(message: header), filter.admits(route) {
                    if let lifetime = Route.remainingLifetime(message: header) {
                        // Expired: the kernel's lookups pass it over; its deletion comes later.
                        guard lifetime > .zero else { return true }
                        noteExpiry(after: lifetime)
                    }
                    body(route)
                }
                return true
            case .other:
                return true
            case .pastDefaults:
                stopped = true
                return false
            }
        }
        // A dump stopped early whose NLMSG_DONE was not read may still be running in the kernel.
        if !outcome.ended { abandon(fd) }
        if outcome.interrupted { throw .dumpInterrupted }
        return (stopped, outcome.ended && messages == 0)
    }

    private enum RouteMessageKind { case defaultRoute, other, pastDefaults }

    /// Reads only the header, table and destination of a route message (libnl's attribute
    /// parser): is it a default route, or an IPv4 route of `stopTable` (the main table, or the
    /// one table dumped) past that table's default routes?
    private func classify(_ header: UnsafeMutablePointer<nlmsghdr>, family: AddressFamily,
                          stopTable: UInt32) -> RouteMessageKind {
        guard Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<rtmsg>.size,
              let attributes = AttributeTable(message: header, headerSize: MemoryLayout<rtmsg>.size,
                                              policy: Self.classifyingAttributes) else { return .other }
        let message = nlmsg_data(header)!.loadUnaligned(as: rtmsg.self)
        if message.rtm_dst_len == 0 { return .defaultRoute }
        guard family == .ipv4 else { return .other }
        let table = attributes.u32(RTA_TABLE.rawValue) ?? UInt32(message.rtm_table)
        let destinationIsZero = attributes.u32(RTA_DST.rawValue).map { $0 == 0 } ?? true
        return table == stopTable && !destinationIsZero ? .pastDefaults : .other
    }

    private static let classifyingAttributes = AttributePolicy(maxType: Int32(RTA_TABLE.rawValue), [
        Int32(RTA_TABLE.rawValue): (.u32, 4),
        Int32(RTA_DST.rawValue): (.u32, 4),
    ])

    private func sendDumpRequest(fd: Int32, family: AddressFamily, filter: RouteFilter, sequence: UInt32) throws(NetlinkError) {
        request.reset()
        request.begin(type: UInt16(RTM_GETROUTE), flags: UInt16(NLM_F_REQUEST | NLM_F_DUMP), sequence: sequence)
        let (header, attributes) = filter.dumpRequest(family: family)
        request.append(header)
        for attribute in attributes { request.appendAttribute(attribute.type, attribute.value) }
        request.end()
        try send(request.bytes, on: fd, context: "send default route dump")
    }

    // MARK: Lookups

    /// How many lookups may be in flight at once. Each answer takes a few KiB of the receive
    /// buffer until it is read; if the buffer overflows anyway (`ENOBUFS`), the window halves
    /// and the unanswered lookups are sent again on a new socket.
    @exclusivity(unchecked) private var lookupWindow = 64

    /// Asks the kernel how it would route a packet to `destination` (RTM_GETROUTE, as
    /// `ip route get`; policy rules apply): one request, one answer, no allocation but the
    /// answer's own.
    func lookupRoute(to destination: IPAddress, from source: IPAddress?, outputLinkIndex: Int32?,
                     mark: UInt32?) throws(NetlinkError) -> RouteLookupResult {
        let fd = try socketDescriptor()
        sequence &+= 1
        let seq = sequence
        request.reset()
        request.appendLookup(to: destination, from: source, outputLinkIndex: outputLinkIndex, mark: mark,
                             fibMatch: false, sequence: seq)
        try send(request.bytes, on: fd, context: "send route lookup")
        while true {
            let received = try receive(on: fd, context: "route lookup \(destination)")
            var answer: RouteLookupResult?
            try forEachMessage(received) { (header) throws(NetlinkError) in
                guard header.pointee.nlmsg_seq == seq, answer == nil else { return }
                answer = try lookupAnswer(header, context: "route lookup \(destination)")
            }
            if let answer { return answer }
        }
    }

    /// Asks the kernel how it would route a packet to each destination, as
    /// ``lookupRoute(to:from:outputLinkIndex:mark:)`` does without a source, link or mark, many
    /// requests to a datagram, reading the answers as they come.
    ///
    /// With `fibMatch`, each answer is the FIB entry that matched (`RTM_F_FIB_MATCH`, as
    /// `ip route get fibmatch`): its own prefix and table, and every next hop of a multipath
    /// entry, rather than the route resolved for the one destination.
    func lookupRoutes(to destinations: [IPAddress], fibMatch: Bool = false) throws(NetlinkError) -> [RouteLookupResult] {
        var results = [RouteLookupResult?](repeating: nil, count: destinations.count)
        var cursor = 0
        while cursor < destinations.count {
            let fd = try socketDescriptor()
            // The unanswered destinations from `cursor` on, up to a window's worth. A loop, not
            // a lazy filter: an escaping closure would make `results` a boxed variable, checked
            // for exclusive access at run time on every use (three per lookup).
            var sent: [Int] = []
            sent.reserveCapacity(min(lookupWindow, destinations.count - cursor))
            for index in cursor..<destinations.count where results[index] == nil {
                sent.append(index)
                if sent.count == lookupWindow { break }
            }
            guard !sent.isEmpty else { break }
            let first = sequence &+ 1
            request.reset()
            for index in sent {
                sequence &+= 1
                request.appendLookup(to: destinations[index], from: nil, outputLinkIndex: nil, mark: nil,
                                     fibMatch: fibMatch, sequence: sequence)
            }
            try send(request.bytes, on: fd, context: "send route lookups")
            var pending = sent.count
            receiving: while pending > 0 {
                let received: Int
                do {
                    received = try receive(on: fd, context: "route lookups")
                } catch where error.systemErrno == ENOBUFS && lookupWindow > 1 {
                    lookupWindow /= 2
                    break receiving
                }
                try forEachMessage(received) { (header) throws(NetlinkError) in
                    let slot = Int(header.pointee.nlmsg_seq &- first)
                    guard slot >= 0, slot < sent.count, results[sent[slot]] == nil,
                          let answer = try lookupAnswer(header, context: "route lookup \(destinations[sent[slot]])") else { return }
                    results[sent[slot]] = answer
                    pending -= 1
                }
            }
            if pending == 0 { cursor = sent.last! + 1 }
        }
        return results.map { $0! }
    }

    /// The answer a lookup reply stands for: a route, or the reason an error reply gives; nil
    /// for a message that is not an answer.
    private func lookupAnswer(_ header: UnsafeMutablePointer<nlmsghdr>, context: @autoclosure () -> String) throws(NetlinkError) -> RouteLookupResult? {
        switch Int32(header.pointee.nlmsg_type) {
        case Int32(RTM_NEWROUTE):
            return Route(message: header).map { .route($0) }
        case NLMSG_ERROR:
            let code = errorCode(of: header)
            guard let answer = RouteLookupResult(lookupErrno: code) else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context())
            }
            return answer
        default:
            return nil
        }
    }


    // MARK: Policy rules

    /// A summary of the policy rules of `family`: a fingerprint of the whole rule set (it
    /// changes when any rule is added, removed or changed), and whether any rule has
    /// `suppress_ifgroup` (`FRA_SUPPRESS_IFGROUP`), which rejects a table's answer by the group
    /// of its output link, so that two lookups that end at the same table entry can fare
    /// differently.
    func policyRules(family: AddressFamily) throws(NetlinkError) -> PolicyRuleSummary {
        let rules = try rules(family: family)
        var hasher = Hasher()
        hasher.combine(rules)
        return PolicyRuleSummary(fingerprint: hasher.finalize(),
                                 suppressesByInterfaceGroup: rules.contains { $0.suppressInterfaceGroup != nil })
    }

    /// The tables that the policy rules of `family` look up, in the order of the rules, each once.
    func ruleTables(family: AddressFamily) throws(NetlinkError) -> [UInt32] {
        var tables: [UInt32] = []
        for rule in try rules(family: family) where rule.table != .unspecified && !tables.contains(rule.table.rawValue) {
            tables.append(rule.table.rawValue)
        }
        return tables
    }

    /// The policy rules of `family`, in the kernel's order (by priority).
    func rules(family: AddressFamily) throws(NetlinkError) -> [PolicyRule] {
        var rules: [PolicyRule] = []
        try forEachRule(family: family, restart: { rules.removeAll() }) { message in
            if let rule = PolicyRule(message: message), rule.family == family { rules.append(rule) }
        }
        return rules
    }

    /// Calls `body` with each rule message of `family`.
    /// A dump that a change interrupted (`NLM_F_DUMP_INTR`: a rule skipped or seen twice) is
    /// asked again, after `restart` tells the caller to drop what it has seen.
    private func forEachRule(family: AddressFamily, restart: () -> Void,
                             _ body: (UnsafeMutablePointer<nlmsghdr>) -> Void) throws(NetlinkError) {
        // struct fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action, flags.
        let header = (family.rawValue, UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt32(0))
        try repeatingInterruptedDumps(restart: restart) { () throws(NetlinkError) in
            try dump(RTM_GETRULE, header: header, answer: RTM_NEWRULE, context: "rule dump") { message in
                body(message)
            }
        }
    }

    // MARK: Next-hop objects

    /// Calls `body` with each next-hop object of the namespace (`RTM_GETNEXTHOP`). A kernel
    /// without them (before Linux 5.3) has none to give.
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump (the caller
    ///   starts again), or the kernel's error.
    func forEachNexthopObject(_ body: (NexthopObject) -> Void) throws(NetlinkError) {
        do {
            try dump(RTM_GETNEXTHOP, header: nhmsg(), answer: RTM_NEWNEXTHOP, context: "next-hop dump") { message in
                if let object = NexthopObject(message: message) { body(object) }
            }
        } catch where error.systemErrno == EOPNOTSUPP {
            return
        }
    }

    // MARK: Links

    /// The `IFLA_EXT_MASK` of link requests: `RTEXT_FILTER_SKIP_STATS` (Linux 4.20; an older
    /// kernel ignores it), so that the kernel leaves out the statistics, which no ``Link``
    /// holds.
    private static let linkExtensionMask: UInt32 = 1 << 3

    /// Calls `body` with each link of the namespace (an `RTM_GETLINK` dump of family
    /// `AF_UNSPEC`, read by ``Link/init(message:)``), or only with the ports of link `master`
    /// when one is given: the kernel filters the dump by `IFLA_MASTER` (Linux 4.4+; the filter
    /// is applied here as well, for a kernel that sends every link).
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump (the caller
    ///   starts again), or the kernel's error.
    func forEachLink(master: Int32? = nil, _ body: (Link) -> Void) throws(NetlinkError) {
        var attributes = [(UInt16(IFLA_EXT_MASK), Self.linkExtensionMask)]
        if let master { attributes.append((UInt16(IFLA_MASTER), UInt32(bitPattern: master))) }
        try dump(RTM_GETLINK, header: ifinfomsg(), answer: RTM_NEWLINK, attributes: attributes,
                 context: master == nil ? "link dump" : "dump of link \(master!)'s ports") { message in
            if let link = Link(message: message), master == nil || link.masterIndex == master { body(link) }
        }
    }

    /// The link with index `index` now (`RTM_GETLINK` for it), or nil when there is none
    /// (`ENODEV`). An answer larger than the buffer is asked for again, once the buffer holds
    /// it (see `receive`).
    func link(index: Int32) throws(NetlinkError) -> Link? {
        // No link has an index of 0 or less (the kernel answers such a request with EINVAL).
        guard index > 0 else { return nil }
        return try askLinkTwice(.index(index))
    }

    /// The link that `name` names now, its name or one of its alternative names, as the kernel
    /// finds it (`RTM_GETLINK` with `IFLA_IFNAME`, or `IFLA_ALT_IFNAME` for a name longer than
    /// a link's name can be, Linux 5.5+), or nil when no link has that name. A name that no
    /// link can have (empty, over 127 bytes, with a NUL) is not asked for.
    func link(named name: String) throws(NetlinkError) -> Link? {
        let bytes = Array(name.utf8)
        guard (1...Link.longestAlternativeName).contains(bytes.count), !bytes.contains(0) else { return nil }
        do {
            return try askLinkTwice(.name(bytes))
        } catch where bytes.count > Link.longestName && error.systemErrno == EINVAL {
            // A kernel before alternative names does not know `IFLA_ALT_IFNAME`, and no link
            // there has a name that long.
            return nil
        }
    }

    /// How a link is asked for.
    private enum LinkKey {
        case index(Int32)
        case name([UInt8])
    }

    /// The link `key` names, asked for again once if the answer did not fit the buffer (which
    /// then holds it: see `receive`).
    private func askLinkTwice(_ key: LinkKey) throws(NetlinkError) -> Link? {
        do {
            return try askLink(key)
        } catch NetlinkError.messageTruncated {
            return try askLink(key)
        }
    }

    private func askLink(_ key: LinkKey) throws(NetlinkError) -> Link? {
        let fd = try socketDescriptor()
        sequence &+= 1
        let seq = sequence
        request.reset()
        request.begin(type: UInt16(RTM_GETLINK), flags: UInt16(NLM_F_REQUEST), sequence: seq)
        var header = ifinfomsg()
        let context: String
        switch key {
        case .index(let index):
            header.ifi_index = index
            request.append(header)
            context = "link \(index)"
        case .name(let bytes):
            request.append(header)
            request.appendAttribute(UInt16(bytes.count > Link.longestName ? IFLA_ALT_IFNAME : IFLA_IFNAME), string: bytes)
            context = "link \(String(decoding: bytes, as: UTF8.self))"
        }
        request.appendAttribute(UInt16(IFLA_EXT_MASK), Self.linkExtensionMask)
        request.end()
        try send(request.bytes, on: fd, context: "send link request")
        while true {
            let received = try receive(on: fd, context: context)
            var answered = false
            var link: Link?
            try forEachMessage(received) { (header) throws(NetlinkError) in
                guard header.pointee.nlmsg_seq == seq, !answered else { return }
                switch Int32(header.pointee.nlmsg_type) {
                case Int32(RTM_NEWLINK):
                    guard let read = Link(message: header) else {
                        throw NetlinkError(code: Int32(NLE_PARSE_ERR), context: context)
                    }
                    link = read
                    answered = true
                case NLMSG_ERROR:
                    let code = errorCode(of: header)
                    guard code == ENODEV else {
                        throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context)
                    }
                    answered = true
                default:
                    break
                }
            }
            if answered { return link }
        }
    }

    /// Sends a dump request of `type`, with `header` as its payload and `attributes` (32-bit
    /// values) after it, on the request socket, and reads the answer to its end, handing `body` each
    /// message of type `answer`.
    ///
    /// - Throws: ``NetlinkError/dumpInterrupted`` when a change interrupted the dump, or when a
    ///   datagram was larger than the buffer (which then grows: see `receive`), for the caller
    ///   to ask again; or the kernel's error.
    private func dump<Header: BitwiseCopyable>(_ type: Int, header: Header, answer: Int,
                                               attributes: [(UInt16, UInt32)] = [], context: String,
                                               _ body: (UnsafeMutablePointer<nlmsghdr>) -> Void) throws(NetlinkError) {
        let fd = try socketDescriptor()
        sequence &+= 1
        let seq = sequence
        request.reset()
        request.begin(type: UInt16(type), flags: UInt16(NLM_F_REQUEST | NLM_F_DUMP), sequence: seq)
        request.append(header)
        for (type, value) in attributes { request.appendAttribute(type, value) }
        request.end()
        try send(request.bytes, on: fd, context: "send \(context)")
        let outcome: (interrupted: Bool, ended: Bool)
        do {
            outcome = try readDump(on: fd, sequence: seq, reading: .taking, context: context) { (message) throws(NetlinkError) -> Bool in
                if Int(message.pointee.nlmsg_type) == answer { body(message) }
                return true
            }
        } catch NetlinkError.messageTruncated {
            // A datagram was larger than the buffer, which now holds it: the dump is asked again.
            throw .dumpInterrupted
        }
        if outcome.interrupted { throw .dumpInterrupted }
    }

    /// How a dump's datagrams are read (see `readDump`).
    private enum DumpReading {
        /// Each one taken as it comes.
        case taking
        /// Each one peeked; the first can hold `firstCapacity` bytes, the others 32 KiB.
        case peeking(firstCapacity: Int)

        var peeks: Bool { if case .peeking = self { true } else { false } }
        var firstCapacity: Int { if case .peeking(let capacity) = self { capacity } else { largestDumpDatagram } }
    }


    // MARK: Helpers

    /// Reads the answer to the dump request `sequence` until its NLMSG_DONE, or until `body`
    /// returns false for a message; `body` sees every other message of the dump. An error reply
    /// is thrown.
    ///
    /// A dump that `body` stops may still be running in the kernel. But the kernel makes a
    /// dump's next datagram while the reader's `recv` returns the previous one, so a small
    /// dump's `NLMSG_DONE` often already waits: after a stop, the rest of the datagram and one
    /// more datagram, if one waits, are read for it. Finding it keeps the socket usable, which
    /// saves opening and binding a new one on the next request (for a link that carries the
    /// default route, five system calls on every flip of its carrier).
    ///
    /// Peeking (on the dump socket), each datagram is taken only after it is read, unless the
    /// dump stopped in it and it is more than half full: then the rest of the dump surely
    /// follows, and leaving the datagram keeps the kernel from filling another one (which it
    /// would do inside the `recv` that takes this one), only to be thrown away.
    ///
    /// - Returns: Whether the kernel marked the dump interrupted (`NLM_F_DUMP_INTR`), and whether
    ///   the dump's end (`NLMSG_DONE`, or an error) was read: if not, it may still be running.
    private func readDump(on fd: Int32, sequence: UInt32, reading: DumpReading, context: String,
                          _ body: (UnsafeMutablePointer<nlmsghdr>) throws(NetlinkError) -> Bool) throws(NetlinkError)
        -> (interrupted: Bool, ended: Bool) {
        var interrupted = false
        var stoppedEarly = false
        var ended = false
        var messagesRead = 0
        var capacity = reading.firstCapacity
        func read(_ received: Int) throws(NetlinkError) {
            try forEachMessage(received) { (header) throws(NetlinkError) in
                guard !ended, header.pointee.nlmsg_seq == sequence else { return }
                if !stoppedEarly, Int32(header.pointee.nlmsg_flags) & NLM_F_DUMP_INTR != 0 { interrupted = true }
                switch Int32(header.pointee.nlmsg_type) {
                case NLMSG_DONE:
                    ended = true
                    // A dump that failed part way ends with the kernel's error here.
                    let code = Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + 4 ? errorCode(of: header) : 0
                    if Self.endsAsEmptyDump(errorCode: code, messagesRead: messagesRead, datagramCapacity: capacity) { return }
                    if code != 0, !stoppedEarly { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context) }
                case NLMSG_ERROR:
                    ended = true
                    let code = errorCode(of: header)
                    if code != 0, !stoppedEarly { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context) }
                default:
                    guard !stoppedEarly else { return }
                    messagesRead += 1
                    if try !body(header) { stoppedEarly = true }
                }
            }
        }
        var leftQueued = false
        while !ended && !stoppedEarly {
            let received = try receive(on: fd, peeking: reading.peeks, context: context)
            do {
                try read(received)
            } catch {
                // A peeked datagram is still queued: the socket goes with it.
                if reading.peeks { abandon(fd) }
                throw error
            }
            if reading.peeks {
                if stoppedEarly, !ended, received > capacity / 2 {
                    leftQueued = true
                } else {
                    try take(on: fd, context: context)
                }
            }
            capacity = largestDumpDatagram
        }
        if !ended, !leftQueued {
            let received = recvRetryingInterruptions(fd, flags: Int32(MSG_DONTWAIT))
            if received > 0 { try? read(received) }
        }
        return (interrupted, ended)
    }

    /// Whether a dump's `NLMSG_DONE` that carries `errorCode` (a positive errno, or 0), after
    /// `messagesRead` messages, in a datagram that could hold `datagramCapacity` bytes, ends an
    /// empty dump rather than failing it.
    ///
    /// A route message larger than the datagram the kernel fills cannot be sent. From Linux 6.10
    /// (`RTNL_FLAG_DUMP_SPLIT_NLM_DONE` on IPv4 route dumps) the dump then ends with an
    /// `NLMSG_DONE` of 0, which reads as an empty dump; before, with one of `EMSGSIZE`. In the
    /// small first datagram of a new socket's first dump, both mean the same: the first route
    /// did not fit, and the dump is asked again where datagrams are large (32 KiB, the most the
    /// kernel fills). There, `EMSGSIZE` is the kernel's last word and is thrown.
    static func endsAsEmptyDump(errorCode: Int32, messagesRead: Int, datagramCapacity: Int) -> Bool {
        errorCode == EMSGSIZE && messagesRead == 0 && datagramCapacity < largestDumpDatagram
    }

    /// Reads one datagram into the buffer and returns its length; the messages in it stay valid
    /// until the next read. A failed read abandons the socket (an overflow leaves it unusable).
    ///
    /// A datagram larger than the buffer is never cut short unseen: the read asks for its whole
    /// length (`MSG_TRUNC`), and the buffer grows to hold it. A link with hundreds of
    /// alternative names has a message of up to some 66 KiB, and the kernel makes a link dump's
    /// datagrams as large as its largest link. A peeked datagram is then read again; a taken
    /// one is lost with the rest of its answer, so the socket is abandoned and
    /// ``NetlinkError/messageTruncated`` thrown: dumps are asked again (see `dump`), and so is
    /// one link; a lookup fails with it, which the kernel never causes (its answers fit in a
    /// page). Only the kernel's datagrams arrive: the sockets are connected to it.
    private func receive(on fd: Int32, peeking: Bool = false, context: @autoclosure () -> String) throws(NetlinkError) -> Int {
        while true {
            let received = recvRetryingInterruptions(fd, flags: Int32(MSG_TRUNC) | (peeking ? Int32(MSG_PEEK) : 0))
            if received < 0 {
                let code = errno
                abandon(fd)
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context())
            }
            guard received > buffer.count else { return received }
            growBuffer(toHold: received)
            if peeking { continue }
            abandon(fd)
            throw NetlinkError(code: NetlinkError.messageTruncated.code, context: context())
        }
    }

    /// Grows the buffer to hold `size` bytes (`growDatagramBuffer`). Nothing read into the old
    /// one is in use: each read's messages are handled before the next read.
    private func growBuffer(toHold size: Int) {
        growDatagramBuffer(&buffer, toHold: size, alignment: 8)
    }

    /// Takes the datagram last peeked on `fd` without copying it. A failed read abandons the
    /// socket: the datagram would be read twice.
    private func take(on fd: Int32, context: @autoclosure () -> String) throws(NetlinkError) {
        if recvRetryingInterruptions(fd, flags: 0, length: 0) < 0 {
            let code = errno
            abandon(fd)
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: code, context: context())
        }
    }

    /// One `recv(2)` of a datagram into the buffer (at most `length` bytes of it), repeated while
    /// a signal interrupts it.
    private func recvRetryingInterruptions(_ fd: Int32, flags: Int32, length: Int? = nil) -> Int {
        var received: Int
        repeat {
            received = recv(fd, buffer.baseAddress, length ?? buffer.count, flags)
        } while received < 0 && errno == EINTR
        return received
    }

    /// Calls `body` with each whole message of the datagram last read (`received` bytes).
    private func forEachMessage(_ received: Int, _ body: (UnsafeMutablePointer<nlmsghdr>) throws(NetlinkError) -> Void) throws(NetlinkError) {
        try forEachNetlinkMessage(in: UnsafeMutableRawBufferPointer(rebasing: buffer[..<received]), body)
    }

    private func errorCode(of header: UnsafeMutablePointer<nlmsghdr>) -> Int32 {
        guard Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + 4 else { return EPROTO }
        return -UnsafeRawPointer(header).loadUnaligned(fromByteOffset: MemoryLayout<nlmsghdr>.size, as: Int32.self)
    }

    private func send(_ payload: UnsafeRawBufferPointer, on fd: Int32, context: String) throws(NetlinkError) {
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        while true {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, payload.baseAddress, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
            if sent >= 0 { return }
            if errno == EINTR { continue }
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: context)
        }
    }
}

/// Builds netlink requests, several to a datagram, with the kernel's 4-byte alignment.
///
/// The bytes live in storage the builder keeps from one request to the next, and each field is
/// stored at its offset: a lookup request is a few stores, where appending each field to an
/// array cost a fresh lookup over a quarter of its user-space instructions.
private struct RequestBuilder: ~Copyable {
    private var storage: UnsafeMutableRawBufferPointer
    private var count = 0
    private var messageStart = 0

    /// Room for a single request with every attribute; batches of lookups grow it (once: it is
    /// kept) to their window's size.
    init() {
        storage = .allocate(byteCount: 256, alignment: 8)
    }

    deinit { storage.deallocate() }

    /// The requests built since the last ``reset()``; valid until the builder changes.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[..<count]) }

    /// Empties the builder, keeping its storage.
    mutating func reset() {
        count = 0
        messageStart = 0
    }

    /// Appends one RTM_GETROUTE lookup request.
    mutating func appendLookup(to destination: IPAddress, from source: IPAddress?, outputLinkIndex: Int32?,
                               mark: UInt32?, fibMatch: Bool, sequence: UInt32) {
        begin(type: UInt16(RTM_GETROUTE), flags: UInt16(NLM_F_REQUEST), sequence: sequence)
        var header = rtmsg()
        header.rtm_family = destination.family.rawValue
        header.rtm_dst_len = destination.family.bitWidth
        header.rtm_src_len = source == nil ? 0 : destination.family.bitWidth
        // IPv4 names the table only when asked; IPv6 always does, and its strict request
        // checking (on for this socket) rejects the flag with EINVAL.
        if destination.family == .ipv4 { header.rtm_flags = UInt32(RTM_F_LOOKUP_TABLE) }
        if fibMatch { header.rtm_flags |= UInt32(RTM_F_FIB_MATCH) }
        append(header)
        appendAddress(UInt16(RTA_DST.rawValue), destination)
        if let source { appendAddress(UInt16(RTA_SRC.rawValue), source) }
        if let outputLinkIndex { appendAttribute(UInt16(RTA_OIF.rawValue), UInt32(bitPattern: outputLinkIndex)) }
        if let mark { appendAttribute(UInt16(RTA_MARK.rawValue), mark) }
        end()
    }

    /// Appends an address attribute.
    private mutating func appendAddress(_ type: UInt16, _ address: IPAddress) {
        switch address {
        case .v4(let a): appendAttribute(type, a.rawValue.bigEndian)
        case .v6(let a):
            store(UInt16(4 + 16))
            store(type)
            store(a.high.bigEndian)
            store(a.low.bigEndian)
        }
    }

    mutating func begin(type: UInt16, flags: UInt16, sequence: UInt32) {
        messageStart = count
        var header = nlmsghdr()
        header.nlmsg_type = type
        header.nlmsg_flags = flags
        header.nlmsg_seq = sequence
        append(header)
    }

    /// Appends a fixed-size part of a message (a header), then pads to 4 bytes.
    mutating func append<T: BitwiseCopyable>(_ value: T) {
        store(value)
        pad()
    }

    mutating func appendAttribute(_ type: UInt16, _ value: UInt32) {
        store(UInt16(4 + 4))
        store(type)
        store(value)
    }

    /// Appends a string attribute: `bytes`, a NUL, and padding to 4 bytes.
    mutating func appendAttribute(_ type: UInt16, string bytes: [UInt8]) {
        store(UInt16(4 + bytes.count + 1))
        store(type)
        for byte in bytes { store(byte) }
        store(UInt8(0))
        pad()
    }

    /// Writes the current message's length into its header.
    mutating func end() {
        storage.storeBytes(of: UInt32(count - messageStart), toByteOffset: messageStart, as: UInt32.self)
    }

    /// Stores `value`'s bytes at the end, growing the storage if it is full.
    private mutating func store<T: BitwiseCopyable>(_ value: T) {
        let size = MemoryLayout<T>.size
        if count + size > storage.count { grow(toHold: count + size) }
        storage.storeBytes(of: value, toByteOffset: count, as: T.self)
        count += size
    }

    private mutating func pad() {
        while count % 4 != 0 { store(UInt8(0)) }
    }

    private mutating func grow(toHold needed: Int) {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(storage.count * 2, needed), alignment: 8)
        bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[..<count]))
        storage.deallocate()
        storage = bigger
    }
}
