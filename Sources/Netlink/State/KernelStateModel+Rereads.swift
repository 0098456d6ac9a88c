extension KernelStateModel {
    /// What the kernel may have changed without telling, marked for a re-read by the
    /// subscription's loop once the messages that wait are applied.
    struct Rereads: Equatable {
        /// A routing table of one family.
        struct Table: Hashable {
            var family: AddressFamily
            var table: RouteTable
        }

        /// Links whose state changed: the default routes through them are read again (the
        /// kernel flushes the routes of a link that goes down, and marks them `linkdown` when
        /// the carrier goes, without telling anyone: libnl #340, #418).
        var links: Set<Int32> = []
        /// Tables whose default routes are read again: a message was ambiguous, a rule named
        /// them first, or their routes may have expired.
        var tables: Set<Table> = []
        /// Families whose policy rules are read again.
        var ruleFamilies: Set<AddressFamily> = []
        /// Links read again: their lower link left the namespace.
        var lowerLinkLost: Set<Int32> = []
        /// Whether the next-hop objects may be out of date: the kernel flushes the objects of a
        /// link that goes down or loses its carrier without a message, and a route named an
        /// unknown one.
        var nexthopObjects = false

        /// Whether nothing is marked.
        var isEmpty: Bool {
            links.isEmpty && tables.isEmpty && ruleFamilies.isEmpty && lowerLinkLost.isEmpty && !nexthopObjects
        }

        mutating func markTable(of route: Route) {
            tables.insert(Table(family: route.family, table: route.table))
        }

        /// Forgets the marks that a read of the whole state covers (not the next-hop objects',
        /// which only their re-read clears).
        mutating func forgetAllButNexthopObjects() {
            links.removeAll()
            tables.removeAll()
            ruleFamilies.removeAll()
            lowerLinkLost.removeAll()
        }
    }

    /// The links to read again because their lower link left, those still here; forgets the
    /// mark. Each answer goes to ``adoptRereadLink(_:)``.
    mutating func takeLinksWithLostLowerLink() -> [Int32] {
        defer { rereads.lowerLinkLost.removeAll() }
        return rereads.lowerLinkLost.filter { state.links[$0] != nil }.sorted()
    }

    /// Whether the next-hop objects are to be read again (then ``adoptNexthopObjects(_:)``):
    /// marked so, or a link whose objects the kernel flushes silently changed. The kernel
    /// flushes the next-hop objects of a link that goes down or loses its carrier
    /// (`nexthop_flush_dev`), and with them the routes left without one, without a message; a
    /// group keeps its other members, and the routes that use it stay. A link that comes back
    /// takes nothing.
    mutating func nexthopObjectsNeedReread() -> Bool {
        if !rereads.nexthopObjects, !nexthopObjects.isEmpty, rereads.links.contains(where: { index in
            state.links[index].map(Self.flushesItsNexthopObjects) ?? true
                && nexthopObjects.values.contains { $0.linkIndex == index }
        }) {
            rereads.nexthopObjects = true
        }
        return rereads.nexthopObjects
    }

    /// Takes the next-hop objects as read again, and marks the tables of the default routes
    /// that name one for a whole re-read: a route's object may have lost members or changed.
    mutating func adoptNexthopObjects(_ objects: [UInt32: NexthopObject]) {
        nexthopObjects = objects
        rereads.nexthopObjects = false
        for route in state.defaultRoutes.values where route.nexthopID != nil {
            rereads.markTable(of: route)
        }
    }

    /// Takes next-hop objects that a dump read on its own (a route named one it did not know),
    /// with no other consequence.
    mutating func takeNexthopObjectsReadByDump(_ objects: [UInt32: NexthopObject]) {
        nexthopObjects = objects
    }

    /// The default-route dumps that the marked links and tables need; forgets those marks.
    /// Each dump's result goes to ``adoptDefaultRoutes(_:selectedBy:)``.
    ///
    /// The kernel changes routes silently only by removing or flagging routes that exist, so a
    /// link matters only when a kept default route uses it, and only in the families and tables
    /// of those routes: a flip of a link that carries no default route costs no dump. Naming
    /// the table spares the kernel a walk of the others (an IPv4 dump of every table walks the
    /// local routes of every address).
    mutating func takeRouteRereads() -> Set<RouteFilter> {
        var filters = Set<RouteFilter>()
        for route in state.defaultRoutes.values {
            for index in rereads.links where route.uses(linkIndex: index) {
                filters.insert(RouteFilter(family: route.family, table: route.table, outputLinkIndex: index,
                                           defaultOnly: true))
            }
        }
        for table in rereads.tables {
            filters.insert(RouteFilter(family: table.family, table: table.table, defaultOnly: true))
        }
        rereads.links.removeAll()
        rereads.tables.removeAll()
        return filters
    }

    /// The expiry of a kept default route may have come: the tables of the kept IPv6 default
    /// routes (the routes that expire) are marked for a re-read.
    mutating func expiryPassed() {
        for route in state.defaultRoutes.values where route.family == .ipv6 { rereads.markTable(of: route) }
    }

    /// Whether the kernel deletes the next-hop objects of `link`: it is down, or neither running
    /// nor lower up (`nh_netdev_event`).
    static func flushesItsNexthopObjects(_ link: Link) -> Bool {
        !link.isUp || link.flags.isDisjoint(with: [.running, .lowerUp])
    }
}
