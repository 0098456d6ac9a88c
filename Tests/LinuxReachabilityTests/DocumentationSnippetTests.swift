import Dispatch
import Foundation
import Logging
import Testing
import Netlink
import NetnsTestSupport
import LinuxReachability
import ReachabilityCompat

/// The snippets of the DocC articles, compiled and run (in the current namespace, read only;
/// address literals only, no name resolution).
@Suite("Documentation snippets", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct DocumentationSnippetTests {
    @Test func comingFromSCNetworkReachability() throws {
        let reachability = try ReachabilityMonitor(address: IPAddress("192.0.2.1")!)
        print(reachability.flags, reachability.flags.compactDescription)
        reachability.onChange = { _, answer in
            print(answer.flags, answer.interface?.name ?? "-", answer.gateway.map { "\($0)" } ?? "-")
        }
        reachability.startListening()
        reachability.stopListening()
    }

    @Test func comingFromNWPathMonitor() {
        let monitor = NetworkPathMonitor(prohibitedInterfaceTypes: [.cellular])
        monitor.pathUpdateHandler = { path in
            print(path.status, path.availableInterfaces.map(\.name), path.isExpensive)
        }
        monitor.start(queue: DispatchQueue(label: "paths"))
        monitor.cancel()
    }

    @Test func comingFromReachabilityLibraries() throws {
        let reachability = try Reachability()
        reachability.allowsCellularConnection = false
        reachability.whenReachable = { reachability in print("reachable over", reachability.connection) }
        reachability.whenUnreachable = { _ in print("not reachable") }
        let observer = NotificationCenter.default.addObserver(forName: .reachabilityChanged, object: reachability,
                                                              queue: nil) { note in
            print((note.object as? Reachability)?.connection ?? "?")
        }
        try reachability.startNotifier()
        reachability.stopNotifier()

        let monitor = ReachabilityMonitor.shared
        print(monitor.networkStatus, monitor.alamofireStatus, monitor.fxStatus, monitor.reach())
        NotificationCenter.default.removeObserver(observer)
    }

    /// ComingFromReachabilityLibraries' main-actor model, following this host's loopback
    /// address.
    @Test @MainActor func mainActorModel() async throws {
        let reachability = try ReachabilityMonitor(address: IPAddress("127.0.0.1")!)
        let model = StatusModel()
        model.follow(reachability)
        for _ in 0..<500 where model.status != reachability.status {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(model.status == reachability.status && reachability.status != .notReachable)
        model.stop()
    }

    /// The module overview's logging example (the address is not watched: no listening).
    @Test func loggingOverview() throws {
        var logger = Logger(label: "my-service.reachability")
        logger.logLevel = .notice
        let gateway = try ReachabilityMonitor(target: .address(IPAddress("192.0.2.1")!), logger: logger)
        _ = gateway.status
    }

    /// GettingStarted's sections, in the current namespace (the host name through a resolver
    /// of the test's: no name server is asked).
    @Test func gettingStarted() async throws {
        let probe = try ReachabilityProbe()
        let (answer, _) = try await probe.answer(for: .address(IPAddress("192.0.2.1")!))
        print(answer.isReachable, answer.flags, answer.interface?.name ?? "no link")
        if let reason = answer.reason { print("not reachable:", reason) }

        let internet = try ReachabilityMonitor(target: .internet)
        for await answer in internet.updates() {
            print(answer.status, answer.interface?.type.description ?? "-")
            break
        }

        let database = try ReachabilityMonitor(target: .host("db.example.internal"),
                                               resolver: StaticHostResolver(["db.example.internal": [IPAddress("192.0.2.7")!]]))
        database.onChange = { _, answer in
            print("database:", answer.isReachable ? "reachable" : "not reachable", answer)
        }
        database.startListening()
        database.stopListening()

        let paths = NetworkPathMonitor(prohibitedInterfaceTypes: [.cellular])
        for await path in paths {
            print(path.status, path.availableInterfaces.map(\.name), path.isExpensive)
            break
        }
    }

    /// ReachabilityCompat's GettingStarted: a status and its notification on the core monitor.
    @Test func compatGettingStarted() throws {
        let monitor = try ReachabilityMonitor(target: .internet)
        print(monitor.networkStatus, monitor.alamofireStatus, monitor.fxStatus)
        monitor.postsNotifications = true
        let observer = NotificationCenter.default.addObserver(
            forName: ReachabilityMonitor.statusDidChangeNotification, object: monitor, queue: nil) { note in
            print(note.userInfo?[ReachabilityMonitor.statusUserInfoKey] ?? "?")
        }
        monitor.startListening()
        monitor.stopListening()
        NotificationCenter.default.removeObserver(observer)
    }

    @Test func classificationOverview() throws {
        let kernel = try NetlinkConnection()
        let classifier = LinkClassificationCache()
        for (index, answer) in classifier.classifications(of: try kernel.links()) {
            print(index, answer.type, answer.kind, answer.isExpensive)
        }
    }
}

// ComingFromReachabilityLibraries, "Queues, the main actor and stopping".
@MainActor final class StatusModel {
    var status = ReachabilityStatus.notReachable
    private var following: Task<Void, Never>?

    func follow(_ reachability: ReachabilityMonitor) {
        following = Task { @MainActor [weak self] in
            for await answer in reachability.updates() { self?.status = answer.status }
        }
    }

    func stop() { following?.cancel() }
}
