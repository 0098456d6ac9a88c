import CNetlink

// Route messages (RTM_NEWROUTE, RTM_DELROUTE) read straight from the kernel's bytes.
//
// Route messages are the bulk of what a routing daemon's churn, a batch of lookups or a table
// dump sends, and each one used to go through libnl's `rtnl_route_parse`: an `rtnl_route`, one
// `nl_addr` per address and one `rtnl_nexthop`, all allocated and freed again, only to be copied
// into a `Route`. Reading the attributes here gives the same value (the same fields, the same
// rules for the single next hop and for `RTA_MULTIPATH`) with one allocation, the next-hop
// array. Links are read from their bytes too (LinkMessage.swift); addresses still come from
// libnl's cache in dumps.

extension Route {
    /// Parses one `RTM_NEWROUTE` / `RTM_DELROUTE` message; nil for families other than IPv4
    /// and IPv6 and for a malformed message (an attribute that overruns the message, an
    /// address of the wrong length, a 32-bit attribute shorter than 4 bytes).
    init?(message header: UnsafePointer<nlmsghdr>) {
        guard let payload = netlinkPayload(of: header, atLeast: MemoryLayout<rtmsg>.size) else { return nil }
        self.init(payload: payload)
    }

    /// How long the route has left, from the message's `RTA_CACHEINFO` (`rta_expires`, in the
    /// kernel's clock ticks of a hundredth of a second): nil for a route that does not expire;
    /// zero or less for one that has expired, which the kernel's lookups pass over
    /// (`fib6_check_expired`) until its garbage collection deletes it, up to
    /// `net.ipv6.route.gc_interval` (30 s) later, with a message only then. IPv6 routes learned
    /// from router advertisements expire with the router's lifetime.
    static func remainingLifetime(message header: UnsafePointer<nlmsghdr>) -> Duration? {
        guard let payload = netlinkPayload(of: header, atLeast: MemoryLayout<rtmsg>.size) else { return nil }
        var attributes = RouteAttributes(payload, from: MemoryLayout<rtmsg>.size)
        while let (type, value) = attributes.next() {
            // struct rta_cacheinfo: clntref, lastuse, then the signed expires.
            guard Int32(type) == Int32(RTA_CACHEINFO.rawValue), value.count >= 12 else { continue }
            let ticks = value.loadUnaligned(fromByteOffset: 8, as: Int32.self)
            return ticks == 0 ? nil : .milliseconds(Int64(ticks) * 10)
        }
        return nil
    }

    /// Parses the payload of a route message: an `rtmsg` followed by its attributes.
    init?(payload: UnsafeRawBufferPointer) {
        guard payload.count >= MemoryLayout<rtmsg>.size else { return nil }
        let message = payload.loadUnaligned(as: rtmsg.self)
        guard let family = AddressFamily(kernel: Int32(message.rtm_family)),
              message.rtm_dst_len <= family.bitWidth, message.rtm_src_len <= family.bitWidth else { return nil }

        var table = UInt32(message.rtm_table)
        var destination: IPAddress?
        var source: IPAddress?
        var metric: UInt32 = 0
        var preference: RoutePreference?
        var preferredSource: IPAddress?
        var outputLink: UInt32?
        var gateway: IPAddress?
        var hasRealm = false
        var multipath: UnsafeRawBufferPointer?
        var nexthopID: UInt32?

        var attributes = RouteAttributes(payload, from: MemoryLayout<rtmsg>.size)
        while let (type, value) = attributes.next() {
            switch Int32(type) {
            case Int32(RTA_DST.rawValue):
                guard let address = IPAddress(attribute: value, family: family) else { return nil }
                destination = address
            case Int32(RTA_SRC.rawValue):
                guard let address = IPAddress(attribute: value, family: family) else { return nil }
                source = address
            case Int32(RTA_TABLE.rawValue):
                guard let value = value.u32 else { return nil }
                table = value
            case Int32(RTA_PRIORITY.rawValue):
                guard let value = value.u32 else { return nil }
                metric = value
            case Int32(RTA_PREF.rawValue):
                guard let value = value.first else { return nil }
                preference = RoutePreference(rawValue: value)
            case Int32(RTA_PREFSRC.rawValue):
                guard let address = IPAddress(attribute: value, family: family) else { return nil }
                preferredSource = address
            case Int32(RTA_OIF.rawValue):
                guard let value = value.u32 else { return nil }
                outputLink = value
            case Int32(RTA_GATEWAY.rawValue):
                guard let address = IPAddress(attribute: value, family: family) else { return nil }
                gateway = address
            case Int32(RTA_VIA.rawValue):
                guard let address = IPAddress(viaAttribute: value) else { return nil }
                gateway = address
            case Int32(RTA_FLOW.rawValue):
                guard value.u32 != nil else { return nil }
                hasRealm = true
            case Int32(RTA_MULTIPATH.rawValue):
                multipath = value
            case Int32(RTA_NH_ID.rawValue):
                guard let value = value.u32 else { return nil }
                nexthopID = value
            default:
                continue
            }
        }
        guard attributes.isWellFormed else { return nil }

        var nexthops: [Nexthop] = []
        if let multipath {
            guard let hops = Nexthop.parseMultipath(multipath, family: family) else { return nil }
            nexthops = hops
        } else if outputLink != nil || gateway != nil || hasRealm {
            // A route with one next hop describes it in the top-level attributes; its flags are
            // the low byte of the route's (`RTNH_F_*`) and its weight is 1.
            nexthops = [Nexthop(gateway: gateway, linkIndex: outputLink.flatMap { $0 > 0 ? Int32(bitPattern: $0) : nil },
                                weight: 1, flags: RouteFlags(rawValue: message.rtm_flags & 0xff))]
        }
        var flags = RouteFlags(rawValue: message.rtm_flags)
        if nexthops.count == 1 { flags.formUnion(nexthops[0].flags) }
        let zero: IPAddress = family == .ipv4 ? .v4(.any) : .v6(.any)
        self.init(
            family: family,
            table: RouteTable(rawValue: table),
            destination: IPNetwork(address: destination ?? zero, prefixLength: message.rtm_dst_len)!,
            sourcePrefix: message.rtm_src_len > 0 ? IPNetwork(address: source ?? zero, prefixLength: message.rtm_src_len) : nil,
            type: RouteType(rawValue: message.rtm_type),
            routeProtocol: RouteProtocol(rawValue: message.rtm_protocol),
            scope: Scope(rawValue: message.rtm_scope),
            metric: metric,
            preference: preference,
            tos: message.rtm_tos,
            preferredSource: preferredSource,
            flags: flags,
            nexthops: nexthops,
            nexthopID: nexthopID)
    }
}

extension Nexthop {
    /// The next hops of an `RTA_MULTIPATH` attribute: a list of `rtnexthop` headers, each
    /// followed by its own attributes (`RTA_GATEWAY`, `RTA_VIA`). The kernel keeps the weight
    /// minus one (`rtnh_hops`); the value holds the weight as configured and as `ip` prints it.
    static func parseMultipath(_ bytes: UnsafeRawBufferPointer, family: AddressFamily) -> [Nexthop]? {
        var hops: [Nexthop] = []
        var offset = 0
        let headerSize = MemoryLayout<rtnexthop>.size
        while offset + headerSize <= bytes.count {
            let hop = UnsafeRawBufferPointer(rebasing: bytes[offset...]).loadUnaligned(as: rtnexthop.self)
            let length = Int(hop.rtnh_len)
            guard length >= headerSize, offset + length <= bytes.count else { return nil }
            var gateway: IPAddress?
            var attributes = RouteAttributes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]), from: headerSize)
            while let (type, value) = attributes.next() {
                if Int32(type) == Int32(RTA_GATEWAY.rawValue) {
                    guard let address = IPAddress(attribute: value, family: family) else { return nil }
                    gateway = address
                } else if Int32(type) == Int32(RTA_VIA.rawValue) {
                    guard let address = IPAddress(viaAttribute: value) else { return nil }
                    gateway = address
                }
            }
            guard attributes.isWellFormed else { return nil }
            hops.append(Nexthop(gateway: gateway, linkIndex: hop.rtnh_ifindex > 0 ? hop.rtnh_ifindex : nil,
                                weight: UInt16(hop.rtnh_hops) + 1, flags: RouteFlags(rawValue: UInt32(hop.rtnh_flags))))
            offset += (length + 3) & ~3
        }
        return hops
    }
}

/// Walks the `rtattr` list of a message from an offset, four-byte aligned. Stops at the end or
/// at the first attribute that does not fit, which ``isWellFormed`` then reports.
struct RouteAttributes {
    private let bytes: UnsafeRawBufferPointer
    private var offset: Int
    /// False once an attribute's length overran the message or was shorter than its header.
    private(set) var isWellFormed = true

    init(_ bytes: UnsafeRawBufferPointer, from offset: Int) {
        self.bytes = bytes
        self.offset = (offset + 3) & ~3
    }

    /// The next attribute's type (without the nested and byte-order bits) and value.
    mutating func next() -> (type: UInt16, value: UnsafeRawBufferPointer)? {
        guard offset + 4 <= bytes.count else { return nil }
        let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        let type = bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3fff
        guard length >= 4, offset + length <= bytes.count else {
            isWellFormed = false
            return nil
        }
        let value = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)])
        offset += (length + 3) & ~3
        return (type, value)
    }
}

extension UnsafeRawBufferPointer {
    /// The value as a native-endian 32-bit integer; nil when it is shorter than 4 bytes.
    var u32: UInt32? { count >= 4 ? loadUnaligned(as: UInt32.self) : nil }
}

extension IPAddress {
    /// An address attribute of `family`: 4 bytes for IPv4, 16 for IPv6.
    init?(attribute value: UnsafeRawBufferPointer, family: AddressFamily) {
        guard value.count == Int(family.bitWidth / 8) else { return nil }
        self.init(octets: value)
    }

    /// An `RTA_VIA` attribute: a gateway of either family (an IPv4 route through an IPv6
    /// neighbour), as a 2-byte family followed by the address.
    init?(viaAttribute value: UnsafeRawBufferPointer) {
        guard value.count >= 2,
              let family = AddressFamily(kernel: Int32(value.loadUnaligned(as: UInt16.self))) else { return nil }
        self.init(attribute: UnsafeRawBufferPointer(rebasing: value[2...]), family: family)
    }
}

extension Optional where Wrapped == ContinuousClock.Instant {
    /// Keeps the earlier of this instant, if any, and `instant` (the soonest expiry seen).
    mutating func keepEarliest(_ instant: ContinuousClock.Instant) {
        if map({ instant < $0 }) ?? true { self = instant }
    }
}
