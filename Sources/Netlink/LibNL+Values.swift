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

extension Link {
    /// A link from a libnl `rtnl_link`; nil for the per-family (AF_BRIDGE) views of bridge ports,
    /// which describe a port a second time.
    ///
    /// libnl gives a link of kind `bridge` the family AF_BRIDGE (it maps the kind through
    /// `nl_str2af`), so the family alone does not tell the bridge from its ports' bridge-family
    /// messages. Those carry no `IFLA_LINKINFO` (no kind) and name the bridge as master; the
    /// bridge's own bridge-family message names itself as master.
    init?(libnl link: OpaquePointer) {
        let family = rtnl_link_get_family(link)
        var forcedKind: String?
        if family == AF_BRIDGE {
            let kind = rtnl_link_get_type(link).map { String(cString: $0) }
            if kind != "bridge" {
                guard kind == nil, rtnl_link_get_master(link) == rtnl_link_get_ifindex(link) else { return nil }
                forcedKind = "bridge"
            }
        } else if family != AF_UNSPEC {
            return nil
        }
        var netnsid: Int32 = 0
        let hardware: HardwareAddress? = {
            guard let addr = rtnl_link_get_addr(link), let bytes = nl_addr_get_binary_addr(addr) else { return nil }
            let count = Int(nl_addr_get_len(addr))
            guard count > 0 else { return nil }
            return HardwareAddress(octets: Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        }()
        let master = rtnl_link_get_master(link)
        let lower = rtnl_link_get_link(link)
        self.init(
            index: Int32(rtnl_link_get_ifindex(link)),
            name: rtnl_link_get_name(link).map { String(cString: $0) } ?? "",
            arphrdType: ARPHRDType(rawValue: UInt16(truncatingIfNeeded: rtnl_link_get_arptype(link))),
            kind: forcedKind ?? rtnl_link_get_type(link).map { String(cString: $0) },
            flags: InterfaceFlags(rawValue: UInt32(rtnl_link_get_flags(link))),
            operState: OperState(rawValue: rtnl_link_get_operstate(link)),
            carrier: rtnl_link_get_carrier(link) != 0,
            mtu: UInt32(rtnl_link_get_mtu(link)),
            hardwareAddress: hardware,
            masterIndex: master > 0 && master != rtnl_link_get_ifindex(link) ? Int32(master) : nil,
            lowerLinkIndex: lower > 0 ? Int32(lower) : nil,
            linkNamespaceID: rtnl_link_get_link_netnsid(link, &netnsid) == 0 ? netnsid : nil,
            group: rtnl_link_get_group(link))
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
