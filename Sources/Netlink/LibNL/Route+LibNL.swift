import CNetlink

extension Route {
    /// Parses one `RTM_NEWROUTE` / `RTM_DELROUTE` message with libnl's route parser
    /// (`rtnl_route_parse`); nil for families other than IPv4 and IPv6 and for a message libnl
    /// refuses or that holds an address of the wrong length.
    ///
    /// libnl 3.7's `rtnl_route` does not hold a route's preference (`RTA_PREF`) or its
    /// next-hop object (`RTA_NH_ID`): those are read from the same message with libnl's
    /// attribute parser. A multipath list with an entry shorter than its header is refused
    /// before libnl sees it (see `cnetlink_multipath_is_well_formed`).
    init?(message: UnsafeMutablePointer<nlmsghdr>) {
        guard let route = Self.parse(message: message)?.route else { return nil }
        self = route
    }

    /// Parses a route message as ``init(message:)`` does, with how long the route has left
    /// (`rta_expires` of its `RTA_CACHEINFO`, in the kernel's clock ticks of a hundredth of a
    /// second), read from the same parse of its attributes: nil for a route that does not
    /// expire; zero or less for one that has expired, which the kernel's lookups pass over
    /// (`fib6_check_expired`) until its garbage collection deletes it, up to
    /// `net.ipv6.route.gc_interval` (30 s) later, with a message only then. IPv6 routes learned
    /// from router advertisements expire with the router's lifetime.
    static func parse(message: UnsafeMutablePointer<nlmsghdr>) -> (route: Route, remainingLifetime: Duration?)? {
        guard let extras = AttributeTable(message: message, headerSize: MemoryLayout<rtmsg>.size,
                                          policy: extraAttributes),
              extras[RTA_MULTIPATH.rawValue].map({ cnetlink_multipath_is_well_formed($0) != 0 }) ?? true
        else { return nil }
        var parsed: OpaquePointer?
        guard rtnl_route_parse(message, &parsed) >= 0, let parsed else { return nil }
        defer { rtnl_route_put(parsed) }
        guard let route = Route(libnl: parsed, isMultipath: extras[RTA_MULTIPATH.rawValue] != nil,
                                preference: extras.u8(RTA_PREF.rawValue).map(RoutePreference.init(rawValue:)),
                                nexthopID: extras.u32(RTA_NH_ID.rawValue)) else { return nil }
        let ticks = extras.bytes(RTA_CACHEINFO.rawValue)?.loadUnaligned(as: rta_cacheinfo.self).rta_expires ?? 0
        return (route, ticks == 0 ? nil : .milliseconds(Int64(ticks) * 10))
    }

    /// The route attributes read beside libnl's route parser.
    private static let extraAttributes = AttributePolicy(maxType: Int32(RTA_NH_ID.rawValue), [
        Int32(RTA_PREF.rawValue): (.u8, 1),
        Int32(RTA_NH_ID.rawValue): (.u32, 4),
        Int32(RTA_MULTIPATH.rawValue): (.nested, 0),
        Int32(RTA_CACHEINFO.rawValue): (.unspecified, MemoryLayout<rta_cacheinfo>.size),
    ])

    /// A route from a libnl `rtnl_route`, with what the message said beside it.
    ///
    /// A route with one next hop has it from the message's top-level attributes, with the
    /// low byte of the route's flags (`RTNH_F_*`) and weight 1; the next hops of a multipath
    /// route carry the weight as configured (the kernel keeps it less one, `rtnh_hops`).
    init?(libnl route: OpaquePointer, isMultipath: Bool, preference: RoutePreference?, nexthopID: UInt32?) {
        guard let family = AddressFamily(kernel: Int32(rtnl_route_get_family(route))) else { return nil }
        let zero: IPAddress = family == .ipv4 ? .v4(.any) : .v6(.any)
        let destinationAddress = rtnl_route_get_dst(route)
        let destinationLength = destinationAddress.map { nl_addr_get_prefixlen($0) } ?? 0
        guard destinationLength <= UInt32(family.bitWidth),
              case .some(let destination) = LibNLAddress.optional(destinationAddress, family: family),
              let destinationNetwork = IPNetwork(address: destination ?? zero, prefixLength: UInt8(destinationLength))
        else { return nil }
        var sourcePrefix: IPNetwork?
        if let sourceAddress = rtnl_route_get_src(route), nl_addr_get_prefixlen(sourceAddress) > 0 {
            let length = nl_addr_get_prefixlen(sourceAddress)
            guard length <= UInt32(family.bitWidth),
                  case .some(let source) = LibNLAddress.optional(sourceAddress, family: family) else { return nil }
            sourcePrefix = IPNetwork(address: source ?? zero, prefixLength: UInt8(length))
        }
        guard case .some(let preferredSource) = LibNLAddress.optional(rtnl_route_get_pref_src(route), family: family)
        else { return nil }

        var nexthops: [Nexthop] = []
        for position in 0..<rtnl_route_get_nnexthops(route) {
            guard let hop = rtnl_route_nexthop_n(route, position) else { continue }
            let gateway: IPAddress?
            if let via = rtnl_route_nh_get_via(hop) {
                // `RTA_VIA`: a gateway of either family (an IPv4 route through an IPv6 neighbour).
                guard let address = IPAddress(libnl: via) else { return nil }
                gateway = address
            } else {
                guard case .some(let address) = LibNLAddress.optional(rtnl_route_nh_get_gateway(hop), family: family)
                else { return nil }
                gateway = address
            }
            let linkIndex = rtnl_route_nh_get_ifindex(hop)
            nexthops.append(Nexthop(gateway: gateway, linkIndex: linkIndex > 0 ? linkIndex : nil,
                                    weight: isMultipath ? UInt16(rtnl_route_nh_get_weight(hop)) + 1 : 1,
                                    flags: RouteFlags(rawValue: UInt32(rtnl_route_nh_get_flags(hop)))))
        }
        var flags = RouteFlags(rawValue: rtnl_route_get_flags(route))
        if nexthops.count == 1 { flags.formUnion(nexthops[0].flags) }
        self.init(
            family: family,
            table: RouteTable(rawValue: rtnl_route_get_table(route)),
            destination: destinationNetwork,
            sourcePrefix: sourcePrefix,
            type: RouteType(rawValue: rtnl_route_get_type(route)),
            routeProtocol: RouteProtocol(rawValue: rtnl_route_get_protocol(route)),
            scope: Scope(rawValue: rtnl_route_get_scope(route)),
            metric: rtnl_route_get_priority(route),
            preference: preference,
            tos: rtnl_route_get_tos(route),
            preferredSource: preferredSource,
            flags: flags,
            nexthops: nexthops,
            nexthopID: nexthopID)
    }
}

/// Reading `nl_addr` values that a message may or may not carry.
enum LibNLAddress {
    /// `.some(nil)` when `address` is absent or empty, `.some(address)` when it holds an
    /// address of `family`, and `.none` (malformed) when it holds anything else.
    static func optional(_ address: OpaquePointer?, family: AddressFamily) -> IPAddress?? {
        guard let address, nl_addr_get_len(address) > 0 else { return .some(nil) }
        guard Int(nl_addr_get_len(address)) == Int(family.bitWidth / 8), let value = IPAddress(libnl: address)
        else { return .none }
        return .some(value)
    }
}
