import Foundation
import Testing
import Netlink
import LinuxReachability

/// The pure evaluation of lookups, links and classifications.
@Suite("ReachabilityMonitor evaluation")
struct EvaluatorTests {
    private let gateway = IPAddress("10.0.0.1")!

    private func link(_ index: Int32, _ name: String, flags: InterfaceFlags = [.up, .running, .lowerUp],
                      operState: OperState = .up) -> Link {
        Link(index: index, name: name, arphrdType: .ether, flags: flags, operState: operState, mtu: 1500)
    }

    private func route(_ type: RouteType = .unicast, via gateway: IPAddress? = nil, dev index: Int32 = 2,
                       metric: UInt32 = 0, family: AddressFamily = .ipv4, destination: String = "0.0.0.0/0") -> Route {
        Route(family: family, table: type == .local ? .local : .main, destination: IPNetwork(destination)!, type: type,
              metric: metric, nexthops: [Nexthop(gateway: gateway, linkIndex: index)])
    }

    private func classification(_ type: InterfaceType, kind: LinkKind, transient: Bool = false) -> LinkClassification {
        LinkClassification(type: type, kind: kind, isExpensive: type == .cellular, isTransient: transient, evidence: .none)
    }

    @Test func reachableRoutesGetTheirFlags() {
        let links: [Int32: Link] = [2: link(2, "eth0"), 1: link(1, "lo"), 3: link(3, "wwan0"), 4: link(4, "wg0")]
        let types: [Int32: LinkClassification] = [2: classification(.wiredEthernet, kind: .ethernet), 1: classification(.loopback, kind: .loopback),
                     3: classification(.cellular, kind: .wwan), 4: classification(.other, kind: .wireguard, transient: true)]
        func flags(_ lookup: RouteLookupResult) -> ReachabilityFlags {
            ReachabilityEvaluator.evaluate(lookup, links: links, classifications: types).flags
        }
        #expect(flags(.route(route(via: gateway))) == [.reachable])
        #expect(flags(.route(route())) == [.reachable, .isDirect])
        #expect(flags(.route(route(.local, dev: 1))) == [.reachable, .isDirect, .isLocalAddress])
        #expect(flags(.route(route(via: gateway, dev: 3))) == [.reachable, .isWWAN])
        #expect(flags(.route(route(dev: 4))) == [.reachable, .isDirect, .transientConnection])
        let answer = ReachabilityEvaluator.evaluate(.route(route(via: gateway)), links: links, classifications: types)
        #expect(answer.interface?.name == "eth0")
        #expect(answer.gateway == gateway)
        #expect(answer.status == .reachableViaWired)
        #expect(answer.reason == nil)
    }

    @Test func refusedLookupsAndUnusableLinksAreNotReachable() {
        let links: [Int32: Link] = [2: link(2, "eth0", flags: [.up]), 3: link(3, "eth1", flags: []),
                     4: link(4, "wlan0", flags: [.up, .lowerUp, .dormant], operState: .dormant),
                     // The dormant bit without a carrier (HDLC's Cisco protocol sets it when
                     // the carrier goes): down below, not waiting for a handshake.
                     5: link(5, "hdlc0", flags: [.up, .dormant], operState: .down)]
        func answer(_ lookup: RouteLookupResult) -> ReachabilityAnswer {
            ReachabilityEvaluator.evaluate(lookup, links: links, classifications: [:])
        }
        #expect(answer(.noRoute).reason == .noRoute)
        #expect(answer(.unreachable).reason == .unreachableRoute)
        #expect(answer(.prohibited).reason == .prohibitedRoute)
        #expect(answer(.blackhole).reason == .blackholeRoute)
        #expect(answer(.route(route(.broadcast))).reason == .unusableRouteType(.broadcast))
        #expect(answer(.route(route(dev: 9))).reason == .linkMissing)
        let noCarrier = answer(.route(route(via: gateway, dev: 2)))
        #expect((noCarrier.flags, noCarrier.reason, noCarrier.interface?.name) == ([], .noCarrier, "eth0"))
        #expect(answer(.route(route(dev: 3))).reason == .linkDown)
        let dormant = answer(.route(route(dev: 4)))
        #expect(dormant.flags == [.reachable, .connectionRequired, .interventionRequired, .isDirect])
        #expect(dormant.reason == .dormant)
        #expect(!dormant.isReachable)
        #expect(dormant.status == .notReachable)
        let dormantWithoutCarrier = answer(.route(route(dev: 5)))
        #expect((dormantWithoutCarrier.flags, dormantWithoutCarrier.reason) == ([], .noCarrier))
        for lookup in [RouteLookupResult.noRoute, .unreachable, .prohibited, .blackhole] {
            #expect(answer(lookup).flags.isEmpty)
        }
    }

    @Test func theInternetIsTheBestUsableDefaultRoute() {
        let wifi = route(via: gateway, dev: 2, metric: 600)
        let wired = route(via: IPAddress("10.1.0.1")!, dev: 3, metric: 100)
        let v6 = route(via: IPAddress("fe80::1")!, dev: 2, metric: 50, family: .ipv6, destination: "::/0")
        let links: [Int32: Link] = [2: link(2, "wlan0"), 3: link(3, "eth0")]
        let types: [Int32: LinkClassification] = [2: classification(.wifi, kind: .wifi), 3: classification(.wiredEthernet, kind: .ethernet)]
        var state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [wifi, wired])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).interface?.name == "eth0")
        // The wired link loses carrier: its route is not dead (no `ignore_routes_with_linkdown`),
        // so the kernel still sends through it, and the internet is not reachable, as a lookup
        // of any internet address says.
        state.links[3] = link(3, "eth0", flags: [.up])
        let lost = ReachabilityEvaluator.evaluateInternet(state, classifications: types)
        #expect((lost.status, lost.reason, lost.interface?.name) == (.notReachable, .noCarrier, "eth0"))
        // The kernel marks the route dead (with that setting): Wi-Fi takes over.
        var dead = wired
        dead.nexthops[0].flags.insert(.dead)
        state.defaultRoutes[dead.key] = dead
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).status == .reachableViaWiFi)
        // The wired link goes down (the kernel is about to flush its IPv4 route): Wi-Fi too.
        state.defaultRoutes[wired.key] = wired
        state.links[3] = link(3, "eth0", flags: [])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).status == .reachableViaWiFi)
        // IPv6 passes over a router whose neighbour failed, as it soon has without a carrier:
        // a later IPv6 route through a usable link answers.
        let wired6 = route(via: IPAddress("fe80::3")!, dev: 3, metric: 100, family: .ipv6, destination: "::/0")
        let wifi6 = route(via: IPAddress("fe80::2")!, dev: 2, metric: 600, family: .ipv6, destination: "::/0")
        state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [wired6, wifi6])
        state.links[3] = link(3, "eth0", flags: [.up])
        let fallback6 = ReachabilityEvaluator.evaluateInternet(state, classifications: types)
        #expect((fallback6.status, fallback6.interface?.name) == (.reachableViaWiFi, "wlan0"))
        #expect(NetworkPath.evaluate(state, classifications: types).availableInterfaces.map(\.name) == ["wlan0"])
        // IPv6 alone counts, and a lower metric wins.
        state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [v6, wired])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).route?.family == .ipv6)
        // Default routes of other tables do not count; no default route at all is not reachable.
        var other = wired
        other.table = RouteTable(rawValue: 100)
        state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [other])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).reason == .noDefaultRoute)
    }

    @Test func aRefusingDefaultRouteStopsTheRoutesAfterItInItsFamily() {
        let links: [Int32: Link] = [2: link(2, "eth0")]
        let types: [Int32: LinkClassification] = [2: classification(.wiredEthernet, kind: .ethernet)]
        var killSwitch = route(.unreachable, metric: 1)
        killSwitch.nexthops = []
        let wired = route(via: gateway, dev: 2, metric: 100)
        var state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [killSwitch, wired])
        let blocked = ReachabilityEvaluator.evaluateInternet(state, classifications: types)
        #expect(blocked.status == .notReachable)
        #expect(blocked.reason == .unreachableRoute && blocked.interface == nil)
        #expect(NetworkPath.evaluate(state, classifications: types).status == .unsatisfied)
        // Behind a route with a lower metric, it stops nothing; nor does it stop the other family.
        var behind = killSwitch
        behind.metric = 200
        state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [behind, wired])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).status == .reachableViaWired)
        let v6 = route(via: IPAddress("fe80::1")!, dev: 2, metric: 300, family: .ipv6, destination: "::/0")
        state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [killSwitch, wired, v6])
        let viaIPv6 = ReachabilityEvaluator.evaluateInternet(state, classifications: types)
        #expect(viaIPv6.status == .reachableViaWired)
        #expect(viaIPv6.route?.family == .ipv6)
        #expect(NetworkPath.evaluate(state, classifications: types).supportsIPv6)
        #expect(!NetworkPath.evaluate(state, classifications: types).supportsIPv4)
    }

    @Test func theSystemsSysfsIsLiveHoweverItIsWritten() {
        for root in ["/sys", "/sys/", "//sys", "/sys/."] {
            #expect(SysfsSource(root: root, namespace: .current) == .live(.current), "\(root)")
        }
        #expect(SysfsSource(root: "/tmp", namespace: .current) == .tree(root: "/tmp"))
    }

    @Test func aDefaultRouteForOneTypeOfServiceIsNotTheInternet() {
        let links: [Int32: Link] = [2: link(2, "eth0")]
        let types: [Int32: LinkClassification] = [2: classification(.wiredEthernet, kind: .ethernet)]
        var lowDelay = route(via: gateway, dev: 2, metric: 100)
        lowDelay.tos = 0x10
        let state = NetworkState(links: Array(links.values), addresses: [], defaultRoutes: [lowDelay])
        #expect(ReachabilityEvaluator.evaluateInternet(state, classifications: types).reason == .noDefaultRoute)
    }

    @Test func targetsParseAndRejectBadInput() throws {
        #expect(try ReachabilityTarget(parsing: "192.0.2.1") == .address(IPAddress("192.0.2.1")!))
        #expect(try ReachabilityTarget(parsing: "[2001:db8::1]") == .address(IPAddress("2001:db8::1")!))
        #expect(try ReachabilityTarget(parsing: "api.example.test.") == .host("api.example.test"))
        #expect(try ReachabilityTarget(parsing: "under_score-1.example") == .host("under_score-1.example"))
        for bad in ["", ".", "a..b", "-a.b", "a-.b", "bad name", "é.example", String(repeating: "a", count: 64) + ".x",
                    String(repeating: "a.", count: 127) + "abc", "a\u{0}b", "1.2.3.4:80"] {
            #expect(throws: ReachabilityError.invalidTarget(bad)) { try ReachabilityTarget(parsing: bad) }
        }
    }

    @Test func hostsFilesAnswerWithoutDNS() async throws {
        let text = "# comment\n10.0.0.5 api api.example.test # inline\n2001:db8::5\tapi.example.test\nbogus line\n10.0.0.6 other\n"
        let path = NSTemporaryDirectory() + "hosts-\(getpid())"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let resolver = HostsFileResolver(path: path)
        #expect(try await resolver.resolve("API.example.test") == [IPAddress("10.0.0.5")!, IPAddress("2001:db8::5")!])
        #expect(try await resolver.resolve("missing").isEmpty)
        await #expect(throws: ReachabilityError.self) { try await HostsFileResolver(path: path + ".none").resolve("api") }
        #expect(try await StaticHostResolver(["a": [IPAddress("10.0.0.1")!]]).resolve("a") == [IPAddress("10.0.0.1")!])
    }
}
