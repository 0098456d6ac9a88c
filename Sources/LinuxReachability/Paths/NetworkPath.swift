import Netlink

/// The state of the way out of this host, in NWPath's terms.
public struct NetworkPath: Sendable, Hashable, CustomStringConvertible {
    /// NWPath.Status.
    public enum Status: Sendable, Hashable, CustomStringConvertible {
        /// In one family at least, the default route the kernel sends through (among routes
        /// through allowed links) goes through a usable link.
        case satisfied
        /// In no family does that route go through a usable link: there is none, or its link
        /// is down, has lost its carrier (IPv4 still sends through it), or is refused.
        case unsatisfied
        /// Not satisfied, and in one family that route's link waits for a connection (dormant).
        case requiresConnection

        /// `satisfied`, `unsatisfied`, `requiresConnection`.
        public var description: String {
            switch self {
            case .satisfied: return "satisfied"
            case .unsatisfied: return "unsatisfied"
            case .requiresConnection: return "requiresConnection"
            }
        }
    }

    /// Why a path is not satisfied (NWPath.UnsatisfiedReason).
    public enum UnsatisfiedReason: Sendable, Hashable {
        /// The path is satisfied, or nothing more specific is known.
        case notAvailable
        /// Only cellular links could carry traffic, and the monitor prohibits them.
        case cellularDenied
        /// Only Wi-Fi links could carry traffic, and the monitor prohibits them.
        case wifiDenied
        /// Only links of prohibited (or not the required) types could carry traffic.
        case interfaceTypeDenied
    }

    /// Whether the path can carry traffic.
    public var status: Status
    /// Why not; `.notAvailable` when satisfied or when nothing is more specific.
    public var unsatisfiedReason: UnsatisfiedReason
    /// The links with a usable default route, in order of preference (route metric, IPv4 first,
    /// then among IPv6 routes of one metric the higher router preference, as the kernel takes them):
    /// the links of each family's first route, then those of its later routes, the fallbacks.
    /// When IPv4's first route is not usable, IPv4 lists none: its lookup does not fall back.
    /// IPv6's does, past a router whose neighbour entry failed.
    public var availableInterfaces: [NetworkInterface]
    /// The gateways of the usable default routes, in order of preference, each once.
    public var gateways: [IPAddress]
    /// The gateways of the usable default routes with the link each is reached through, in order
    /// of preference (NWPath's gateways are such scoped endpoints). An IPv6 gateway is almost
    /// always a router's link-local address, which names a router only with its link, and the
    /// routers of two links often share one (`fe80::1`): ``gateways`` lists it once, this list
    /// once per link.
    public var scopedGateways: [Gateway]
    /// Whether a usable IPv4 default route exists.
    public var supportsIPv4: Bool
    /// Whether a usable IPv6 default route exists.
    public var supportsIPv6: Bool
    /// Whether a name server is configured and the kernel routes it through a usable link that
    /// the path may use (or it is an address of this host: a local stub resolver). A
    /// ``NetworkPathMonitor`` judges it again when `resolv.conf` is rewritten (inotify on its
    /// directories: `/etc`, `/etc/netns/NAME`, also when it is made after the monitor started, and the
    /// directory `/etc/resolv.conf` links to). Where inotify is not available (the user's
    /// `max_user_instances` are used up), it is judged again at the next kernel change only.
    public var supportsDNS: Bool

    /// A gateway and the link it is reached through.
    public struct Gateway: Sendable, Hashable, CustomStringConvertible {
        /// The gateway's address.
        public var address: IPAddress
        /// The link of the route's next hop.
        public var interface: NetworkInterface

        /// A gateway as given.
        package init(address: IPAddress, interface: NetworkInterface) {
            self.address = address
            self.interface = interface
        }

        /// Such as `fe80::1%eth0`, the scoped form that `ping` and `getaddrinfo` take for an
        /// IPv6 address, or `192.0.2.1%eth0`, for display only (an IPv4 address has no zone).
        public var description: String { "\(address)%\(interface.name)" }
    }

    /// A path as given.
    package init(status: Status, unsatisfiedReason: UnsatisfiedReason = .notAvailable, availableInterfaces: [NetworkInterface] = [],
                gateways: [IPAddress] = [], scopedGateways: [Gateway] = [], supportsIPv4: Bool = false,
                supportsIPv6: Bool = false, supportsDNS: Bool = false) {
        self.status = status
        self.unsatisfiedReason = unsatisfiedReason
        self.availableInterfaces = availableInterfaces
        self.gateways = gateways
        self.scopedGateways = scopedGateways
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
    }

    /// Whether the path's traffic goes through a link of this type: the preferred link, the
    /// first of ``availableInterfaces`` (as NWPath's answers for the interface in use, not for
    /// every available one: a laptop on Ethernet with Wi-Fi as a fallback does not use Wi-Fi).
    public func usesInterfaceType(_ type: InterfaceType) -> Bool {
        availableInterfaces.first?.type == type
    }

    /// Whether the preferred link is expensive.
    public var isExpensive: Bool { availableInterfaces.first?.classification.isExpensive ?? false }
    /// Whether the preferred link is constrained (user policy, see <doc:ClassifyingLinks>).
    public var isConstrained: Bool { availableInterfaces.first?.classification.isConstrained ?? false }

    /// Such as `satisfied (eth0, wlan0) IPv4 IPv6 DNS`.
    public var description: String {
        var text = "\(status)"
        if !availableInterfaces.isEmpty { text += " (" + availableInterfaces.map(\.name).joined(separator: ", ") + ")" }
        if supportsIPv4 { text += " IPv4" }
        if supportsIPv6 { text += " IPv6" }
        if supportsDNS { text += " DNS" }
        if isExpensive { text += " expensive" }
        if isConstrained { text += " constrained" }
        return text
    }

    /// Whether a path restricted to `required` links, or to links of no `prohibited` type, may
    /// use a link of `type`.
    static func allows(_ type: InterfaceType, required: InterfaceType?, prohibited: Set<InterfaceType>) -> Bool {
        (required.map { $0 == type } ?? true) && !prohibited.contains(type)
    }

    /// The path of a namespace's state (pure).
    /// - Parameters:
    ///   - state: The namespace's links and default routes.
    ///   - classifications: The links' classifications, by index.
    ///   - required: Only links of this type may be used.
    ///   - prohibited: Links of these types may not be used.
    ///   - nameServerReachable: Whether a configured name server is routed through a usable link.
    package static func evaluate(_ state: NetworkState, classifications: [Int32: LinkClassification],
                                required: InterfaceType? = nil, prohibited: Set<InterfaceType> = [],
                                nameServerReachable: Bool = false) -> NetworkPath {
        // A refusing route among them has no link and gives no path.
        let routes = ReachabilityEvaluator.internetRoutes(state)
        var usable: [(Route, ReachabilityAnswer)] = []
        var waiting = false
        var denied: Set<InterfaceType> = []
        // IPv4 sends through its first route (whose every next hop is not dead): when that
        // route's link has lost its carrier, or waits (dormant), IPv4's traffic is lost or waits
        // too, whatever routes follow. IPv6 passes over a router whose neighbour entry failed,
        // as it soon has without a carrier: a later usable route carries it (see
        // `ReachabilityEvaluator.evaluateInternet`). Routes through links of types the monitor
        // does not allow are passed over, as a socket bound to an allowed link would pass them
        // over.
        var decided: Set<AddressFamily> = []
        for route in routes where !decided.contains(route.family) {
            // Each next hop of a multipath route the kernel may send through is a path of its own.
            var allowedAnswers: [ReachabilityAnswer] = []
            let hops = ReachabilityEvaluator.evaluateNexthops(of: route, links: state.links, classifications: classifications)
            if ReachabilityEvaluator.isDeadToTheKernel(route, hops) { continue }
            for answer in hops {
                guard let interface = answer.interface else { continue }
                if allows(interface.type, required: required, prohibited: prohibited) {
                    allowedAnswers.append(answer)
                } else if answer.isReachable {
                    denied.insert(interface.type)
                }
            }
            guard !allowedAnswers.isEmpty else { continue }
            let reachable = allowedAnswers.filter(\.isReachable)
            // After the family's first usable route, the usable ones that follow are listed
            // too: the fallbacks the kernel takes when the first one goes.
            usable += reachable.map { (route, $0) }
            if reachable.isEmpty, !usable.contains(where: { $0.0.family == route.family }) {
                if allowedAnswers.contains(where: { $0.flags.contains(.connectionRequired) }) { waiting = true }
                if route.family == .ipv4 { decided.insert(route.family) }
            }
        }
        var interfaces: [NetworkInterface] = []
        var gateways: [IPAddress] = []
        var scopedGateways: [Gateway] = []
        for (_, answer) in usable {
            guard let link = answer.interface else { continue }
            let interface = NetworkInterface(name: link.name, index: link.index, classification: link.classification)
            if !interfaces.contains(where: { $0.index == interface.index }) { interfaces.append(interface) }
            guard let gateway = answer.gateway else { continue }
            if !gateways.contains(gateway) { gateways.append(gateway) }
            if !scopedGateways.contains(where: { $0.address == gateway && $0.interface.index == interface.index }) {
                scopedGateways.append(Gateway(address: gateway, interface: interface))
            }
        }
        let status: Status = !usable.isEmpty ? .satisfied : waiting ? .requiresConnection : .unsatisfied
        var reason = UnsatisfiedReason.notAvailable
        if status == .unsatisfied, !denied.isEmpty {
            reason = denied == [.cellular] ? .cellularDenied : denied == [.wifi] ? .wifiDenied : .interfaceTypeDenied
        }
        return NetworkPath(status: status, unsatisfiedReason: reason, availableInterfaces: interfaces, gateways: gateways,
                           scopedGateways: scopedGateways,
                           supportsIPv4: usable.contains { $0.0.family == .ipv4 },
                           supportsIPv6: usable.contains { $0.0.family == .ipv6 },
                           supportsDNS: status == .satisfied && nameServerReachable)
    }
}
