import CNetlink

extension PolicyRule {
    /// Parses one `RTM_NEWRULE` / `RTM_DELRULE` message with libnl's rule parser
    /// (`rtnl_rule`); nil for a family other than IPv4 and IPv6 or a message libnl refuses.
    ///
    /// libnl 3.7's `rtnl_rule` does not hold the header's flags (inverted, detached link, find
    /// source), the suppressors, the user-id range or the selectors the library does not model
    /// in detail: those are read from the same message with libnl's attribute parser.
    init?(message: OpaquePointer) {
        guard let header = nlmsg_hdr(message),
              Int(header.pointee.nlmsg_len) >= MemoryLayout<nlmsghdr>.size + MemoryLayout<fib_rule_hdr>.size,
              let extras = AttributeTable(message: header, headerSize: MemoryLayout<fib_rule_hdr>.size,
                                          policy: Self.extraAttributes),
              let rule = withParsedObject(message, { PolicyRule(libnl: $0) })
        else { return nil }
        self = rule
        let ruleHeader = nlmsg_data(header)!.loadUnaligned(as: fib_rule_hdr.self)
        guard ruleHeader.dst_len <= family.bitWidth, ruleHeader.src_len <= family.bitWidth else { return nil }
        let zero: IPAddress = family == .ipv4 ? .v4(.any) : .v6(.any)
        // A prefix length without an address: the kernel's rule selects that prefix of 0.
        if destination == nil, ruleHeader.dst_len > 0 { destination = IPNetwork(address: zero, prefixLength: ruleHeader.dst_len) }
        if source == nil, ruleHeader.src_len > 0 { source = IPNetwork(address: zero, prefixLength: ruleHeader.src_len) }
        isInverted = ruleHeader.flags & UInt32(FIB_RULE_INVERT) != 0
        findsSourceAddress = ruleHeader.flags & UInt32(FIB_RULE_FIND_SADDR) != 0
        linkIsMissing = ruleHeader.flags & UInt32(FIB_RULE_IIF_DETACHED | FIB_RULE_OIF_DETACHED) != 0
        // The kernel sends -1 for "none", and keeps the length as an int: one of 2^31 or more
        // is negative and suppresses nothing.
        suppressInterfaceGroup = extras.u32(FRA_SUPPRESS_IFGROUP).flatMap { $0 == .max ? nil : $0 }
        suppressPrefixLength = extras.u32(FRA_SUPPRESS_PREFIXLEN).flatMap { $0 > UInt32(Int32.max) ? nil : $0 }
        if let range = extras.bytes(FRA_UID_RANGE)?.loadUnaligned(as: fib_rule_uid_range.self) {
            userIDs = range.start <= range.end ? range.start...range.end : nil
        }
        // A tunnel id, DSCP or flow label: traffic without a tunnel, with DSCP 0 and flow label
        // 0 passes a value of 0 whatever its mask (the kernel refuses a value with bits outside
        // the mask).
        for type in [Int32(FRA_TUN_ID), Self.dscpAttribute, Self.flowLabelAttribute] {
            if let value = extras.bytes(type), value.contains(where: { $0 != 0 }) { selectsByOtherFields = true }
        }
    }

    /// A rule from a libnl `rtnl_rule`: what libnl models of it.
    init?(libnl rule: OpaquePointer) {
        guard let family = AddressFamily(kernel: rtnl_rule_get_family(rule)) else { return nil }
        self.init(family: family, priority: rtnl_rule_get_prio(rule), action: Action(rawValue: rtnl_rule_get_action(rule)),
                  table: RouteTable(rawValue: rtnl_rule_get_table(rule)))
        tos = rtnl_rule_get_dsfield(rule)
        guard case .some(let sourceAddress) = LibNLAddress.optional(rtnl_rule_get_src(rule), family: family),
              case .some(let destinationAddress) = LibNLAddress.optional(rtnl_rule_get_dst(rule), family: family)
        else { return nil }
        source = sourceAddress.flatMap { IPNetwork(address: $0, prefixLength: UInt8(nl_addr_get_prefixlen(rtnl_rule_get_src(rule)))) }
        destination = destinationAddress.flatMap { IPNetwork(address: $0, prefixLength: UInt8(nl_addr_get_prefixlen(rtnl_rule_get_dst(rule)))) }
        inputLinkName = libnlString(rtnl_rule_get_iif(rule))
        outputLinkName = libnlString(rtnl_rule_get_oif(rule))
        firewallMark = rtnl_rule_get_mark(rule)
        firewallMask = rtnl_rule_get_mask(rule)
        if action == .goto { gotoTarget = rtnl_rule_get_goto(rule) }
        var ipProtocol: UInt8 = 0
        if rtnl_rule_get_ipproto(rule, &ipProtocol) >= 0 { self.ipProtocol = ipProtocol }
        var start: UInt16 = 0, end: UInt16 = 0
        if rtnl_rule_get_sport(rule, &start, &end) >= 0 { sourcePorts = start <= end ? start...end : nil }
        if rtnl_rule_get_dport(rule, &start, &end) >= 0 { destinationPorts = start <= end ? start...end : nil }
        // A VRF's rule (`l3mdev`) selects only traffic of a VRF, which an unbound socket's is not.
        if rtnl_rule_get_l3mdev(rule) >= 0 { selectsByOtherFields = true }
    }

    /// `FRA_DSCP` (Linux 6.12+) and `FRA_FLOWLABEL` (6.14+), newer than this machine's headers.
    private static let dscpAttribute: Int32 = 25
    private static let flowLabelAttribute: Int32 = 26

    /// The rule attributes read beside libnl's rule parser.
    private static let extraAttributes = AttributePolicy(maxType: flowLabelAttribute, [
        Int32(FRA_SUPPRESS_IFGROUP): (.u32, 4),
        Int32(FRA_SUPPRESS_PREFIXLEN): (.u32, 4),
        Int32(FRA_UID_RANGE): (.unspecified, MemoryLayout<fib_rule_uid_range>.size),
    ])
}
