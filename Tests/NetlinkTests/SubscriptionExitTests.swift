@testable import Netlink
import NetnsTestSupport
import Testing

/// The list of running loops that the process's exit ends before libnl-route's destructors run
/// (a loop that frees a link after them makes libnl abort): a loop is on it from its start to
/// the end of its teardown, and not after, so an ended subscription is neither kept alive nor
/// waited for at exit.
@Suite("Subscriptions at the process's exit", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct SubscriptionExitTests {
    @Test func aLoopIsListedForTheExitFromItsStartToItsEnd() throws {
        let ns = try TestNamespace("atexit")
        defer { ns.delete() }
        let engine = try SubscriptionEngine.start(namespace: .named(ns.name), options: SubscriptionOptions(), publisher: Publisher())
        #expect(SubscriptionEngine.isListedForExit(engine))
        engine.stop()
        #expect(!SubscriptionEngine.isListedForExit(engine))

        // A loop that ends by itself (its namespace deleted) leaves the list too.
        let ns2 = try TestNamespace("atexit2")
        let ended = try SubscriptionEngine.start(namespace: .named(ns2.name), options: SubscriptionOptions(), publisher: Publisher())
        ns2.delete()
        #expect(eventually { !SubscriptionEngine.isListedForExit(ended) })
        ended.stop()
    }
}
