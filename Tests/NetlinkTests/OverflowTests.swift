import Glibc
import Netlink
import NetnsTestSupport
import Testing

@Suite("Overflow is detected and repaired", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct OverflowTests {
    @Test func tinyReceiveBufferAndABurstEndWithTheKernelsState() throws {
        let ns = try TestNamespace("overflow")
        defer { ns.delete() }
        do {
            try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "link set dum0 up", "link add dum1 type veth peer name dum1p"])
            // The kernel rounds a tiny buffer up to its minimum (a few notifications).
            let subscription = try NetlinkSubscription(namespace: .named(ns.name), options: SubscriptionOptions(receiveBufferSize: 1))
            let recorder = EventRecorder(subscription)
            // Hold the subscription's thread at the burst's first change, so that the kernel's
            // notifications pile up in the buffer whatever the speed of this machine.
            let staller = SubscriptionHold(subscription, for: .milliseconds(500)) { $0.addressChange != nil }
            defer { staller.cancel() }
            var burst: [String] = []
            for i in 0..<3000 { burst.append("address add 10.\(100 + i / 250).\(i % 250).1/32 dev dum0") }
            for i in 0..<200 { burst.append("link set dum1 \(i % 2 == 0 ? "up" : "down")") }
            burst.append("route add default via 10.250.0.1 dev dum0 onlink")
            try ns.batch(burst)
            #expect(eventually { subscription.resynchronizationCount > 0 }, "a 3000-change burst must overflow a minimal buffer")
            #expect(recorder.waitFor { $0 == .resynchronized(.overflow) })
            let kernel = try NetlinkConnection(namespace: .named(ns.name))
            let converged = eventually { agrees(subscription.state, kernel) }
            #expect(converged, "after the storm the state equals the kernel's")
            #expect(subscription.termination == nil, "the subscription never ends on overflow")
            #expect(subscription.state.addresses.count >= 3000)
        }
    }
}

/// Whether a subscription's state equals a fresh read of the kernel (links, address keys,
/// default routes).
func agrees(_ state: NetworkState, _ kernel: NetlinkConnection) -> Bool {
    guard let truth = try? kernel.snapshot() else { return false }
    return Set(state.addresses.keys) == Set(truth.addresses.keys)
        && state.links == truth.links && state.defaultRoutes == truth.defaultRoutes
}
