import Glibc
import Netlink

// Which default routes carry this host's traffic to the internet: the policy rules' walk, as the
// kernel makes it (`fib_rules_lookup`), for a packet that a process of this user sends through
// a socket bound to no link, without a firewall mark, to an address no more specific route
// covers.

extension ReachabilityEvaluator {
    /// The user whose sockets the internet's traffic comes from: this process's effective user.
    package static var currentUserID: UInt32 { UInt32(geteuid()) }

    /// The default routes that can carry this host's traffic to the internet, in the order the
    /// kernel would try them: by policy rule, then lowest metric first (IPv4 before IPv6 on a
    /// tie), and among routes of one table and family with the same metric the kernel's own
    /// order (see `triedBefore(_:_:)`). A table whose two halves of the address space both have
    /// a route (`0.0.0.0/1` and `128.0.0.0/1`, `::/1` and `8000::/1`: a VPN's cover of the
    /// whole space) gives the lower half's routes first, whatever their metric: the kernel's
    /// lookup of any internet address matches a half before the default route (see
    /// `lookupOrder(_:)`).
    ///
    /// In each family, the rules (`NetworkState.policyRules`) are walked by priority, as the
    /// kernel walks them for a packet that a socket of `userID`, bound to no link, sends
    /// without a firewall mark from this host (input link: the loopback link), to an address
    /// in no particular prefix (see ``ruleSelectsInternetTraffic(_:source:userID:loopbackName:)``).
    /// A rule that selects such a packet:
    /// - looking up a table (table 0 is the main one): gives the table's default routes for
    ///   every type of service, lowest metric first, passing over those whose every next hop
    ///   is dead: the unicast ones up to the first that refuses (unreachable, prohibit,
    ///   blackhole), which is included and ends the family: the kernel's lookup takes it before
    ///   any default route with a higher metric, so those cannot carry anything (an
    ///   `unreachable default metric 1`, a VPN's kill switch, makes the family unreachable). A
    ///   default route of another type (local, broadcast, multicast) answers too, and is no way
    ///   to the internet. A table with a unicast default route ends the walk; one without (or whose
    ///   first is a `throw` route, or whose rule has `suppress_prefixlength`, which passes over
    ///   default routes) passes the packet on to the next rule; so does one whose answer goes
    ///   out through a link of the rule's `suppress_ifgroup`, and the table's later routes
    ///   through such a link are no fallback: the kernel would pass them over too. The link is
    ///   the one whose group the kernel checks: for IPv4 the route's first next hop's, dead or
    ///   not; for IPv6 the hop that the flow's hash picks among the live ones, so a multipath
    ///   IPv6 route is passed over only when every live hop's link is in the group (flows hashed
    ///   to its other hops leave through them);
    /// - `goto`: goes on at the first rule with that priority; `nop`: goes on;
    /// - any other action (`blackhole`, `unreachable`, `prohibit`) ends the family with nothing.
    ///
    /// A connected socket's packets carry a source address, which the kernel looks up again
    /// with, and which a rule, or an IPv6 source-specific default route (`default from P`),
    /// may select by: for IPv4, the source of the route the first walk
    /// found (its preferred source, or an address of its output link, preferring one whose
    /// subnet holds the gateway, else of any link: `inet_select_addr`), walked again; for IPv6,
    /// when the first walk finds nothing, the one address the kernel would choose for a global
    /// destination (a global one, not deprecated, outside the unique-local, 6to4 and Teredo
    /// prefixes if there is one: RFC 6724's label rule), walked again. A multipath route's
    /// source is taken from its first next hop, where the kernel hashes the flow to one.
    ///
    /// IPv6 keeps its fast path (the local table, then the main one) while no rule was ever
    /// added in the namespace, whatever rules of the two it starts with were deleted: rules
    /// that are only those defaults (`0: lookup local`, `32766: lookup main`) are taken as both.
    ///
    /// A family without rules in the state (built by hand, or a kernel without policy routing)
    /// is routed by its main table, where a `throw` default route refuses too; a family whose
    /// rules were read and are none routes nothing.
    ///
    /// So with WireGuard's `wg-quick` (`not fwmark 51820 lookup 51820`, and `lookup main
    /// suppress_prefixlength 0` before it), the internet goes through the tunnel's table, and
    /// with a Tailscale exit node through table 52.
    package static func internetRoutes(_ state: NetworkState, userID: UInt32 = currentUserID) -> [Route] {
        var ranked: [(rank: UInt32, metric: UInt32, route: Route)] = []
        let loopbackName = state.links[Self.loopbackIndex]?.name ?? "lo"
        for family in AddressFamily.allCases {
            let defaults = state.defaultRoutes.values.filter { $0.family == family && $0.tos == 0 }
            let walked = walkedRules(of: family, in: state)
            func walk(from source: IPAddress?) -> [(UInt32, Route)] {
                let carrying = defaults.filter { carries($0, from: source) }
                guard let walked else {
                    // No rules read: the main table, where a `throw` route refuses too.
                    let (routes, _) = tableRoutes(carrying.filter { $0.table == .main }, suppresses: { _ in false },
                                                  throwRefuses: true)
                    return routes.map { (32766, $0) }
                }
                return walkRules(walked, defaults: carrying, links: state.links, source: source, userID: userID,
                                 loopbackName: loopbackName)
            }
            var found = walk(from: nil)
            if (walked ?? []).contains(where: { $0.source != nil }) || defaults.contains(where: Self.isSourceSpecific) {
                if family == .ipv4 {
                    // The first walk's answer: the route the kernel's lookup takes.
                    if let first = found.first?.1, first.type == .unicast,
                       let source = first.preferredSource ?? ipv4Source(of: first, in: state) {
                        found = walk(from: source)
                    }
                } else if !found.contains(where: { $0.1.type == .unicast }), let source = ipv6Source(in: state) {
                    found = walk(from: source)
                }
            }
            // The routes a rule found keep their lookup's order: each ranks with the highest
            // metric up to it (a half of the address space goes first, whatever its metric).
            var metric: (rank: UInt32, value: UInt32)?
            for (rank, route) in found {
                let value = metric.map { $0.rank == rank ? max($0.value, route.metric) : route.metric } ?? route.metric
                metric = (rank, value)
                ranked.append((rank, value, route))
            }
        }
        // Stable: the routes of one rule and family stay in their lookup's order.
        return ranked.enumerated().sorted { a, b in
            let first = (a.element.rank, a.element.metric, a.element.route.family.rawValue, a.offset)
            let second = (b.element.rank, b.element.metric, b.element.route.family.rawValue, b.offset)
            return first < second
        }.map(\.element.route)
    }

    /// Whether the kernel's lookup tries route `a` before `b`, of the same table, family and
    /// destination: the lower metric first; among IPv4 routes of the same metric, the kernel's
    /// order (`Route.tieOrder`: `ip route append` and `prepend` place them); among IPv6 routes
    /// of the same metric, the one whose router has the higher `Route.preference`
    /// (`rt6_score_route`, which scores the routes of the first one's metric by it: several
    /// routers' advertisements give routes of metric 1024 that only their preference tells
    /// apart); else by their links' indexes. For the rest of an IPv6 tie (routers with the same
    /// preference, routes through next-hop objects) the kernel goes round robin among the
    /// routers it cannot reach, which no message tells.
    static func triedBefore(_ a: Route, _ b: Route) -> Bool {
        if a.metric != b.metric { return a.metric < b.metric }
        if a.family == .ipv4, a.tieOrder != b.tieOrder { return a.tieOrder < b.tieOrder }
        let (preferenceA, preferenceB) = (a.preference ?? .medium, b.preference ?? .medium)
        if preferenceA != preferenceB { return preferenceA > preferenceB }
        return (a.outputLinkIndex ?? 0) < (b.outputLinkIndex ?? 0)
    }

    /// A table's routes to the internet in the order its lookup tries them (each part by
    /// `triedBefore(_:_:)`): the routes of the lower half of the address space (`0.0.0.0/1`,
    /// `::/1`) when both halves have one that the lookup does not pass over, then the default
    /// routes. The kernel's lookup matches the longest prefix first: a cover of both halves
    /// takes every internet address from the default route, and the lower half's routes stand
    /// for it (a lookup in the upper half finds the same, through the VPN that added both);
    /// where one half's routes are gone or dead, half of the internet goes by the default
    /// route, which is then the internet's. A lone half is no cover.
    static func lookupOrder(_ routes: [Route]) -> [Route] {
        let defaults = routes.filter(\.isDefault)
        let halves = routes.filter { !$0.isDefault && !isPassedOver($0) }
        let lower = halves.filter { $0.destination.contains($0.family == .ipv4 ? .v4(.any) : .v6(.any)) }
        guard !lower.isEmpty, lower.count < halves.count else { return defaults.sorted(by: triedBefore) }
        return lower.sorted(by: triedBefore) + defaults.sorted(by: triedBefore)
    }

    /// Whether the kernel's lookup passes over `route`: a unicast route whose every next hop is
    /// dead (a link down, or without carrier with `ignore_routes_with_linkdown`).
    static func isPassedOver(_ route: Route) -> Bool {
        route.type == .unicast && !route.nexthops.isEmpty && route.nexthops.allSatisfy { $0.flags.contains(.dead) }
    }

    /// The loopback link's index (`LOOPBACK_IFINDEX`): a host's own packets come in on it.
    static let loopbackIndex: Int32 = 1

    /// Whether `route` is an IPv6 source-specific route (`default from 2001:db8:2::/64`).
    static func isSourceSpecific(_ route: Route) -> Bool { (route.sourcePrefix?.prefixLength ?? 0) > 0 }

    /// Whether `route` carries packets from `source` (nil: none chosen yet): one without a
    /// source prefix carries any; a source-specific one only those from its prefix, which a
    /// packet without a source is in only when the prefix holds the unspecified address.
    static func carries(_ route: Route, from source: IPAddress?) -> Bool {
        guard isSourceSpecific(route), let prefix = route.sourcePrefix else { return true }
        return prefix.contains(source ?? (route.family == .ipv4 ? .v4(.any) : .v6(.any)))
    }

    /// Whether the internet's answer for `state` depends on the addresses of its links, which
    /// a source is chosen from: a policy rule selects by source, or an IPv6 default route is
    /// source-specific.
    static func internetDependsOnAddresses(_ state: NetworkState) -> Bool {
        state.policyRules.values.contains { $0.contains { $0.source != nil } }
            || state.defaultRoutes.values.contains(where: isSourceSpecific)
    }

    /// The rules that the internet's walk follows in `family`: the state's, or IPv6's defaults
    /// for IPv6 rules that are only those (``defaultIPv6Rules``); `nil` for a family without
    /// rules in the state, which its main table routes.
    static func walkedRules(of family: AddressFamily, in state: NetworkState) -> [PolicyRule]? {
        let rules = state.policyRules[family]
        return family == .ipv6 && rules?.allSatisfy(Self.isDefaultIPv6Rule) == true ? Self.defaultIPv6Rules : rules
    }

    /// Whether the internet's walk can take `route`: it is in a table that a walked rule of its
    /// family looks up (table 0, a VRF rule's, being the main table), or in the main table of
    /// a family without rules.
    static func isReachedByTheWalk(_ route: Route, in state: NetworkState) -> Bool {
        guard let rules = walkedRules(of: route.family, in: state) else { return route.table == .main }
        return rules.contains { $0.action == .toTable && ($0.table == .unspecified ? .main : $0.table) == route.table }
    }

    /// IPv6's rules in a new namespace, which its lookups follow without walking them until a
    /// rule is added (`fib6_has_custom_rules`).
    static let defaultIPv6Rules = [PolicyRule(family: .ipv6, priority: 0, table: .local),
                                   PolicyRule(family: .ipv6, priority: 32766, table: .main)]

    /// Whether `rule` is one of ``defaultIPv6Rules``, as the kernel reports it.
    static func isDefaultIPv6Rule(_ rule: PolicyRule) -> Bool {
        defaultIPv6Rules.contains(rule)
    }

    /// One walk of a family's rules for a packet from `source` (nil: none chosen yet), with the
    /// routes it finds ranked by the priority of the rule that found them.
    private static func walkRules(_ rules: [PolicyRule], defaults: [Route], links: [Int32: Link], source: IPAddress?,
                                  userID: UInt32, loopbackName: String) -> [(UInt32, Route)] {
        var found: [(UInt32, Route)] = []
        var index = 0
        while index < rules.count {
            let rule = rules[index]
            index += 1
            guard ruleSelectsInternetTraffic(rule, source: source, userID: userID, loopbackName: loopbackName) else { continue }
            switch rule.action {
            case .toTable:
                // Table 0 (a VRF rule's, for a socket of no VRF) is the main table.
                let table = rule.table == .unspecified ? .main : rule.table
                // The kernel's suppressors (`fib4_rule_suppress`, `fib6_rule_suppress`): an
                // answer whose prefix is no longer than `suppress_prefixlength` (a default route
                // is always, a half when it is 1 or more); the group is that of
                // the first next hop's link in IPv4 (`fib_info_nhc(fi, 0)`), of the hop the flow
                // was hashed to in IPv6 (`rt6i_idev`, set after `fib6_select_path`).
                let group = rule.suppressInterfaceGroup
                let (routes, ends) = tableRoutes(defaults.filter { $0.table == table }, suppresses: { route in
                    if let length = rule.suppressPrefixLength, UInt32(route.destination.prefixLength) <= length { return true }
                    guard let group else { return false }
                    func inGroup(_ index: Int32?) -> Bool { index.flatMap { links[$0]?.group } == group }
                    if route.family == .ipv6, route.nexthops.count > 1 {
                        let live = route.nexthops.filter { !$0.flags.contains(.dead) }
                        return !live.isEmpty && live.allSatisfy { inGroup($0.linkIndex) }
                    }
                    return inGroup(route.outputLinkIndex)
                }, throwRefuses: false)
                found += routes.map { (rule.priority, $0) }
                if ends { return found }
            case .goto:
                // The kernel jumps to the first rule with exactly that priority, always a later
                // one; without one, the rule is passed over.
                if let target = rule.gotoTarget,
                   let next = rules[index...].firstIndex(where: { $0.priority == target }) {
                    index = next
                }
            case .nop:
                continue
            default:
                // Blackhole, unreachable, prohibit, and the kernel's other actions alike.
                return found
            }
        }
        return found
    }

    /// What a lookup in one table gives: its routes to the internet in the kernel's order
    /// (``lookupOrder(_:)``), the
    /// unicast ones that have a live next hop up to the first refusing one, which is included;
    /// and whether the lookup ends there (a route answered) or passes on to the next rule (no
    /// default route, a `throw` first, or an answer that the rule suppresses). A suppressed
    /// route also ends the list: taken after the ones before it, it would be passed over.
    private static func tableRoutes(_ defaults: [Route], suppresses: (Route) -> Bool,
                                    throwRefuses: Bool) -> (routes: [Route], ends: Bool) {
        var routes: [Route] = []
        for route in lookupOrder(defaults) {
            switch route.type {
            case .unicast:
                if isPassedOver(route) { continue }
                // A suppressed answer is passed over, and so is the table: the routes before it
                // answer first; without them the packet goes on to the next rule.
                if suppresses(route) { return (routes, !routes.isEmpty) }
                routes.append(route)
            case .unreachable, .prohibit, .blackhole:
                routes.append(route)
                return (routes, true)
            case .throw:
                if throwRefuses { routes.append(route) }
                return (routes, throwRefuses || !routes.isEmpty)
            default:
                // Local, broadcast, anycast, multicast: an answer (which the rule can suppress,
                // as it can a unicast one) that is not a way to the internet.
                if suppresses(route) { return (routes, !routes.isEmpty) }
                return (routes, true)
            }
        }
        return (routes, !routes.isEmpty)
    }

    /// The source address the kernel gives a packet routed by `route` (`inet_select_addr`): a
    /// primary IPv4 address of its output link whose scope the route's allows, the one whose
    /// subnet holds the gateway if any; else such an address of any link, the loopback link
    /// first, that is not link-scoped.
    private static func ipv4Source(of route: Route, in state: NetworkState) -> IPAddress? {
        func candidates(of index: Int32) -> [InterfaceAddress] {
            state.addresses(ofLink: index).filter {
                $0.family == .ipv4 && !$0.flags.contains(.secondary) && $0.scope.rawValue <= route.scope.rawValue
            }
        }
        if let index = route.outputLinkIndex {
            let own = candidates(of: index)
            if let gateway = route.gateway,
               let onLink = own.first(where: { IPNetwork(address: $0.address, prefixLength: $0.prefixLength)?.contains(gateway) ?? false }) {
                return onLink.address
            }
            if let first = own.first { return first.address }
        }
        return state.sortedLinks.lazy.compactMap { link in
            candidates(of: link.index).first { $0.scope != .link }?.address
        }.first
    }

    /// The source the kernel chooses for an IPv6 packet to a global destination when no route
    /// was found (`ipv6_dev_get_saddr` over every link): a global address that is not
    /// tentative, failed or deprecated, preferring one whose RFC 6724 label is the global one
    /// (not unique-local fc00::/7, 6to4 2002::/16 or Teredo 2001::/32), in link order.
    static func ipv6Source(in state: NetworkState) -> IPAddress? {
        let usable = state.sortedLinks.flatMap { link in
            state.addresses(ofLink: link.index).filter { $0.isSettledGlobalIPv6 }
        }
        let otherLabels = ["fc00::/7", "2002::/16", "2001::/32"].compactMap(IPNetwork.init)
        func rank(_ address: InterfaceAddress) -> Int {
            (address.flags.contains(.deprecated) ? 2 : 0) + (otherLabels.contains { $0.contains(address.address) } ? 1 : 0)
        }
        return usable.min { rank($0) < rank($1) }?.address
    }

    /// Whether `rule` selects a packet to the internet that a socket of `userID`, bound to no
    /// link, sends from this host without a firewall mark, from `source` (nil before the
    /// kernel has chosen one), as the kernel's `fib_rule_match` judges it: input link the
    /// loopback one (named `loopbackName`), no output link, mark 0, no tunnel, DSCP and flow
    /// label 0, any destination, protocol and port. An IPv4 lookup without a source has source
    /// 0; an IPv6 one passes no `from` test. A rule
    /// that selects by destination prefix, protocol or port selects only part of that traffic,
    /// and is taken not to select it (and, inverted, to select it).
    package static func ruleSelectsInternetTraffic(_ rule: PolicyRule, source: IPAddress? = nil, userID: UInt32,
                                                  loopbackName: String = "lo") -> Bool {
        var selects = true
        if let name = rule.inputLinkName, name != loopbackName || rule.linkIsMissing { selects = false }
        if rule.outputLinkName != nil { selects = false }
        if rule.firewallMark & rule.firewallMask != 0 { selects = false }
        if let users = rule.userIDs, !users.contains(userID) { selects = false }
        if let prefix = rule.source {
            if let source {
                if !prefix.contains(source) { selects = false }
            } else if rule.family == .ipv4 {
                if !prefix.contains(.v4(.any)) { selects = false }
            } else {
                // IPv6 passes no `from` test without a source. (With `FIB_RULE_FIND_SADDR` the
                // kernel tries the rule's table and keeps its answer if the source it would
                // choose there matches: taken here as not selecting, like any other.)
                selects = false
            }
        }
        if let destination = rule.destination, destination.prefixLength > 0 { selects = false }
        if rule.tos != 0 || rule.ipProtocol != nil || rule.sourcePorts != nil || rule.destinationPorts != nil
            || rule.selectsByOtherFields {
            selects = false
        }
        return selects != rule.isInverted
    }
}
