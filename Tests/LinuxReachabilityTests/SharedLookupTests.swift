import Foundation
import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// A namespace with two upstream gateways on one link, a more specific route, and policy
/// rules that send some destinations to table 100 or past the main table's default route.
private func routedNamespace(_ label: String) throws -> TestNamespace {
    let ns = try TestNamespace(label)
    // No IPv6: its link-local addresses arrive a moment later, and a round with an address
    // event rightly shares nothing; the rounds under test must be route rounds only.
    try ns.disableIPv6()
    try ns.batch([
        "link add va type veth peer name vb", "link set va up", "link set vb up",
        "address add 10.1.0.1/24 dev va",
        "route add default via 10.1.0.2",
        "route add 198.18.2.0/24 via 10.1.0.5",
        "route add default via 10.1.0.6 table 100",
        "rule add to 198.18.3.0/24 lookup 100 priority 100",
        "route add 198.18.4.0/24 via 10.1.0.7 table 101",
        "rule add to 198.18.4.0/24 lookup main suppress_prefixlength 0 priority 200",
        "rule add to 198.18.4.0/24 lookup 101 priority 300",
    ])
    _ = eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
    return ns
}

@Suite("One lookup for many targets", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct SharedLookupTests {
    /// The kernel's gateway for each address, as `ip route get` says.
    private func kernelGateways(_ ns: TestNamespace, _ addresses: [IPAddress]) throws -> [String] {
        try addresses.map { try ns.ipJSON("route", "get", $0.description).first?["gateway"] as? String ?? "-" }
    }

    @Test func answersStayTheKernelsWhenDefaultRoutesChange() throws {
        let ns = try routedNamespace("share")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        // Addresses that follow the main default route, one more specific route, a rule to
        // another table, and a rule that skips the main table's default.
        let addresses = (1...5).flatMap { net in (1...40).map { IPAddress("198.18.\(net).\($0)")! } }
        let engine = try ReachabilityEngine(namespace: namespace, policy: .none, resolver: StaticHostResolver([:]))
        engine.start()
        let gateways = Locked<[IPAddress: String]>([:])
        let tokens = addresses.map { address in
            engine.watch(.address(address)) { answer, _ in
                gateways.withLock { $0[address] = answer.gateway?.description ?? "-" }
            }
        }
        defer { for token in tokens { engine.unwatch(token) } }
        func current() -> [String] { gateways.withLock { map in addresses.map { map[$0] ?? "?" } } }

        let first = try kernelGateways(ns, addresses)
        #expect(eventually { current() == first }, "first answers")
        var lookupsSaved = 0
        for (round, gateway) in ["10.1.0.3", "10.1.0.4", "10.1.0.3", "10.1.0.2"].enumerated() {
            try ns.batch(["route replace default via \(gateway)"])
            let expected = try kernelGateways(ns, addresses)
            #expect(eventually { current() == expected }, "after default via \(gateway): \(zip(current(), expected).filter { $0 != $1 }.prefix(3))")
            if round > 0 { #expect(engine.sharedLookupCount > lookupsSaved, "round \(round) shared a lookup") }
            lookupsSaved = engine.sharedLookupCount
        }
        // A rule that sends more addresses to table 100 after the entries were learned: the
        // changed rule set is noticed, nothing is shared, and the answers stay the kernel's.
        try ns.batch(["rule add to 198.18.1.0/24 lookup 100 priority 150", "route replace default via 10.1.0.3"])
        let expected = try kernelGateways(ns, addresses)
        #expect(eventually { current() == expected }, "after a new rule: \(zip(current(), expected).filter { $0 != $1 }.prefix(3))")
        // With suppress_ifgroup in the rule set, lookups are never shared.
        try ns.batch(["rule add lookup main suppress_ifgroup 7 priority 20000", "route replace default via 10.1.0.4"])
        let withSuppression = try kernelGateways(ns, addresses)
        #expect(eventually { current() == withSuppression })
        let saved = engine.sharedLookupCount
        try ns.batch(["route replace default via 10.1.0.2"])
        let last = try kernelGateways(ns, addresses)
        #expect(eventually { current() == last })
        #expect(engine.sharedLookupCount == saved)
    }

    /// A policy rule changes the kernel's answer without any route, link or address event: the
    /// monitor follows it.
    @Test func anAnswerFollowsANewPolicyRule() throws {
        let ns = try routedNamespace("rulefollow")
        defer { ns.delete() }
        let monitor = try ReachabilityMonitor(address: IPAddress("198.18.9.9")!, namespace: .named(ns.name))
        let gateway = Locked<String?>(nil)
        monitor.onChange = { _, answer in gateway.withLock { $0 = answer.gateway?.description } }
        monitor.startListening()
        #expect(eventually { gateway.withLock { $0 } == "10.1.0.2" })
        try ns.ip("rule", "add", "to", "198.18.9.0/24", "lookup", "100", "priority", "50")
        #expect(eventually { gateway.withLock { $0 } == "10.1.0.6" }, "table 100's default route now answers")
        try ns.ip("rule", "del", "priority", "50")
        #expect(eventually { gateway.withLock { $0 } == "10.1.0.2" })
        monitor.stopListening()
    }
}

/// A round shares lookups only when its changes touched the default routes of one table: the
/// same table noted again keeps it the only one, a second table or family makes it several.
@Test func theChangedDefaultTablesNameTheOnlyOne() {
    let mainIPv4 = FamilyTable(family: .ipv4, table: .main)
    var tables = ChangedDefaultTables.none
    #expect(tables.sole == nil)
    tables.insert(mainIPv4)
    tables.insert(mainIPv4)
    #expect(tables.sole == mainIPv4)
    tables.insert(FamilyTable(family: .ipv6, table: .main))
    #expect(tables.sole == nil)
    tables.insert(mainIPv4)
    #expect(tables.sole == nil, "several stays several")
    var otherTable = ChangedDefaultTables.none
    otherTable.insert(FamilyTable(family: .ipv4, table: RouteTable(rawValue: 100)))
    otherTable.insert(mainIPv4)
    #expect(otherTable.sole == nil)
}
