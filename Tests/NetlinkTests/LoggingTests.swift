import Logging
import Netlink
import NetnsTestSupport
import Testing

/// A subscription logs with the logger its options give: its start, a re-read after lost
/// notifications with the reason, and the end of its namespace.
@Suite("Subscription logging", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SubscriptionLoggingTests {
    @Test func aReReadAfterAnOverflowAndADeletedNamespaceAreLogged() throws {
        let ns = try TestNamespace("logs")
        var deleted = false
        defer { if !deleted { ns.delete() } }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "link set dum0 up"])
        let log = CapturedLog()
        let subscription = try NetlinkSubscription(namespace: .named(ns.name),
                                                   options: SubscriptionOptions(receiveBufferSize: 1, logger: log.logger))
        #expect(log.entries(containing: "subscription started").first?.level == .debug)
        let staller = SubscriptionHold(subscription, for: .milliseconds(500)) { $0.addressChange != nil }
        defer { staller.cancel() }
        try ns.batch((0..<3000).map { "address add 10.\(100 + $0 / 250).\($0 % 250).1/32 dev dum0" })
        #expect(eventually { subscription.resynchronizationCount > 0 })
        let reread = try #require(eventually { !log.entries(containing: "re-read the kernel's state").isEmpty }
                                  ? log.entries(containing: "re-read the kernel's state").first : nil)
        #expect(reread.level == .notice)
        #expect(reread.metadata["reason"] == "overflow", "\(reread.metadata)")
        #expect(Int(reread.metadata["addresses"] ?? "") != nil, "the state's size: \(reread.metadata)")
        #expect(reread.metadata["changes-found"] != nil)

        ns.delete()
        deleted = true
        #expect(eventually { subscription.termination != nil })
        #expect(eventually { log.entries(containing: "the namespace went away").first?.level == .notice })
    }

    @Test func theDefaultLoggerSaysNothing() {
        #expect(SubscriptionOptions().logger.handler is SwiftLogNoOpLogHandler)
    }
}
