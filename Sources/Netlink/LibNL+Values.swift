import CNetlink
import Glibc

// Conversions from libnl objects to the library's values. Each takes a borrowed libnl pointer,
// copies what it needs and keeps no reference.

extension IPAddress {
    /// The address in a libnl `nl_addr` of family AF_INET or AF_INET6; nil for an empty one.
    init?(libnl addr: OpaquePointer?) {
        guard let addr, let binary = nl_addr_get_binary_addr(addr) else { return nil }
        let length = Int(nl_addr_get_len(addr))
        guard length == 4 || length == 16 else { return nil }
        self.init(octets: UnsafeRawBufferPointer(start: binary, count: length))
    }
}

extension AddressFamily {
    init?(kernel value: Int32) {
        switch value {
        case AF_INET: self = .ipv4
        case AF_INET6: self = .ipv6
        default: return nil
        }
    }
}

extension InterfaceAddress {
    /// An address from a libnl `rtnl_addr`; nil for families other than IPv4 and IPv6.
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
            label: rtnl_addr_get_label(addr).map { String(cString: $0) })
    }
}

/// Calls `body` for every object of a libnl cache, in cache order.
func forEachObject(in cache: OpaquePointer, _ body: (OpaquePointer) -> Void) {
    var object = nl_cache_get_first(cache)
    while let current = object {
        body(current)
        object = nl_cache_get_next(current)
    }
}
