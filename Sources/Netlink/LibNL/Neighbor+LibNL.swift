import CNetlink

extension Neighbor {
    /// A neighbour from a libnl `rtnl_neigh`; nil for families other than IPv4 and IPv6 (the
    /// bridge's forwarding entries share the table) and for an entry without an address.
    init?(libnl neighbor: OpaquePointer) {
        guard AddressFamily(kernel: rtnl_neigh_get_family(neighbor)) != nil,
              let address = IPAddress(libnl: rtnl_neigh_get_dst(neighbor)) else { return nil }
        var linkLayerAddress: HardwareAddress?
        if let lladdr = rtnl_neigh_get_lladdr(neighbor), nl_addr_get_len(lladdr) > 0, let bytes = nl_addr_get_binary_addr(lladdr) {
            linkLayerAddress = HardwareAddress(octets: Array(UnsafeRawBufferPointer(start: bytes, count: Int(nl_addr_get_len(lladdr)))))
        }
        let state = rtnl_neigh_get_state(neighbor)
        self.init(linkIndex: Int32(rtnl_neigh_get_ifindex(neighbor)), address: address, linkLayerAddress: linkLayerAddress,
                  state: NeighborState(rawValue: UInt16(truncatingIfNeeded: max(state, 0))),
                  isRouter: rtnl_neigh_get_flags(neighbor) & UInt32(NTF_ROUTER) != 0)
    }
}
