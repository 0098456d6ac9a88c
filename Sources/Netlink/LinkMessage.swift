import CNetlink

extension Link {
    /// Parses one `RTM_NEWLINK` / `RTM_DELLINK` message of a link itself (family `AF_UNSPEC`);
    /// nil for the per-family views the kernel also sends (the `AF_BRIDGE` messages of bridge
    /// ports and of the bridge, which describe a link a second time) and for a malformed
    /// message (an attribute that overruns it, or no name).
    ///
    /// Absent attributes read as libnl reads them (MTU 0, no carrier, operational state
    /// unknown), and only what a ``Link`` holds is read: the statistics and every address
    /// family's block, most of a link message's 1.5 KiB, are skipped. Every link the library
    /// reads, in notifications and in dumps, is read by it: libnl 3.7 does not read alternative
    /// names, and its parse of the whole message held up the first event of a link change
    /// (BENCHMARKS.md, latency).
    package init?(message header: UnsafePointer<nlmsghdr>) {
        guard let payload = netlinkPayload(of: header, atLeast: MemoryLayout<ifinfomsg>.size) else { return nil }
        self.init(payload: payload)
    }

    /// Parses the payload of a link message: an `ifinfomsg` followed by its attributes.
    package init?(payload: UnsafeRawBufferPointer) {
        guard payload.count >= MemoryLayout<ifinfomsg>.size else { return nil }
        let info = payload.loadUnaligned(as: ifinfomsg.self)
        guard Int32(info.ifi_family) == AF_UNSPEC else { return nil }
        var name: String?
        var mtu: UInt32 = 0
        var lower: UInt32 = 0
        var master: UInt32 = 0
        var operState: UInt8 = 0
        var carrier: UInt8 = 0
        var hardware: HardwareAddress?
        var kind: String?
        var namespaceID: Int32?
        var group: UInt32 = 0
        var alternativeNames: [String] = []
        var attributes = RouteAttributes(payload, from: MemoryLayout<ifinfomsg>.size)
        while let (type, value) = attributes.next() {
            switch Int(type) {
            case IFLA_IFNAME: name = value.cString
            case IFLA_MTU: mtu = value.u32 ?? 0
            case IFLA_LINK: lower = value.u32 ?? 0
            case IFLA_MASTER: master = value.u32 ?? 0
            case IFLA_OPERSTATE: operState = value.first ?? 0
            case IFLA_CARRIER: carrier = value.first ?? 0
            case IFLA_ADDRESS: hardware = value.isEmpty ? nil : HardwareAddress(octets: Array(value))
            case IFLA_LINK_NETNSID: namespaceID = value.u32.map { Int32(bitPattern: $0) }
            case IFLA_GROUP: group = value.u32 ?? 0
            case IFLA_LINKINFO:
                var nested = RouteAttributes(value, from: 0)
                while let (infoType, infoValue) = nested.next() {
                    if Int(infoType) == IFLA_INFO_KIND { kind = infoValue.cString }
                }
            case IFLA_PROP_LIST:
                var nested = RouteAttributes(value, from: 0)
                while let (propertyType, propertyValue) = nested.next() {
                    if Int(propertyType) == IFLA_ALT_IFNAME, !propertyValue.isEmpty, propertyValue[0] != 0 {
                        alternativeNames.append(propertyValue.cString)
                    }
                }
            default: break
            }
        }
        guard attributes.isWellFormed, let name else { return nil }
        let index = info.ifi_index
        self.init(
            index: index,
            name: name,
            arphrdType: ARPHRDType(rawValue: info.ifi_type),
            kind: kind,
            flags: InterfaceFlags(rawValue: info.ifi_flags),
            operState: OperState(rawValue: operState),
            carrier: carrier != 0,
            mtu: mtu,
            hardwareAddress: hardware,
            masterIndex: master > 0 && Int32(bitPattern: master) != index ? Int32(bitPattern: master) : nil,
            lowerLinkIndex: lower > 0 ? Int32(bitPattern: lower) : nil,
            linkNamespaceID: namespaceID,
            group: group,
            alternativeNames: alternativeNames)
    }
}

extension UnsafeRawBufferPointer {
    /// A string attribute: the bytes up to the first NUL, as UTF-8 (repaired like
    /// `String(cString:)`).
    var cString: String {
        String(decoding: prefix { $0 != 0 }, as: UTF8.self)
    }
}
