import Glibc
import Netlink
import Testing

@Suite("Values")
struct ValueTests {
    @Test func parsesIPv4AndIPv6Literals() {
        #expect(IPAddress("192.0.2.1") == .v4(IPv4Address(192, 0, 2, 1)))
        #expect(IPAddress("2001:db8::1")?.description == "2001:db8::1")
        #expect(IPAddress("[2001:db8::1]")?.family == .ipv6)
        #expect(IPAddress("::ffff:192.0.2.1")?.family == .ipv6)
        for bad in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "example.com", "2001:db8:::1", " 1.2.3.4", "1.2.3.4%eth0",
                    String(repeating: "1", count: 5000), "fe80::1%eth0", "[1.2.3.4]"] {
            #expect(IPAddress(bad) == nil, "\(bad) must not parse")
        }
    }

    @Test func roundTripsOctets() {
        for text in ["0.0.0.0", "10.1.2.3", "255.255.255.255", "::", "::1", "fe80::1:2", "2001:db8:0:1::ff"] {
            let address = IPAddress(text)!
            #expect(IPAddress(octets: address.octets) == address)
            #expect(address.description == text)
        }
        #expect(IPv6Address("fe80::1")!.isLinkLocal)
        #expect(!IPv6Address("2001:db8::1")!.isLinkLocal)
    }

    /// The hand-written formatters agree with `inet_ntop` on addresses of every shape.
    @Test func descriptionsEqualInetNtop() {
        var generator = SystemRandomNumberGenerator()
        let v4Samples: [UInt32] = [0, 1, 9, 10, 99, 100, 255, 256, 0x0a00_0001, 0xffff_ffff, 0x6464_6464]
            + (0..<2000).map { _ in generator.next() }
        for raw in v4Samples {
            var address = in_addr(s_addr: raw.bigEndian)
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
            let expected = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            #expect(IPv4Address(rawValue: raw).description == expected)
        }
        let v6Samples: [(UInt64, UInt64)] = [(0, 0), (0, 1), (0xfe80_0000_0000_0000, 1), (0, 0xffff_c000_0201)]
            + (0..<500).map { _ in (generator.next(), generator.next() & 0xffff_0000_ffff_0000) }
        for (high, low) in v6Samples {
            let address = IPv6Address(high: high, low: low)
            #expect(IPv6Address(address.description) == address, "\(address)")
        }
    }

    @Test func networksContainTheirHosts() {
        let v4 = IPNetwork("10.1.0.0/16")!
        #expect(v4.contains(IPAddress("10.1.200.3")!))
        #expect(!v4.contains(IPAddress("10.2.0.1")!))
        #expect(!v4.contains(IPAddress("::1")!))
        let v6 = IPNetwork("2001:db8:1::/48")!
        #expect(v6.contains(IPAddress("2001:db8:1:ffff::1")!))
        #expect(!v6.contains(IPAddress("2001:db8:2::1")!))
        #expect(IPNetwork("2001:db8::1/128")!.contains(IPAddress("2001:db8::1")!))
        #expect(IPNetwork.defaultRoute(.ipv4).contains(IPAddress("198.51.100.7")!))
        #expect(IPNetwork("10.0.0.0/33") == nil)
        #expect(IPNetwork("10.0.0.0/") == nil)
        #expect(IPNetwork("10.0.0.0/-1") == nil)
    }

    @Test func aStatePrintsItsLinksAddressesAndRoutesByName() {
        let link = Link(index: 2, name: "eth0", arphrdType: .ether, kind: "veth", flags: [.up, .running],
                        operState: .up, carrier: true, mtu: 1500)
        let address = InterfaceAddress(linkIndex: 2, address: IPAddress("10.0.0.1")!, prefixLength: 24, scope: .universe)
        let route = Route(family: .ipv4, destination: IPNetwork("0.0.0.0/0")!, metric: 100,
                          nexthops: [Nexthop(gateway: IPAddress("10.0.0.254")!, linkIndex: 2)])
        var state = NetworkState(links: [link], addresses: [address], defaultRoutes: [route])
        state.policyRules = [.ipv4: []]
        let lines = state.description.split(separator: "\n").map(String.init)
        #expect(lines == ["\(link) 10.0.0.1/24", "default via 10.0.0.254 dev eth0 table main proto boot scope global metric 100",
                          "rules: ipv4 0"])
        #expect(route.description.contains("dev #2"))
    }

    @Test func hardwareAddressesPrintLikeIP() {
        #expect(HardwareAddress("02:00:5E:10:00:01")?.description == "02:00:5e:10:00:01")
        #expect(HardwareAddress("02:00:5e:10:00:") == nil)
        #expect(HardwareAddress("") == nil)
        #expect(HardwareAddress(octets: []).description == "")
        #expect(HardwareAddress(octets: [0x0f]).description == "0f")
        #expect(HardwareAddress(octets: [0x00, 0xff, 0xa0, 0x09]).description == "00:ff:a0:09")
        // Every octet value, and an InfiniBand-long address (20 octets), round-trip.
        let everyOctet = HardwareAddress(octets: (0...255).map(UInt8.init))
        #expect(HardwareAddress(everyOctet.description) == everyOctet)
        #expect(everyOctet.description.utf8.count == 256 * 3 - 1)
        let infiniband = HardwareAddress(octets: (0..<20).map { UInt8($0 * 13) })
        #expect(infiniband.description == infiniband.octets.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
            .joined(separator: ":"))
    }

    @Test func namespaceNamesAreValidated() throws {
        #expect(try NetworkNamespace.named("blue").path == "/run/netns/blue")
        #expect(try NetworkNamespace.parse("/proc/1/ns/net").path == "/proc/1/ns/net")
        for bad in ["", ".", "..", "a/b", "a\u{0}b", String(repeating: "x", count: 256)] {
            #expect(throws: NetlinkError.invalidNamespaceName) { try NetworkNamespace.named(bad) }
        }
        #expect(throws: NetlinkError.invalidNamespaceName) { try NetworkNamespace.path("") }
    }

    @Test func missingNamespaceIsATypedError() {
        #expect(throws: NetlinkError.namespaceNotFound) {
            try NetlinkConnection(namespace: .named("no-such-namespace-\(UInt32.random(in: 0...UInt32.max))"))
        }
        #expect(throws: NetlinkError.notANetworkNamespace) { try NetlinkConnection(namespace: .path("/etc/hostname")) }
    }

    @Test func aLinkThatOnlyChangedStateIsTheSameLink() {
        let link = Link(index: 4, name: "eth0", arphrdType: .ether, flags: [.up, .running, .lowerUp, .broadcast],
                        operState: .up, carrier: true, mtu: 1500)
        var down = link
        down.flags = [.broadcast]
        down.operState = .down
        down.carrier = false
        #expect(down.differsOnlyInState(from: link) && link.differsOnlyInState(from: down))
        #expect(link.differsOnlyInState(from: link))
        var renamed = link
        renamed.name = "wan0"
        var resized = link
        resized.mtu = 9000
        var enslaved = link
        enslaved.masterIndex = 9
        var pointToPoint = link
        pointToPoint.flags.insert(.pointToPoint)
        for other in [renamed, resized, enslaved, pointToPoint] {
            #expect(!other.differsOnlyInState(from: link) && !link.differsOnlyInState(from: other))
        }
    }

    @Test func aStatesLinkRevisionIsNotPartOfItsValue() {
        var one = NetworkState(links: [Link(index: 1, name: "lo", arphrdType: .loopback, flags: [.loopback], operState: .unknown, mtu: 65536)],
                               addresses: [], defaultRoutes: [])
        var two = one
        one.linkRevision = 1
        two.linkRevision = 2
        #expect(one == two && one.hashValue == two.hashValue)
        two.links = [:]
        #expect(one != two)
    }

    @Test func optionSetsDescribeThemselvesByName() {
        #expect(InterfaceFlags([.up, .running]).description == "[.up, .running]")
        #expect(InterfaceFlags(rawValue: 0x41 | 0x8000_0000).names == ["up", "running", "0x80000000"])
        #expect(AddressFlags.permanent.names == ["permanent"])
        #expect(RouteFlags.linkDown.names == ["linkdown"])
        #expect(OperState.lowerLayerDown.description == "lowerLayerDown")
        #expect(RouteType.blackhole.description == "blackhole")
    }

    @Test func errorsDescribeThemselvesAndMatchByCode() {
        let error = NetlinkError(code: NetlinkError.namespaceNotFound.code, systemErrno: 2, context: "open /run/netns/x")
        #expect(error == .namespaceNotFound)
        #expect(error.description.contains("open /run/netns/x"))
        #expect(error.description.contains("No such file"))
        #expect(NetlinkError.noMemory.description == "Out of memory")
        #expect(NetlinkError.receiveBufferOverflow != .noMemory)
    }
}
