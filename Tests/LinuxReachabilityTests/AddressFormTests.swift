import Foundation
import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Address targets whose form changes what a socket does with them, judged as the kernel
/// delivers: an IPv4-mapped IPv6 address goes over IPv4; this host's own IPv6 anycast address is
/// delivered here; a broadcast address is refused but names its link.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct AddressFormTests {
    @Test func anIPv4MappedAddressIsJudgedAsItsIPv4Address() async throws {
        let ns = try wiredNamespace("form1")
        defer { ns.delete() }
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        // On va's subnet (direct), this host's own address (local), and a far one with no
        // IPv4 default route: the IPv6 table, which has no route for ::ffff:0:0/96 either way,
        // gets a default route of its own that traffic to these addresses never takes.
        try ns.ip("-6", "route", "add", "default", "dev", "va")
        for (mapped, expected) in [("::ffff:10.1.0.2", "10.1.0.2"), ("::ffff:10.1.0.1", "10.1.0.1"),
                                   ("::ffff:198.51.100.7", "198.51.100.7")] {
            let (answer, addresses) = try await probe.answer(for: .address(IPAddress(mapped)!))
            let (direct, _) = try await probe.answer(for: .address(IPAddress(expected)!))
            #expect(answer == direct, "\(mapped) is answered as \(expected)")
            #expect(addresses == [IPAddress(expected)!])
        }
        #expect(try await probe.answer(for: .address(IPAddress("::ffff:10.1.0.2")!)).answer.flags == [.reachable, .isDirect])
        #expect(try await probe.answer(for: .address(IPAddress("::ffff:10.1.0.1")!)).answer.flags.contains(.isLocalAddress))
        #expect(try await probe.answer(for: .address(IPAddress("::ffff:198.51.100.7")!)).answer.reason == .noRoute)
        // A host name's mapped addresses too (a hosts file may list one).
        let named = try ReachabilityProbe(namespace: namespace, resolver: StaticHostResolver(
            ["mapped.example.test": [IPAddress("::ffff:10.1.0.2")!, IPAddress("10.1.0.2")!, IPAddress("::ffff:10.1.0.3")!]]))
        #expect(try await named.answer(for: .host("mapped.example.test")).addresses == [IPAddress("10.1.0.2")!, IPAddress("10.1.0.3")!])
        // ::ffff:0.0.0.0 is the IPv4 zero address: the internet.
        #expect(ReachabilityTarget.address(IPAddress("::ffff:0.0.0.0")!).judged == .internet)
        let pair = ReachabilityTarget.addressPair(local: IPAddress("::ffff:10.1.0.1")!, remote: IPAddress("::ffff:10.1.0.2")!)
        #expect(pair.judged == .addressPair(local: IPAddress("10.1.0.1")!, remote: IPAddress("10.1.0.2")!))

        // A monitor follows the IPv4 route.
        let monitor = try ReachabilityMonitor(address: IPAddress("::ffff:198.51.100.7")!, namespace: namespace)
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.reason == .noRoute })
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        #expect(eventually { deliveries.last?.isReachable == true })
        #expect(deliveries.last?.gateway == IPAddress("10.1.0.2"))
    }

    @Test func thisHostsOwnIPv6AnycastAddressIsLocal() async throws {
        let ns = try wiredNamespace("form2")
        defer { ns.delete() }
        // A forwarding host joins the subnet-router anycast address of each of its prefixes.
        _ = try ns.exec(["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])
        try ns.ip("address", "add", "2001:db8:1::1/64", "dev", "va", "nodad")
        #expect(eventually { (try? ns.ip("-6", "route", "show", "table", "local", "type", "anycast"))?.contains("2001:db8:1::") == true })
        let kernel = try ns.ip("-6", "route", "get", "2001:db8:1::")
        #expect(kernel.hasPrefix("anycast 2001:db8:1:: "), "the kernel's own answer: \(kernel)")
        let probe = try ReachabilityProbe(namespace: try .named(ns.name))
        let (answer, _) = try await probe.answer(for: .address(IPAddress("2001:db8:1::")!))
        #expect(answer.flags == [.reachable, .isLocalAddress, .isDirect], "\(answer)")
        #expect(answer.interface?.name == "lo")
    }

    @Test func aBroadcastAddressIsRefusedThroughItsLink() async throws {
        let ns = try wiredNamespace("form3")
        defer { ns.delete() }
        let probe = try ReachabilityProbe(namespace: try .named(ns.name))
        let (answer, _) = try await probe.answer(for: .address(IPAddress("10.1.0.255")!))
        #expect(answer.reason == .unusableRouteType(.broadcast))
        #expect(!answer.isReachable)
        let kernel = try ns.ip("route", "get", "10.1.0.255")
        #expect(answer.interface?.name == "va", "the kernel names the link: \(kernel)")
    }
}

/// IPv6 link-local targets, which a socket reaches only through a named link.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct ScopedAddressTests {
    @Test func aLinkLocalAddressIsLookedUpThroughItsLink() async throws {
        let ns = try TestNamespace("scope1")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link add p0 type veth peer name p1",
                      "link set v0 up", "link set v1 up", "link set p0 up", "link set p1 up"])
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "p0"))?.contains("fe80::/64") == true })
        let probe = try ReachabilityProbe(namespace: try .named(ns.name))
        let address = IPAddress("fe80::1")!
        // Without a link the kernel refuses to send (connect(2) says EINVAL).
        #expect(try await probe.answer(for: .address(address)).answer.reason == .scopeRequired)
        for link in ["v0", "p0"] {
            let (answer, _) = try await probe.answer(for: .scopedAddress(address, interface: link))
            #expect(answer.flags == [.reachable, .isDirect] && answer.interface?.name == link, "\(answer)")
        }
        let index = try ns.index(of: "p0")
        #expect(try await probe.answer(for: try ReachabilityTarget(parsing: "fe80::1%\(index)")).answer.interface?.name == "p0")
        #expect(try await probe.answer(for: .scopedAddress(address, interface: "nosuch0")).answer.reason == .linkMissing)
    }

    /// `getaddrinfo` reads a scope on any IPv6 literal; `connect(2)` uses it only where the
    /// address needs one (link-local, and multicast of link or interface scope) and ignores it
    /// elsewhere. The probe, a monitor and `reach check` answer alike: a global address with a
    /// scope as without (once the link exists), a link-scoped multicast address through its
    /// link and not reachable (a multicast route), and without its link `scopeRequired`.
    @Test func aScopeIsKeptWhereTheAddressNeedsOneAndIgnoredElsewhere() async throws {
        let ns = try TestNamespace("scope4")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up",
                      "address add 2001:db8:1::1/64 dev v0 nodad"])
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "v0"))?.contains("fe80::/64") == true })
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        let plain = try await probe.answer(for: .address(IPAddress("2001:db8:1::5")!)).answer
        #expect(plain.isReachable && plain.interface?.name == "v0")
        for scope in ["v0", "v1", String(try ns.index(of: "v1"))] {
            let scoped = try await probe.answer(for: try ReachabilityTarget(parsing: "2001:db8:1::5%\(scope)")).answer
            #expect(scoped == plain, "the scope \(scope) is ignored: \(scoped)")
        }
        #expect(try await probe.answer(for: try ReachabilityTarget(parsing: "2001:db8:1::5%nosuch0")).answer.reason == .linkMissing)
        let multicast = try await probe.answer(for: try ReachabilityTarget(parsing: "ff02::1%v1")).answer
        #expect(!multicast.isReachable && multicast.reason == .unusableRouteType(.multicast) && multicast.interface?.name == "v1",
                "\(multicast)")
        #expect(try await probe.answer(for: .address(IPAddress("ff02::1")!)).answer.reason == .scopeRequired)
        #expect(try await probe.answer(for: .address(IPAddress("ff01::1")!)).answer.reason == .scopeRequired)

        // A monitor of a scoped global address follows the route, not the scope's link, and
        // tells of the link when it goes and comes back.
        let monitor = try ReachabilityMonitor(target: try ReachabilityTarget(parsing: "2001:db8:1::5%v1"), namespace: namespace)
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.isReachable == true && deliveries.last?.interface?.name == "v0" })
        try ns.ip("link", "set", "v1", "name", "w1")
        #expect(eventually { deliveries.last?.reason == .linkMissing })
        try ns.ip("link", "set", "w1", "name", "v1")
        #expect(eventually { deliveries.last?.isReachable == true })

        // reach check answers as the probe.
        let check = try run([reachBinary, "check", "--netns", ns.name, "2001:db8:1::5%v1"], check: false)
        #expect(check.status == 0 && check.output.contains("dev v0"), "\(check.output)\(check.error)")
        let group = try run([reachBinary, "check", "--netns", ns.name, "ff02::1%v1"], check: false)
        #expect(group.status == 1 && group.output.contains("multicast route"), "\(group.output)\(group.error)")
        let ipv4 = try run([reachBinary, "check", "--netns", ns.name, "10.0.0.1%v1"], check: false)
        #expect(ipv4.status == 2 && ipv4.error.hasPrefix("reach: not an IP address or host name"))
    }

    @Test func aLinkLocalNameServerIsReachedThroughItsLink() throws {
        let ns = try TestNamespace("scope3")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up",
                      "address add 10.1.0.1/24 dev v0", "route add default via 10.1.0.2"])
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "v0"))?.contains("fe80::/64") == true })
        let directory = "/etc/netns/\(ns.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A router's advertised name server, as NetworkManager writes it.
        try "nameserver fe80::1%v0\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let monitor = NetworkPathMonitor(namespace: try .named(ns.name))
        defer { monitor.cancel() }
        #expect(eventually { monitor.currentPath.status == .satisfied && monitor.currentPath.supportsDNS })
        // Without its link the resolver cannot use it.
        try "nameserver fe80::1\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let unscoped = NetworkPathMonitor(namespace: try .named(ns.name))
        defer { unscoped.cancel() }
        #expect(unscoped.currentPath.status == .satisfied && !unscoped.currentPath.supportsDNS)
    }

    @Test func theSystemResolverKeepsALinkLocalAddresssLink() async throws {
        let ns = try TestNamespace("scope4")
        defer { ns.delete() }
        try ns.batch(["link add d0 type veth peer name d1", "link add p0 type veth peer name p1"])
        let index = try ns.index(of: "p0")
        let resolver = SystemHostResolver(namespace: try .named(ns.name))
        // A literal with a scope (getaddrinfo reads it without asking anyone) keeps its link,
        // named as the namespace names its index; a scope on another address is dropped.
        #expect(try await resolver.resolveScoped("fe80::1%\(index)") == [ResolvedAddress(IPAddress("fe80::1")!, interface: "p0")])
        #expect(try await resolver.resolveScoped("fe80::1%p0") == [ResolvedAddress(IPAddress("fe80::1")!, interface: "p0")])
        #expect(try await resolver.resolve("fe80::1%p0") == [IPAddress("fe80::1")!])
        #expect(try await resolver.resolveScoped("2001:db8::1") == [ResolvedAddress(IPAddress("2001:db8::1")!)])
        #expect(BoundedResolution.judged([ResolvedAddress(IPAddress("2001:db8::1")!, interface: "p0"),
                                          ResolvedAddress(IPAddress("::ffff:10.0.0.1")!, interface: "p0"),
                                          ResolvedAddress(IPAddress("10.0.0.1")!),
                                          ResolvedAddress(IPAddress("fe80::1")!, interface: "p0")])
                == [ResolvedAddress(IPAddress("2001:db8::1")!), ResolvedAddress(IPAddress("10.0.0.1")!),
                    ResolvedAddress(IPAddress("fe80::1")!, interface: "p0")])
    }

    /// A `.local` name that mDNS answers with a link-local address heard on one link, as
    /// nss-mdns does (`sin6_scope_id`): judged through that link, by the probe and a monitor.
    @Test func aHostNameResolvedToAScopedLinkLocalAddressIsJudgedThroughItsLink() async throws {
        struct MulticastDNS: HostResolver {
            func resolve(_ host: String) async throws -> [IPAddress] { try await resolveScoped(host).map(\.address) }
            func resolveScoped(_ host: String) async throws -> [ResolvedAddress] {
                host == "printer.local" ? [ResolvedAddress(IPAddress("fe80::1")!, interface: "v0")] : []
            }
        }
        let ns = try TestNamespace("scope5")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up"])
        // The kernel's link watch brings the carrier, and with it the link-local prefix route,
        // a moment later (up to a second on a busy machine).
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "v0"))?.contains("fe80::/64") == true })
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace, resolver: MulticastDNS())
        let (answer, addresses) = try await probe.answer(for: .host("printer.local"))
        #expect(answer.flags == [.reachable, .isDirect] && answer.interface?.name == "v0", "\(answer)")
        #expect(addresses == [IPAddress("fe80::1")!])
        // The same address without its link (a resolver that cannot tell it) cannot be sent to.
        let unscoped = try ReachabilityProbe(namespace: namespace, resolver: StaticHostResolver(["printer.local": [IPAddress("fe80::1")!]]))
        #expect(try await unscoped.answer(for: .host("printer.local")).answer.reason == .scopeRequired)

        let monitor = try ReachabilityMonitor(target: .host("printer.local"), namespace: namespace, resolver: MulticastDNS())
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.isReachable == true && deliveries.last?.interface?.name == "v0" })
        try ns.ip("link", "set", "v1", "down")
        #expect(eventually { deliveries.last?.reason == .noCarrier })
        try ns.ip("link", "set", "v1", "up")
        #expect(eventually { deliveries.last?.isReachable == true })
    }

    @Test func aMonitorOfAScopedAddressFollowsItsLink() throws {
        let ns = try TestNamespace("scope2")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up"])
        let monitor = try ReachabilityMonitor(target: .scopedAddress(IPAddress("fe80::1")!, interface: "v0"), namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.isReachable == true })
        try ns.ip("link", "set", "v1", "down")
        #expect(eventually { deliveries.last?.reason == .noCarrier })
        try ns.ip("link", "set", "v0", "down")
        #expect(eventually { deliveries.last?.reason == .linkDown })
        try ns.ip("link", "del", "v0")
        #expect(eventually { deliveries.last?.reason == .linkMissing })
        // A new link of that name: the scope names it, whatever its index.
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up"])
        #expect(eventually { deliveries.last?.isReachable == true && deliveries.last?.interface?.name == "v0" })
    }

    /// A scope may be one of the link's alternative names, as for the kernel's lookups by name
    /// (`ping fe80::1%enp0s31f6`), including one longer than a link's name can be (udev gives
    /// its longer predictable names only as alternative names).
    @Test func aScopeMayBeAnAlternativeNameOfTheLink() async throws {
        let ns = try TestNamespace("scope4")
        defer { ns.delete() }
        let long = "enp0s20f0u10u4u2c2i" + String(repeating: "x", count: 40)
        try ns.batch(["link add v0 type veth peer name v1", "link add p0 type veth peer name p1",
                      "link set v0 up", "link set v1 up", "link set p0 up", "link set p1 up",
                      "link property add dev p0 altname uplink0 altname \(long)"])
        #expect(eventually { (try? ns.ip("-6", "route", "show", "dev", "p0"))?.contains("fe80::/64") == true })
        let probe = try ReachabilityProbe(namespace: try .named(ns.name))
        for scope in ["uplink0", long] {
            let target = try ReachabilityTarget(parsing: "fe80::1%\(scope)")
            #expect(target == .scopedAddress(IPAddress("fe80::1")!, interface: scope))
            let (answer, _) = try await probe.answer(for: target)
            #expect(answer.flags == [.reachable, .isDirect] && answer.interface?.name == "p0", "\(scope): \(answer)")
        }
        #expect(try await probe.answer(for: .scopedAddress(IPAddress("fe80::1")!, interface: "uplink1")).answer.reason == .linkMissing)
    }

    /// A monitor whose scope is no link's name yet is answered "link missing", and follows the
    /// link that is given that name as an alternative one, and that loses it.
    @Test func aMonitorFollowsAnAlternativeNameAsItComesAndGoes() throws {
        let ns = try TestNamespace("scope5")
        defer { ns.delete() }
        try ns.batch(["link add v0 type veth peer name v1", "link set v0 up", "link set v1 up"])
        let monitor = try ReachabilityMonitor(target: .scopedAddress(IPAddress("fe80::1")!, interface: "uplink0"),
                                       namespace: .named(ns.name))
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.reason == .linkMissing })
        try ns.ip("link", "property", "add", "dev", "v0", "altname", "uplink0")
        #expect(eventually { deliveries.last?.isReachable == true && deliveries.last?.interface?.name == "v0" })
        try ns.ip("link", "property", "del", "dev", "v0", "altname", "uplink0")
        #expect(eventually { deliveries.last?.reason == .linkMissing })
    }
}
