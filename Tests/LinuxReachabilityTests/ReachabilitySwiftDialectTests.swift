import Foundation
import Netlink
import NetnsTestSupport
import Testing
import LinuxReachability
import ReachabilityCompat

/// Reachability.swift's calls on the compatibility module's `Reachability`: `whenReachable`
/// and `whenUnreachable` with the connection, the `.reachabilityChanged` notification always
/// posted, and `allowsCellularConnection`.
@Suite("Reachability.swift's dialect", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct ReachabilitySwiftDialectTests {
    @Test func whenReachableAndWhenUnreachableFollowTheInternetWithTheNotification() throws {
        let ns = try wiredNamespace("rswift")
        defer { ns.delete() }
        try ns.ip("route", "add", "default", "via", "10.1.0.2")
        let reachability = try Reachability(namespace: .named(ns.name))
        let told = Locked<[String]>([])
        reachability.whenReachable = { reachability in told.withLock { $0.append("reachable \(reachability.connection)") } }
        reachability.whenUnreachable = { reachability in told.withLock { $0.append("unreachable \(reachability.connection)") } }
        let posted = Locked(0)
        let observer = NotificationCenter.default.addObserver(forName: .reachabilityChanged, object: reachability, queue: nil) { note in
            if note.object as? Reachability === reachability { posted.withLock { $0 += 1 } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try reachability.startNotifier()
        // Ethernet counts as Wi-Fi in Reachability.swift.
        #expect(eventually { told.withLock { $0 } == ["reachable WiFi"] && posted.withLock { $0 } == 1 })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { told.withLock { $0 } == ["reachable WiFi", "unreachable No Connection"] && posted.withLock { $0 } == 2 })
        reachability.stopNotifier()
        try ns.ip("link", "set", "vb", "up")
        settle()
        #expect(told.withLock { $0.count } == 2, "nothing after stopNotifier()")
    }

    @Test func cellularIsUnavailableWhenNotAllowed() {
        let cellular: ReachabilityFlags = [.reachable, .isWWAN]
        #expect(ReachabilityConnection(flags: cellular) == .cellular)
        #expect(ReachabilityConnection(flags: cellular, allowsCellularConnection: false) == .unavailable)
    }
}
