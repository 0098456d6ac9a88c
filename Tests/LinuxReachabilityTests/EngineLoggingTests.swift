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

/// Records every message a logger is given.
private final class Recorded: Sendable {
    let messages = Mutex<[(Logger.Level, String, Logger.Metadata)]>([])

    var logger: Logger {
        var logger = Logger(label: "test", factory: { _ in Handler(recorded: self) })
        logger.logLevel = .trace
        return logger
    }

    func first(containing text: String) -> (Logger.Level, String, Logger.Metadata)? {
        messages.withLock { $0.first { $0.1.contains(text) } }
    }

    private struct Handler: LogHandler {
        let recorded: Recorded
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorded.messages.withLock { $0.append((event.level, "\(event.message)", event.metadata ?? [:])) }
        }
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
        let recorded = Recorded()
        let monitor = try ReachabilityMonitor(target: try ReachabilityTarget(parsing: "printer.test"), namespace: .named(ns.name),
                                              resolver: RefusingResolver(), logger: recorded.logger)
        let answers = Mutex(0)
        monitor.onChange = { _, _ in answers.withLock { $0 += 1 } }
        monitor.startListening()
        #expect(recorded.first(containing: "monitoring started")?.0 == .debug)
        #expect(eventually { recorded.first(containing: "could not be resolved") != nil })
        let failure = try #require(recorded.first(containing: "could not be resolved"))
        #expect(failure.0 == .warning)
        #expect(failure.2["host"] == "printer.test", "\(failure.2)")

        ns.delete()
        deleted = true
        #expect(eventually { recorded.first(containing: "the namespace went away") != nil })
        #expect(recorded.first(containing: "the namespace went away")?.0 == .notice)
        monitor.stopListening()
    }
}
