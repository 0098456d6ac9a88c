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
