import CNetlink

extension InterfaceConfiguration {
    /// A configuration from a libnl `rtnl_netconf`; nil for families other than IPv4 and IPv6.
    /// A value the kernel did not report (its attribute was absent) is nil.
    init?(libnl configuration: OpaquePointer) {
        var value: Int32 = 0
        guard rtnl_netconf_get_family(configuration, &value) >= 0, let family = AddressFamily(kernel: value),
              rtnl_netconf_get_ifindex(configuration, &value) >= 0 else { return nil }
        let scope: ConfigurationScope
        switch value {
        case NETCONFA_IFINDEX_ALL: scope = .allLinks
        case NETCONFA_IFINDEX_DEFAULT: scope = .newLinks
        default: scope = .link(value)
        }
        func read(_ getter: (OpaquePointer, UnsafeMutablePointer<Int32>) -> Int32) -> Int32? {
            var value: Int32 = 0
            return getter(configuration, &value) >= 0 ? value : nil
        }
        self.init(family: family, scope: scope,
                  forwarding: read(rtnl_netconf_get_forwarding).map { $0 != 0 },
                  reversePathFilter: read(rtnl_netconf_get_rp_filter),
                  ignoresRoutesWithLinkdown: read(rtnl_netconf_get_ignore_routes_linkdown).map { $0 != 0 },
                  proxiesNeighbors: read(rtnl_netconf_get_proxy_neigh).map { $0 != 0 })
    }
}
