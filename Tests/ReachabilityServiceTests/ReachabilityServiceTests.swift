#if ServiceLifecycle
import LinuxReachability
import Logging
import ReachabilityService
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// The service hands its answers to the handler and returns on graceful shutdown.
@Suite("Reachability service")
struct ReachabilityServiceTests {
    @Test(.timeLimit(.minutes(1))) func itReportsAnswersAndEndsOnGracefulShutdown() async throws {
        let answers = Mutex<[ReachabilityAnswer]>([])
        let service = ReachabilityService(target: .address(IPAddress("127.0.0.1")!)) { answer in
            answers.withLock { $0.append(answer) }
        }
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                while answers.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(answers.withLock { $0.first?.isReachable } == true, "the loopback address is reachable")
    }

    /// The Getting Started article's service group (with the loopback address): the group runs
    /// the service, which reports, and ends it on graceful shutdown.
    @Test(.timeLimit(.minutes(1))) func gettingStartedsGroupRunsAndEnds() async throws {
        let logger = Logger(label: "gateway-watch")
        let told = Mutex<[ReachabilityAnswer]>([])
        let gateway = ReachabilityService(target: .address(IPAddress("127.0.0.1")!), logger: logger) { answer in
            logger.info("gateway \(answer.isReachable ? "reachable" : "not reachable")", metadata: [
                "interface": "\(answer.interface?.name ?? "-")",
            ])
            told.withLock { $0.append(answer) }
        }
        let group = ServiceGroup(services: [gateway], gracefulShutdownSignals: [.sigterm], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while told.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(told.withLock { $0.first?.interface?.name } == "lo")
    }
}
#endif
