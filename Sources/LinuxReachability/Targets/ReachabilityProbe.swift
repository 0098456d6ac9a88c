import Netlink

/// One-shot answers from the kernel, without a subscription: what `reach check` uses.
///
/// Each call asks the kernel for a route lookup per address and classifies the links the answers
/// go out through, with what those stack on (sysfs is read once per link and kept; the other
/// links are not read). An address's answer asks the kernel for those links one by one (the
/// scope's, the output link, its lower link, its ports), so it costs the same with 3 links or
/// 1 000. The internet's reads the default routes and the policy rules, then the links of the
/// next hops of the routes that the rules can reach, one by one up to a few and in one dump
/// beyond (and the loopback link when an `iif` rule compares its name); only when a rule or a
/// default route selects by source does it read every link and address, which the kernel
/// chooses a source from. For answers that follow changes, use
/// ``ReachabilityMonitor`` or ``NetworkPathMonitor``.
public final class ReachabilityProbe: Sendable {
    /// The namespace asked.
    public let namespace: NetworkNamespace
    private let connection: NetlinkConnection
    private let classifier: LinkClassificationCache
    private let resolver: any HostResolver
    private let resolutionTimeout: Duration

    /// A probe of `namespace`.
    ///
    /// Links are classified from the namespace's live sysfs, and marked constrained as the
    /// monitors mark them (see <doc:ClassifyingLinks>).
    /// - Parameters:
    ///   - namespace: The namespace to ask (default: the current one).
    ///   - resolver: Resolves host names (default: `getaddrinfo` inside `namespace`).
    ///   - resolutionTimeout: How long a resolution may take before it fails with
    ///     ``ReachabilityError/resolutionFailed(host:message:)``.
    /// - Throws: The namespace errors of `NetlinkConnection(namespace:)`.
    public convenience init(namespace: NetworkNamespace = .current, resolver: (any HostResolver)? = nil,
                            resolutionTimeout: Duration = BoundedResolution.defaultTimeout) throws(NetlinkError) {
        try self.init(namespace: namespace, sysfs: nil, policy: (try? ConstrainedLinkPolicy.system()) ?? .none,
                      resolver: resolver, resolutionTimeout: resolutionTimeout)
    }

    /// A probe of `namespace` that reads link facts from `sysfs` (default: the namespace's own)
    /// and applies `policy`.
    package init(namespace: NetworkNamespace = .current, sysfs: SysfsSource?, policy: ConstrainedLinkPolicy,
                 resolver: (any HostResolver)? = nil, resolutionTimeout: Duration = BoundedResolution.defaultTimeout) throws(NetlinkError) {
        self.namespace = namespace
        connection = try NetlinkConnection(namespace: namespace)
        classifier = LinkClassificationCache(source: sysfs ?? .live(namespace), policy: policy)
        self.resolver = resolver ?? SystemHostResolver(namespace: namespace)
        self.resolutionTimeout = resolutionTimeout
    }

    /// The answer for `target` and the addresses that were considered (the resolved ones for a
    /// host name; none for the internet).
    /// - Throws: ``ReachabilityError/netlink(_:)`` when the kernel cannot be asked, or
    ///   ``ReachabilityError/resolutionFailed(host:message:)``.
    public func answer(for target: ReachabilityTarget) async throws(ReachabilityError) -> (answer: ReachabilityAnswer, addresses: [IPAddress]) {
        guard case .host(let name) = target.judged else { return try answerWithoutResolving(for: target)! }
        let resolved = try await BoundedResolution.resolve(name, with: resolver, timeout: resolutionTimeout).get()
        guard !resolved.isEmpty else { return (.notReachable(.unresolved), []) }
        return (try answer(to: resolved, from: nil), resolved.addresses)
    }

    /// ``answer(for:)`` on the calling thread, for a target that needs no name resolution; nil
    /// for a host name. No queue or task is started: `reach check` answers an address without
    /// libdispatch, which traps when it cannot make its descriptors.
    package func answerWithoutResolving(for target: ReachabilityTarget) throws(ReachabilityError)
        -> (answer: ReachabilityAnswer, addresses: [IPAddress])? {
        switch target.judged {
        case .internet:
            let (state, classifications) = try internetState()
            return (ReachabilityEvaluator.evaluateInternet(state, classifications: classifications), [])
        case .address(let address):
            return (try answer(to: [ResolvedAddress(address)], from: nil), [address])
        case .addressPair(let local, let remote):
            return (try answer(to: [ResolvedAddress(remote)], from: local), [remote])
        case .scopedAddress(let address, let interface):
            return (try answer(to: [ResolvedAddress(address, interface: interface)], from: nil), [address])
        case .host:
            return nil
        }
    }

    /// The state the internet is judged from, as the kernel would walk it: the default routes,
    /// the policy rules, and the links of the next hops the rules can reach (every link and
    /// address when a rule or a default route selects by source), with those links'
    /// classifications.
    private func internetState() throws(ReachabilityError) -> (NetworkState, [Int32: LinkClassification]) {
        let defaultRoutes = try kernel { try connection.defaultRoutes() }
        var state = NetworkState(links: [], addresses: [], defaultRoutes: defaultRoutes)
        state.policyRules = try kernel { try connection.rules() }
        let used = Self.hopLinks(of: state)
        let classifications: [Int32: LinkClassification]
        if ReachabilityEvaluator.internetDependsOnAddresses(state) {
            // A rule or a default route that selects by source: the walk needs the
            // addresses a source comes from, which the kernel chooses over every link.
            let rules = state.policyRules
            state = try kernel { try NetworkState(links: connection.links(), addresses: connection.addresses(), defaultRoutes: defaultRoutes) }
            state.policyRules = rules
            classifications = classifier.classifications(of: used, among: state.links.values)
        } else {
            // Else the walk and the answers look only at the next hops' links.
            let (links, everyLink) = try internetLinks(of: used, in: state)
            state.links = links
            if let everyLink {
                classifications = classifier.classifications(of: used, among: everyLink)
            } else {
                classifications = try self.classifications(of: used.compactMap { links[$0] })
            }
        }
        return (state, classifications)
    }

    /// The best answer over `targets`, each looked up in the kernel (through the link it is
    /// scoped to, if any; see ``ReachabilityEvaluator/evaluate(_:scope:links:lookup:)``).
    ///
    /// The links are asked of the kernel one by one, not dumped: the link a scope names (by
    /// name, one of its alternative names, or index), the link the answer goes out through,
    /// and what that one's classification depends on (see `classifications(of:)`). An answer
    /// costs the same with 3 links or 1 000.
    func answer(to targets: [ResolvedAddress], from source: IPAddress?) throws(ReachabilityError) -> ReachabilityAnswer {
        let answers = try targets.map { target throws(ReachabilityError) in
            let address = target.address
            var known: [Int32: Link] = [:]
            if let scope = target.interface, let link = try scopeLink(scope) { known[link.index] = link }
            return try ReachabilityEvaluator.evaluate(address, scope: target.interface, links: known) { outputLink throws(ReachabilityError) in
                let lookup: RouteLookupResult
                if let source {
                    lookup = try kernel { try connection.lookupRoute(to: address, from: source, outputLinkIndex: outputLink) }
                } else {
                    // As connect(2): again with the source the kernel picks (rarely needed, so
                    // every link's addresses are read only for an IPv6 address without a route).
                    lookup = try ReachabilityEvaluator.connectLookup(address, outputLink: outputLink, lookup: { from, link throws(ReachabilityError) in
                        try kernel { try connection.lookupRoute(to: address, from: from, outputLinkIndex: link) }
                    }, sourceWithoutRoute: { () throws(ReachabilityError) in
                        let state = try kernel { try NetworkState(links: connection.links(), addresses: connection.addresses(), defaultRoutes: []) }
                        return ReachabilityEvaluator.ipv6Source(in: state)
                    })
                }
                // Only the link the answer goes out through is classified (and what it stacks on).
                var links = known
                var classifications: [Int32: LinkClassification] = [:]
                if case .route(let route) = lookup, let index = route.outputLinkIndex {
                    let found = links[index] != nil ? links[index] : try kernel { try connection.link(index: index) }
                    if let link = found {
                        links[index] = link
                        classifications = try self.classifications(of: [link])
                    }
                }
                let answer = ReachabilityEvaluator.evaluate(lookup, address: address, links: links, classifications: classifications)
                // An IPv6 default route without carrier: as the internet is judged (rare, so
                // the default routes are read only then).
                if source == nil, outputLink == nil, ReachabilityEvaluator.mayPassCarrierLoss(answer, address: address),
                   case .route(let matched)? = try kernel({ try connection.lookupFIBEntries(to: [address]) }).first,
                   matched.isDefault {
                    let (state, internet) = try internetState()
                    return ReachabilityEvaluator.answerPastCarrierLoss(answer, matched: matched, address: address, in: state,
                                                                       classifications: internet) ?? answer
                }
                return answer
            }
        }
        var best = ReachabilityEvaluator.best(of: answers) ?? .notReachable(.unresolved)
        best.addresses = targets.addresses
        return best
    }

    /// The link `scope` names, as ``ReachabilityEvaluator/evaluate(_:scope:links:lookup:)``
    /// reads a scope: a name (the kernel finds alternative names too), else an index in decimal.
    private func scopeLink(_ scope: String) throws(ReachabilityError) -> Link? {
        if let link = try kernel({ try connection.link(named: scope) }) { return link }
        guard let index = Int32(scope) else { return nil }
        return try kernel { try connection.link(index: index) }
    }

    /// The links whose state the internet's answer reads when its walk needs no addresses:
    /// `hopLinks`, each next hop's link of the default routes in tables that a rule looks up
    /// (``hopLinks(of:)``; their state,
    /// and their interface group for a rule's `suppress_ifgroup`), and the loopback link when a
    /// rule selects by input link (the walk compares its name). Up to ``requestsBeforeADump``
    /// of them are asked of the kernel one by one; more come from one dump of every link,
    /// which is returned too, for the classification to use.
    private func internetLinks(of hopLinks: [Int32], in state: NetworkState) throws(ReachabilityError)
        -> (links: [Int32: Link], everyLink: [Link]?) {
        var indexes = Set(hopLinks)
        if state.policyRules.values.contains(where: { $0.contains { $0.inputLinkName != nil } }) {
            indexes.insert(ReachabilityEvaluator.loopbackIndex)
        }
        var links: [Int32: Link] = [:]
        guard indexes.count <= Self.requestsBeforeADump else {
            let everyLink = try kernel { try connection.links() }
            for link in everyLink where indexes.contains(link.index) { links[link.index] = link }
            return (links, everyLink)
        }
        for index in indexes { links[index] = try kernel { try connection.link(index: index) } }
        return (links, nil)
    }

    /// The links of the next hops of `state`'s default routes that the internet's walk can
    /// take (``ReachabilityEvaluator/isReachedByTheWalk(_:in:)``), each once.
    private static func hopLinks(of state: NetworkState) -> [Int32] {
        var seen: Set<Int32> = []
        return state.defaultRoutes.values.filter { ReachabilityEvaluator.isReachedByTheWalk($0, in: state) }
            .flatMap { $0.nexthops.compactMap(\.linkIndex) }.filter { seen.insert($0).inserted }
    }

    /// The classification of `links` and of what they depend on, each asked of the kernel: its
    /// lower link, its ports (a dump the kernel filters by master) and the lower links that
    /// only sysfs names. After ``requestsBeforeADump`` requests (a bridge of a container host
    /// has hundreds of ports, each with its lower link), the rest comes from one dump of every
    /// link: the answers are the same either way. The first failure of the kernel is thrown.
    private func classifications(of links: [Link]) throws(ReachabilityError) -> [Int32: LinkClassification] {
        typealias LinkSource = LinkClassificationCache.LinkSource
        struct Asked {
            var failure: NetlinkError?
            var requests = 0
            var everyLink: LinkSource?
        }
        let asked = Locked(Asked())
        let connection = self.connection
        /// `body`'s answer, or, once the requests are spent, `fromEveryLink`'s from one dump.
        func asking<T>(_ fallback: T, fromEveryLink: (LinkSource) -> T, _ body: () throws(NetlinkError) -> T) -> T {
            var state = asked.withLock { $0 }
            guard state.failure == nil else { return fallback }
            do {
                if state.everyLink == nil, state.requests >= Self.requestsBeforeADump {
                    state.everyLink = LinkSource(everyLink: try connection.links())
                }
                if let every = state.everyLink {
                    asked.withLock { $0 = state }
                    return fromEveryLink(every)
                }
                state.requests += 1
                asked.withLock { $0 = state }
                return try body()
            } catch {
                asked.withLock { $0.failure = error }
                return fallback
            }
        }
        let source = LinkSource(
            link: { index in asking(nil, fromEveryLink: { $0.link(index) }) { () throws(NetlinkError) in try connection.link(index: index) } },
            ports: { index in
                asking([], fromEveryLink: { $0.ports(index) }) { () throws(NetlinkError) in try connection.links(masteredBy: index) }
            },
            named: { name in asking(nil, fromEveryLink: { $0.named(name) }) { () throws(NetlinkError) in try connection.link(named: name) } })
        let answers = classifier.classifications(of: links, from: source)
        if let error = asked.withLock({ $0.failure }) { throw .netlink(error) }
        return answers
    }

    /// How many links and port lists an answer's classification, and how many next hops' links
    /// the internet's answer, asks of the kernel one by one before it reads every link in one
    /// dump instead.
    static let requestsBeforeADump = 8

    private func kernel<T>(_ body: () throws -> T) throws(ReachabilityError) -> T {
        do { return try body() } catch let error as NetlinkError { throw .netlink(error) } catch {
            throw .netlink(NetlinkError(code: NetlinkError.failure.code, context: "\(error)"))
        }
    }
}
