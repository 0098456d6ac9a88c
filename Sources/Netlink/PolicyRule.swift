import CNetlink

/// A policy-routing rule (`ip rule`, `RTM_NEWRULE`): which packets it selects and what it does
/// with them, as the kernel reports it.
///
/// The kernel tries the rules of a family in order of ``priority``: the first rule that selects
/// a packet and whose action ends the lookup decides its route (a table's route, or a refusal);
/// a table without a matching route, or whose answer the rule suppresses, passes the packet on
/// to the next rule.
public struct PolicyRule: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public var family: AddressFamily
    /// The priority (`pref`): lower goes first.
    public var priority: UInt32
    /// What the rule does with a packet it selects.
    public var action: Action
    /// The table to look up, for ``Action/toTable``.
    public var table: RouteTable
    /// Whether the selectors are inverted (`ip rule add not ...`): the rule selects the packets
    /// they do not select.
    public var isInverted: Bool
    /// Only packets from this prefix (`from`).
    public var source: IPNetwork?
    /// Whether an IPv6 lookup without a source address yet passes the ``source`` test
    /// (`FIB_RULE_FIND_SADDR`).
    public var findsSourceAddress: Bool
    /// Only packets to this prefix (`to`).
    public var destination: IPNetwork?
    /// Only packets that arrive on this link (`iif`); `lo` for packets this host sends.
    public var inputLinkName: String?
    /// Only packets sent through this link (`oif`), as a socket bound to it sends them.
    public var outputLinkName: String?
    /// Whether the link named by ``inputLinkName`` or ``outputLinkName`` does not exist (the
    /// rule then selects nothing, unless inverted).
    public var linkIsMissing: Bool
    /// The firewall mark, compared under ``firewallMask`` (`fwmark MARK/MASK`); 0 and 0 select
    /// every packet.
    public var firewallMark: UInt32
    /// The mask of ``firewallMark``.
    public var firewallMask: UInt32
    /// Only packets with this type of service (`tos`); 0 for every one.
    public var tos: UInt8
    /// Only packets of sockets owned by these users (`uidrange`).
    public var userIDs: ClosedRange<UInt32>?
    /// Only packets of this IP protocol (`ipproto`).
    public var ipProtocol: UInt8?
    /// Only packets from these ports (`sport`).
    public var sourcePorts: ClosedRange<UInt16>?
    /// Only packets to these ports (`dport`).
    public var destinationPorts: ClosedRange<UInt16>?
    /// Whether the rule selects by something else that the library does not model and that
    /// unmarked traffic of an unbound socket does not have: a tunnel id, a VRF's device
    /// (`l3mdev`), a DSCP or IPv6 flow label other than 0.
    public var selectsByOtherFields: Bool
    /// The priority of the rule to jump to, for ``Action/goto``.
    public var gotoTarget: UInt32?
    /// Answers whose prefix is at most this long are not taken (`suppress_prefixlength`): with
    /// 0, a table's default routes are passed over.
    public var suppressPrefixLength: UInt32?
    /// Answers through a link of this group are not taken (`suppress_ifgroup`).
    public var suppressInterfaceGroup: UInt32?

    /// Creates a rule that selects every packet and looks up `table`.
    public init(family: AddressFamily, priority: UInt32, action: Action = .toTable, table: RouteTable = .main) {
        self.family = family
        self.priority = priority
        self.action = action
        self.table = table
        isInverted = false
        findsSourceAddress = false
        linkIsMissing = false
        firewallMark = 0
        firewallMask = 0
        tos = 0
        selectsByOtherFields = false
    }

    /// What a rule does with a packet it selects (`FR_ACT_*`).
    public struct Action: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Look up ``PolicyRule/table``. The corresponding C constant is `FR_ACT_TO_TBL`.
        public static let toTable = Action(rawValue: 1)
        /// Go on at the rule with priority ``PolicyRule/gotoTarget``. The corresponding C
        /// constant is `FR_ACT_GOTO`.
        public static let goto = Action(rawValue: 2)
        /// Nothing; go on with the next rule. The corresponding C constant is `FR_ACT_NOP`.
        public static let nop = Action(rawValue: 3)
        /// Drop silently. The corresponding C constant is `FR_ACT_BLACKHOLE`.
        public static let blackhole = Action(rawValue: 6)
        /// Refuse: the network is unreachable. The corresponding C constant is `FR_ACT_UNREACHABLE`.
        public static let unreachable = Action(rawValue: 7)
        /// Refuse: administratively prohibited. The corresponding C constant is `FR_ACT_PROHIBIT`.
        public static let prohibit = Action(rawValue: 8)

        /// Whether the action ends every lookup with a refusal.
        public var refuses: Bool { self == .blackhole || self == .unreachable || self == .prohibit }

        /// The name as `ip rule` prints it (`lookup`, `goto`, `nop`, `blackhole`, ...), or the number.
        public var description: String {
            switch rawValue {
            case 1: "lookup"
            case 2: "goto"
            case 3: "nop"
            case 6: "blackhole"
            case 7: "unreachable"
            case 8: "prohibit"
            default: String(rawValue)
            }
        }
    }

    /// The rule as `ip rule` prints it, in short.
    public var description: String {
        var text = "\(priority):"
        if isInverted { text += " not" }
        text += " from \(source?.description ?? "all")"
        if let destination { text += " to \(destination)" }
        if firewallMask != 0 { text += " fwmark \(firewallMark)/\(firewallMask)" }
        if let inputLinkName { text += " iif \(inputLinkName)" }
        if let outputLinkName { text += " oif \(outputLinkName)" }
        if let userIDs { text += " uidrange \(userIDs.lowerBound)-\(userIDs.upperBound)" }
        switch action {
        case .toTable: text += " lookup \(table)"
        case .goto: text += " goto \(gotoTarget.map(String.init) ?? "?")"
        default: text += " \(action)"
        }
        if let suppressPrefixLength { text += " suppress_prefixlength \(suppressPrefixLength)" }
        return text
    }
}

extension PolicyRule {
    /// `sizeof(struct fib_rule_hdr)`.
    static let headerSize = 12

    /// Parses the payload of a rule message: a `struct fib_rule_hdr` (family, destination and
    /// source prefix lengths, TOS, table, two reserved bytes, action, flags) and `FRA_*`
    /// attributes. Nil for a family other than IPv4 and IPv6 or a malformed message.
    init?(payload: UnsafeRawBufferPointer) {
        guard payload.count >= Self.headerSize,
              let family = AddressFamily(kernel: Int32(payload[0])) else { return nil }
        let destinationLength = payload[1], sourceLength = payload[2]
        guard destinationLength <= family.bitWidth, sourceLength <= family.bitWidth else { return nil }
        let flags = payload.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        self.init(family: family, priority: 0, action: Action(rawValue: payload[7]),
                  table: RouteTable(rawValue: UInt32(payload[4])))
        tos = payload[3]
        isInverted = flags & 0x2 != 0                       // FIB_RULE_INVERT
        findsSourceAddress = flags & 0x1_0000 != 0          // FIB_RULE_FIND_SADDR
        linkIsMissing = flags & (0x8 | 0x10) != 0           // FIB_RULE_IIF_DETACHED, FIB_RULE_OIF_DETACHED
        let zero: IPAddress = family == .ipv4 ? .v4(.any) : .v6(.any)
        if destinationLength > 0 { destination = IPNetwork(address: zero, prefixLength: destinationLength) }
        if sourceLength > 0 { source = IPNetwork(address: zero, prefixLength: sourceLength) }
        var attributes = RouteAttributes(payload, from: Self.headerSize)
        while let (type, value) = attributes.next() {
            switch type {
            case 1, 2:  // FRA_DST, FRA_SRC
                guard let address = IPAddress(attribute: value, family: family) else { return nil }
                if type == 1 {
                    destination = IPNetwork(address: address, prefixLength: destinationLength)
                } else {
                    source = IPNetwork(address: address, prefixLength: sourceLength)
                }
            case 3: inputLinkName = Self.string(value)       // FRA_IIFNAME
            case 17: outputLinkName = Self.string(value)     // FRA_OIFNAME
            case 4: gotoTarget = value.u32                   // FRA_GOTO
            case 6: priority = value.u32 ?? 0                // FRA_PRIORITY
            case 10: firewallMark = value.u32 ?? 0           // FRA_FWMARK
            case 16: firewallMask = value.u32 ?? 0           // FRA_FWMASK
            // FRA_SUPPRESS_IFGROUP, FRA_SUPPRESS_PREFIXLEN: the kernel sends -1 for "none", and
            // keeps the length as an int: one of 2^31 or more is negative and suppresses nothing.
            case 13: suppressInterfaceGroup = value.u32.flatMap { $0 == .max ? nil : $0 }
            case 14: suppressPrefixLength = value.u32.flatMap { $0 > UInt32(Int32.max) ? nil : $0 }
            case 15: if let id = value.u32 { table = RouteTable(rawValue: id) }  // FRA_TABLE
            case 20:                                         // FRA_UID_RANGE
                guard value.count >= 8 else { return nil }
                let start = value.loadUnaligned(as: UInt32.self), end = value.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
                userIDs = start <= end ? start...end : nil
            case 22: ipProtocol = value.first                // FRA_IP_PROTO
            case 23, 24:                                     // FRA_SPORT_RANGE, FRA_DPORT_RANGE
                guard value.count >= 4 else { return nil }
                let start = value.loadUnaligned(as: UInt16.self), end = value.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
                let range = start <= end ? start...end : nil
                if type == 23 { sourcePorts = range } else { destinationPorts = range }
            case 12, 25, 26:
                // FRA_TUN_ID, FRA_DSCP (Linux 6.12+) and FRA_FLOWLABEL (6.14+): traffic without
                // a tunnel, with DSCP 0 and flow label 0 passes a value of 0 whatever its mask
                // (the kernel refuses a value with bits outside the mask; masks, 27-30, and the
                // port masks, which come only with port ranges, are not needed).
                if value.contains(where: { $0 != 0 }) { selectsByOtherFields = true }
            case 19:
                // FRA_L3MDEV: only traffic of a VRF, which an unbound socket's is not.
                selectsByOtherFields = true
            default:
                continue
            }
        }
        guard attributes.isWellFormed else { return nil }
    }

    /// A NUL-terminated name attribute.
    private static func string(_ value: UnsafeRawBufferPointer) -> String {
        String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
    }
}
