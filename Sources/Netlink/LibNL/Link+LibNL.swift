import CNetlink

extension Link {
    /// Parses one `RTM_NEWLINK` / `RTM_DELLINK` message with libnl's link parser; nil for the
    /// per-family views the kernel also sends (the `AF_BRIDGE` messages of bridge ports and of
    /// the bridge, which describe a link a second time) and for a message libnl refuses.
    ///
    /// libnl 3.7 does not read alternative names: they are read from the same message with its
    /// attribute parser (``alternativeNames(message:)``).
    init?(message: OpaquePointer) {
        guard let header = nlmsg_hdr(message), let family = Self.header(of: header)?.ifi_family, family == AF_UNSPEC,
              case let names = Self.alternativeNames(message: header),
              let link = withParsedObject(message, { Link(libnl: $0, alternativeNames: names) })
        else { return nil }
        self = link
    }

    /// A link from a libnl `rtnl_link` read from a message of family `AF_UNSPEC` (libnl gives
    /// a bridge's own link the family `AF_BRIDGE`, after its kind), with the alternative names
    /// its message carried; nil for a link without a name.
    ///
    /// Absent attributes read as libnl reads them: MTU 0, no carrier, operational state
    /// unknown.
    init?(libnl link: OpaquePointer, alternativeNames: [String]) {
        guard let name = libnlString(rtnl_link_get_name(link)) else { return nil }
        let index = Int32(rtnl_link_get_ifindex(link))
        let master = Int32(rtnl_link_get_master(link))
        let lower = Int32(rtnl_link_get_link(link))
        var namespaceID: Int32 = 0
        let hasNamespaceID = rtnl_link_get_link_netnsid(link, &namespaceID) >= 0
        var hardwareAddress: HardwareAddress?
        if let address = rtnl_link_get_addr(link), nl_addr_get_len(address) > 0, let bytes = nl_addr_get_binary_addr(address) {
            hardwareAddress = HardwareAddress(octets: Array(UnsafeRawBufferPointer(start: bytes, count: Int(nl_addr_get_len(address)))))
        }
        self.init(
            index: index,
            name: name,
            arphrdType: ARPHRDType(rawValue: UInt16(truncatingIfNeeded: rtnl_link_get_arptype(link))),
            kind: libnlString(rtnl_link_get_type(link)),
            flags: InterfaceFlags(rawValue: UInt32(truncatingIfNeeded: rtnl_link_get_flags(link))),
            operState: OperState(rawValue: rtnl_link_get_operstate(link)),
            carrier: rtnl_link_get_carrier(link) != 0,
            mtu: rtnl_link_get_mtu(link),
            hardwareAddress: hardwareAddress,
            masterIndex: master > 0 && master != index ? master : nil,
            lowerLinkIndex: lower > 0 ? lower : nil,
            linkNamespaceID: hasNamespaceID ? namespaceID : nil,
            group: rtnl_link_get_group(link),
            alternativeNames: alternativeNames)
    }

    /// The family header (`ifinfomsg`) of a link message; nil for one too short to hold it.
    static func header(of message: UnsafeMutablePointer<nlmsghdr>) -> ifinfomsg? {
        guard Int(message.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<ifinfomsg>.size else { return nil }
        return nlmsg_data(message)!.loadUnaligned(as: ifinfomsg.self)
    }

    /// The alternative names of a link message (`IFLA_ALT_IFNAME` entries of `IFLA_PROP_LIST`),
    /// in the kernel's order. The list is found with libnl's `nlmsg_find_attr`, which stops at
    /// the first attribute that overruns the message, as libnl's link parser refuses it.
    static func alternativeNames(message: UnsafeMutablePointer<nlmsghdr>) -> [String] {
        guard header(of: message) != nil,
              let list = nlmsg_find_attr(message, Int32(MemoryLayout<ifinfomsg>.size), Int32(IFLA_PROP_LIST))
        else { return [] }
        var names: [String] = []
        AttributeTable.forEachNested(in: list) { property in
            guard nla_type(property) == Int32(IFLA_ALT_IFNAME) else { return }
            let name = AttributeTable.string(property)
            if !name.isEmpty { names.append(name) }
        }
        return names
    }
}
