import CNetlink

// Next-hop objects (`ip nexthop`, `RTM_NEWNEXTHOP`), kept so that routes that name one
// (`RTA_NH_ID`) can be given its next hops.

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
