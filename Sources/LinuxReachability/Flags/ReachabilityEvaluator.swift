import Netlink

/// The pure evaluation of reachability: kernel facts in, ``ReachabilityAnswer`` out, no I/O.
///
/// A target is reachable when the kernel's route lookup for it (policy rules and all) matches a
/// unicast or local route through a link that is up and has carrier. Then:
/// - ``ReachabilityFlags/isLocalAddress``: the route is of type local;
/// - ``ReachabilityFlags/isDirect``: the route has no gateway;
/// - ``ReachabilityFlags/isWWAN``: the link is cellular;
/// - ``ReachabilityFlags/transientConnection``: the link is PPP or a VPN tunnel.
///
/// A dormant link (operstate `dormant`: 802.1X, a Wi-Fi handshake) gives
/// `reachable | connectionRequired | interventionRequired`, which every status maps to not
/// reachable. Blackhole, unreachable, prohibit and throw routes, no route, a link that is down
/// or without carrier give no flags.
package enum ReachabilityEvaluator {
    /// Evaluates a kernel route lookup.
    /// - Parameters:
    ///   - lookup: The kernel's answer for the target (`NetlinkConnection.lookupRoute(to:from:outputLinkIndex:mark:)`).
    ///   - address: The target address, reported in the answer.
    ///   - links: The namespace's links, by index.
    ///   - classifications: Their classifications, by index.
    package static func evaluate(_ lookup: RouteLookupResult, address: IPAddress? = nil, links: [Int32: Link],
                                classifications: [Int32: LinkClassification]) -> ReachabilityAnswer {
        switch lookup {
        case .noRoute: return .notReachable(.noRoute, address: address)
        case .unreachable: return .notReachable(.unreachableRoute, address: address)
        case .prohibited: return .notReachable(.prohibitedRoute, address: address)
        case .blackhole: return .notReachable(.blackholeRoute, address: address)
        case .route(let route):
            return evaluate(route: route, address: address, links: links, classifications: classifications)
        }
    }

    /// The answer for `address`, which `lookup` gets from the kernel's route through the output
    /// link it is given (nil: any), as a socket would send: through the link `scope` names (its
    /// name or one of its alternative names, else an index in decimal, as `getaddrinfo` reads
    /// `fe80::1%2`), if there is a scope.
    /// Without one, an address that needs a link (IPv6 link-local, or multicast of link or
    /// interface scope) is not asked for: `connect(2)` refuses it (`EINVAL`), whatever the
    /// routes. A scope that names no link is `linkMissing` (`getaddrinfo` refuses it); a scope on
    /// an address that needs none is otherwise ignored, as `connect(2)` ignores it. No route
    /// through a link that is down is `linkDown`.
    static func evaluate<Failure: Error>(
        _ address: IPAddress, scope: String?, links: [Int32: Link],
        lookup: (_ outputLinkIndex: Int32?) throws(Failure) -> ReachabilityAnswer
    ) throws(Failure) -> ReachabilityAnswer {
        guard let scope else {
            if address.needsScope { return .notReachable(.scopeRequired, address: address) }
            return try lookup(nil)
        }
        // A link's name wins over another's alternative name, and a link that is up over one
        // that is down: the kernel does not tell of a down link's alternative name that went.
        guard let link = Link.named(scope, in: links.values) ?? Int32(scope).flatMap({ links[$0] }) else {
            return .notReachable(.linkMissing, address: address)
        }
        guard address.needsScope else { return try lookup(nil) }
        var answer = try lookup(link.index)
        if answer.reason == .noRoute, !link.isUp { answer.reason = .linkDown }
        return answer
    }

    /// The kernel's route for a socket that connects to `destination` without a source, as
    /// `connect(2)` finds it: a lookup without a source, the source the kernel picks from its
    /// answer (the route's preferred source; for IPv6 without a route, the best address of any
    /// link, `ipv6_dev_get_saddr`, which `sourceWithoutRoute` gives), then the lookup again
    /// with that source. Policy rules that select by source (`ip rule add from ...`) and IPv6
    /// source-specific routes (`default from 2001:db8:aa::/64`) answer only the second: an
    /// IPv6 destination with no route but such a default is reached, as `connect(2)` reaches
    /// it. IPv4 without a route, and a refusing route, end there, as `connect(2)` does.
    static func connectLookup<Failure: Error>(
        _ destination: IPAddress, outputLink: Int32?,
        lookup: (_ source: IPAddress?, _ outputLink: Int32?) throws(Failure) -> RouteLookupResult,
        sourceWithoutRoute: () throws(Failure) -> IPAddress?
    ) throws(Failure) -> RouteLookupResult {
        let first = try lookup(nil, outputLink)
        let source: IPAddress?
        switch first {
        case .route(let route): source = route.preferredSource
        case .noRoute where destination.family == .ipv6: source = try sourceWithoutRoute()
        default: source = nil
        }
        guard let source, source.family == destination.family else { return first }
        return try lookup(source, outputLink)
    }

    /// The reason a route of type `type` refuses traffic with, as the kernel's lookup reports
    /// it (`ip route get` says `unreachable`, `prohibit` or `blackhole`; a `throw` route ends
    /// the lookup with no route), or nil for a type that carries traffic or is judged otherwise.
    static func refusal(of type: RouteType) -> UnreachableReason? {
        switch type {
        case .blackhole: return .blackholeRoute
        case .unreachable: return .unreachableRoute
        case .prohibit: return .prohibitedRoute
        case .throw: return .noRoute
        default: return nil
        }
    }

    /// Evaluates a route the kernel chose through its first next hop (a lookup's answer has one;
    /// for each hop of a default route, see ``evaluateNexthops(of:links:classifications:)``).
    package static func evaluate(route: Route, address: IPAddress? = nil, links: [Int32: Link],
                                classifications: [Int32: LinkClassification]) -> ReachabilityAnswer {
        // A refusing route is answered as the kernel's lookup answers it, whether a lookup or
        // the internet's walk found it: its reason, and no link (the kernel gives IPv6 ones `lo`).
        if let refusal = refusal(of: route.type) {
            var answer = ReachabilityAnswer.notReachable(refusal, address: address)
            answer.route = route
            return answer
        }
        var answer = ReachabilityAnswer(flags: [], gateway: route.gateway, address: address, route: route)
        let link = route.outputLinkIndex.flatMap { links[$0] }
        let classification = link.map { classifications[$0.index] ?? LinkClassifier.classify(LinkFacts(link: $0)) }
        if let link, let classification {
            answer.interface = NetworkInterface(name: link.name, index: link.index, classification: classification)
        }
        // This host's own IPv6 anycast addresses (the subnet-router anycast address of a
        // forwarding host, or one joined with IPV6_JOIN_ANYCAST) have anycast routes through
        // `lo` in the local table: the kernel delivers what is sent to them here.
        let isLocal = route.type == .local || (route.type == .anycast && route.family == .ipv6)
        guard route.type == .unicast || isLocal else {
            answer.reason = .unusableRouteType(route.type)
            answer.gateway = nil
            return answer
        }
        guard let link, let classification else {
            answer.reason = .linkMissing
            return answer
        }
        var facts: ReachabilityFlags = []
        if isLocal { facts.insert(.isLocalAddress) }
        if route.gateway == nil { facts.insert(.isDirect) }
        if classification.type == .cellular { facts.insert(.isWWAN) }
        if classification.isTransient { facts.insert(.transientConnection) }
        if !link.isUp {
            answer.reason = .linkDown
        } else if link.operState == .dormant || (link.flags.contains(.dormant) && link.flags.contains(.lowerUp)) {
            // Dormant only with carrier: the kernel sets IFF_DORMANT whenever the device's
            // dormant bit is on, carrier or not (HDLC's Cisco protocol turns it on when the
            // carrier goes), and its operstate says `dormant` only over a carrier. Without one
            // the link is down below (next case), not waiting for a handshake.
            answer.reason = .dormant
            answer.flags = facts.union([.reachable, .connectionRequired, .interventionRequired])
        } else if !link.isRunning && !isLocal {
            answer.reason = .noCarrier
        } else {
            answer.flags = facts.union(.reachable)
        }
        return answer
    }

    /// Evaluates each next hop of a default route that the kernel may send through: one answer
    /// for an ordinary route; for a multipath route, one per next hop that is not dead (the
    /// kernel marks a hop dead when its link goes down and sends through the others), in the
    /// route's order, each with that hop's link and gateway and the whole route. A multipath
    /// route whose hops are all dead gets the first hop's answer.
    package static func evaluateNexthops(of route: Route, links: [Int32: Link],
                                        classifications: [Int32: LinkClassification]) -> [ReachabilityAnswer] {
        guard route.nexthops.count > 1 else {
            return [evaluate(route: route, links: links, classifications: classifications)]
        }
        let live = route.nexthops.filter { !$0.flags.contains(.dead) }
        return (live.isEmpty ? [route.nexthops[0]] : live).map { hop in
            var single = route
            single.nexthops = [hop]
            single.flags = route.flags.union(hop.flags)
            var answer = evaluate(route: single, links: links, classifications: classifications)
            answer.route = route
            return answer
        }
    }

    /// Evaluates "the internet": in each family, the default route the kernel sends this
    /// host's traffic through among ``internetRoutes(_:userID:)`` (the tables the policy rules
    /// give that traffic; lowest metric first), and the better of the two families' answers. A
    /// multipath default route is usable while one of its next hops is (see
    /// ``evaluateNexthops(of:links:classifications:)``).
    ///
    /// IPv4's lookup takes the first route whose next hops are not all dead (a link down, or
    /// without carrier with `ignore_routes_with_linkdown`), whatever its carrier: when the
    /// link of that route has lost its carrier (or is dormant), IPv4 is not reachable (or
    /// waits), as a lookup of any internet address says, even if a route with a higher metric
    /// goes through a usable link. IPv6's lookup on a host (not forwarding) also passes over a
    /// router whose neighbour entry has failed, which it soon has once the carrier is gone and
    /// traffic flows (`rt6_check_neigh`): an IPv6 route through a link without carrier does not
    /// end the family, and a later usable one answers.
    package static func evaluateInternet(_ state: NetworkState,
                                        classifications: [Int32: LinkClassification]) -> ReachabilityAnswer {
        var answers: [ReachabilityAnswer] = []
        var passedOver: [ReachabilityAnswer] = []
        var decided: Set<AddressFamily> = []
        for route in internetRoutes(state) where !decided.contains(route.family) {
            let hops = evaluateNexthops(of: route, links: state.links, classifications: classifications)
            if isDeadToTheKernel(route, hops) {
                passedOver += hops
                continue
            }
            answers += hops
            if route.family == .ipv4 || hops.contains(where: \.isReachable) { decided.insert(route.family) }
        }
        return best(of: answers) ?? best(of: passedOver) ?? .notReachable(.noDefaultRoute)
    }

    /// Whether `answer`, the kernel's lookup for `address`, may end on an IPv6 default route
    /// through a link without carrier: then ``answerPastCarrierLoss(_:matched:address:in:classifications:)``
    /// is asked, with the FIB entry the lookup matched.
    static func mayPassCarrierLoss(_ answer: ReachabilityAnswer, address: IPAddress) -> Bool {
        address.family == .ipv6 && answer.reason == .noCarrier
    }

    /// The answer for IPv6 `address` when the kernel's lookup `answer` matched `matched`, a
    /// default route through a link without carrier: through the first later default route of that table
    /// that the internet's walk (``internetRoutes(_:userID:)``) finds usable, as for the
    /// internet; nil when there is none, or the answer is not such a case.
    ///
    /// Right after the carrier goes the kernel still picks that route (the router's neighbour
    /// entry was flushed with the carrier, and a host's lookup takes a router it has no entry
    /// for); the first packet sent makes the entry, which fails within seconds, and from then
    /// on the lookup passes over that router (`rt6_check_neigh`). So a connection started now
    /// goes through the later route within a few seconds: the internet's answer and an
    /// address's answer both say so, and never contradict each other. IPv4 does not pass over a
    /// route without carrier (unless `ignore_routes_with_linkdown`, which the kernel's lookup
    /// itself applies): its answer is the lookup's.
    static func answerPastCarrierLoss(_ answer: ReachabilityAnswer, matched taken: Route, address: IPAddress,
                                      in state: NetworkState, classifications: [Int32: LinkClassification]) -> ReachabilityAnswer? {
        guard mayPassCarrierLoss(answer, address: address), taken.isDefault, taken.family == .ipv6,
              let takenLink = taken.outputLinkIndex else { return nil }
        let routes = internetRoutes(state).filter { $0.family == .ipv6 && $0.table == taken.table }
        guard let position = routes.firstIndex(where: { $0.outputLinkIndex == takenLink && $0.gateway == taken.gateway }) else {
            return nil
        }
        for route in routes[routes.index(after: position)...] {
            guard route.type == .unicast else { return nil }
            let hops = evaluateNexthops(of: route, links: state.links, classifications: classifications)
            if var usable = hops.first(where: \.isReachable) {
                usable.address = address
                return usable
            }
        }
        return nil
    }

    /// Whether the kernel's lookup passes over `route` (evaluated as `hops`) for its links: a
    /// unicast route whose every next hop's link is down or gone. The kernel flushes such an
    /// IPv4 route and marks an IPv6 one dead as the link goes down (the state can hold one for
    /// the moment in between); a link without carrier does not make a route dead.
    static func isDeadToTheKernel(_ route: Route, _ hops: [ReachabilityAnswer]) -> Bool {
        route.type == .unicast && !hops.isEmpty && hops.allSatisfy { $0.reason == .linkDown || $0.reason == .linkMissing }
    }

    /// The best of several answers (the addresses of one host, the default routes): the first
    /// reachable one, else the first that waits for a connection, else the first.
    package static func best(of answers: [ReachabilityAnswer]) -> ReachabilityAnswer? {
        answers.first { $0.isReachable }
            ?? answers.first { $0.flags.contains(.reachable) }
            ?? answers.first
    }
}
