import CNetlink
import Glibc

/// A change that libnl's cache manager reported, as Swift values: `new` is the value after
/// (nil for an object that went), `old` the value of an object that went (nil otherwise).
///
/// libnl's change callback gives the old object of a change too, but the observer's state
/// holds that version already (libnl's cache and it are fed the same messages), and after a
/// re-read (``CacheManager/resynchronize(on:alternativeNames:)``) libnl has none: a change is
/// the new value alone, and the old one is not converted for nothing.
enum CacheChange {
    case link(old: Link?, new: Link?)
    case address(old: InterfaceAddress?, new: InterfaceAddress?)
    case configuration(old: InterfaceConfiguration?, new: InterfaceConfiguration?)
    case neighbor(old: Neighbor?, new: Neighbor?)
}

/// A notification of the groups the manager's socket joins that no cache holds: routes (never
/// mirrored while monitoring), policy rules and next-hop objects, each parsed by libnl.
enum UncachedMessage {
    /// A route message, with its `nlmsg_flags` and the route's remaining lifetime.
    case route(Route, deleted: Bool, flags: Int32, remainingLifetime: Duration?)
    /// A rule of this family came, changed or went.
    case rule(AddressFamily)
    /// A next-hop object message; nil for one libnl's attribute parser refused.
    case nexthop(NexthopObject?, deleted: Bool)
}

/// What a ``CacheManager`` tells its owner, on the thread that calls ``CacheManager/read()``.
protocol CacheManagerObserver: AnyObject {
    /// A message from the kernel is about to be handled (for batching: the observer may publish
    /// what the previous one changed).
    func messageArrives()
    /// A cache changed.
    func cacheChanged(_ change: CacheChange)
    /// A message that no cache holds arrived.
    func uncachedMessage(_ message: UncachedMessage)
}

/// libnl's cache manager (`nl_cache_mngr`) for one network namespace: link, address and
/// netconf caches (and neighbours when asked) kept by libnl from the kernel's notifications,
/// whose change callbacks (`nl_cache_mngr_add_cache_v2`) become ``CacheChange`` values; and,
/// on the same socket, route, rule and next-hop notifications, seen by a callback on each
/// incoming message (`NL_CB_MSG_IN`) and parsed by libnl.
///
/// Not thread-safe: one thread creates it, reads it and frees it (the subscription's loop).
/// Objects are converted inside libnl's callbacks; no libnl pointer outlives one.
final class CacheManager {
    private unowned let observer: any CacheManagerObserver
    private let socket: OpaquePointer
    private var manager: OpaquePointer?
    private var linkCache: OpaquePointer?
    private var addressCache: OpaquePointer?
    private var configurationCache: OpaquePointer?
    private var neighborCache: OpaquePointer?
    /// The alternative names of each link, which libnl 3.7's link objects do not hold: read
    /// from each link message (``Link/alternativeNames(message:)``) before libnl's cache sees it.
    private var alternativeNames: [Int32: [String]] = [:]
    /// The names of the link message being handled, until its change callback takes them.
    private var pendingNames: (index: Int32, names: [String])?

    /// Creates the manager in the calling thread's namespace, joins the route, rule and
    /// next-hop groups, then adds the caches (each joins its groups before libnl fills it, so
    /// that no change in between is missed: it waits in the socket).
    ///
    /// - Parameters:
    ///   - receiveBufferSize: The socket's receive buffer, in bytes.
    ///   - followsNeighbors: Whether to keep a neighbour cache as well.
    ///   - observer: Told of every change; kept unowned (it owns the manager).
    init(receiveBufferSize: Int, followsNeighbors: Bool, observer: any CacheManagerObserver) throws(NetlinkError) {
        guard let socket = nl_socket_alloc() else { throw .noMemory }
        self.socket = socket
        self.observer = observer
        // Every stored property has its value from here on: a throw runs `deinit`, which frees
        // the socket (and the manager, once there is one).
        manager = try Self.allocateManager(socket: socket)
        // libnl reads each datagram whole, however large (a link with hundreds of names).
        nl_socket_enable_msg_peek(socket)
        setReceiveBuffer(of: nl_socket_get_fd(socket), to: receiveBufferSize)
        for group in [RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE] {
            try nlCheck(nl_socket_add_membership(socket, Int32(group.rawValue)), "join group \(group.rawValue)")
        }
        // Next-hop objects (Linux 5.3+; an older kernel has no such group and no such routes).
        _ = nl_socket_add_membership(socket, Int32(RTNLGRP_NEXTHOP.rawValue))
        let me = Unmanaged.passUnretained(self).toOpaque()
        nl_socket_modify_cb(socket, NL_CB_MSG_IN, NL_CB_CUSTOM, { message, argument in
            Unmanaged<CacheManager>.fromOpaque(argument!).takeUnretainedValue().messageArrived(message!)
        }, me)
        linkCache = try add("route/link")
        addressCache = try add("route/addr")
        configurationCache = try add("route/netconf")
        if followsNeighbors { neighborCache = try add("route/neigh") }
    }

    deinit {
        nl_cache_mngr_free(manager)  // frees the caches and the manager's own request socket
        nl_socket_free(socket)
    }

    /// The descriptor to wait on: readable when notifications wait.
    var descriptor: Int32 { nl_socket_get_fd(socket) }

    /// `nl_cache_mngr_alloc`, called only once two descriptors are free: libnl 3.7 frees its
    /// request socket twice when it cannot connect it, and aborts the process (`BUG()` in
    /// `nl_cb_put`). Two descriptors are opened and closed under ``DescriptorCreation``, which
    /// every descriptor of the library is opened under, so none is taken in between.
    private static func allocateManager(socket: OpaquePointer) throws(NetlinkError) -> OpaquePointer {
        try DescriptorCreation.serialized { () throws(NetlinkError) -> OpaquePointer in
            let first = open("/dev/null", O_RDONLY | O_CLOEXEC)
            let firstError = errno
            let second = first >= 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1
            let secondError = errno
            if first >= 0 { close(first) }
            if second >= 0 { close(second) }
            guard first >= 0, second >= 0 else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: first < 0 ? firstError : secondError,
                                   context: "create cache manager")
            }
            var created: OpaquePointer?
            let rc = nl_cache_mngr_alloc(socket, NETLINK_ROUTE, 0, &created)
            guard rc >= 0, let created else {
                throw NetlinkError(code: abs(rc), systemErrno: errno, context: "create cache manager")
            }
            return created
        }
    }

    /// Adds the cache of libnl's kind `name`, with ``objectChanged(in:old:new:)`` as its v2 change
    /// callback (libnl calls it only once the cache is added: not for the initial fill).
    private func add(_ name: String) throws(NetlinkError) -> OpaquePointer {
        var cache: OpaquePointer?
        try nlCheck(nl_cache_alloc_name(name, &cache), "allocate \(name) cache")
        let rc = nl_cache_mngr_add_cache_v2(manager, cache, { cache, old, new, _, _, argument in
            Unmanaged<CacheManager>.fromOpaque(argument!).takeUnretainedValue().objectChanged(in: cache, old: old, new: new)
        }, Unmanaged.passUnretained(self).toOpaque())
        if rc < 0 {
            nl_cache_free(cache)
            throw NetlinkError(libnlCode: rc, context: "add \(name) cache")
        }
        return cache!
    }

    // MARK: Reading

    /// Reads and handles every notification that waits (`nl_cache_mngr_data_ready`), calling
    /// the observer for each. Returns libnl's result: the number of messages, or a negative
    /// libnl code (`-NLE_NOMEM` when the kernel dropped notifications: its `ENOBUFS`).
    func read() -> Int32 {
        let rc = nl_cache_mngr_data_ready(manager)
        settlePendingNames()
        return rc
    }

    /// Re-reads every cache from the kernel on `socket` (`nl_cache_resync`), reporting the
    /// differences to the observer, after notifications were lost.
    ///
    /// - Parameter alternativeNames: The links' alternative names, read just before.
    func resynchronize(on socket: OpaquePointer, alternativeNames: [Int32: [String]]) throws(NetlinkError) {
        pendingNames = nil
        let previousNames = self.alternativeNames
        self.alternativeNames = alternativeNames
        for (cache, name) in [(linkCache, "links"), (addressCache, "addresses"), (configurationCache, "netconf"),
                              (neighborCache, "neighbours")] {
            guard let cache else { continue }
            try nlCheck(nl_cache_resync(socket, cache, { cache, object, action, argument in
                let manager = Unmanaged<CacheManager>.fromOpaque(argument!).takeUnretainedValue()
                let gone = action == NL_ACT_DEL
                manager.objectChanged(in: cache, old: gone ? object : nil, new: gone ? nil : object)
            }, Unmanaged.passUnretained(self).toOpaque()), "re-read \(name)")
            // A link whose only change is its alternative names is no change to libnl.
            if cache == linkCache {
                for link in links() where previousNames[link.index] != link.alternativeNames {
                    observer.cacheChanged(.link(old: nil, new: link))
                }
            }
        }
    }

    // MARK: What the caches hold

    /// The links the link cache holds, with their alternative names.
    func links() -> [Link] { values(of: linkCache, link(from:)) }

    /// The addresses the address cache holds.
    func addresses() -> [InterfaceAddress] { values(of: addressCache, InterfaceAddress.init(libnl:)) }

    /// The IP configurations the netconf cache holds.
    func configurations() -> [InterfaceConfiguration] { values(of: configurationCache, InterfaceConfiguration.init(libnl:)) }

    /// The neighbours the neighbour cache holds (none unless asked for).
    func neighbors() -> [Neighbor] { values(of: neighborCache, Neighbor.init(libnl:)) }

    /// The objects of `cache` that `convert` makes values of, in cache order.
    private func values<Value>(of cache: OpaquePointer?, _ convert: (OpaquePointer) -> Value?) -> [Value] {
        guard let cache else { return [] }
        var values: [Value] = []
        forEachObject(in: cache) { if let value = convert($0) { values.append(value) } }
        return values
    }

    /// Takes the links' alternative names, read at start-up after the link cache was filled
    /// (a change since waits in the socket as a notification).
    func adoptAlternativeNames(_ names: [Int32: [String]]) {
        alternativeNames = names
    }

    // MARK: libnl's callbacks

    /// Every message the manager's socket reads, before libnl's caches see it
    /// (`NL_CB_MSG_IN`). Messages that no cache holds are handled here and skipped; a link
    /// message leaves its alternative names for its change callback; the rest go on to
    /// libnl's caches.
    private func messageArrived(_ message: OpaquePointer) -> Int32 {
        settlePendingNames()
        // Only the kernel (port 0) sends notifications.
        guard nlmsg_get_src(message).pointee.nl_pid == 0, let header = nlmsg_hdr(message) else { return Int32(NL_SKIP.rawValue) }
        observer.messageArrives()
        let type = Int32(header.pointee.nlmsg_type)
        switch type {
        case Int32(RTM_NEWLINK):
            if let link = Link.header(of: header), link.ifi_family == AF_UNSPEC {
                pendingNames = (link.ifi_index, Link.alternativeNames(message: header))
            }
            return Int32(NL_OK.rawValue)
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            if let (route, remainingLifetime) = Route.parse(message: header) {
                observer.uncachedMessage(.route(route, deleted: type == RTM_DELROUTE, flags: Int32(header.pointee.nlmsg_flags),
                                                remainingLifetime: remainingLifetime))
            }
        case Int32(RTM_NEWRULE), Int32(RTM_DELRULE):
            if let rule = PolicyRule(message: message) { observer.uncachedMessage(.rule(rule.family)) }
        case Int32(RTM_NEWNEXTHOP), Int32(RTM_DELNEXTHOP):
            observer.uncachedMessage(.nexthop(NexthopObject(message: header), deleted: type == RTM_DELNEXTHOP))
        default:
            return Int32(NL_OK.rawValue)
        }
        return Int32(NL_SKIP.rawValue)
    }

    /// An object of `cache` came (`old` nil), changed or went (`new` nil): libnl's change
    /// callback, or a re-read's.
    private func objectChanged(in cache: OpaquePointer?, old: OpaquePointer?, new: OpaquePointer?) {
        let old = new == nil ? old : nil  // see ``CacheChange``
        if cache == linkCache {
            linkChanged(old: old, new: new)
        } else if cache == addressCache {
            observer.cacheChanged(.address(old: old.flatMap(InterfaceAddress.init(libnl:)), new: new.flatMap(InterfaceAddress.init(libnl:))))
        } else if cache == configurationCache {
            observer.cacheChanged(.configuration(old: old.flatMap(InterfaceConfiguration.init(libnl:)),
                                                 new: new.flatMap(InterfaceConfiguration.init(libnl:))))
        } else if cache == neighborCache {
            observer.cacheChanged(.neighbor(old: old.flatMap(Neighbor.init(libnl:)), new: new.flatMap(Neighbor.init(libnl:))))
        }
    }

    /// A link object came, changed or went.
    private func linkChanged(old: OpaquePointer?, new: OpaquePointer?) {
        // A bridge port's `AF_BRIDGE` view comes and goes as the port joins and leaves.
        guard let object = new ?? old, isLinkView(object) else { return }
        let index = Int32(rtnl_link_get_ifindex(object))
        let previousNames = alternativeNames[index] ?? []
        if new != nil {
            if let pending = pendingNames, pending.index == index {
                alternativeNames[index] = pending.names
                pendingNames = nil
            }
        } else {
            alternativeNames[index] = nil
        }
        let oldLink = old.flatMap { Link(libnl: $0, alternativeNames: previousNames) }
        let newLink = new.flatMap(link(from:))
        guard oldLink != nil || newLink != nil else { return }
        observer.cacheChanged(.link(old: oldLink, new: newLink))
    }

    /// The link message handled last named other alternative names than its link had, and
    /// libnl, which does not hold them, saw no change: the link changed all the same.
    private func settlePendingNames() {
        guard let (index, names) = pendingNames else { return }
        pendingNames = nil
        let previous = alternativeNames[index] ?? []
        guard names != previous else { return }
        alternativeNames[index] = names
        // `rtnl_link_get` would take the first object of the index, which may be a bridge
        // port's `AF_BRIDGE` view.
        var found: Link?
        forEachObject(in: linkCache!) { object in
            if found == nil, rtnl_link_get_ifindex(object) == index { found = link(from: object) }
        }
        guard let new = found else { return }
        var old = new
        old.alternativeNames = previous
        observer.cacheChanged(.link(old: old, new: new))
    }

    private func link(from object: OpaquePointer) -> Link? {
        guard isLinkView(object) else { return nil }
        return Link(libnl: object, alternativeNames: alternativeNames[Int32(rtnl_link_get_ifindex(object))] ?? [])
    }

    /// Whether a libnl link object describes a link itself: read from a message of family
    /// `AF_UNSPEC`, which libnl keeps as such, except for a bridge, which it gives the family
    /// `AF_BRIDGE` after its kind. The `AF_BRIDGE` messages of bridge ports describe a link a
    /// second time, as objects of their own.
    private func isLinkView(_ object: OpaquePointer) -> Bool {
        switch rtnl_link_get_family(object) {
        case AF_UNSPEC: return true
        case AF_BRIDGE: return libnlString(rtnl_link_get_type(object)) == "bridge"
        default: return false
        }
    }
}
