import Netlink
import NetnsTestSupport
import Testing

/// A link whose lower link leaves the namespace: the kernel tells of the one that left, not of
/// the one that stays, whose lower link is now in another namespace.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct LowerLinkTests {
    @Test func theOtherEndOfAVethWhosePeerMovedAwayIsReadAgain() throws {
        let ns = try TestNamespace("lower1")
        defer { ns.delete() }
        let away = try TestNamespace("lower2")
        defer { away.delete() }
        try ns.batch(["link add c0 type veth peer name c0p"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let recorder = EventRecorder(subscription)
        let index = try ns.index(of: "c0")
        #expect(subscription.state.links[index]?.linkNamespaceID == nil)
        try ns.ip("link", "set", "c0p", "netns", away.name)
        let kernel = try NetlinkConnection(namespace: .named(ns.name))
        let moved = try #require(try kernel.links().first { $0.index == index })
        #expect(moved.linkNamespaceID != nil, "the kernel names the peer's namespace")
        #expect(eventually { subscription.state.links[index] == moved })
        #expect(recorder.waitFor { if case .changed(_, let new)? = $0.linkChange { new == moved } else { false } })
    }
}
