import Netlink
import LinuxReachability
import Testing

/// Which routes carry the internet when a table holds routes to the halves of the address
/// space, judged from values: the kernel's longest-prefix match and its suppressors.
@Suite("The internet through the halves of the address space")
struct InternetCoverRuleTests {
    static func half(_ destination: String, dev index: Int32 = 3, metric: UInt32 = 0, dead: Bool = false) -> Route {
        Route(family: destination.contains(":") ? .ipv6 : .ipv4, destination: IPNetwork(destination)!, metric: metric,
              nexthops: [Nexthop(linkIndex: index, flags: dead ? [.dead] : [])])
    }

    static func internet(_ routes: [Route], rules: [PolicyRule] = InternetRuleTests.standard) -> [String] {
        ReachabilityEvaluator.internetRoutes(InternetRuleTests.state(routes, rules: rules), userID: 1000)
            .map { "\($0.destination) dev \($0.outputLinkIndex ?? 0)" }
    }

    @Test func bothHalvesGoBeforeTheDefaultRouteWhateverTheirMetrics() {
        let main = InternetRuleTests.route(dev: 2, metric: 0)
        #expect(Self.internet([main, Self.half("0.0.0.0/1", metric: 50), Self.half("128.0.0.0/1", metric: 50)])
                == ["0.0.0.0/1 dev 3", "0.0.0.0/0 dev 2"])
        #expect(Self.internet([Self.half("::/1"), Self.half("8000::/1")]) == ["::/1 dev 3"])
    }

    @Test func aLoneOrDeadHalfIsNoCover() {
        let main = InternetRuleTests.route(dev: 2)
        #expect(Self.internet([main, Self.half("128.0.0.0/1")]) == ["0.0.0.0/0 dev 2"])
        #expect(Self.internet([main, Self.half("0.0.0.0/1"), Self.half("128.0.0.0/1", dead: true)]) == ["0.0.0.0/0 dev 2"])
        #expect(Self.internet([Self.half("0.0.0.0/1")]) == [])
    }

    /// `suppress_prefixlength N` passes over answers whose prefix is N bits or shorter: a half
    /// only from 1 on (wg-quick's 0 keeps the halves of the main table).
    @Test func suppressPrefixLengthPassesOverAHalfFromOneOn() {
        let routes = [Self.half("0.0.0.0/1"), Self.half("128.0.0.0/1"), InternetRuleTests.route(table: 100, dev: 2)]
        func rules(_ length: UInt32) -> [PolicyRule] {
            [InternetRuleTests.rule(0, table: 255), InternetRuleTests.rule(100) { $0.suppressPrefixLength = length },
             InternetRuleTests.rule(200, table: 100)]
        }
        #expect(Self.internet(routes, rules: rules(0)) == ["0.0.0.0/1 dev 3"])
        #expect(Self.internet(routes, rules: rules(1)) == ["0.0.0.0/0 dev 2"])
    }
}
