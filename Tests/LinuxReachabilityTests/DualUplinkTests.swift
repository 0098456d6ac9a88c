import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Two uplinks, default routes of metric 100 and 200, and the first one loses its carrier. The
/// internet's answer and an address's answer follow one rule, what a connection started now
/// would see within a few seconds: IPv6 passes over the router it can no longer reach (the
/// kernel does once the router's neighbour entry fails), so both say "reachable through the
/// second uplink"; IPv4 keeps sending through the first route, so both say "no carrier". An
/// address on the first uplink's own subnet stays on it. On the probe, the monitors and
/// `reach check`.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct DualUplinkTests {
    @Test(arguments: [true, false])
    func theInternetAndAnAddressAgreeWhenTheFirstUplinkLosesItsCarrier(ipv6: Bool) async throws {
        let ns = try TestNamespace(ipv6 ? "dual6" : "dual4")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link add wa type veth peer name wb",
                      "link set va up", "link set vb up", "link set wa up", "link set wb up"])
        let (family, far, onLink, first, second) = ipv6
            ? ("-6", "2001:db8:ff::1", "2001:db8:1::9", "2001:db8:1::2", "2001:db8:2::2")
            : ("-4", "198.51.100.1", "10.1.0.9", "10.1.0.2", "10.2.0.2")
        try ns.batch(ipv6
            ? ["address add 2001:db8:1::1/64 dev va nodad", "address add 2001:db8:2::1/64 dev wa nodad"]
            : ["address add 10.1.0.1/24 dev va", "address add 10.2.0.1/24 dev wa"])
        try ns.ip(family, "route", "add", "default", "via", first, "dev", "va", "metric", "100")
        try ns.ip(family, "route", "add", "default", "via", second, "dev", "wa", "metric", "200")
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        let internet = try ReachabilityMonitor(target: .internet, namespace: namespace)
        let address = try ReachabilityMonitor(address: IPAddress(far)!, namespace: namespace)
        let toInternet = Deliveries.listening(to: internet), toAddress = Deliveries.listening(to: address)
        defer { internet.stopListening(); address.stopListening() }
        #expect(eventually { toInternet.last?.interface?.name == "va" && toAddress.last?.interface?.name == "va" })

        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { (try? ns.ipJSON("link", "show", "dev", "va").first?["flags"] as? [String])?.contains("LOWER_UP") == false })
        let farAnswer = try await probe.answer(for: .address(IPAddress(far)!)).answer
        let internetAnswer = try await probe.answer(for: .internet).answer
        if ipv6 {
            // The kernel's own lookup still names the first uplink at this moment.
            #expect(try ns.ip("-6", "route", "get", far).contains("dev va"))
            for answer in [farAnswer, internetAnswer] {
                #expect(answer.isReachable && answer.interface?.name == "wa" && answer.gateway == IPAddress(second), "\(answer)")
            }
            #expect(eventually { toInternet.last?.interface?.name == "wa" && toAddress.last?.interface?.name == "wa" })
            #expect(toAddress.last?.isReachable == true)
        } else {
            for answer in [farAnswer, internetAnswer] {
                #expect(!answer.isReachable && answer.reason == .noCarrier && answer.interface?.name == "va", "\(answer)")
            }
            #expect(eventually { toInternet.last?.reason == .noCarrier && toAddress.last?.reason == .noCarrier })
        }
        // An address on the first uplink's own subnet is reached through that link only.
        #expect(try await probe.answer(for: .address(IPAddress(onLink)!)).answer.reason == .noCarrier)
        let check = try run([reachBinary, "check", "--netns", ns.name, far], check: false)
        #expect(check.status == (ipv6 ? 0 : 1) && check.output.contains(ipv6 ? "dev wa" : "dev va"), "\(check.output)")

        // The carrier back: both return to the first uplink.
        try ns.ip("link", "set", "vb", "up")
        #expect(eventually { toInternet.last?.interface?.name == "va" && toAddress.last?.interface?.name == "va"
                             && toAddress.last?.isReachable == true })
    }
}
