import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// One rule for the routes that refuse traffic (`blackhole`, `unreachable`, `prohibit`, and a
/// `throw` that ends the lookup): the internet's answer and an address's answer give the reason
/// the kernel's lookup gives and no link (the kernel files IPv6 ones under `lo`), on the probe and on
/// a monitor, in both families.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct RefusingRouteTests {
    static let cases: [(type: String, reason: UnreachableReason)] = [
        ("blackhole", .blackholeRoute), ("unreachable", .unreachableRoute), ("prohibit", .prohibitedRoute),
    ]

    @Test(arguments: [false, true])
    func aRefusingDefaultRouteIsAnsweredAlikeForTheInternetAndAnAddress(ipv6: Bool) async throws {
        let ns = try TestNamespace(ipv6 ? "refuse6" : "refuse4")
        defer { ns.delete() }
        let family = ipv6 ? "-6" : "-4"
        let far = IPAddress(ipv6 ? "2001:db8:ff::1" : "198.51.100.1")!
        let namespace = try NetworkNamespace.named(ns.name)
        let probe = try ReachabilityProbe(namespace: namespace)
        let internet = try ReachabilityMonitor(target: .internet, namespace: namespace)
        let address = try ReachabilityMonitor(address: far, namespace: namespace)
        let toInternet = Deliveries.listening(to: internet), toAddress = Deliveries.listening(to: address)
        defer { internet.stopListening(); address.stopListening() }
        for (type, reason) in Self.cases {
            try ns.ip(family, "route", "replace", type, "default")
            // The kernel refuses the lookup itself (EINVAL, EHOSTUNREACH, EACCES).
            #expect(try run(["ip", "-n", ns.name, family, "route", "get", far.description], check: false).status != 0)
            for answer in [try await probe.answer(for: .internet).answer, try await probe.answer(for: .address(far)).answer] {
                #expect(answer.reason == reason && answer.interface == nil && answer.flags.isEmpty, "\(type): \(answer)")
            }
            #expect(eventually { toInternet.last?.reason == reason && toAddress.last?.reason == reason }, "\(type)")
            #expect(toInternet.last?.interface == nil && toAddress.last?.interface == nil, "\(type)")
        }
        // A `throw` default ends the lookup: no route, and for the internet no default route.
        try ns.ip(family, "route", "replace", "throw", "default")
        #expect(try await probe.answer(for: .address(far)).answer.reason == .noRoute)
        let thrown = try await probe.answer(for: .internet).answer
        #expect(!thrown.isReachable && thrown.interface == nil, "\(thrown)")
        #expect(eventually { toAddress.last?.reason == .noRoute && toInternet.last?.isReachable == false && toInternet.last?.interface == nil })
    }
}
