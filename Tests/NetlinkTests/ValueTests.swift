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

    @Test func hardwareAddressesPrintLikeIP() {
        #expect(HardwareAddress("02:00:5E:10:00:01")?.description == "02:00:5e:10:00:01")
        #expect(HardwareAddress("02:00:5e:10:00:") == nil)
        #expect(HardwareAddress("") == nil)
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
