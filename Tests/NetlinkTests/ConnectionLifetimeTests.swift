import Glibc
import Netlink
import NetnsTestSupport
import Synchronization
import Testing

/// A connection used from inside its own route stream, a connection whose namespace's name now
/// names another namespace, and an observation held by its own handler.
@Suite("Connections and observations at their edges", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ConnectionLifetimeTests {
    /// A call on the connection from inside its `forEachRoute` would wait for the lock its own
    /// thread holds: it throws `busy` instead, and the connection answers again afterwards.
    @Test(.timeLimit(.minutes(1))) func aCallFromInsideForEachRouteThrowsBusyInsteadOfWaitingForever() throws {
        let ns = try TestNamespace("streambusy")
        defer { ns.delete() }
        try buildTopology(ns)
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let destination = IPAddress("10.10.0.9")!
        var inner: [Int32] = []
        try connection.forEachRoute { _ in
            do {
                _ = try connection.lookupRoute(to: destination)
                inner.append(0)
            } catch {
                inner.append((error as? NetlinkError)?.code ?? -1)
            }
        }
        #expect(!inner.isEmpty && inner.allSatisfy { $0 == NetlinkError.busy.code }, "\(inner)")
        guard case .route(let route) = try connection.lookupRoute(to: destination) else {
            Issue.record("no route to \(destination) after the stream")
            return
        }
        #expect(route.gateway == nil)
    }

    /// Sockets replaced after a dump stopped early are opened in the namespace the connection
    /// was opened in, which its sockets keep alive, not in whatever the name means now.
    @Test func aSocketReopenedAfterTheNameWasReusedIsInTheConnectionsNamespace() throws {
        let ns = try TestNamespace("reopen")
        defer { ns.delete() }
        try buildTopology(ns)
        // A main table that fills more than a datagram after its default route: each IPv4
        // default-route dump stops early and leaves its socket.
        try ns.batch((0..<3000).map { "route add 11.\($0 / 256).\($0 % 256).0/24 via 10.10.0.254" })
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let gateway = IPAddress("10.10.0.254")
        #expect(try connection.defaultRoutes().filter { $0.family == .ipv4 && $0.table == .main }.map(\.gateway) == [gateway])
        // The name now names a new, empty namespace.
        try run(["ip", "netns", "del", ns.name])
        try run(["ip", "netns", "add", ns.name])
        for _ in 0..<2 {
            #expect(try connection.defaultRoutes().filter { $0.family == .ipv4 && $0.table == .main }.map(\.gateway) == [gateway])
        }
    }

    /// A handler that holds its own observation, to cancel it from inside, makes a cycle
    /// (observation, observer, handler); cancelling breaks it, so nothing of it outlives the
    /// cancel (nor the subscription it kept).
    @Test func anObservationHeldByItsOwnHandlerIsReleasedOnceCancelled() throws {
        let ns = try TestNamespace("obscycle")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        weak var released: NetlinkObservation?
        let cancelled = Atomic(false)
        do {
            let holder = Locked<NetlinkObservation?>(nil)
            let observation = subscription.observeOnSubscriptionThread { _ in
                guard let me = holder.withLock({ $0 }) else { return }
                me.cancel()
                cancelled.store(true, ordering: .releasing)
            }
            holder.withLock { $0 = observation }
            released = observation
        }
        try ns.ip("link", "set", "dum0", "up")
        #expect(eventually { cancelled.load(ordering: .acquiring) })
        #expect(eventually { released == nil })
    }
}
