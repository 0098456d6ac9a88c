import CNetlink

// Next-hop objects (`ip nexthop`, `RTM_NEWNEXTHOP`), read from the kernel's bytes so that routes
// that name one (`RTA_NH_ID`) can be given its next hops.

/// A next-hop object of the kernel: one gateway and link, a blackhole, or a group of other
/// objects with weights. Routes name one by its id (``Route/nexthopID``).
struct NexthopObject: Sendable, Hashable {
    /// A member of a group, with its weight as configured and as `ip` prints it (1 to 256, and
    /// up to 65 535 from Linux 6.12).
    struct Member: Sendable, Hashable {
        var id: UInt32
        var weight: UInt32
    }

    /// The object's id (`NHA_ID`).
    var id: UInt32
    /// `RTNH_F_*` flags (`nh_flags`): `onlink`, and `offload` or `trap` as drivers set them. The
    /// kernel never marks an object dead or linkdown: it deletes the objects of a link that goes
    /// down or loses its carrier, and refuses new ones there.
    var flags: RouteFlags
    /// The output link (`NHA_OIF`); nil for a group or a blackhole.
    var linkIndex: Int32?
    /// The gateway (`NHA_GATEWAY`); nil for an on-link next hop, a group or a blackhole.
    var gateway: IPAddress?
    /// Whether packets sent here are dropped (`NHA_BLACKHOLE`).
    var isBlackhole: Bool
    /// The members of a group (`NHA_GROUP`); empty for a single next hop.
    var members: [Member]

    /// Parses one `RTM_NEWNEXTHOP` / `RTM_DELNEXTHOP` message; nil for a malformed one or one
    /// without an id.
    init?(message header: UnsafePointer<nlmsghdr>) {
        guard let payload = netlinkPayload(of: header, atLeast: MemoryLayout<nhmsg>.size) else { return nil }
        self.init(payload: payload)
    }

    /// Parses the payload of a next-hop message: an `nhmsg` followed by `NHA_*` attributes.
    init?(payload: UnsafeRawBufferPointer) {
        guard payload.count >= MemoryLayout<nhmsg>.size else { return nil }
        let header = payload.loadUnaligned(as: nhmsg.self)
        var id: UInt32?
        var linkIndex: Int32?
        var gateway: IPAddress?
        var isBlackhole = false
        var group: UnsafeRawBufferPointer?
        var operationFlags: UInt32 = 0
        var attributes = RouteAttributes(payload, from: MemoryLayout<nhmsg>.size)
        while let (type, value) = attributes.next() {
            switch Int32(type) {
            case Int32(NHA_ID):
                id = value.u32
            case Int32(NHA_OIF):
                guard let index = value.u32 else { return nil }
                linkIndex = index > 0 ? Int32(bitPattern: index) : nil
            case Int32(NHA_GATEWAY):
                // The family is the object's (`nh_family`); its length tells it as well.
                guard let family: AddressFamily = value.count == 4 ? .ipv4 : value.count == 16 ? .ipv6 : nil,
                      let address = IPAddress(attribute: value, family: family) else { return nil }
                gateway = address
            case Int32(NHA_BLACKHOLE):
                isBlackhole = true
            case Int32(NHA_GROUP):
                group = value
            case Self.operationFlagsAttribute:
                operationFlags = value.u32 ?? 0
            default:
                continue
            }
        }
        guard attributes.isWellFormed, let id else { return nil }
        var members: [Member] = []
        if let group {
            let zeroed = operationFlags & Self.reservedFieldsZeroed != 0
            guard let parsed = Self.parseGroup(group, reservedFieldsZeroed: zeroed) else { return nil }
            members = parsed
        }
        self.id = id
        self.flags = RouteFlags(rawValue: header.nh_flags & 0xff)
        self.linkIndex = linkIndex
        self.gateway = gateway
        self.isBlackhole = isBlackhole
        self.members = members
    }

    /// Creates an object (for tests).
    init(id: UInt32, flags: RouteFlags = [], linkIndex: Int32? = nil, gateway: IPAddress? = nil,
         isBlackhole: Bool = false, members: [Member] = []) {
        self.id = id
        self.flags = flags
        self.linkIndex = linkIndex
        self.gateway = gateway
        self.isBlackhole = isBlackhole
        self.members = members
    }

    /// `NHA_OP_FLAGS` (Linux 6.12+), after `NHA_GROUP` in a message; absent from this machine's
    /// headers.
    static let operationFlagsAttribute: Int32 = 14
    /// `NHA_OP_FLAG_RESP_GRP_RESVD_0`: the reserved fields of the group's entries are zero, so
    /// the byte after the weight is its high byte.
    static let reservedFieldsZeroed: UInt32 = 1 << 31

    /// The entries of `NHA_GROUP`: `struct nexthop_grp`, 8 bytes each: the member's id, then
    /// its weight less one in a byte. From Linux 6.12 (16-bit weights) the next byte holds the
    /// weight's high byte, which the message says with `reservedFieldsZeroed`; before, that
    /// byte was left as the kernel's memory held it (until 6.11 and its stable backports), so
    /// without the flag it is not read.
    static func parseGroup(_ bytes: UnsafeRawBufferPointer, reservedFieldsZeroed: Bool) -> [Member]? {
        let entrySize = 8
        guard bytes.count % entrySize == 0 else { return nil }
        return stride(from: 0, to: bytes.count, by: entrySize).map { offset in
            let id = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            let high = reservedFieldsZeroed ? UInt32(bytes[offset + 5]) : 0
            return Member(id: id, weight: (UInt32(bytes[offset + 4]) | high << 8) + 1)
        }
    }
}

extension Route {
    /// Whether the route names a next-hop object and carries none of its next hops (the kernel
    /// sends only the id outside `nexthop_compat_mode`). Blackhole routes have none to carry.
    var lacksObjectNexthops: Bool { nexthopID != nil && nexthops.isEmpty && type == .unicast }

    /// Gives a route that ``lacksObjectNexthops`` the next hops of its object: the object's
    /// gateway and link, or one next hop per member of its group with the member's weight.
    ///
    /// - Returns: False, leaving the route as it was, when the object or a member is not in
    ///   `objects`.
    @discardableResult
    mutating func takeNexthops(from objects: [UInt32: NexthopObject]) -> Bool {
        guard lacksObjectNexthops, let id = nexthopID, let object = objects[id] else { return !lacksObjectNexthops }
        if object.isBlackhole {
            type = .blackhole
            return true
        }
        if object.members.isEmpty {
            nexthops = [Nexthop(gateway: object.gateway, linkIndex: object.linkIndex, weight: 1, flags: object.flags)]
            flags.formUnion(object.flags)
            return true
        }
        var hops: [Nexthop] = []
        hops.reserveCapacity(object.members.count)
        for member in object.members {
            guard let hop = objects[member.id] else { return false }
            // A group's only member may be a blackhole, which makes the group one.
            if hop.isBlackhole {
                type = .blackhole
                return true
            }
            hops.append(Nexthop(gateway: hop.gateway, linkIndex: hop.linkIndex,
                                weight: UInt16(clamping: member.weight), flags: hop.flags))
        }
        if hops.count == 1 {
            // The kernel lists a group of one, in its compatibility mode, as a route's single
            // next hop, whose weight is 1.
            hops[0].weight = 1
            flags.formUnion(hops[0].flags)
        }
        nexthops = hops
        return true
    }
}
