import CNetlink

extension InterfaceAddress {
    /// Parses one `RTM_NEWADDR` / `RTM_DELADDR` message with libnl's address parser; nil for
    /// families other than IPv4 and IPv6 and for a message libnl refuses.
    init?(message: OpaquePointer) {
        guard let address = withParsedObject(message, { InterfaceAddress(libnl: $0) }) else { return nil }
        self = address
    }

    /// An address from a libnl `rtnl_addr`; nil for families other than IPv4 and IPv6.
    ///
    /// libnl's rules apply: the flags of `IFA_FLAGS` when present, else the header's;
    /// `IFA_ADDRESS` is the local address when there is no `IFA_LOCAL` or it holds the same
    /// bytes, else the peer; the lifetimes of `IFA_CACHEINFO`, forever without it.
    init?(libnl addr: OpaquePointer) {
        guard AddressFamily(kernel: rtnl_addr_get_family(addr)) != nil,
              let local = IPAddress(libnl: rtnl_addr_get_local(addr)) else { return nil }
        let peer = IPAddress(libnl: rtnl_addr_get_peer(addr))
        self.init(
            linkIndex: Int32(rtnl_addr_get_ifindex(addr)),
            address: local,
            prefixLength: UInt8(truncatingIfNeeded: rtnl_addr_get_prefixlen(addr)),
            peer: peer == local ? nil : peer,
            broadcast: IPAddress(libnl: rtnl_addr_get_broadcast(addr)),
            scope: Scope(rawValue: UInt8(truncatingIfNeeded: rtnl_addr_get_scope(addr))),
            flags: AddressFlags(rawValue: UInt32(rtnl_addr_get_flags(addr))),
            validLifetime: Lifetime(kernelValue: rtnl_addr_get_valid_lifetime(addr)),
            preferredLifetime: Lifetime(kernelValue: rtnl_addr_get_preferred_lifetime(addr)),
            label: libnlString(rtnl_addr_get_label(addr)))
    }
}
