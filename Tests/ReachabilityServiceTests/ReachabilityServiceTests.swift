#if ServiceLifecycle
import LinuxReachability
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
}
#endif
