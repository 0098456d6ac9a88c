import Netlink
import LinuxReachability
import Testing

/// Which default routes carry the internet's traffic once policy rules choose the tables: the
/// kernel's rule walk for a packet this host sends without a mark.
@Suite("The internet through policy rules")
struct InternetRuleTests {
    static let links: [Link] = [
        Link(index: 2, name: "eth0", arphrdType: .ether, flags: [.up, .running, .lowerUp], operState: .up, mtu: 1500),
        Link(index: 3, name: "wg0", arphrdType: .none, flags: [.up, .running, .lowerUp, .pointToPoint], operState: .unknown, mtu: 1420),
    ]

    static func route(table: UInt32 = 254, dev index: Int32 = 2, metric: UInt32 = 0, type: RouteType = .unicast,
                      family: AddressFamily = .ipv4) -> Route {
        Route(family: family, table: RouteTable(rawValue: table), destination: IPNetwork(family == .ipv4 ? "0.0.0.0/0" : "::/0")!,
              type: type, metric: metric, nexthops: type == .unicast ? [Nexthop(linkIndex: index)] : [])
    }

    static func rule(_ priority: UInt32, table: UInt32 = 254, action: PolicyRule.Action = .toTable,
                     family: AddressFamily = .ipv4, _ configure: (inout PolicyRule) -> Void = { _ in }) -> PolicyRule {
        var rule = PolicyRule(family: family, priority: priority, action: action, table: RouteTable(rawValue: table))
        configure(&rule)
        return rule
    }

    /// The kernel's three rules: local, main, default.
    static let standard = [rule(0, table: 255), rule(32766), rule(32767, table: 253)]

    static func state(_ routes: [Route], rules: [PolicyRule]) -> NetworkState {
        var state = NetworkState(links: links, addresses: [], defaultRoutes: routes)
        state.policyRules = Dictionary(grouping: rules, by: \.family)
        return state
    }

    static func internet(_ routes: [Route], rules: [PolicyRule], userID: UInt32 = 1000) -> [Int32?] {
        ReachabilityEvaluator.internetRoutes(state(routes, rules: rules), userID: userID).map(\.outputLinkIndex)
    }

    @Test func theStandardRulesRouteByTheMainTableThenTheDefaultOne() {
        #expect(Self.internet([Self.route(), Self.route(table: 100, dev: 3)], rules: Self.standard) == [2])
        #expect(Self.internet([Self.route(table: 253, dev: 3)], rules: Self.standard) == [3],
                "the default table (253) is looked up when the main one has no default route")
        #expect(Self.internet([Self.route(table: 253, dev: 3)], rules: []) == [],
                "without rules, the main table alone")
    }

    /// `wg-quick`: `lookup main suppress_prefixlength 0`, `not fwmark 0xca6c lookup 51820`.
    @Test func wireGuardsRulesSendTheInternetThroughTheTunnelsTable() {
        let rules = [
            Self.rule(0, table: 255),
            Self.rule(32764) { $0.suppressPrefixLength = 0 },
            Self.rule(32765, table: 51820) { $0.isInverted = true; $0.firewallMark = 0xca6c; $0.firewallMask = 0xffff_ffff },
        ] + Self.standard.dropFirst()
        let routes = [Self.route(dev: 2, metric: 100), Self.route(table: 51820, dev: 3)]
        #expect(Self.internet(routes, rules: rules) == [3])
        let answer = ReachabilityEvaluator.evaluateInternet(Self.state(routes, rules: rules), classifications: [:])
        #expect(answer.interface?.name == "wg0")
        // The tunnel's table loses its route: the main table's, suppressed by the first rule,
        // is still found by the main rule further down.
        #expect(Self.internet([routes[0]], rules: rules) == [2])
    }

    @Test func rulesForMarkedTrafficOtherUsersOrLinksDoNotSelectTheInternet() {
        let routes = [Self.route(), Self.route(table: 52, dev: 3)]
        let marked = Self.rule(5210, table: 52) { $0.firewallMark = 0x80000; $0.firewallMask = 0xff0000 }
        #expect(Self.internet(routes, rules: [marked] + Self.standard) == [2])
        let otherUsers = Self.rule(100, table: 52) { $0.userIDs = 2000...2999 }
        #expect(Self.internet(routes, rules: [otherUsers] + Self.standard) == [2])
        #expect(Self.internet(routes, rules: [otherUsers] + Self.standard, userID: 2500) == [3])
        let fromEth = Self.rule(100, table: 52) { $0.inputLinkName = "eth0" }
        #expect(Self.internet(routes, rules: [fromEth] + Self.standard) == [2])
        let fromHere = Self.rule(100, table: 52) { $0.inputLinkName = "lo" }
        #expect(Self.internet(routes, rules: [fromHere] + Self.standard) == [3], "this host's packets come in on lo")
        let bound = Self.rule(100, table: 52) { $0.outputLinkName = "wg0" }
        #expect(Self.internet(routes, rules: [bound] + Self.standard) == [2])
        let toSome = Self.rule(100, table: 52) { $0.destination = IPNetwork("10.0.0.0/8") }
        #expect(Self.internet(routes, rules: [toSome] + Self.standard) == [2])
        let notToSome = Self.rule(100, table: 52) { $0.destination = IPNetwork("10.0.0.0/8"); $0.isInverted = true }
        #expect(Self.internet(routes, rules: [notToSome] + Self.standard) == [3])
        let fromAnAddress = Self.rule(100, table: 52) { $0.source = IPNetwork("192.0.2.0/24") }
        #expect(Self.internet(routes, rules: [fromAnAddress] + Self.standard) == [2], "an unbound socket has no source yet")
        let web = Self.rule(100, table: 52) { $0.ipProtocol = 6; $0.destinationPorts = 443...443 }
        #expect(Self.internet(routes, rules: [web] + Self.standard) == [2])
    }

    @Test func refusingRulesAndRoutesEndTheFamilyAndThrowPassesOn() {
        let v6 = Self.route(family: .ipv6)
        let prohibit = Self.rule(100, action: .prohibit)
        let rules6 = Self.standard.map { var rule = $0; rule.family = .ipv6; return rule }
        let answer = ReachabilityEvaluator.internetRoutes(Self.state([Self.route(), v6], rules: [prohibit] + Self.standard + rules6))
        #expect(answer.map(\.family) == [.ipv6], "the IPv4 rule ends IPv4; IPv6 goes on through its main table")
        // A throw route in table 100 passes the packet to the main table; an unreachable one
        // refuses, and is the family's only answer.
        let table100 = [Self.rule(100, table: 100)] + Self.standard
        #expect(Self.internet([Self.route(table: 100, type: .throw), Self.route()], rules: table100) == [2])
        let refused = ReachabilityEvaluator.internetRoutes(
            Self.state([Self.route(table: 100, type: .unreachable), Self.route()], rules: table100), userID: 0)
        #expect(refused.map(\.type) == [.unreachable])
    }

    @Test func gotoJumpsToItsTargetAndNopGoesOn() {
        let routes = [Self.route(), Self.route(table: 100, dev: 3)]
        let jump = [Self.rule(10, action: .goto) { $0.gotoTarget = 30 }, Self.rule(20, table: 100),
                    Self.rule(30, action: .nop)] + Self.standard
        #expect(Self.internet(routes, rules: jump) == [2], "the goto passes over rule 20")
        let unresolved = [Self.rule(10, action: .goto) { $0.gotoTarget = 25 }, Self.rule(20, table: 100)] + Self.standard
        #expect(Self.internet(routes, rules: unresolved) == [3], "a goto without its target is passed over")
    }

    @Test func aSuppressedTableStillRefusesWithARefusingRoute() {
        let rules = [Self.rule(100) { $0.suppressPrefixLength = 0 }, Self.rule(200, table: 100)] + Self.standard
        #expect(Self.internet([Self.route(metric: 5), Self.route(table: 100, dev: 3)], rules: rules) == [3])
        let killSwitch = ReachabilityEvaluator.internetRoutes(
            Self.state([Self.route(metric: 5), Self.route(metric: 1, type: .unreachable), Self.route(table: 100, dev: 3)], rules: rules))
        #expect(killSwitch.map(\.type) == [.unreachable], "a refusal is not an answer the rule can suppress")
    }

    @Test func actionsOtherThanLookupGotoAndNopRefuse() {
        for raw: UInt8 in [0, 4, 5, 6, 7, 8] {
            let odd = Self.rule(100, action: PolicyRule.Action(rawValue: raw))
            #expect(Self.internet([Self.route()], rules: [odd] + Self.standard) == [], "action \(raw)")
        }
    }

    @Test func aRouteWhoseEveryNextHopIsDeadIsPassedOver() {
        var dead = Self.route(table: 100, dev: 3)
        dead.nexthops[0].flags = [.dead, .linkDown]
        let rules = [Self.rule(100, table: 100)] + Self.standard
        #expect(Self.internet([dead, Self.route()], rules: rules) == [2], "table 100 has no live route: main answers")
    }

    /// IPv6 routes of one metric (several routers' advertisements, all of metric 1024) go in the
    /// order of their routers' preference, as the kernel's lookup takes them (`rt6_score_route`),
    /// whatever their links; a lower metric still goes first, and no preference is medium.
    @Test func ipv6RoutesOfOneMetricGoByTheirRoutersPreference() {
        func router(dev index: Int32, metric: UInt32 = 1024, _ preference: RoutePreference?) -> Route {
            var route = Self.route(dev: index, metric: metric, family: .ipv6)
            route.preference = preference
            return route
        }
        #expect(Self.internet([router(dev: 2, .low), router(dev: 3, .high)], rules: Self.standard) == [3, 2])
        #expect(Self.internet([router(dev: 2, .medium), router(dev: 3, .high)], rules: Self.standard) == [3, 2])
        #expect(Self.internet([router(dev: 2, .low), router(dev: 3, nil)], rules: Self.standard) == [3, 2])
        #expect(Self.internet([router(dev: 2, .high), router(dev: 3, .high)], rules: Self.standard) == [2, 3],
                "the same preference: by link")
        #expect(Self.internet([router(dev: 2, metric: 100, .low), router(dev: 3, .high)], rules: Self.standard) == [2, 3],
                "the metric first")
        #expect(RoutePreference.low < .medium && RoutePreference.medium < .high && RoutePreference.invalid < .low)
        #expect([RoutePreference.low, .medium, .high, .invalid].map(\.description) == ["low", "medium", "high", "2"])
    }

    @Test func aLocalDefaultRouteAnswersAndSendsNothingOut() {
        var local = Self.route(table: 100, dev: 1)
        local.type = .local
        #expect(Self.internet([local, Self.route()], rules: [Self.rule(100, table: 100)] + Self.standard) == [])
    }

    @Test func aFamilyWhoseRulesWereAllDeletedRoutesNothing() {
        var state = Self.state([Self.route()], rules: [])
        state.policyRules[.ipv4] = []
        #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty)
    }

    @Test func aLookupOfTableZeroIsTheMainTable() {
        let routes = [Self.route(), Self.route(table: 100, dev: 3)]
        #expect(Self.internet(routes, rules: [Self.rule(50, table: 0), Self.rule(60, table: 100)] + Self.standard) == [2])
    }

    @Test func dscpAndFlowLabelRulesOfZeroSelectUnmarkedTraffic() {
        // A rule whose DSCP or flow label is 0 selects this traffic; the parser marks only a
        // non-zero value as selecting by other fields.
        var rule = Self.rule(100, table: 100)
        #expect(ReachabilityEvaluator.ruleSelectsInternetTraffic(rule, userID: 0))
        rule.selectsByOtherFields = true
        #expect(!ReachabilityEvaluator.ruleSelectsInternetTraffic(rule, userID: 0))
    }

    @Test func theLoopbackLinkIsKnownByItsIndexWhateverItsName() {
        var state = Self.state([Self.route(), Self.route(table: 100, dev: 3)],
                               rules: [Self.rule(100, table: 100) { $0.inputLinkName = "lo0" }] + Self.standard)
        state.links[1] = Link(index: 1, name: "lo0", arphrdType: .loopback, flags: [.up, .running, .loopback], operState: .unknown, mtu: 65536)
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [3])
        state.policyRules[.ipv4]![0].inputLinkName = "lo"
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [2])
    }

    /// A connected socket's packets are looked up again with the source the first lookup chose.
    @Test func anIPv4RuleForTheChosenSourceDecides() {
        let address = InterfaceAddress(linkIndex: 2, address: IPAddress("10.0.0.1")!, prefixLength: 24, scope: .universe)
        var gatewayRoute = Self.route()
        gatewayRoute.nexthops[0].gateway = IPAddress("10.0.0.2")
        var state = Self.state([gatewayRoute, Self.route(table: 100, metric: 0, type: .unreachable)],
                               rules: [Self.rule(100, table: 100) { $0.source = IPNetwork("10.0.0.1/32") }] + Self.standard)
        state.addresses[address.key] = address
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.type) == [.unreachable],
                "connect() fails with EHOSTUNREACH: the second lookup, from 10.0.0.1, meets table 100")
        state.policyRules[.ipv4]![0].source = IPNetwork("10.9.0.0/16")
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [2])
    }

    @Test func anIPv6RuleByPrefixSelectsOnlyOnceASourceIsChosen() {
        let v6rules = Self.standard.map { var rule = $0; rule.family = .ipv6; return rule }
        let fromAll = Self.rule(60, table: 100, family: .ipv6) { $0.source = IPNetwork("::/1") }
        let routes = [Self.route(family: .ipv6), Self.route(table: 100, dev: 3, family: .ipv6)]
        #expect(Self.internet(routes, rules: [fromAll] + v6rules) == [2], "no source yet: the rule does not select")
        // Main has no default route: the kernel picks a source and looks up again.
        let address = InterfaceAddress(linkIndex: 3, address: IPAddress("2001:db8:2::1")!, prefixLength: 64, scope: .universe)
        let fromTwo = Self.rule(60, table: 100, family: .ipv6) { $0.source = IPNetwork("2001:db8:2::/64") }
        var state = Self.state([routes[1]], rules: [fromTwo] + v6rules)
        #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty)
        state.addresses[address.key] = address
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [3])
    }

    /// `suppress_ifgroup`: a table's answer through a link of that group is passed over, and a
    /// later route of the table through one is no fallback.
    @Test func aRuleSuppressesAnswersThroughLinksOfItsInterfaceGroup() {
        let rules = [Self.rule(100) { $0.suppressInterfaceGroup = 5 }, Self.rule(200, table: 100)] + Self.standard
        let routes = [Self.route(dev: 2, metric: 10), Self.route(table: 100, dev: 3)]
        func internet(ethGroup: UInt32, wgGroup: UInt32 = 0, _ routes: [Route]) -> [Int32?] {
            var state = Self.state(routes, rules: rules)
            state.links[2]?.group = ethGroup
            state.links[3]?.group = wgGroup
            return ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex)
        }
        #expect(internet(ethGroup: 0, routes) == [2], "another group: the main table answers at rule 100")
        #expect(internet(ethGroup: 5, routes) == [3], "eth0 in the group: rule 200's table answers")
        // The main rule (32766) does not suppress: with table 100 empty, eth0 answers there.
        #expect(internet(ethGroup: 5, [routes[0]]) == [2])
        // A later main-table route through the group is cut from rule 100's list.
        let both = [Self.route(dev: 2, metric: 10), Self.route(dev: 3, metric: 20), Self.route(table: 100, dev: 3)]
        #expect(internet(ethGroup: 0, wgGroup: 5, both) == [2])
        #expect(internet(ethGroup: 0, wgGroup: 0, both) == [2, 3])
        // A route through a link the state does not know is not suppressed (the kernel checks
        // a device it has).
        #expect(internet(ethGroup: 5, [Self.route(dev: 9, metric: 10)]) == [9])
        // With suppress_prefixlength as well, either one suppresses.
        var both0 = rules
        both0[0].suppressPrefixLength = 0
        var prefixed = Self.state(routes, rules: both0)
        prefixed.links[2]?.group = 0
        #expect(ReachabilityEvaluator.internetRoutes(prefixed).map(\.outputLinkIndex) == [3])
    }

    /// Multipath routes: IPv4 checks the first next hop's link, dead or not
    /// (`fib_info_nhc(fi, 0)`); IPv6 the hop the flow is hashed to among the live ones, so its
    /// route is passed over only when every live hop is in the group.
    @Test func suppressIfgroupJudgesIPv4ByTheFirstHopAndIPv6ByItsLiveHops() {
        func multipath(_ family: AddressFamily, dead: Int32? = nil) -> Route {
            var route = Self.route(family: family)
            route.nexthops = [Nexthop(linkIndex: 2, flags: dead == 2 ? .dead : []),
                              Nexthop(linkIndex: 3, flags: dead == 3 ? .dead : [])]
            return route
        }
        func internet(_ family: AddressFamily, _ route: Route, ethGroup: UInt32, wgGroup: UInt32) -> [Int32?] {
            let rules = [Self.rule(100, family: family) { $0.suppressInterfaceGroup = 5 },
                         Self.rule(200, table: 100, family: family)]
            var state = Self.state([route, Self.route(table: 100, dev: 9, family: family)], rules: rules)
            state.links[2]?.group = ethGroup
            state.links[3]?.group = wgGroup
            return ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex)
        }
        #expect(internet(.ipv4, multipath(.ipv4), ethGroup: 5, wgGroup: 0) == [9], "IPv4: the first hop decides")
        #expect(internet(.ipv4, multipath(.ipv4), ethGroup: 0, wgGroup: 5) == [2])
        #expect(internet(.ipv4, multipath(.ipv4, dead: 2), ethGroup: 5, wgGroup: 0) == [9], "even a dead first hop")
        #expect(internet(.ipv6, multipath(.ipv6), ethGroup: 5, wgGroup: 0) == [2], "IPv6: flows hashed to wg0 leave")
        #expect(internet(.ipv6, multipath(.ipv6), ethGroup: 5, wgGroup: 5) == [9])
        #expect(internet(.ipv6, multipath(.ipv6, dead: 3), ethGroup: 5, wgGroup: 0) == [9], "the one live hop is in the group")
        #expect(internet(.ipv6, multipath(.ipv6, dead: 2), ethGroup: 5, wgGroup: 0) == [2], "the dead hop is not chosen")
    }

    @Test func aSuppressingRulePassesOverALocalDefaultRouteToo() {
        var local = Self.route(dev: 1)
        local.type = .local
        let rules = [Self.rule(100) { $0.suppressPrefixLength = 0 }, Self.rule(200, table: 100)] + Self.standard
        #expect(Self.internet([local, Self.route(table: 100, dev: 3)], rules: rules) == [3])
    }

    @Test func anIPv4SourceComesFromAnotherLinkWhenTheOutputLinkHasNone() {
        // default dev wg0 (no IPv4 address there); 10.0.0.1 on eth0; from 10.0.0.1 unreachable.
        let address = InterfaceAddress(linkIndex: 2, address: IPAddress("10.0.0.1")!, prefixLength: 24, scope: .universe)
        var state = Self.state([Self.route(dev: 3)],
                               rules: [Self.rule(100, action: .unreachable) { $0.source = IPNetwork("10.0.0.1/32") }] + Self.standard)
        state.addresses[address.key] = address
        #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty, "connect() fails with ENETUNREACH")
        // A route's preferred source decides before any link's address.
        var sourced = Self.route(dev: 3)
        sourced.preferredSource = IPAddress("10.9.0.1")
        state.defaultRoutes = [sourced.key: sourced]
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [3])
    }

    @Test func anIPv6SourceIsTheOneTheKernelWouldChoose() {
        let v6rules = Self.standard.map { var rule = $0; rule.family = .ipv6; return rule }
        let fromULA = Self.rule(60, table: 100, family: .ipv6) { $0.source = IPNetwork("fd00::/8") }
        var state = Self.state([Self.route(table: 100, dev: 3, family: .ipv6)], rules: [fromULA] + v6rules)
        for (text, index) in [("2001:db8:1::1", Int32(2)), ("fd00::1", Int32(3))] {
            let address = InterfaceAddress(linkIndex: index, address: IPAddress(text)!, prefixLength: 64, scope: .universe)
            state.addresses[address.key] = address
        }
        #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty,
                "the kernel picks 2001:db8:1::1 (global label) over fd00::1, and from it table 100 is not looked up")
    }

    @Test func ipv6RulesThatAreOnlyItsDefaultsKeepTheFastPath() {
        let main6 = Self.rule(32766, family: .ipv6)
        let v6 = Self.route(family: .ipv6)
        #expect(Self.internet([v6], rules: [main6]) == [2])
        var state = Self.state([v6], rules: [])
        state.policyRules[.ipv6] = []
        #expect(ReachabilityEvaluator.internetRoutes(state).map(\.family) == [.ipv6],
                "all of IPv6's default rules deleted, none ever added: the kernel still routes by main")
        // A main rule that suppresses default routes is one that was added: the rules are walked.
        let suppressing = Self.rule(32766, family: .ipv6) { $0.suppressPrefixLength = 0 }
        #expect(Self.internet([v6], rules: [suppressing]) == [])
    }

    /// An IPv6 source-specific default route (`default from P`) carries only packets from P:
    /// the kernel's first lookup, without a source, passes it over; with no other route it
    /// picks a source and looks up again.
    @Test func aSourceSpecificDefaultRouteCarriesOnlyItsSourcesPackets() {
        var specific = Self.route(dev: 3, family: .ipv6)
        specific.sourcePrefix = IPNetwork("2001:db8:2::/64")
        let ipv6Rules: [[PolicyRule]] = [[], Self.standard.map { var rule = $0; rule.family = .ipv6; return rule }]
        for rules in ipv6Rules {
            var state = Self.state([specific], rules: rules)
            #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty, "no address in 2001:db8:2::/64")
            let other = InterfaceAddress(linkIndex: 2, address: IPAddress("2001:db8:1::1")!, prefixLength: 64, scope: .universe)
            state.addresses[other.key] = other
            #expect(ReachabilityEvaluator.internetRoutes(state).isEmpty, "the kernel's source, 2001:db8:1::1, is not in it")
            state.addresses = [:]
            let inside = InterfaceAddress(linkIndex: 2, address: IPAddress("2001:db8:2::1")!, prefixLength: 64, scope: .universe)
            state.addresses[inside.key] = inside
            #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [3])
            // A default route for every source is taken at the first lookup.
            let plain = Self.route(dev: 2, family: .ipv6)
            state.defaultRoutes[plain.key] = plain
            #expect(ReachabilityEvaluator.internetRoutes(state).map(\.outputLinkIndex) == [2])
        }
    }
}
