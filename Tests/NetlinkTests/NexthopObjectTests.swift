import Foundation
@testable import Netlink
import NetnsTestSupport
import Testing

/// Next-hop objects read from their bytes, and given to the routes that name them.
@Suite("Next-hop objects")
struct NexthopObjectTests {
    /// An `RTM_NEWNEXTHOP` payload: `nhmsg` (family, scope, protocol, reserved, flags) and
    /// attributes.
    static func payload(family: UInt8 = 2, flags: UInt32 = 0, _ attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = [family, 0, 0, 0] + withUnsafeBytes(of: flags.littleEndian, Array.init)
        for (type, value) in attributes {
            bytes += withUnsafeBytes(of: UInt16(4 + value.count).littleEndian, Array.init)
            bytes += withUnsafeBytes(of: type.littleEndian, Array.init)
            bytes += value
            bytes += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        }
        return bytes
    }

    static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
    static let id: UInt16 = 1, group: UInt16 = 2, blackhole: UInt16 = 4, oif: UInt16 = 5, gateway: UInt16 = 6
    static let operationFlags: UInt16 = 14

    static func object(_ bytes: [UInt8]) -> NexthopObject? {
        bytes.withUnsafeBytes { NexthopObject(payload: $0) }
    }

    @Test func aGatewayAndLink() throws {
        let object = try #require(Self.object(Self.payload(flags: 4, [(Self.id, Self.u32(7)), (Self.oif, Self.u32(3)),
                                                                      (Self.gateway, [10, 1, 0, 2])])))
        #expect(object == NexthopObject(id: 7, flags: .onlink, linkIndex: 3, gateway: IPAddress("10.1.0.2")))
        let v6 = try #require(Self.object(Self.payload(family: 10, [(Self.id, Self.u32(8)), (Self.oif, Self.u32(3)),
                                                                    (Self.gateway, Array(repeating: 0xfe, count: 16))])))
        #expect(v6.gateway?.family == .ipv6)
    }

    @Test func aGroupsWeightsAreTheKernelsPlusOneWithTheirHighByteWhenTheKernelSaysItIsOne() throws {
        // Member 1 with weight byte 0 (weight 1), member 2 with 2 (3), member 3 with 0 and a
        // next byte of 1: 257 from Linux 6.12, which says so in NHA_OP_FLAGS (after the group).
        let entries: [UInt8] = Self.u32(1) + [0, 0, 0, 0] + Self.u32(2) + [2, 0, 0, 0] + Self.u32(3) + [0, 1, 0, 0]
        let zeroed = try #require(Self.object(Self.payload(family: 0, [(Self.id, Self.u32(10)), (Self.group, entries),
                                                                       (Self.operationFlags, Self.u32(1 << 31))])))
        #expect(zeroed.members == [.init(id: 1, weight: 1), .init(id: 2, weight: 3), .init(id: 3, weight: 257)])
        // Before, that byte was whatever the kernel's memory held (0x69 in the fix's report).
        let older = try #require(Self.object(Self.payload(family: 0, [(Self.id, Self.u32(10)), (Self.group,
            Self.u32(1) + [0, 0x69, 0, 0] + Self.u32(2) + [2, 0x69, 0, 0])])))
        #expect(older.members == [.init(id: 1, weight: 1), .init(id: 2, weight: 3)])
    }

    @Test func malformedObjectsAreRefused() {
        #expect(Self.object(Self.payload([(Self.oif, Self.u32(3))])) == nil, "no id")
        #expect(Self.object(Self.payload([(Self.id, Self.u32(1)), (Self.gateway, [10, 1, 0])])) == nil, "3-byte gateway")
        #expect(Self.object(Self.payload([(Self.id, Self.u32(1)), (Self.group, [1, 0, 0, 0, 0])])) == nil, "a group entry cut short")
        #expect(Self.object([2, 0, 0]) == nil, "shorter than nhmsg")
    }

    static let objects: [UInt32: NexthopObject] = [
        1: NexthopObject(id: 1, linkIndex: 3, gateway: IPAddress("10.1.0.2")),
        2: NexthopObject(id: 2, flags: .onlink, linkIndex: 4, gateway: IPAddress("10.2.0.2")),
        3: NexthopObject(id: 3, isBlackhole: true),
        10: NexthopObject(id: 10, members: [.init(id: 1, weight: 1), .init(id: 2, weight: 3)]),
        11: NexthopObject(id: 11, members: [.init(id: 1, weight: 1), .init(id: 9, weight: 1)]),
        12: NexthopObject(id: 12, members: [.init(id: 2, weight: 5)]),
    ]

    static func route(naming id: UInt32) -> Route {
        Route(family: .ipv4, destination: IPNetwork("0.0.0.0/0")!, nexthopID: id)
    }

    @Test func aRouteTakesItsObjectsNextHop() {
        var route = Self.route(naming: 2)
        #expect(route.lacksObjectNexthops)
        let took = route.takeNexthops(from: Self.objects)
        #expect(took)
        #expect(route.nexthops == [Nexthop(gateway: IPAddress("10.2.0.2"), linkIndex: 4, weight: 1, flags: .onlink)])
        #expect(route.flags == .onlink, "one next hop's flags are the route's, as in a route message")
        #expect(!route.lacksObjectNexthops)
    }

    @Test func aRouteTakesOneNextHopPerGroupMember() {
        var route = Self.route(naming: 10)
        let took = route.takeNexthops(from: Self.objects)
        #expect(took)
        #expect(route.nexthops == [Nexthop(gateway: IPAddress("10.1.0.2"), linkIndex: 3, weight: 1),
                                   Nexthop(gateway: IPAddress("10.2.0.2"), linkIndex: 4, weight: 3, flags: .onlink)])
        #expect(route.flags.isEmpty)
    }

    @Test func aGroupOfOneIsASingleNextHopOfWeightOneAsTheKernelListsIt() {
        var route = Self.route(naming: 12)
        let took = route.takeNexthops(from: Self.objects)
        #expect(took)
        #expect(route.nexthops == [Nexthop(gateway: IPAddress("10.2.0.2"), linkIndex: 4, weight: 1, flags: .onlink)])
        #expect(route.flags == .onlink)
    }

    @Test func aBlackholeObjectMakesABlackholeRoute() {
        var route = Self.route(naming: 3)
        let took = route.takeNexthops(from: Self.objects)
        #expect(took)
        #expect(route.type == .blackhole && route.nexthops.isEmpty)
    }

    @Test func anUnknownObjectOrMemberLeavesTheRouteAsItWas() {
        for id: UInt32 in [11, 99] {
            var route = Self.route(naming: id)
            let took = route.takeNexthops(from: Self.objects)
            #expect(!took)
            #expect(route == Self.route(naming: id))
        }
    }

    @Test func theObjectStandsForTheNextHopInARoutesKey() {
        var route = Self.route(naming: 10)
        let before = route.key
        route.takeNexthops(from: Self.objects)
        #expect(route.key == before, "the same kernel route, whatever its object's next hops")
        #expect(route.key.nexthopID == 10 && route.key.gateway == nil)
    }

    @Test func aRouteThatNamesAnObjectNeedsItsLinksForTheOutputLinkFilter() {
        let filter = RouteFilter(outputLinkIndex: 4)
        var route = Self.route(naming: 10)
        #expect(filter.admits(route) && !filter.matches(route))
        route.takeNexthops(from: Self.objects)
        #expect(filter.matches(route))
        #expect(!RouteFilter(outputLinkIndex: 5).matches(route))
    }

    @Test func aRouteNamingAnObjectGoesWithItsLinksCarrierInEitherFamily() {
        let links: [Int32: Link] = [
            3: Link(index: 3, name: "nocarrier", arphrdType: .ether, flags: [.up], operState: .lowerLayerDown, mtu: 1500),
            4: Link(index: 4, name: "up", arphrdType: .ether, flags: [.up, .running, .lowerUp], operState: .up, mtu: 1500),
        ]
        var v6 = Route(family: .ipv6, destination: IPNetwork("::/0")!, nexthops: [Nexthop(linkIndex: 3)], nexthopID: 6)
        #expect(KernelStateModel.isFlushedWithItsLinks(v6, links: links))
        v6.nexthops.append(Nexthop(linkIndex: 4))
        #expect(!KernelStateModel.isFlushedWithItsLinks(v6, links: links), "the group keeps its member on a live link")
        let own = Route(family: .ipv4, destination: IPNetwork("0.0.0.0/0")!, nexthops: [Nexthop(linkIndex: 3)])
        #expect(!KernelStateModel.isFlushedWithItsLinks(own, links: links), "a route's own next hop only turns linkdown")
    }
}

/// Routes that name next-hop objects, with and without the kernel's compatibility mode (which
/// lists the object's next hops in each route message).
@Suite("Routes through next-hop objects", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct NexthopRouteTests {
    /// Two uplinks; IPv4's default route through group 10 (10.1.0.2 on va, 10.2.0.2 on wa with
    /// weight 3), IPv6's through object 6 (2001:db8:1::2 on va), and in table 5 an IPv4 default
    /// route through group 11, whose one member (10.2.0.2 on wa) has weight 5.
    static func build(_ ns: TestNamespace, compatible: Bool) throws {
        _ = try ns.exec(["sysctl", "-q", "-w", "net.ipv4.nexthop_compat_mode=\(compatible ? 1 : 0)"])
        try ns.batch(TestNamespace.twoUplinks + [
            "address add 2001:db8:1::1/64 dev va nodad",
            "nexthop add id 1 via 10.1.0.2 dev va", "nexthop add id 2 via 10.2.0.2 dev wa",
            "nexthop add id 10 group 1/2,3", "route add default nhid 10",
            "nexthop add id 6 via 2001:db8:1::2 dev va", "route add ::/0 nhid 6",
            "nexthop add id 11 group 2,5", "route add default nhid 11 table 5",
        ])
    }

    static func ipv4Default(_ routes: some Sequence<Route>) -> Route? {
        routes.first { $0.family == .ipv4 && $0.isDefault && $0.table == .main }
    }
    static func ipv6Default(_ routes: some Sequence<Route>) -> Route? { routes.first { $0.family == .ipv6 && $0.isDefault } }

    @Test func routesAreReadWithTheirObjectsNextHopsWhateverTheCompatibilityMode() async throws {
        var seen: [Bool: [Route]] = [:]
        for compatible in [true, false] {
            try await withTestNamespace("nhread") { ns in
                try Self.build(ns, compatible: compatible)
                let (va, wa) = (try ns.index(of: "va"), try ns.index(of: "wa"))
                let kernel = try NetlinkConnection(namespace: .named(ns.name))
                let routes = try kernel.defaultRoutes()
                let v4 = try #require(Self.ipv4Default(routes), "\(routes)")
                #expect(v4.nexthopID == 10)
                #expect(v4.nexthops.map(\.gateway) == [IPAddress("10.1.0.2"), IPAddress("10.2.0.2")], "compat \(compatible): \(v4)")
                #expect(v4.nexthops.map(\.linkIndex) == [va, wa])
                #expect(v4.nexthops.map(\.weight) == [1, 3])
                let v6 = try #require(Self.ipv6Default(routes), "\(routes)")
                #expect(v6.nexthopID == 6 && v6.gateway == IPAddress("2001:db8:1::2") && v6.outputLinkIndex == va, "\(v6)")
                // A dump by output link finds the route through its object's link.
                #expect(try kernel.routes(RouteFilter(family: .ipv4, outputLinkIndex: wa)).contains(v4))
                #expect(try !kernel.routes(RouteFilter(family: .ipv4, outputLinkIndex: va)).isEmpty)
                // The FIB entry a lookup matched, with the group's next hops (no packet is sent).
                let entry = try kernel.lookupFIBEntries(to: [IPAddress("192.0.2.1")!])
                guard case .route(let matched)? = entry.first else {
                    Issue.record("no FIB entry: \(entry)")
                    return
                }
                #expect(matched.nexthops.count == 2 && matched.nexthopID == 10, "\(matched)")
                let subscription = try NetlinkSubscription(namespace: .named(ns.name))
                #expect(Set(subscription.state.defaultRoutes.values) == Set(routes))
                seen[compatible] = routes.sorted { $0.description < $1.description }
            }
        }
        #expect(seen[true] == seen[false], "the same routes from the objects as from the kernel's compatibility mode")
    }

    @Test func aReplacedObjectRepointsItsRoutesWithoutARouteMessage() async throws {
        try await withTestNamespace("nhrepl") { ns in
            try Self.build(ns, compatible: false)
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            let recorder = EventRecorder(subscription)
            try ns.ip("nexthop", "replace", "id", "2", "via", "10.2.0.3", "dev", "wa")
            #expect(recorder.waitFor {
                guard case .changed(_, let new)? = $0.routeChange else { return false }
                return new.nexthopID == 10 && new.nexthops.map(\.gateway) == [IPAddress("10.1.0.2"), IPAddress("10.2.0.3")]
            }, "\(recorder.all)")
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            #expect(eventually { Set(subscription.state.defaultRoutes.values) == Set((try? kernel.defaultRoutes()) ?? []) })
        }
    }

    @Test func aCarrierLossTakesTheLinksObjectsAndTheRoutesLeftWithout() async throws {
        for compatible in [true, false] {
            try await withTestNamespace("nhcarrier") { ns in
                try Self.build(ns, compatible: compatible)
                let wa = try ns.index(of: "wa")
                let subscription = try NetlinkSubscription(namespace: .named(ns.name))
                let kernel = try NetlinkConnection(namespace: .named(ns.name))
                // va loses its carrier: the kernel flushes objects 1 and 6 without a message. The
                // IPv4 route keeps group 10's member on wa; the IPv6 route goes.
                // The peer going down takes va's carrier through the kernel's link watch, after
                // `ip` has returned: the kernel's own answer is waited for too.
                try ns.ip("link", "set", "vb", "down")
                var routes: [Route] = []
                #expect(try eventually {
                    routes = try kernel.defaultRoutes()
                    return Self.ipv6Default(routes) == nil && Self.ipv4Default(routes)?.nexthops.map(\.linkIndex) == [wa]
                }, "\(routes)")
                #expect(eventually { Set(subscription.state.defaultRoutes.values) == Set(routes) },
                        "compat \(compatible): \(subscription.state.defaultRoutes) against \(routes)")
                try ns.ip("link", "set", "wb", "down")
                #expect(try eventually { try kernel.defaultRoutes().isEmpty })
                #expect(eventually { subscription.state.defaultRoutes.isEmpty }, "compat \(compatible): \(subscription.state.defaultRoutes)")
            }
        }
    }

    /// A deleted link takes its objects out of their groups without a message, even when no
    /// kept route uses the group yet.
    @Test func aDeletedLinkLeavesItsGroupsForRoutesAddedLater() async throws {
        try await withTestNamespace("nhlinkdel") { ns in
            _ = try ns.exec(["sysctl", "-q", "-w", "net.ipv4.nexthop_compat_mode=0"])
            try ns.batch(TestNamespace.twoUplinks + [
                "nexthop add id 1 via 10.1.0.2 dev va", "nexthop add id 2 via 10.2.0.2 dev wa", "nexthop add id 20 group 1/2",
            ])
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            try ns.batch(["link del va", "route add default nhid 20"])
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            let routes = try kernel.defaultRoutes()
            #expect(routes.map { $0.nexthops.map(\.gateway) } == [[IPAddress("10.2.0.2")]], "\(routes)")
            #expect(eventually { Set(subscription.state.defaultRoutes.values) == Set(routes) },
                    "\(subscription.state.defaultRoutes.values) against \(routes)")
        }
    }

    @Test func deletedObjectsTakeTheirRoutesAndNewOnesAreFollowed() async throws {
        try await withTestNamespace("nhdel") { ns in
            try Self.build(ns, compatible: false)
            let wa = try ns.index(of: "wa")
            let subscription = try NetlinkSubscription(namespace: .named(ns.name))
            try ns.ip("nexthop", "del", "id", "10")
            #expect(eventually { Self.ipv4Default(subscription.state.defaultRoutes.values) == nil }, "\(subscription.state.defaultRoutes)")
            try ns.ip("route", "add", "default", "nhid", "2")
            #expect(eventually { Self.ipv4Default(subscription.state.defaultRoutes.values)?.outputLinkIndex == wa },
                    "\(subscription.state.defaultRoutes)")
            // A blackhole object makes a blackhole route, as the kernel reports it.
            try ns.batch(["nexthop add id 3 blackhole", "route add default nhid 3 metric 1"])
            #expect(eventually {
                subscription.state.defaultRoutes.values.contains { $0.family == .ipv4 && $0.type == .blackhole && $0.nexthopID == 3 }
            }, "\(subscription.state.defaultRoutes)")
        }
    }
}
