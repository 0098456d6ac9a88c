import CNetlink
@testable import Netlink
import Testing

/// The kernel-state model from values alone, without a kernel or root: each change of libnl's
/// caches and each uncached message gives the events and state a subscription publishes, and
/// the silent kernel changes mark what must be read again.
@Suite("Kernel state model")
struct KernelStateModelTests {
    static let up: InterfaceFlags = [.up, .running, .lowerUp]

    static func link(_ index: Int32, _ name: String, flags: InterfaceFlags = up, lower: Int32? = nil) -> Link {
        Link(index: index, name: name, arphrdType: .ether, flags: flags, operState: flags.contains(.up) ? .up : .down,
             mtu: 1500, lowerLinkIndex: lower)
    }

    static func address(_ text: String, on index: Int32, prefix: UInt8 = 24) -> InterfaceAddress {
        InterfaceAddress(linkIndex: index, address: IPAddress(text)!, prefixLength: prefix)
    }

    static func defaultRoute(_ family: AddressFamily = .ipv4, via gateway: String, on index: Int32, metric: UInt32 = 0,
                             table: RouteTable = .main, source: String? = nil) -> Route {
        Route(family: family, table: table, destination: IPNetwork(family == .ipv4 ? "0.0.0.0/0" : "::/0")!,
              metric: metric, preferredSource: source.flatMap(IPAddress.init),
              nexthops: [Nexthop(gateway: IPAddress(gateway)!, linkIndex: index)])
    }

    /// A model with `eth0` (2) up, its address and a default route through it.
    static func model() -> KernelStateModel {
        let state = NetworkState(links: [link(1, "lo"), link(2, "eth0")], addresses: [address("10.0.0.2", on: 2)],
                                 defaultRoutes: [defaultRoute(via: "10.0.0.1", on: 2)])
        return KernelStateModel(state: state, nexthopObjects: [:])
    }

    @Test func aNewChangedAndRemovedLinkGiveItsOldAndNewValues() {
        var model = Self.model()
        let new = Self.link(3, "eth1")
        model.apply(.link(old: nil, new: new))
        var renamed = new
        renamed.name = "uplink"
        model.apply(.link(old: new, new: renamed))
        model.apply(.link(old: renamed, new: nil))
        #expect(model.takeEvents() == [.link(.new(new)), .link(.changed(old: new, new: renamed)), .link(.removed(renamed))])
        #expect(model.state.links[3] == nil)
        #expect(model.isSettled)
    }

    @Test func aLinkThatIsTheSameAgainGivesNoEvent() {
        var model = Self.model()
        model.apply(.link(old: Self.link(2, "eth0"), new: Self.link(2, "eth0")))
        #expect(!model.hasEvents)
    }

    @Test func aRemovedLinkTakesItsAddressesAndIPv4DefaultRoutesAlong() {
        var model = Self.model()
        let eth0 = Self.link(2, "eth0")
        model.apply(.link(old: eth0, new: nil))
        #expect(model.takeEvents() == [
            .link(.removed(eth0)),
            .address(.removed(Self.address("10.0.0.2", on: 2))),
            .route(.removed(Self.defaultRoute(via: "10.0.0.1", on: 2))),
        ])
        #expect(model.state.addresses.isEmpty && model.state.defaultRoutes.isEmpty)
    }

    @Test func aLinkGoingDownMarksTheDefaultRoutesThroughItForARereadThatSettlesThem() {
        var model = Self.model()
        let down = Self.link(2, "eth0", flags: [])
        model.apply(.link(old: Self.link(2, "eth0"), new: down))
        #expect(model.events == [.link(.changed(old: Self.link(2, "eth0"), new: down))])
        #expect(!model.isSettled, "the kernel flushes the link's routes without a message")
        let filters = model.takeRouteRereads()
        #expect(filters == [RouteFilter(family: .ipv4, table: .main, outputLinkIndex: 2, defaultOnly: true)])
        _ = model.takeEvents()
        model.adoptDefaultRoutes([:], selectedBy: filters.first!)
        #expect(model.takeEvents() == [.route(.removed(Self.defaultRoute(via: "10.0.0.1", on: 2)))])
        #expect(model.isSettled)
    }

    @Test func aLinkThatCarriesNoDefaultRouteCostsNoDump() {
        var model = Self.model()
        model.apply(.link(old: nil, new: Self.link(3, "eth1")))
        model.apply(.link(old: Self.link(3, "eth1"), new: Self.link(3, "eth1", flags: [])))
        #expect(!model.isSettled)
        let filters = model.takeRouteRereads()
        #expect(filters.isEmpty)
        #expect(model.isSettled)
    }

    @Test func aRereadKeepsNoIPv4RouteWhoseLinksAreDown() {
        var model = Self.model()
        model.apply(.link(old: Self.link(2, "eth0"), new: Self.link(2, "eth0", flags: [])))
        let route = Self.defaultRoute(via: "10.0.0.1", on: 2)
        model.adoptDefaultRoutes([route.key: route], selectedBy: .defaultRoutes)
        #expect(model.state.defaultRoutes.isEmpty, "the kernel is about to flush it")
    }

    /// The kernel tells of a deleted next-hop object, then flushes the routes that used it
    /// without a message: a re-read between the two still lists them.
    @Test func aRereadKeepsNoRouteOfADeletedNexthopObject() {
        var model = Self.model()
        let object = NexthopObject(id: 10, linkIndex: 2, gateway: IPAddress("10.0.0.1")!)
        model.applyNexthopObject(object, deleted: false)
        var route = Self.defaultRoute(via: "10.0.0.1", on: 2, metric: 5)
        route.nexthopID = 10
        model.adoptDefaultRoutes([route.key: route], selectedBy: .defaultRoutes)
        #expect(model.state.defaultRoutes[route.key] != nil)
        model.applyNexthopObject(object, deleted: true)
        #expect(!model.isSettled)
        _ = model.takeRouteRereads()
        model.adoptDefaultRoutes([route.key: route], selectedBy: .defaultRoutes)
        #expect(model.state.defaultRoutes[route.key] == nil, "the kernel is about to flush it")
    }

    @Test func aLinkWhoseLowerLinkLeftIsReadAgain() {
        var model = Self.model()
        let peer = Self.link(3, "veth0")
        let upper = Self.link(4, "vlan0", lower: 3)
        model.apply(.link(old: nil, new: peer))
        model.apply(.link(old: nil, new: upper))
        model.apply(.link(old: peer, new: nil))
        let reread = model.takeLinksWithLostLowerLink()
        #expect(reread == [4])
        var moved = upper
        moved.linkNamespaceID = 1
        _ = model.takeEvents()
        model.adoptRereadLink(moved)
        #expect(model.takeEvents() == [.link(.changed(old: upper, new: moved))])
    }

    @Test func removingAnAddressMarksItsLinkAndTheLinksThatUsedItAsSource() {
        var model = Self.model()
        model.apply(.link(old: nil, new: Self.link(3, "eth1")))
        let viaSource = Self.defaultRoute(via: "10.1.0.1", on: 3, metric: 10, source: "10.0.0.2")
        model.apply(.route(viaSource, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        _ = model.takeEvents()
        model.apply(.address(old: Self.address("10.0.0.2", on: 2), new: nil))
        #expect(model.takeEvents() == [.address(.removed(Self.address("10.0.0.2", on: 2)))])
        #expect(model.rereads.links == [2, 3])
    }

    @Test func theRemovalOfAnUnknownAddressIsNotReported() {
        var model = Self.model()
        model.apply(.address(old: Self.address("192.0.2.9", on: 2), new: nil))
        #expect(!model.hasEvents && model.isSettled)
    }

    @Test func aNewReplacedAndDeletedDefaultRouteGiveItsVersions() {
        var model = Self.model()
        let old = Self.defaultRoute(via: "10.0.0.1", on: 2)
        let replacement = Self.defaultRoute(via: "10.0.0.254", on: 2)
        model.apply(.route(replacement, deleted: false, flags: Int32(NLM_F_REPLACE), remainingLifetime: nil),
                    receivedAt: .now)
        model.apply(.route(replacement, deleted: true, flags: 0, remainingLifetime: nil), receivedAt: .now)
        let backup = Self.defaultRoute(via: "10.0.0.3", on: 2, metric: 200)
        model.apply(.route(backup, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(model.takeEvents() == [
            .route(.changed(old: old, new: replacement)),
            .route(.removed(replacement)),
            .route(.new(backup)),
        ])
        #expect(Array(model.state.defaultRoutes.values) == [backup])
        #expect(model.isSettled)
    }

    /// A lower IPv4 half without its upper half kept: the start-up dump may have stopped before
    /// an upper half that came first, so the table is read again; with both, nothing is.
    @Test func aLowerHalfWithoutItsUpperHalfMarksItsTable() {
        func half(_ destination: String) -> Route {
            Route(family: .ipv4, destination: IPNetwork(destination)!, nexthops: [Nexthop(gateway: IPAddress("10.0.0.1"), linkIndex: 2)])
        }
        var model = Self.model()
        model.apply(.route(half("0.0.0.0/1"), deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(model.rereads.tables == [.init(family: .ipv4, table: .main)])
        #expect(model.state.defaultRoutes.values.contains { $0.destination == IPNetwork("0.0.0.0/1") })

        var both = Self.model()
        both.apply(.route(half("128.0.0.0/1"), deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        both.apply(.route(half("0.0.0.0/1"), deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(both.rereads.tables.isEmpty)
        #expect(both.state.defaultRoutes.count == 3)
    }

    @Test func anAppendedOrJoiningDefaultRouteMarksItsTable() {
        var model = Self.model()
        let appended = Self.defaultRoute(via: "10.0.0.9", on: 2)
        model.apply(.route(appended, deleted: false, flags: Int32(NLM_F_APPEND), remainingLifetime: nil), receivedAt: .now)
        #expect(model.rereads.tables == [.init(family: .ipv4, table: .main)])

        var ipv6 = Self.model()
        let first = Self.defaultRoute(.ipv6, via: "fe80::1", on: 2, metric: 1024)
        ipv6.apply(.route(first, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        let joining = Self.defaultRoute(.ipv6, via: "fe80::2", on: 2, metric: 1024)
        _ = ipv6.takeEvents()
        ipv6.apply(.route(joining, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(!ipv6.hasEvents, "a hop that joined a multipath route is not a route of its own")
        #expect(ipv6.rereads.tables == [.init(family: .ipv6, table: .main)])
    }

    @Test func otherRoutesAreReportedAndNotKeptAndClonesAreIgnored() {
        var model = Self.model()
        let route = Route(family: .ipv4, destination: IPNetwork("192.0.2.0/24")!, nexthops: [Nexthop(linkIndex: 2)])
        model.apply(.route(route, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        model.apply(.route(route, deleted: false, flags: Int32(NLM_F_REPLACE), remainingLifetime: nil), receivedAt: .now)
        model.apply(.route(route, deleted: true, flags: 0, remainingLifetime: nil), receivedAt: .now)
        var clone = route
        clone.flags = .cloned
        model.apply(.route(clone, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(model.takeEvents() == [.route(.new(route)), .route(.replaced(route)), .route(.removed(route))])
        #expect(model.state.defaultRoutes.count == 1)
    }

    @Test func anExpiringDefaultRouteNotesItsExpiryAndAnExpiredOneIsRemoved() {
        var model = Self.model()
        let now = ContinuousClock.now
        let advertised = Self.defaultRoute(.ipv6, via: "fe80::1", on: 2, metric: 1024)
        model.apply(.route(advertised, deleted: false, flags: 0, remainingLifetime: .seconds(30)), receivedAt: now)
        let noted = model.takeNotedExpiry()
        #expect(noted == now + .seconds(30))
        let again = model.takeNotedExpiry()
        #expect(again == nil)
        model.apply(.route(advertised, deleted: false, flags: 0, remainingLifetime: .zero), receivedAt: now)
        #expect(model.takeEvents() == [.route(.new(advertised)), .route(.removed(advertised))])
        model.expiryPassed()
        #expect(model.rereads.tables.isEmpty, "no IPv6 default route is kept")
    }

    @Test func aRouteThroughAnUnknownNexthopObjectWaitsForTheObjects() {
        var model = Self.model()
        var route = Self.defaultRoute(via: "10.0.0.1", on: 2, metric: 5)
        route.nexthops = []
        route.nexthopID = 7
        model.apply(.route(route, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        #expect(!model.hasEvents)
        let needed = model.nexthopObjectsNeedReread()
        #expect(needed)
        model.adoptNexthopObjects([7: NexthopObject(id: 7, linkIndex: 2, gateway: IPAddress("10.0.0.1")!)])
        let neededAfter = model.nexthopObjectsNeedReread()
        #expect(!neededAfter)
        model.apply(.route(route, deleted: false, flags: 0, remainingLifetime: nil), receivedAt: .now)
        guard case .route(.new(let kept))? = model.takeEvents().first else {
            Issue.record("the route was not kept")
            return
        }
        #expect(kept.nexthops == [Nexthop(gateway: IPAddress("10.0.0.1")!, linkIndex: 2)])
    }

    @Test func aPartialNetconfValueKeepsTheOthersAndLinkdownMovesTheRoutesThroughTheLink() {
        var model = Self.model()
        let full = InterfaceConfiguration(family: .ipv4, scope: .link(2), forwarding: false, reversePathFilter: 0,
                                          ignoresRoutesWithLinkdown: false)
        model.apply(.configuration(old: nil, new: full))
        _ = model.takeRouteRereads()  // a first value is a change too
        #expect(model.isSettled)
        let partial = InterfaceConfiguration(family: .ipv4, scope: .link(2), ignoresRoutesWithLinkdown: true)
        model.apply(.configuration(old: full, new: partial))
        var expected = full
        expected.ignoresRoutesWithLinkdown = true
        #expect(model.takeEvents() == [.configuration(.new(full)), .configuration(.changed(old: full, new: expected))])
        #expect(model.rereads.tables == [.init(family: .ipv4, table: .main)])

        var other = Self.model()
        other.apply(.configuration(old: nil, new: InterfaceConfiguration(family: .ipv4, scope: .link(9),
                                                                         ignoresRoutesWithLinkdown: true)))
        #expect(other.isSettled, "no default route goes through link 9")
    }

    @Test func neighboursComeChangeAndGo() {
        var model = Self.model()
        let incomplete = Neighbor(linkIndex: 2, address: IPAddress("10.0.0.1")!, state: .incomplete)
        let reachable = Neighbor(linkIndex: 2, address: IPAddress("10.0.0.1")!,
                                 linkLayerAddress: HardwareAddress("02:00:00:00:00:01"), state: .reachable)
        model.apply(.neighbor(old: nil, new: incomplete))
        model.apply(.neighbor(old: incomplete, new: reachable))
        model.apply(.neighbor(old: reachable, new: nil))
        #expect(model.takeEvents() == [.neighbor(.new(incomplete)), .neighbor(.changed(old: incomplete, new: reachable)),
                                       .neighbor(.removed(reachable))])
    }

    @Test func aRuleMessageIsReadAgainAndReportedAndMarksTheTablesItNamesFirst() {
        var model = Self.model()
        model.apply(.rule(.ipv4), receivedAt: .now)
        model.apply(.rule(.ipv4), receivedAt: .now)
        #expect(model.rereads.ruleFamilies == [.ipv4] && !model.hasEvents)
        let rules = [PolicyRule(family: .ipv4, priority: 0, table: .local), PolicyRule(family: .ipv4, priority: 100, table: RouteTable(rawValue: 10)),
                     PolicyRule(family: .ipv4, priority: 32766)]
        model.adoptRereadRules([.ipv4: rules])
        #expect(model.takeEvents() == [.rulesChanged(.ipv4)])
        #expect(model.state.policyRules[.ipv4] == rules)
        #expect(model.rereads.tables.contains(.init(family: .ipv4, table: RouteTable(rawValue: 10))))
    }

    @Test func aRuleNamingALinkIsReadAgainWhenThatLinkComes() {
        var rule = PolicyRule(family: .ipv4, priority: 10, table: RouteTable(rawValue: 10))
        rule.outputLinkName = "wg0"
        var state = NetworkState(links: [1: Self.link(1, "lo")])
        state.policyRules = [.ipv4: [rule]]
        var model = KernelStateModel(state: state, nexthopObjects: [:])
        model.apply(.link(old: nil, new: Self.link(5, "wg0")))
        #expect(model.rereads.ruleFamilies == [.ipv4])
    }

    /// The kernel tells of a rename before it detaches the rules that name the old name: a
    /// re-read that the rename's message started may still find them attached. The link's
    /// configuration, registered again after the detach, starts another.
    @Test func aRuleNamingARenamedLinksOldNameIsReadAgainWithItsConfiguration() {
        var rule = PolicyRule(family: .ipv4, priority: 100, table: RouteTable(rawValue: 100))
        rule.inputLinkName = "lo"
        var state = NetworkState(links: [1: Self.link(1, "lo")])
        state.policyRules = [.ipv4: [rule]]
        var model = KernelStateModel(state: state, nexthopObjects: [:])
        model.apply(.link(old: Self.link(1, "lo"), new: Self.link(1, "lo0")))
        #expect(model.rereads.ruleFamilies == [.ipv4])
        model.adoptRereadRules([.ipv4: [rule]])  // read before the kernel detached it
        _ = model.takeEvents()
        #expect(model.rereads.ruleFamilies.isEmpty)
        let configuration = InterfaceConfiguration(family: .ipv4, scope: .link(1), forwarding: false)
        model.apply(.configuration(old: configuration, new: nil))
        #expect(model.rereads.ruleFamilies == [.ipv4])
        model.adoptRereadRules([.ipv4: [rule]])
        model.apply(.configuration(old: nil, new: configuration))
        #expect(model.rereads.ruleFamilies.isEmpty, "the old name is read again once")
    }

    @Test func aResynchronizationReportsChangedRulesAndForgetsTheMarks() {
        var model = Self.model()
        model.apply(.link(old: Self.link(2, "eth0"), new: Self.link(2, "eth0", flags: [])))
        model.apply(.rule(.ipv6), receivedAt: .now)
        _ = model.takeEvents()
        model.finishResynchronization(rules: [.ipv4: [PolicyRule(family: .ipv4, priority: 32766)]], reason: .overflow)
        #expect(model.takeEvents() == [.rulesChanged(.ipv4), .resynchronized(.overflow)])
        #expect(model.isSettled)
    }

    /// What a consumer that catches up from the published events ends with is the model's
    /// state (``NetworkState/catchUp(with:through:)`` checks equality in debug builds).
    @Test func thePublishedEventsAccountForEveryChangeOfTheState() {
        var model = Self.model()
        var consumer = model.state
        model.apply(.link(old: nil, new: Self.link(3, "eth1")))
        model.apply(.address(old: nil, new: Self.address("10.1.0.2", on: 3)))
        model.apply(.route(Self.defaultRoute(via: "10.1.0.1", on: 3, metric: 50), deleted: false, flags: 0,
                           remainingLifetime: nil), receivedAt: .now)
        model.apply(.link(old: Self.link(2, "eth0"), new: nil))
        model.apply(.configuration(old: nil, new: InterfaceConfiguration(family: .ipv6, scope: .allLinks, forwarding: true)))
        let events = model.takeEvents()
        consumer.catchUp(with: model.state, through: events)
        #expect(consumer == model.state)
        #expect(consumer.links.keys.sorted() == [1, 3])
    }
}
