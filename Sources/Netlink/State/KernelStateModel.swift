import Synchronization

/// The kernel state a subscription keeps, and the rules that turn what the kernel tells into
/// published changes: apply a change, get the events and the new ``NetworkState``.
///
/// Pure: it reads and writes nothing outside itself, so it is tested from values without a
/// kernel. Where the kernel changes its tables without a message (a link going down flushes its
/// routes, a deleted next-hop object takes its routes along), the model cannot know the result:
/// it marks what must be read again (``rereads``), and the subscription's loop reads it and
/// hands the answer back (``adoptDefaultRoutes(_:selectedBy:)`` and its siblings). Events
/// published while a re-read is marked are unsettled.
struct KernelStateModel {
    /// The state as the kernel told it so far.
    var state: NetworkState
    /// The next-hop objects by id, for routes that name one without carrying its next hops
    /// (see ``Route/nexthopID``).
    var nexthopObjects: [UInt32: NexthopObject]
    /// The events not yet taken (see ``takeEvents()``), in the order they happened.
    var events: [NetlinkEvent] = []
    /// What the kernel may have changed without a message, to be read again.
    var rereads = Rereads()
    /// The soonest expiry of a default route that a message brought since
    /// ``takeNotedExpiry()`` was last called.
    var notedExpiry: ContinuousClock.Instant?
    /// The names that renamed links had before, by link index, until their configuration is
    /// registered again (see ``applyConfiguration(old:new:)``).
    var namesBeforeRename: [Int32: Set<String>] = [:]

    /// Creates the model from the kernel's state as read at the start.
    init(state: NetworkState, nexthopObjects: [UInt32: NexthopObject]) {
        self.state = state
        self.state.linkRevision = Self.nextLinkRevision()
        self.nexthopObjects = nexthopObjects
    }

    /// Whether events wait to be taken.
    var hasEvents: Bool { !events.isEmpty }

    /// Whether the events published now would describe a settled state: nothing is marked for a
    /// re-read.
    var isSettled: Bool { rereads.isEmpty }

    /// The events since the last call, which it forgets.
    mutating func takeEvents() -> [NetlinkEvent] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// The soonest expiry that messages brought since the last call, which it forgets.
    mutating func takeNotedExpiry() -> ContinuousClock.Instant? {
        defer { notedExpiry = nil }
        return notedExpiry
    }

    // MARK: What libnl's caches tell

    /// Applies one change of libnl's link, address, netconf or neighbour cache.
    mutating func apply(_ change: CacheChange) {
        switch change {
        case .link(let old, let new):
            if let new { applyLink(new) } else if let old { removeLink(index: old.index, lastSeen: old) }
        case .address(let old, let new):
            if let new { applyAddress(new) } else if let old { removeAddress(old) }
        case .configuration(let old, let new):
            applyConfiguration(old: old, new: new)
        case .neighbor(let old, let new):
            if let new {
                if let change = upsert(new, at: new.key, in: &state.neighbors) { events.append(.neighbor(change)) }
            } else if let old, let kept = state.neighbors.removeValue(forKey: old.key) {
                events.append(.neighbor(.removed(kept)))
            }
        }
    }

    /// Applies a notification that no cache holds: a route, a rule or a next-hop object.
    /// - Parameter now: When it arrived, to date a route's remaining lifetime.
    mutating func apply(_ message: UncachedMessage, receivedAt now: ContinuousClock.Instant) {
        switch message {
        case .route(let route, let deleted, let flags, let remainingLifetime):
            applyRoute(route, deleted: deleted, flags: flags, remainingLifetime: remainingLifetime, now: now)
        case .rule(let family):
            // Its family's rules are read again once the messages waiting are read (a script
            // that adds a hundred rules costs one dump, not a hundred), and reported then.
            rereads.ruleFamilies.insert(family)
        case .nexthop(let object, let deleted):
            applyNexthopObject(object, deleted: deleted)
        }
    }

    // MARK: Links

    private mutating func applyLink(_ link: Link) {
        guard let change = upsert(link, at: link.index, in: &state.links) else { return }
        noteLinkChange(change)
        events.append(.link(change))
        switch change {
        case .new(let new): rereadRulesNaming([new.name])
        case .changed(let old, let new) where old.name != new.name:
            rereadRulesNaming([old.name, new.name])
            namesBeforeRename[new.index, default: []].insert(old.name)
        default: break
        }
        let reachability: InterfaceFlags = [.up, .running, .lowerUp]
        if case .changed(let old, _) = change,
           old.flags.intersection(reachability) != link.flags.intersection(reachability) || old.operState != link.operState {
            rereads.links.insert(link.index)
        }
    }

    /// Gives the links a new revision, unless `change` left the link what it was (it only went
    /// up or down, say), so that the classification cache knows without looking at every link.
    private mutating func noteLinkChange(_ change: Change<Link>) {
        if case .changed(let old, let new) = change, new.differsOnlyInState(from: old) { return }
        state.linkRevision = Self.nextLinkRevision()
    }

    /// Link revisions, from one counter for the process: two subscriptions never share one.
    private static let linkRevisions = Atomic<UInt64>(0)

    private static func nextLinkRevision() -> UInt64 {
        linkRevisions.add(1, ordering: .relaxed).newValue
    }

    /// Forgets a link that went away, with its addresses and the default routes through it
    /// (the kernel flushes those without a notification).
    ///
    /// A link whose lower link it was, in this namespace, is read again if it is still here:
    /// the other end of a veth pair whose peer moved to another namespace now has its lower
    /// link there (`IFLA_LINK_NETNSID`), which the kernel tells no one.
    private mutating func removeLink(index: Int32, lastSeen: Link) {
        let old = state.links.removeValue(forKey: index) ?? lastSeen
        namesBeforeRename[index] = nil
        state.linkRevision = Self.nextLinkRevision()
        events.append(.link(.removed(old)))
        for link in state.links.values where link.lowerLinkIndex == index && link.linkNamespaceID == nil {
            rereads.lowerLinkLost.insert(link.index)
        }
        rereadRulesNaming([old.name])
        for (key, address) in state.addresses where address.linkIndex == index {
            state.addresses[key] = nil
            events.append(.address(.removed(address)))
        }
        // The link's next-hop objects go with it, and leave their groups, silently.
        if nexthopObjects.values.contains(where: { $0.linkIndex == index }) { rereads.nexthopObjects = true }
        for (key, route) in state.defaultRoutes where route.uses(linkIndex: index) {
            // IPv4 drops a multipath route with a hop on a deleted link whole; IPv6 drops only
            // that hop (`fib6_ifdown`), the route keeps the others, and with
            // `net.ipv6.route.skip_notify_on_dev_down` nobody is told: its table is re-read. A
            // route whose next-hop group keeps other members stays too, in either family.
            if route.family == .ipv6 || route.nexthopID != nil, route.nexthops.contains(where: { $0.linkIndex != index }) {
                rereads.markTable(of: route)
                continue
            }
            state.defaultRoutes[key] = nil
            events.append(.route(.removed(route)))
            closeTieGaps(of: key.prefixPart)
        }
        rereads.links.remove(index)
    }

    /// Applies a link read again because its lower link left (see ``Rereads/lowerLinkLost``);
    /// nil when it went away meanwhile (its removal comes as a message).
    mutating func adoptRereadLink(_ link: Link?) {
        if let link { applyLink(link) }
    }

    // MARK: Addresses

    private mutating func applyAddress(_ address: InterfaceAddress) {
        if let change = upsert(address, at: address.key, in: &state.addresses) { events.append(.address(change)) }
    }

    /// Forgets an address. The deletion reports the version that was kept, as libnl's cache did.
    private mutating func removeAddress(_ address: InterfaceAddress) {
        guard let old = state.addresses.removeValue(forKey: address.key) else { return }
        events.append(.address(.removed(old)))
        // Removing an IPv4 address flushes, without a notification, the routes of its link and
        // the routes on any link that used it as their preferred source.
        rereads.links.insert(address.linkIndex)
        for route in state.defaultRoutes.values where route.preferredSource == address.address {
            for hop in route.nexthops { if let index = hop.linkIndex { rereads.links.insert(index) } }
        }
    }

    // MARK: IP configuration

    private mutating func applyConfiguration(old: InterfaceConfiguration?, new: InterfaceConfiguration?) {
        guard let key = (new ?? old)?.key else { return }
        let before = state.configurations[key]
        if var new {
            // The kernel's notification of one sysctl carries only that value, and libnl's
            // cache may take it as the whole object: the others are kept.
            new.keepValues(of: before)
            if let change = upsert(new, at: key, in: &state.configurations) { events.append(.configuration(change)) }
        } else if let kept = state.configurations.removeValue(forKey: key) {
            events.append(.configuration(.removed(kept)))
        }
        if before?.ignoresRoutesWithLinkdown != state.configurations[key]?.ignoresRoutesWithLinkdown {
            rereadRoutesMarkedDead(family: key.family, scope: key.scope)
        }
        // A renamed link's configuration is registered again (these messages) after the kernel
        // has detached the rules that name its old name and attached those that name its new
        // one, which it did after it told of the rename: the rules are read once more.
        if case .link(let index) = key.scope, let link = state.links[index] {
            rereadRulesNaming([link.name] + (namesBeforeRename.removeValue(forKey: index) ?? []))
        }
    }

    /// `ignore_routes_with_linkdown` changed: the kernel reports the next hops of a link
    /// without carrier as dead under it (and lookups pass them over), with no route message.
    /// The default routes of `family` through the links `scope` covers are read again.
    private mutating func rereadRoutesMarkedDead(family: AddressFamily, scope: ConfigurationScope) {
        for route in state.defaultRoutes.values where route.family == family {
            if case .link(let index) = scope, !route.uses(linkIndex: index) { continue }
            rereads.markTable(of: route)
        }
    }

    // MARK: Policy rules

    /// Takes the rules read again for the marked families (``Rereads/ruleFamilies``) and
    /// reports each of them, as every rule message was reported before the rules were kept: a
    /// rule may differ in what ``PolicyRule`` does not hold.
    mutating func adoptRereadRules(_ rules: [AddressFamily: [PolicyRule]]) {
        for family in AddressFamily.allCases where rereads.ruleFamilies.contains(family) {
            adoptRules(rules[family], of: family)
            events.append(.rulesChanged(family))
        }
        rereads.ruleFamilies.removeAll()
    }

    /// Makes `rules` the state's rules of `family`, and marks the tables that a rule names for
    /// the first time: their default routes may not have been read (an IPv4 table dumped after
    /// the main one is read at the start only when a rule names it).
    /// - Returns: Whether the rules changed.
    @discardableResult
    private mutating func adoptRules(_ rules: [PolicyRule]?, of family: AddressFamily) -> Bool {
        let old = state.policyRules[family]
        guard old != rules else { return false }
        state.policyRules[family] = rules
        let named = Set((old ?? []).map(\.table))
        for rule in rules ?? [] where rule.action == .toTable && !named.contains(rule.table) {
            rereads.tables.insert(Rereads.Table(family: family, table: rule.table))
        }
        return true
    }

    /// Marks for a re-read the families with a rule that names a link by `names`: the kernel
    /// attaches and detaches such rules when a link of that name comes, goes or is renamed,
    /// without a rule message.
    private mutating func rereadRulesNaming(_ names: [String]) {
        for (family, rules) in state.policyRules where rules.contains(where: { rule in
            names.contains { $0 == rule.inputLinkName || $0 == rule.outputLinkName }
        }) {
            rereads.ruleFamilies.insert(family)
        }
    }

    // MARK: Resynchronization

    /// Ends a re-read of the whole state (after an overflow), whose cache and route differences
    /// are applied already: adopts the rules, reporting each family whose rules changed,
    /// forgets every mark that the re-read covered, and reports `resynchronized`.
    mutating func finishResynchronization(rules: [AddressFamily: [PolicyRule]], reason: ResynchronizationReason) {
        for family in AddressFamily.allCases where adoptRules(rules[family], of: family) {
            events.append(.rulesChanged(family))
        }
        rereads.forgetAllButNexthopObjects()
        events.append(.resynchronized(reason))
    }
}
