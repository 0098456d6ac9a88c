import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Routes to both halves of the address space (`0.0.0.0/1` and `128.0.0.0/1`, `::/1` and
/// `8000::/1`), as OpenVPN's `redirect-gateway def1` and a WireGuard peer with split allowed
/// IPs add them, carry the internet ahead of the default route, and without one; a lone half
/// does not. On the probe, the monitors, `reach watch` and `reach check`, in both families.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct InternetCoverTests {
    @Test(arguments: [false, true])
    func bothHalvesCarryTheInternet(ipv6: Bool) async throws {
        let ns = try TestNamespace(ipv6 ? "cover6" : "cover4")
        defer { ns.delete() }
        // The far address lies in the upper IPv4 half and in the lower IPv6 one.
        let (family, far, uplink, tunnel, halves) = ipv6
            ? ("-6", "2001:db8:ff::1", "2001:db8:1::2", "2001:db8:2::2", ["::/1", "8000::/1"])
            : ("-4", "198.51.100.1", "10.1.0.2", "10.2.0.2", ["0.0.0.0/1", "128.0.0.0/1"])
        try ns.batch(ipv6
            ? TestNamespace.twoUplinkLinks + ["address add 2001:db8:1::1/64 dev va nodad", "address add 2001:db8:2::1/64 dev wa nodad"]
            : TestNamespace.twoUplinks)
        try ns.ip(family, "route", "add", "default", "via", uplink, "dev", "va", "metric", "100")
        let witnesses = try InternetWitnesses(ns, far: far)
        try await witnesses.expectVia("va", after: "the default route")

        // The half without the far address alone: no cover, the default route carries the rest.
        let (farHalf, otherHalf) = ipv6 ? (halves[0], halves[1]) : (halves[1], halves[0])
        try ns.ip(family, "route", "add", otherHalf, "via", tunnel, "dev", "wa")
        try await witnesses.expectVia("va", after: "a lone half")

        try ns.ip(family, "route", "add", farHalf, "via", tunnel, "dev", "wa")
        try await witnesses.expectVia("wa", after: "both halves")

        // A process started now reads both halves at its start.
        let late = try ReachabilityMonitor(target: .internet, namespace: .named(ns.name))
        let toLate = Deliveries.listening(to: late)
        defer { late.stopListening() }
        #expect(eventually { toLate.last?.interface?.name == "wa" }, "\(String(describing: toLate.last))")

        // Without the default route, and with a dead one underneath.
        try ns.ip(family, "route", "del", "default", "via", uplink, "dev", "va", "metric", "100")
        try await witnesses.expectVia("wa", after: "the default route deleted")
        try ns.ip("link", "set", "vb", "down")
        try ns.ip(family, "route", "add", "default", "via", uplink, "dev", "va", "metric", "100")
        try await witnesses.expectVia("wa", after: "a default route without carrier underneath")

        // The VPN goes: the default route carries the internet again.
        try ns.ip("link", "set", "vb", "up")
        try ns.ip(family, "route", "del", farHalf, "via", tunnel, "dev", "wa")
        try await witnesses.expectVia("va", after: "one half deleted")
        try ns.ip(family, "route", "del", otherHalf, "via", tunnel, "dev", "wa")
        try await witnesses.expectVia("va", after: "both halves deleted")
    }

    /// A kill switch: refusing halves refuse the internet, as the kernel's lookup does.
    @Test func refusingHalvesRefuseTheInternet() async throws {
        let ns = try TestNamespace("coverkill")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + ["route add default via 10.1.0.2 dev va",
                                                 "route add unreachable 0.0.0.0/1", "route add unreachable 128.0.0.0/1"])
        let probe = try ReachabilityProbe(namespace: .named(ns.name))
        for target in [ReachabilityTarget.internet, .address(IPAddress("198.51.100.1")!)] {
            let answer = try await probe.answer(for: target).answer
            #expect(!answer.isReachable && answer.reason == .unreachableRoute, "\(target): \(answer)")
        }
    }
}
