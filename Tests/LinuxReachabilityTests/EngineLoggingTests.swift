import Logging
import Netlink
import NetnsTestSupport
import Synchronization
import Testing
import LinuxReachability

/// A resolver whose every answer is a failure, as a name server that refuses.
private struct RefusingResolver: HostResolver {
    func resolve(_ host: String) async throws -> [IPAddress] {
        throw ReachabilityError.resolutionFailed(host: host, message: "refused")
    }
}

/// A monitor's engine logs with the monitor's logger: its start, a host name that could not be
/// resolved, and a namespace that went away.
@Suite("Monitor logging", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct EngineLoggingTests {
    @Test func aFailedResolutionAndAVanishedNamespaceAreLogged() throws {
        let ns = try TestNamespace("elog")
        var deleted = false
        defer { if !deleted { ns.delete() } }
        let log = CapturedLog()
        let monitor = try ReachabilityMonitor(target: try ReachabilityTarget(parsing: "printer.test"), namespace: .named(ns.name),
                                              resolver: RefusingResolver(), logger: log.logger)
        let answers = Mutex(0)
        monitor.onChange = { _, _ in answers.withLock { $0 += 1 } }
        monitor.startListening()
        #expect(log.entries(containing: "monitoring started").first?.level == .debug)
        #expect(eventually { !log.entries(containing: "could not be resolved").isEmpty })
        let failure = try #require(log.entries(containing: "could not be resolved").first)
        #expect(failure.level == .warning)
        #expect(failure.metadata["host"] == "printer.test", "\(failure.metadata)")

        ns.delete()
        deleted = true
        #expect(eventually { !log.entries(containing: "the namespace went away").isEmpty })
        #expect(log.entries(containing: "the namespace went away").first?.level == .notice)
        monitor.stopListening()
    }
}
