import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Every target is judged as `connect(2)` finds its route: a lookup without a source, the
/// source the kernel picks, the lookup again from it. A policy rule that selects by source
/// (`ip rule add from 10.1.1.2 table 10`) and an IPv6 source-specific default route (`default
/// from 2001:db8:aa::/64`) answer only the second lookup: the address's answer, the internet's
/// and `reach check` agree with the kernel's lookup from that source, and a monitor moves when
/// the rule or the route goes.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct SourceAwareLookupTests {
    @Test func aSourceRuleDecidesAnAddressAsItDecidesTheInternet() async throws {
        let ns = try TestNamespace("srcrule")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link add wa type veth peer name wb",
                      "link set va up", "link set vb up", "link set wa up", "link set wb up",
                      "address add 10.1.1.2/24 dev va", "address add 10.9.9.2/24 dev wa",
                      "route add default via 10.1.1.1", "route add default via 10.9.9.1 dev wa table 10",
                      "rule add from 10.1.1.2 table 10 pref 100"])
        #expect(try ns.ip("route", "get", "198.51.100.1", "from", "10.1.1.2").contains("dev wa"), "the kernel, from the source")
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        for target in [ReachabilityTarget.address(IPAddress("198.51.100.1")!), .internet] {
            let answer = try await probe.answer(for: target).answer
            #expect(answer.isReachable && answer.interface?.name == "wa" && answer.gateway == IPAddress("10.9.9.1"), "\(target): \(answer)")
        }
        let monitor = try ReachabilityMonitor(address: IPAddress("198.51.100.1")!, namespace: namespace)
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.interface?.name == "wa" })
        let check = try run([reachBinary, "check", "--netns", ns.name, "198.51.100.1"], check: false)
        #expect(check.status == 0 && check.output.contains("dev wa"), "\(check.output)")
        // Without the rule, the main table's route.
        try ns.ip("rule", "del", "pref", "100")
        #expect(eventually { deliveries.last?.interface?.name == "va" && deliveries.last?.isReachable == true })
        #expect(try await probe.answer(for: .address(IPAddress("198.51.100.1")!)).answer.interface?.name == "va")
    }

    @Test func anIPv6SourceSpecificDefaultRouteReachesAnAddressWithoutAPlainRoute() async throws {
        let ns = try TestNamespace("srcdef")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 2001:db8:aa::1/64 dev va nodad"])
        try ns.ip("-6", "route", "add", "default", "from", "2001:db8:aa::/64", "via", "fe80::1", "dev", "va")
        // The kernel's lookup without a source finds nothing; connect(2) picks 2001:db8:aa::1
        // and finds the route.
        #expect(try run(["ip", "-n", ns.name, "-6", "route", "get", "2001:db8:ff::1"], check: false).status != 0)
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        for target in [ReachabilityTarget.address(IPAddress("2001:db8:ff::1")!), .internet] {
            let answer = try await probe.answer(for: target).answer
            #expect(answer.isReachable && answer.interface?.name == "va" && answer.gateway == IPAddress("fe80::1"), "\(target): \(answer)")
        }
        let monitor = try ReachabilityMonitor(address: IPAddress("2001:db8:ff::1")!, namespace: namespace)
        let deliveries = Deliveries.listening(to: monitor)
        defer { monitor.stopListening() }
        #expect(eventually { deliveries.last?.isReachable == true && deliveries.last?.interface?.name == "va" })
        let check = try run([reachBinary, "check", "--netns", ns.name, "2001:db8:ff::1"], check: false)
        #expect(check.status == 0 && check.output.contains("dev va"), "\(check.output)")
        // The route gone: no route, for the monitor and the probe.
        try ns.ip("-6", "route", "del", "default", "from", "2001:db8:aa::/64", "via", "fe80::1", "dev", "va")
        #expect(eventually { deliveries.last?.reason == .noRoute })
        #expect(try await probe.answer(for: .address(IPAddress("2001:db8:ff::1")!)).answer.reason == .noRoute)
    }
}
