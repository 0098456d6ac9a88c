import Foundation
@testable import Netlink
import NetnsTestSupport
import Testing

/// Policy rules read from their bytes, and kept by subscriptions.
@Suite("Policy rules")
struct PolicyRuleTests {
    /// A rule message's payload: `fib_rule_hdr` and attributes.
    static func payload(family: UInt8 = 2, dstLength: UInt8 = 0, srcLength: UInt8 = 0, table: UInt8 = 254,
                        action: UInt8 = 1, flags: UInt32 = 0, _ attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = [family, dstLength, srcLength, 0, table, 0, 0, action] + withUnsafeBytes(of: flags.littleEndian, Array.init)
        for (type, value) in attributes {
            bytes += withUnsafeBytes(of: UInt16(4 + value.count).littleEndian, Array.init)
            bytes += withUnsafeBytes(of: type.littleEndian, Array.init)
            bytes += value + [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        }
        return bytes
    }

    static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }

    static func rule(_ bytes: [UInt8]) -> PolicyRule? { bytes.withUnsafeBytes { PolicyRule(payload: $0) } }

    @Test func wireGuardsRulesReadAsIpPrintsThem() throws {
        // 32765: not from all fwmark 0xca6c lookup 51820 (the table as FRA_TABLE; the header's is 252, RT_TABLE_COMPAT).
        let tunnel = try #require(Self.rule(Self.payload(table: 252, flags: 0x2, [
            (6, Self.u32(32765)), (10, Self.u32(0xca6c)), (16, Self.u32(0xffff_ffff)), (15, Self.u32(51820)),
            (14, Self.u32(.max)), (13, Self.u32(.max)),
        ])))
        #expect(tunnel.priority == 32765 && tunnel.isInverted && tunnel.table.rawValue == 51820)
        #expect(tunnel.firewallMark == 0xca6c && tunnel.firewallMask == 0xffff_ffff)
        #expect(tunnel.suppressPrefixLength == nil && tunnel.suppressInterfaceGroup == nil, "the kernel's -1 is none")
        // 32764: from all lookup main suppress_prefixlength 0.
        let main = try #require(Self.rule(Self.payload([(6, Self.u32(32764)), (14, Self.u32(0))])))
        #expect(main.suppressPrefixLength == 0 && main.table == .main && main.action == .toTable)
    }

    @Test func selectorsAndActionsAreRead() throws {
        let rule = try #require(Self.rule(Self.payload(family: 10, dstLength: 32, srcLength: 48, action: 7, flags: 0x8, [
            (1, [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12)), (2, [0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 10)),
            (3, Array("eth0".utf8) + [0]), (20, Self.u32(1000) + Self.u32(1999)), (22, [6]),
            (24, [0xbb, 0x01, 0xbb, 0x01]), (19, [1]),
        ])))
        #expect(rule.family == .ipv6 && rule.action == .unreachable && rule.action.refuses)
        #expect(rule.destination == IPNetwork("2001:db8::/32") && rule.source == IPNetwork("2001:db8:1::/48"))
        #expect(rule.inputLinkName == "eth0" && rule.linkIsMissing, "FIB_RULE_IIF_DETACHED")
        #expect(rule.userIDs == 1000...1999 && rule.ipProtocol == 6 && rule.destinationPorts == 443...443)
        #expect(rule.selectsByOtherFields, "l3mdev")
    }

    @Test func dscpAndFlowLabelOfZeroAndLargeSuppressionsAreNoSelectors() throws {
        // FRA_DSCP 0 with FRA_DSCP_MASK 0x3f, FRA_FLOWLABEL 0 with its mask: traffic of DSCP 0
        // and flow label 0 passes them.
        let zero = try #require(Self.rule(Self.payload([(25, [0]), (30, [0x3f]), (26, Self.u32(0)), (27, Self.u32(0xfffff)),
                                                        (14, Self.u32(0x8000_0000))])))
        #expect(!zero.selectsByOtherFields)
        #expect(zero.suppressPrefixLength == nil, "the kernel's int is negative: no suppression")
        #expect(try #require(Self.rule(Self.payload([(25, [0x2e])]))).selectsByOtherFields, "DSCP 46")
        #expect(try #require(Self.rule(Self.payload([(26, [0, 0, 0, 1])]))).selectsByOtherFields, "a flow label")
        #expect(try #require(Self.rule(Self.payload([(12, [0, 0, 0, 0, 0, 0, 0, 7])]))).selectsByOtherFields, "a tunnel id")
    }

    @Test func malformedRulesAreRefused() {
        #expect(Self.rule([2, 0, 0, 0]) == nil, "shorter than fib_rule_hdr")
        #expect(Self.rule(Self.payload(family: 7, [])) == nil, "not IPv4 or IPv6")
        #expect(Self.rule(Self.payload(dstLength: 33, [])) == nil)
        #expect(Self.rule(Self.payload(dstLength: 8, [(1, [10, 0, 0])])) == nil, "a 3-byte IPv4 address")
        #expect(Self.rule(Self.payload([(20, Self.u32(1))])) == nil, "a uid range cut short")
    }
}

@Suite("Policy rules, live", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LivePolicyRuleTests {
    @Test func theSubscriptionKeepsTheRulesAndReportsTheirChanges() async throws {
        try await withTestNamespace("rules") { ns in
            try ns.ip("rule", "add", "fwmark", "0x10", "lookup", "100", "pref", "100")
            try ns.ip("-6", "rule", "add", "from", "2001:db8::/32", "lookup", "200", "pref", "200")
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let rules = try kernel.rules()
            #expect(subscription.state.policyRules == rules)
            #expect(rules[.ipv4]?.map(\.priority) == [0, 100, 32766, 32767], "\(rules)")
            #expect(rules[.ipv6]?.map(\.priority) == [0, 200, 32766], "\(rules)")
            #expect(rules[.ipv4]?.first { $0.priority == 100 }?.firewallMark == 0x10)
            #expect(rules[.ipv6]?.first { $0.priority == 200 }?.source == IPNetwork("2001:db8::/32"))
            let recorder = EventRecorder(subscription)
            try ns.ip("rule", "add", "iif", "lo", "lookup", "300", "pref", "300")
            #expect(recorder.waitFor { if case .rulesChanged(.ipv4) = $0 { return true } else { return false } })
            #expect(eventually { subscription.state.policyRules == (try? kernel.rules()) })
            #expect(subscription.state.policyRules[.ipv4]?.contains { $0.priority == 300 && $0.inputLinkName == "lo" } == true)
        }
    }

    /// The kernel detaches a rule from a link that is renamed or goes away, and attaches it to
    /// one that takes its name, without a rule message: the subscription reads the rules again.
    @Test func aRenamedLinkDetachesItsRulesWithoutAMessage() async throws {
        try await withTestNamespace("ruleiif") { ns in
            try ns.ip("rule", "add", "iif", "lo", "lookup", "100", "pref", "100")
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            func rule() -> PolicyRule? { subscription.state.policyRules[.ipv4]?.first { $0.priority == 100 } }
            #expect(rule()?.linkIsMissing == false)
            try ns.batch(["link set lo down", "link set lo name lo0"])
            #expect(eventually { rule()?.linkIsMissing == true }, "\(String(describing: rule()))")
            try ns.ip("link", "set", "lo0", "name", "lo")
            #expect(eventually { rule()?.linkIsMissing == false }, "\(String(describing: rule()))")
        }
    }

    /// An IPv4 table dumped after the main one (id 255 modulo 256) is read at the start only when
    /// a rule names it; a rule that names it later has its default routes read then.
    @Test func aTableThatARuleNamesLaterHasItsDefaultRoutesRead() async throws {
        try await withTestNamespace("ruletable") { ns in
            try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                          "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2 table 511"])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            #expect(!subscription.state.defaultRoutes.values.contains { $0.table.rawValue == 511 })
            try ns.ip("rule", "add", "lookup", "511", "pref", "500")
            #expect(eventually { subscription.state.defaultRoutes.values.contains { $0.table.rawValue == 511 } },
                    "\(subscription.state.defaultRoutes)")
        }
    }
}
