import CNetlink

extension NexthopObject {
    /// Parses one `RTM_NEWNEXTHOP` / `RTM_DELNEXTHOP` message with libnl's attribute parser
    /// (libnl 3.7 has no next-hop object model); nil for a message it refuses or one without an
    /// id.
    init?(message: UnsafeMutablePointer<nlmsghdr>) {
        guard Int(message.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<nhmsg>.size,
              let attributes = AttributeTable(message: message, headerSize: MemoryLayout<nhmsg>.size,
                                              policy: Self.attributes),
              let id = attributes.u32(NHA_ID) else { return nil }
        let header = nlmsg_data(message)!.loadUnaligned(as: nhmsg.self)
        var gateway: IPAddress?
        if let value = attributes.bytes(NHA_GATEWAY) {
            // The family is the object's (`nh_family`); its length tells it as well.
            guard value.count == 4 || value.count == 16, let address = IPAddress(octets: value) else { return nil }
            gateway = address
        }
        var members: [Member] = []
        if let group = attributes.bytes(NHA_GROUP) {
            let zeroed = (attributes.u32(Self.operationFlagsAttribute) ?? 0) & Self.reservedFieldsZeroed != 0
            guard let parsed = Self.members(group, reservedFieldsZeroed: zeroed) else { return nil }
            members = parsed
        }
        let linkIndex = attributes.u32(NHA_OIF).map { Int32(bitPattern: $0) }
        self.init(id: id, flags: RouteFlags(rawValue: header.nh_flags & 0xff),
                  linkIndex: linkIndex.flatMap { $0 > 0 ? $0 : nil }, gateway: gateway,
                  isBlackhole: attributes[NHA_BLACKHOLE] != nil, members: members)
    }

    /// `NHA_OP_FLAGS` (Linux 6.12+), after `NHA_GROUP` in a message; newer than this machine's
    /// headers.
    static let operationFlagsAttribute: Int32 = 14
    /// `NHA_OP_FLAG_RESP_GRP_RESVD_0`: the reserved fields of the group's entries are zero, so
    /// the byte after the weight is its high byte.
    static let reservedFieldsZeroed: UInt32 = 1 << 31

    private static let attributes = AttributePolicy(maxType: operationFlagsAttribute, [
        Int32(NHA_ID): (.u32, 4),
        Int32(NHA_OIF): (.u32, 4),
        Int32(NHA_BLACKHOLE): (.flag, 0),
        operationFlagsAttribute: (.u32, 4),
    ])

    /// The entries of `NHA_GROUP`, an array of `struct nexthop_grp`: the member's id, then its
    /// weight less one in a byte. From Linux 6.12 (16-bit weights) the next byte (`resvd1`)
    /// holds the weight's high byte, which the message says with `reservedFieldsZeroed`;
    /// before, that byte was left as the kernel's memory held it (until 6.11 and its stable
    /// backports), so without the flag it is not read.
    static func members(_ bytes: UnsafeRawBufferPointer, reservedFieldsZeroed: Bool) -> [Member]? {
        let entrySize = MemoryLayout<nexthop_grp>.size
        guard bytes.count % entrySize == 0 else { return nil }
        return stride(from: 0, to: bytes.count, by: entrySize).map { offset in
            let entry = bytes.loadUnaligned(fromByteOffset: offset, as: nexthop_grp.self)
            let high = reservedFieldsZeroed ? UInt32(entry.resvd1) : 0
            return Member(id: entry.id, weight: (UInt32(entry.weight) | high << 8) + 1)
        }
    }
}
