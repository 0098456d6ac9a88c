import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// IPv4 default routes of one metric: the kernel takes the first in its own order, which
/// `ip route append` (last) and `prepend` (first) set, whatever the links' indexes. The
/// internet and an address follow it, on the probe, the monitors, `reach watch` and
/// `reach check`, through each change. (IPv6 joins such routes into one multipath route.)
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct SameMetricDefaultsTests {
    @Test func theFirstOfTheKernelsOrderCarriesTheInternet() async throws {
        let ns = try TestNamespace("samemetric")
        defer { ns.delete() }
        // va has the lower index: an order by index would take it first.
        try ns.batch(TestNamespace.twoUplinks + ["route add default via 10.2.0.2 dev wa metric 100"])
        let witnesses = try InternetWitnesses(ns, far: "198.51.100.1")
        try await witnesses.expectVia("wa", after: "the first route")

        try ns.ip("route", "append", "default", "via", "10.1.0.2", "dev", "va", "metric", "100")
        try await witnesses.expectVia("wa", after: "an append behind it")

        try ns.ip("route", "prepend", "default", "via", "10.1.0.3", "dev", "va", "metric", "100")
        try await witnesses.expectVia("va", after: "a prepend before both")

        // The failures: the first link goes down (its routes go), then comes back, appended.
        try ns.ip("link", "set", "va", "down")
        try await witnesses.expectVia("wa", after: "va down")
        try ns.batch(["link set va up", "route append default via 10.1.0.2 dev va metric 100"])
        try await witnesses.expectVia("wa", after: "va back, appended")
        try ns.ip("link", "set", "wa", "down")
        try await witnesses.expectVia("va", after: "wa down")
        try ns.batch(["link set wa up", "route prepend default via 10.2.0.2 dev wa metric 100"])
        try await witnesses.expectVia("wa", after: "wa back, prepended")

        // A monitor started now reads the order from the kernel's dump.
        let late = try ReachabilityMonitor(target: .internet, namespace: .named(ns.name))
        let toLate = Deliveries.listening(to: late)
        defer { late.stopListening() }
        #expect(eventually { toLate.last?.interface?.name == "wa" }, "\(String(describing: toLate.last))")
    }
}
