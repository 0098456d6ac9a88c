import CNetlink

extension KernelStateModel {
    /// A route notification: default routes and the halves of the address space update the
    /// state; other routes are reported as they come; routes the kernel clones are not routes
    /// of a table and are ignored.
    mutating func applyRoute(_ route: Route, deleted: Bool, flags: Int32, remainingLifetime: Duration?,
                             now: ContinuousClock.Instant) {
        var route = route
        guard !route.flags.contains(.cloned) else { return }
        if route.lacksObjectNexthops, !route.takeNexthops(from: nexthopObjects), route.isDefaultOrHalf, !deleted {
            // An object the kernel has not told of yet: the objects and the table are read
            // again, and the route is kept as it was until then (not without next hops).
            rereads.nexthopObjects = true
            rereads.markTable(of: route)
            return
        }
        if route.isDefaultOrHalf {
            var deleted = deleted
            if let lifetime = remainingLifetime {
                if lifetime > .zero {
                    notedExpiry.keepEarliest(now + lifetime)
                } else {
                    // Told of already expired: the kernel's lookups pass it over.
                    deleted = true
                }
            }
            applyDefaultRoute(route, deleted: deleted, flags: flags)
        } else if deleted {
            events.append(.route(.removed(route)))
        } else if flags & NLM_F_REPLACE != 0 {
            events.append(.route(.replaced(route)))
        } else {
            events.append(.route(.new(route)))
        }
    }

    /// Applies a default-route message. The plain cases (a new route, a replacement of exactly
    /// one route, the deletion of a route as kept) are applied directly. The others (a deletion
    /// of one path of a multipath route, an append next to a route with the same prefix, a
    /// replacement that matches several) mark the table for a re-read of its default routes.
    private mutating func applyDefaultRoute(_ route: Route, deleted: Bool, flags: Int32) {
        let key = route.key
        let samePrefix = state.defaultRoutes.filter { $0.key.prefixPart == key.prefixPart }
        if deleted {
            // A route through a next-hop object is the only one with its key: its id tells it.
            if let old = state.defaultRoutes[key], route.nexthopID != nil || (old.nexthops.count <= 1 && route.nexthops.count <= 1) {
                state.defaultRoutes[key] = nil
                events.append(.route(.removed(old)))
                closeTieGaps(of: key.prefixPart)
            } else if !samePrefix.isEmpty {
                rereads.markTable(of: route)
            }
            return
        }
        if flags & NLM_F_REPLACE != 0, state.defaultRoutes[key] == nil {
            if samePrefix.count == 1, let (oldKey, old) = samePrefix.first {
                // Replaced in place: the new route takes the old one's place.
                var route = route
                route.tieOrder = old.tieOrder
                state.defaultRoutes[oldKey] = nil
                state.defaultRoutes[key] = route
                events.append(.route(.changed(old: old, new: route)))
            } else {
                rereads.markTable(of: route)
            }
            return
        }
        // An IPv6 route next to another with the same prefix part most likely joined it as a
        // multipath route (all but routes through next-hop objects, which stay apart), and the
        // message lists the new hop first, so its key is not the joined route's: it is not kept
        // as a route of its own (which the re-read would remove again); the kernel's dump says
        // what the table holds now.
        if route.family == .ipv6, samePrefix.keys.contains(where: { $0 != key }) {
            rereads.markTable(of: route)
            return
        }
        var route = route
        if let kept = state.defaultRoutes[key] {
            route.tieOrder = kept.tieOrder
        } else if route.family == .ipv4 {
            placeAmongTies(&route, appended: flags & NLM_F_APPEND != 0)
        }
        if let change = upsert(route, at: key, in: &state.defaultRoutes) { events.append(.route(RouteChange(change))) }
        if lacksItsUpperHalf(route) { rereads.markTable(of: route) }
        // A replacement where several routes share the prefix replaced the kernel's first of
        // them, which need not be the one with this message's next hop.
        if flags & NLM_F_APPEND != 0 || (flags & NLM_F_REPLACE != 0 && samePrefix.count > 1) {
            rereads.markTable(of: route)
        }
    }

    /// Whether `route` is an IPv4 route to the lower half of the address space in a table whose
    /// upper half is not kept: a start-up dump that stops after the default routes reads the
    /// upper half only in a table that held the lower one then, so a VPN that added the upper
    /// half first (`wg-quick` does) may have one; the table's re-read finds it.
    private func lacksItsUpperHalf(_ route: Route) -> Bool {
        guard route.destination == .lowerIPv4Half else { return false }
        return !state.defaultRoutes.values.contains { $0.table == route.table && $0.destination == .upperIPv4Half }
    }

    /// A next-hop object came, changed or went away (`ip nexthop`); nil for one libnl's parser
    /// refused. The kernel flushes the routes that used a deleted one without a message, and
    /// re-points those of a replaced one with messages only in `nexthop_compat_mode`: the
    /// tables of the kept default routes that name an object are re-read (next-hop objects
    /// change rarely). A deleted object also leaves the groups it was in, which the kernel need
    /// not report either: the objects are read again.
    mutating func applyNexthopObject(_ object: NexthopObject?, deleted: Bool) {
        guard let object else {
            rereads.nexthopObjects = true
            return
        }
        if deleted {
            nexthopObjects[object.id] = nil
            if nexthopObjects.values.contains(where: { $0.members.contains { $0.id == object.id } }) {
                rereads.nexthopObjects = true
            }
        } else {
            nexthopObjects[object.id] = object
        }
        for route in state.defaultRoutes.values where route.nexthopID != nil {
            rereads.markTable(of: route)
        }
    }

    // MARK: Default routes read again

    /// Whether a dump filtered by output link (`filter`) must be done again without the link:
    /// the link went away meanwhile (`dumped` is nil: only an IPv6 dump names it, the kernel
    /// filters those), or its hop did. Its single-path routes went with it, but an IPv6
    /// multipath route loses only the link's hop (`fib6_ifdown`) and no longer shows in the
    /// link's dump.
    func needsDumpWithoutLink(_ filter: RouteFilter, dumped: [Route.Key: Route]?) -> Bool {
        guard let index = filter.outputLinkIndex else { return false }
        guard let dumped else { return true }
        return state.defaultRoutes.contains { key, route in
            dumped[key] == nil && filter.matches(route) && route.nexthops.contains { $0.linkIndex != index }
        }
    }

    /// The IPv4 tables that a dump of every table (`filter`) does not read but whose default
    /// routes are kept, to be read by name: a dump of every table reads the tables of bucket 255
    /// (ids 255 modulo 256: the local table, 511, 767, ...) only when a policy rule names them
    /// (see `RequestSocket.forEachDefaultRoute`), and a message may have told of a route there.
    func tablesUnreadByDump(_ filter: RouteFilter) -> Set<RouteTable> {
        guard filter.table == nil, filter.family != .ipv6 else { return [] }
        return Set(state.defaultRoutes.values.lazy
            .filter { $0.family == .ipv4 && $0.table.rawValue % 256 == 255 && filter.matches($0) }.map(\.table))
    }

    /// Makes the kept default routes that `filter` selects equal to `dumped`, the kernel's,
    /// reporting the differences.
    ///
    /// The kernel tells of a link going down before it flushes that link's IPv4 routes, and the
    /// dump does not wait for the flush (Linux 6.10+ dumps IPv4 routes without RTNL): a route the
    /// flush is about to take is not kept.
    mutating func adoptDefaultRoutes(_ dumped: [Route.Key: Route], selectedBy filter: RouteFilter) {
        let current = dumped.filter { !Self.isFlushedWithItsLinks($0.value, links: state.links) && !namesAnObjectGone($0.value) }
        let previous = state.defaultRoutes.filter { filter.matches($0.value) }
        replace(previous, with: current, in: &state.defaultRoutes) { events.append(.route(RouteChange($0))) }
        for part in Set(previous.keys.map(\.prefixPart)).union(dumped.keys.map(\.prefixPart)) { closeTieGaps(of: part) }
    }

    /// Whether `route` names a next-hop object that is gone. The kernel tells of an object's
    /// deletion before it flushes the routes that use it (`remove_nexthop`), and a dump taken
    /// in between still lists them, with no message to follow. An object not told of yet is
    /// followed by the messages of the routes made with it.
    func namesAnObjectGone(_ route: Route) -> Bool {
        route.nexthopID.map { nexthopObjects[$0] == nil } ?? false
    }

    /// Whether the kernel removes `route` because its links are down: an IPv4 route whose every
    /// next hop goes out through a link that is not up. The kernel flushes those when a link
    /// goes down (`fib_disable_ip`) and refuses to add one (`ENETDOWN`), so none exists for
    /// long. A route that names a next-hop object, of either family, goes with its object's
    /// links in the same way, and also when they lose their carrier (neither running nor lower
    /// up): the kernel flushes the objects of such a link (`nexthop_flush_dev`), and routes with
    /// them. A route without next hops (a blackhole) or through a link the state does not know
    /// is not judged.
    static func isFlushedWithItsLinks(_ route: Route, links: [Int32: Link]) -> Bool {
        let usesObject = route.nexthopID != nil
        guard !route.nexthops.isEmpty, route.family == .ipv4 || usesObject else { return false }
        return route.nexthops.allSatisfy { hop in
            guard let link = hop.linkIndex.flatMap({ links[$0] }) else { return false }
            return usesObject ? flushesItsNexthopObjects(link) : !link.isUp
        }
    }
}
